//! `IcecastPush`: streams whose audio the packager sends as an Icecast source to another
//! server. Each entry names the stream and the server's mount in one URL,
//! `icecast://[user[:password]@]host[:port]/mount` (or `http://`; both are `PUT` over
//! HTTP/1.1), which is split here so that workers never parse it.
//!
//! The URL carries the source password: no error message repeats the URL, and the
//! validated settings print the password as `***`.

use super::super::error::FieldError;
use super::fields::{check_media_name, each, unique};
use serde::Deserialize;
use strom_ipc::rules::IcecastPushSettings;

/// Icecast's port when an `icecast://` URL names none.
const ICECAST_PORT: u16 = 8000;
/// The port of an `http://` URL that names none.
const HTTP_PORT: u16 = 80;
/// The user name of a URL that names none (Icecast's source user).
const DEFAULT_USER: &str = "source";
/// Longest `name`, `description` and `genre` (they travel in request headers).
const MAX_TEXT_BYTES: usize = 1024;
/// Longest mount point.
const MAX_MOUNT_BYTES: usize = 255;

const URL_SHAPE: &str = "expected icecast://[user:]password@host[:port]/mount";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIcecastPush {
    app: String,
    stream: String,
    url: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    genre: String,
    #[serde(default)]
    public: bool,
}

/// Validates `IcecastPush`: two entries cannot feed one mount of one server.
pub(super) fn validate_all(
    list: Vec<RawIcecastPush>,
) -> Result<Vec<IcecastPushSettings>, FieldError> {
    let pushes = each(list, "IcecastPush", RawIcecastPush::validate)?;
    unique(&pushes, "IcecastPush", "url", IcecastPushSettings::target)?;
    Ok(pushes)
}

impl RawIcecastPush {
    fn validate(self) -> Result<IcecastPushSettings, FieldError> {
        check_media_name("app", &self.app)?;
        check_media_name("stream", &self.stream)?;
        let url = parse_url(&self.url).map_err(|why| {
            // Never the URL itself: it holds the password.
            FieldError::new("url", format!("{URL_SHAPE}: {why}"))
        })?;
        for (field, text) in [
            ("name", &self.name),
            ("description", &self.description),
            ("genre", &self.genre),
        ] {
            check_header_text(field, text)?;
        }
        Ok(IcecastPushSettings {
            app: self.app,
            stream: self.stream,
            host: url.host,
            port: url.port,
            mount: url.mount,
            user: url.user,
            password: url.password,
            name: self.name,
            description: self.description,
            genre: self.genre,
            public: self.public,
        })
    }
}

/// The parts of a push URL.
#[derive(Debug, PartialEq, Eq)]
struct PushUrl {
    host: String,
    port: u16,
    mount: String,
    user: String,
    password: String,
}

