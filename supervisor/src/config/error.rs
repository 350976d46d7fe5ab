//! `ConfigError`: every way a configuration file can be rejected.
//!
//! Each message starts with the file and, where known, the line (and column) and the key
//! or JSON path, so that an operator can go straight to the spot: `strom.conf:12: key
//! 'port': ...`, `rules.conf:7:15: invalid JSON: ...`, `rules.conf:
//! RtmpSettings.apps[1].duration: ...`.

use std::fmt;
use std::path::{Path, PathBuf};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    /// The file could not be read. The I/O error is part of the message rather than a
    /// `source`, so that `{:#}` chains do not print it twice.
    #[error("{}: cannot read: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A `strom.conf` line that is not `key = value`.
    #[error("{}:{line}: expected `key = value`", path.display())]
    MissingEquals { path: PathBuf, line: usize },
    #[error("{}:{line}: unknown key '{key}'{}", path.display(), Suggestions(suggestions))]
    UnknownKey {
        path: PathBuf,
        line: usize,
        key: String,
        /// Valid keys that look like the misspelt one.
        suggestions: Vec<&'static str>,
    },
    #[error("{}:{line}: key '{key}' is already set on line {first_line}", path.display())]
    DuplicateKey {
        path: PathBuf,
        line: usize,
        key: String,
        first_line: usize,
    },
    /// A `strom.conf` value that is malformed or contradicts another setting.
    #[error("{}:{line}: key '{key}': {message}", path.display())]
    Value {
        path: PathBuf,
        line: usize,
        key: String,
        message: String,
    },
    /// serde_json could not read the document: bad syntax (`syntax`) or a value of the
    /// wrong type, a missing or an unknown field.
    #[error(
        "{}:{line}:{column}: {}{message}",
        path.display(),
        if *syntax { "invalid JSON: " } else { "" }
    )]
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
        syntax: bool,
    },
    /// Well-formed JSON whose content is not acceptable; `field` is a JSON path such as
    /// `RtmpSettings.apps[1].duration`.
    #[error("{}: {field}: {message}", path.display())]
    Invalid {
        path: PathBuf,
        field: String,
        message: String,
    },
}

impl ConfigError {
    /// The same error naming only the file (`rules.conf`), not the directory it is in:
    /// the management API's answer goes to clients that need not learn the server's
    /// paths (the log keeps the whole path).
    pub fn with_file_name_only(mut self) -> Self {
        let (Self::Io { path, .. }
        | Self::MissingEquals { path, .. }
        | Self::UnknownKey { path, .. }
        | Self::DuplicateKey { path, .. }
        | Self::Value { path, .. }
        | Self::Json { path, .. }
        | Self::Invalid { path, .. }) = &mut self;
        if let Some(name) = path.file_name() {
            *path = PathBuf::from(name);
        }
        self
    }

    pub(crate) fn io(path: &Path, error: std::io::Error) -> Self {
        Self::Io {
            path: path.to_owned(),
            error,
        }
    }

    pub(crate) fn json(path: &Path, error: &serde_json::Error) -> Self {
        use serde_json::error::Category;
        let text = error.to_string();
        // serde_json appends the position to its message; it is already in our prefix.
        let suffix = format!(" at line {} column {}", error.line(), error.column());
        Self::Json {
            path: path.to_owned(),
            line: error.line(),
            column: error.column(),
            // serde quotes the offending value, which may be a URL with a password.
            message: super::redact::redact_passwords(text.strip_suffix(&suffix).unwrap_or(&text)),
            syntax: matches!(error.classify(), Category::Syntax | Category::Eof),
        }
    }
}

