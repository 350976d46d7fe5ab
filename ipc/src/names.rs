//! The one rule for application and stream names, checked at the edge of every protocol
//! before a name reaches a hub, a URL or a path.
//!
//! A name is 1 to [`MAX_NAME_BYTES`] bytes of ASCII letters, digits and `_ - . ~ @ + =`,
//! and does not start with `.`. That keeps every name a single safe path component (no
//! `/`, no `..`, no hidden files, no NUL) and a single URL path segment that needs no
//! escaping, so `run_dir/hls/<app>/<stream>` and `/<app>/<stream>/playlist.m3u8` can be
//! built from a checked name and nothing else.

use std::fmt;

/// Longest accepted application or stream name, in bytes.
pub const MAX_NAME_BYTES: usize = 128;

/// Why a name was refused (said to the client and in the log).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("{0} name is empty")]
    Empty(NameKind),
    #[error("{kind} name is {len} bytes long; the limit is {MAX_NAME_BYTES}")]
    TooLong { kind: NameKind, len: usize },
    #[error("{0} name starts with '.'")]
    LeadingDot(NameKind),
    #[error("{kind} name contains {byte:#04x}; allowed are letters, digits and _ - . ~ @ + =")]
    BadCharacter { kind: NameKind, byte: u8 },
}

/// Which name was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    App,
    Stream,
}

impl fmt::Display for NameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NameKind::App => "application",
            NameKind::Stream => "stream",
        })
    }
}

fn allowed(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.' | b'~' | b'@' | b'+' | b'=')
}

/// Checks one name against the rule in the module header.
pub fn check(kind: NameKind, name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty(kind));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(NameError::TooLong {
            kind,
            len: name.len(),
        });
    }
    if name.starts_with('.') {
        return Err(NameError::LeadingDot(kind));
    }
    match name.bytes().find(|&byte| !allowed(byte)) {
        Some(byte) => Err(NameError::BadCharacter { kind, byte }),
        None => Ok(()),
    }
}

/// Checks an application name.
pub fn check_app(name: &str) -> Result<(), NameError> {
    check(NameKind::App, name)
}

/// Checks a stream name (without its `?query`).
pub fn check_stream(name: &str) -> Result<(), NameError> {
    check(NameKind::Stream, name)
}

/// Checks both parts of `app/stream`.
pub fn check_pair(app: &str, stream: &str) -> Result<(), NameError> {
    check_app(app)?;
    check_stream(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_names_pass() {
        for name in [
            "live",
            "cam_1",
            "my-stream.hd",
            "a",
            "user@site",
            "k=v+1~x",
            "A9",
        ] {
            assert_eq!(check_stream(name), Ok(()), "{name}");
        }
        assert_eq!(check_app(&"a".repeat(MAX_NAME_BYTES)), Ok(()));
    }

    #[test]
    fn path_and_url_breakers_are_refused() {
        for name in [
            "",
            "..",
            ".",
            ".hidden",
            "../../x",
            "/some/dir",
            "a/b",
            "a\\b",
            "a\0b",
            "a b",
            "a%2f",
            "a?b",
            "a#b",
            "é",
            "a\nb",
        ] {
            assert!(check_stream(name).is_err(), "{name:?} must be refused");
        }
        assert_eq!(
            check_app(&"a".repeat(MAX_NAME_BYTES + 1)),
            Err(NameError::TooLong {
                kind: NameKind::App,
                len: MAX_NAME_BYTES + 1
            })
        );
        assert_eq!(
            check_stream("a/b"),
            Err(NameError::BadCharacter {
                kind: NameKind::Stream,
                byte: b'/'
            })
        );
    }
}
