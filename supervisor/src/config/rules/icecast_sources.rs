//! `IcecastSources`: who may send an Icecast source to the packager's HTTP port
//! (`PUT`/`SOURCE /<app>/<stream>` with HTTP Basic credentials). An entry names an app
//! (every stream of it) or one stream; a stream's entry beats its app's. `user`
//! defaults to `source`, as Icecast's; `password` is required and never printed.

use super::super::error::FieldError;
use super::fields::{check_media_name, each, unique};
use serde::Deserialize;
use strom_ipc::rules::IcecastSourceSettings;

/// The longest user name or password accepted.
const MAX_CREDENTIAL_BYTES: usize = 256;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIcecastSource {
    app: String,
    /// Empty or absent: every stream of the app.
    #[serde(default)]
    stream: String,
    user: Option<String>,
    password: String,
}

/// Validates `IcecastSources`: at most one entry per app and per stream.
pub(super) fn validate_all(
    list: Vec<RawIcecastSource>,
) -> Result<Vec<IcecastSourceSettings>, FieldError> {
    let entries = each(list, "IcecastSources", RawIcecastSource::validate)?;
    unique(&entries, "IcecastSources", "stream", |s| {
        format!("{}/{}", s.app, s.stream)
    })?;
    Ok(entries)
}

impl RawIcecastSource {
    fn validate(self) -> Result<IcecastSourceSettings, FieldError> {
        check_media_name("app", &self.app)?;
        if !self.stream.is_empty() {
            check_media_name("stream", &self.stream)?;
        }
        let user = self.user.unwrap_or_else(|| "source".to_owned());
        for (field, value) in [("user", &user), ("password", &self.password)] {
            if value.is_empty() || value.len() > MAX_CREDENTIAL_BYTES {
                let message = format!("must be 1 to {MAX_CREDENTIAL_BYTES} bytes");
                return Err(FieldError::new(field, message));
            }
        }
        if user.contains(':') {
            return Err(FieldError::new("user", "must not contain ':' (HTTP Basic)"));
        }
        Ok(IcecastSourceSettings {
            app: self.app,
            stream: self.stream,
            user,
            password: self.password,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use std::path::Path;

    #[test]
    fn entries_parse_and_streams_beat_their_app() {
        let rules = parse(
            r#"{"IcecastSources": [
                {"app": "radio", "password": "app-secret"},
                {"app": "radio", "stream": "news", "user": "newsroom", "password": "s"}]}"#,
            Path::new("rules.conf"),
        )
        .unwrap();
        let any = rules.icecast_source_for("radio", "music").unwrap();
        assert_eq!(
            (any.user.as_str(), any.password.as_str()),
            ("source", "app-secret")
        );
        let news = rules.icecast_source_for("radio", "news").unwrap();
        assert_eq!(news.user, "newsroom");
        assert!(rules.icecast_source_for("live", "news").is_none());
        assert!(
            !format!("{any:?}").contains("app-secret"),
            "passwords are not printed"
        );
    }

    #[test]
    fn bad_entries_name_the_field() {
        for (text, field) in [
            (r#"[{"app": "radio", "password": ""}]"#, "password"),
            (r#"[{"app": "../x", "password": "p"}]"#, "app"),
            (
                r#"[{"app": "radio", "user": "a:b", "password": "p"}]"#,
                "user",
            ),
            (
                r#"[{"app": "radio", "password": "p"}, {"app": "radio", "password": "q"}]"#,
                "stream",
            ),
        ] {
            let error = parse(
                &format!(r#"{{"IcecastSources": {text}}}"#),
                Path::new("rules.conf"),
            )
            .unwrap_err()
            .to_string();
            assert!(
                error.contains("IcecastSources") && error.contains(field),
                "{text}: {error}"
            );
        }
    }
}