// The supervisor is a binary crate: accessors that only tests use yet would warn.
#[allow(
    dead_code,
    reason = "for callers that report the position apart, and tests"
)]
impl ConfigError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            Self::Io { path, .. }
            | Self::MissingEquals { path, .. }
            | Self::UnknownKey { path, .. }
            | Self::DuplicateKey { path, .. }
            | Self::Value { path, .. }
            | Self::Json { path, .. }
            | Self::Invalid { path, .. } => path,
        }
    }

    /// The 1-based line, when the error is tied to one.
    pub fn line(&self) -> Option<usize> {
        match self {
            Self::MissingEquals { line, .. }
            | Self::UnknownKey { line, .. }
            | Self::DuplicateKey { line, .. }
            | Self::Value { line, .. }
            | Self::Json { line, .. } => Some(*line),
            Self::Io { .. } | Self::Invalid { .. } => None,
        }
    }

    /// The 1-based column, for JSON errors.
    pub fn column(&self) -> Option<usize> {
        match self {
            Self::Json { column, .. } => Some(*column),
            _ => None,
        }
    }

    /// The `strom.conf` key or the JSON path the error is about.
    pub fn key(&self) -> Option<&str> {
        match self {
            Self::UnknownKey { key, .. }
            | Self::DuplicateKey { key, .. }
            | Self::Value { key, .. } => Some(key),
            Self::Invalid { field, .. } => Some(field),
            Self::Io { .. } | Self::MissingEquals { .. } | Self::Json { .. } => None,
        }
    }
}

/// Renders ` (did you mean 'a' or 'b'?)`, or nothing.
struct Suggestions<'a>(&'a [&'static str]);

impl fmt::Display for Suggestions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = self.0.iter().map(|key| format!("'{key}'")).collect();
        write!(f, " (did you mean {}?)", names.join(" or "))
    }
}

/// A semantic error found while validating JSON, before it is tied to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldError {
    /// JSON path relative to the value being validated; empty for the value itself.
    pub field: String,
    pub message: String,
}

impl FieldError {
    /// A URL quoted in `message` loses its password (see [`super::redact`]).
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: super::redact::redact_passwords(&message.into()),
        }
    }

    /// Places the error under `prefix`, the path of the enclosing value.
    pub fn under(self, prefix: &str) -> Self {
        let field = match self.field.as_str() {
            "" => prefix.to_owned(),
            field if field.starts_with('[') => format!("{prefix}{field}"),
            field => format!("{prefix}.{field}"),
        };
        Self { field, ..self }
    }

    pub fn in_file(self, path: &Path) -> ConfigError {
        ConfigError::Invalid {
            path: path.to_owned(),
            field: self.field,
            message: self.message,
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.field.as_str() {
            "" => f.write_str(&self.message),
            field => write!(f, "{field}: {}", self.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_file_line_and_key() {
        let path = PathBuf::from("packaging/strom.conf");
        let cases = [
            (
                ConfigError::Value {
                    path: path.clone(),
                    line: 12,
                    key: "port".into(),
                    message: "expected a port number 1-65535, got \"abc\"".into(),
                },
                "packaging/strom.conf:12: key 'port': expected a port number 1-65535, got \"abc\"",
            ),
            (
                ConfigError::UnknownKey {
                    path: path.clone(),
                    line: 3,
                    key: "prot".into(),
                    suggestions: vec!["port", "ssl_port"],
                },
                "packaging/strom.conf:3: unknown key 'prot' (did you mean 'port' or 'ssl_port'?)",
            ),
            (
                ConfigError::DuplicateKey {
                    path: path.clone(),
                    line: 9,
                    key: "port".into(),
                    first_line: 2,
                },
                "packaging/strom.conf:9: key 'port' is already set on line 2",
            ),
            (
                FieldError::new("duration", "must be 1..=60")
                    .under("RtmpSettings.apps[1]")
                    .in_file(Path::new("rules.conf")),
                "rules.conf: RtmpSettings.apps[1].duration: must be 1..=60",
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(error.to_string(), expected);
        }
    }

    #[test]
    fn json_errors_carry_the_position_once() {
        let error = serde_json::from_str::<serde_json::Value>("{\n  \"a\": ,\n}").unwrap_err();
        let error = ConfigError::json(Path::new("rules.conf"), &error);
        assert_eq!(
            error.to_string(),
            "rules.conf:2:8: invalid JSON: expected value"
        );
        assert_eq!((error.line(), error.column()), (Some(2), Some(8)));
    }
}