/// Splits `icecast://[user[:password]@]host[:port]/mount` (or `http://`); the error says
/// what is wrong without repeating the URL.
fn parse_url(url: &str) -> Result<PushUrl, &'static str> {
    let (rest, default_port) = if let Some(rest) = strip_scheme(url, "icecast://") {
        (rest, ICECAST_PORT)
    } else if let Some(rest) = strip_scheme(url, "http://") {
        (rest, HTTP_PORT)
    } else {
        return Err("the scheme must be icecast:// or http://");
    };
    if rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("no whitespace allowed");
    }
    let (authority, path) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, ""),
    };
    let Some((userinfo, hostport)) = authority.rsplit_once('@') else {
        return Err("no password");
    };
    let (user, password) = match userinfo.split_once(':') {
        Some((user, password)) => (user, password),
        // `icecast://hackme@host/mount`: the password alone, as ffmpeg reads it too.
        None => ("", userinfo),
    };
    let user = percent_decoded(user).ok_or("bad %-escape in the user name")?;
    let password = percent_decoded(password).ok_or("bad %-escape in the password")?;
    if password.is_empty() {
        return Err("no password");
    }
    if user.chars().chain(password.chars()).any(char::is_control) {
        return Err("control characters in the user name or password");
    }
    let (host, port) = match hostport.strip_prefix('[') {
        Some(bracketed) => match bracketed.split_once(']') {
            Some((host, "")) => (host, None),
            Some((host, port)) => match port.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None => return Err("bad port"),
            },
            None => return Err("unclosed '['"),
        },
        None => match hostport.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (hostport, None),
        },
    };
    if host.is_empty() {
        return Err("no host");
    }
    if !host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'))
    {
        return Err("bad host");
    }
    let port = match port {
        None => default_port,
        Some(port) => match port.parse::<u16>() {
            Ok(port) if port != 0 => port,
            _ => return Err("bad port"),
        },
    };
    let mount = path.trim_end_matches('/');
    if mount.is_empty() {
        return Err("no mount");
    }
    if mount.len() > MAX_MOUNT_BYTES {
        return Err("mount longer than 255 bytes");
    }
    if !mount
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '-' | '_' | '~'))
    {
        return Err("the mount may hold letters, digits, '/', '.', '-', '_' and '~' only");
    }
    if mount.contains("//") || mount.split('/').any(|part| part == "." || part == "..") {
        return Err("bad mount");
    }
    Ok(PushUrl {
        host: host.to_owned(),
        port,
        mount: mount.to_owned(),
        user: if user.is_empty() {
            DEFAULT_USER.to_owned()
        } else {
            user
        },
        password,
    })
}

/// The rest of `url` after `scheme`, whatever the scheme's case.
fn strip_scheme<'a>(url: &'a str, scheme: &str) -> Option<&'a str> {
    let head = url.get(..scheme.len())?;
    head.eq_ignore_ascii_case(scheme)
        .then(|| &url[scheme.len()..])
}

/// `%XX` escapes decoded (for user names and passwords holding `@`, `:` or `/`); `None`
/// for a broken escape or text that is not UTF-8.
fn percent_decoded(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        if byte == b'%' {
            let hex = tail.get(..2)?;
            let hex = std::str::from_utf8(hex).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(byte);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

/// `name`, `description` and `genre` go into request headers: one line of text.
fn check_header_text(field: &str, text: &str) -> Result<(), FieldError> {
    if text.len() > MAX_TEXT_BYTES {
        let message = format!("longer than {MAX_TEXT_BYTES} bytes");
        return Err(FieldError::new(field, message));
    }
    if text.chars().any(char::is_control) {
        return Err(FieldError::new(field, "must not hold control characters"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;
    use std::path::Path;

    fn url(user: &str, password: &str, host: &str, port: u16, mount: &str) -> PushUrl {
        PushUrl {
            host: host.into(),
            port,
            mount: mount.into(),
            user: user.into(),
            password: password.into(),
        }
    }

    #[test]
    fn urls_split_with_their_defaults() {
        for (text, expected) in [
            (
                "icecast://source:hackme@127.0.0.1:8000/radio",
                url("source", "hackme", "127.0.0.1", 8000, "/radio"),
            ),
            (
                "icecast://:hackme@icecast.example/live/radio.mp3",
                url(
                    "source",
                    "hackme",
                    "icecast.example",
                    8000,
                    "/live/radio.mp3",
                ),
            ),
            (
                "icecast://hackme@icecast.example/radio/",
                url("source", "hackme", "icecast.example", 8000, "/radio"),
            ),
            (
                "http://dj:p%40ss%3Aw%2Fd@[::1]:8080/radio",
                url("dj", "p@ss:w/d", "::1", 8080, "/radio"),
            ),
            (
                "HTTP://dj:a@b@radio.example/r",
                url("dj", "a@b", "radio.example", 80, "/r"),
            ),
        ] {
            assert_eq!(parse_url(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn bad_urls_say_why() {
        for (text, why) in [
            (
                "rtmp://a:b@host/radio",
                "the scheme must be icecast:// or http://",
            ),
            (
                "https://a:b@host/radio",
                "the scheme must be icecast:// or http://",
            ),
            ("icecast://host:8000/radio", "no password"),
            ("icecast://source:@host/radio", "no password"),
            ("icecast://source:x@/radio", "no host"),
            ("icecast://source:x@:8000/radio", "no host"),
            ("icecast://source:x@host:0/radio", "bad port"),
            ("icecast://source:x@host:99999/radio", "bad port"),
            ("icecast://source:x@host:80a/radio", "bad port"),
            ("icecast://source:x@[::1/radio", "unclosed '['"),
            ("icecast://source:x@host", "no mount"),
            ("icecast://source:x@host/", "no mount"),
            ("icecast://source:x@host/a b", "no whitespace allowed"),
            (
                "icecast://source:x@host/r?x=1",
                "the mount may hold letters, digits, '/', '.', '-', '_' and '~' only",
            ),
            ("icecast://source:x@host/../admin", "bad mount"),
            ("icecast://source:x@host//r", "bad mount"),
            (
                "icecast://source:%zz@host/r",
                "bad %-escape in the password",
            ),
            (
                "icecast://source:%0a@host/r",
                "control characters in the user name or password",
            ),
            ("icecast://source:x@ho$t/r", "bad host"),
        ] {
            assert_eq!(parse_url(text), Err(why), "{text}");
        }
    }

    #[test]
    fn entries_validate_with_their_defaults() {
        let rules = parse(
            r#"{"IcecastPush": [
                {"app": "live", "stream": "radio",
                 "url": "icecast://source:hackme@127.0.0.1:8000/radio"},
                {"app": "live", "stream": "radio", "url": "icecast://dj:pw@other.example/r",
                 "name": "Radio", "description": "All day", "genre": "Jazz", "public": true}]}"#,
            Path::new("rules.conf"),
        )
        .unwrap();
        let [first, second] = &rules.icecast_pushes[..] else {
            panic!("two entries: {:?}", rules.icecast_pushes);
        };
        assert_eq!(first.target(), "127.0.0.1:8000/radio");
        assert_eq!(
            (first.user.as_str(), first.password.as_str(), first.public),
            ("source", "hackme", false)
        );
        assert_eq!(first.name, "");
        assert_eq!(second.target(), "other.example:8000/r");
        assert_eq!(
            (second.name.as_str(), second.genre.as_str(), second.public),
            ("Radio", "Jazz", true)
        );
        // The password never prints.
        let printed = format!("{:?}", rules);
        assert!(
            !printed.contains("hackme") && printed.contains("***"),
            "{printed}"
        );
    }

    #[test]
    fn bad_entries_name_the_field_and_never_the_password() {
        for (entries, expected) in [
            (
                r#"[{"app": "live", "stream": "radio", "url": "icecast://source:s3cret@h"}]"#,
                "IcecastPush[0].url: expected icecast://[user:]password@host[:port]/mount: no mount",
            ),
            (
                r#"[{"app": "live", "stream": "radio", "url": "ftp://source:s3cret@h/r"}]"#,
                "IcecastPush[0].url",
            ),
            (
                r#"[{"app": "../x", "stream": "radio", "url": "icecast://s3cret@h/r"}]"#,
                "IcecastPush[0].app",
            ),
            (
                r#"[{"app": "live", "stream": "a/b", "url": "icecast://s3cret@h/r"}]"#,
                "IcecastPush[0].stream",
            ),
            (
                r#"[{"app": "live", "stream": "radio", "url": "icecast://s3cret@h/r",
                     "name": "a\r\nX-Evil: 1"}]"#,
                "IcecastPush[0].name",
            ),
            (
                r#"[{"app": "live", "stream": "a", "url": "icecast://s3cret@h/r"},
                    {"app": "live", "stream": "b", "url": "icecast://u:s3cret@h:8000/r"}]"#,
                "IcecastPush[1].url: \"h:8000/r\" is already used by IcecastPush[0]",
            ),
            (
                r#"[{"app": "live", "stream": "radio", "url": "icecast://s3cret@h/r", "port": 1}]"#,
                "port",
            ),
        ] {
            let text = format!(r#"{{"IcecastPush": {entries}}}"#);
            let error = parse(&text, Path::new("rules.conf"))
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{text}: {error}");
            assert!(!error.contains("s3cret"), "{text}: {error}");
        }
    }
}
