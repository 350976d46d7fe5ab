//! Publisher access (login and publish control per app), which every protocol's gate
//! reads as [`AccessSettings`]: from the top-level `Access` key when the file has one,
//! else as the `RtmpSettings` section states it (`login`, `password`, `apps[].login`,
//! `apps[].password`, `apps[].publish_control`), so existing files keep their meaning (as
//! `Delivery` is derived from the legacy RTMP keys when that key is absent). A file that
//! states access in both places is refused: one of the two would be silently ignored.

use super::super::error::FieldError;
use super::fields::{check_credentials, check_media_name, each, unique};
use super::rtmp::RawPublishControl;
use serde::Deserialize;
use strom_ipc::access_rules::{AccessSettings, AppAccess};
use strom_ipc::rules::RtmpSettings;

/// `Access`: `{login, password, apps: [{app, login, password, publish_control}]}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAccess {
    #[serde(default)]
    login: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    apps: Vec<RawAppAccess>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAppAccess {
    app: String,
    #[serde(default)]
    login: String,
    #[serde(default)]
    password: String,
    publish_control: Option<RawPublishControl>,
}

/// The access settings: `Access` when given (then `RtmpSettings` must state none), else
/// those `RtmpSettings` states.
pub(super) fn validate(
    raw: Option<RawAccess>,
    rtmp: &RtmpSettings,
) -> Result<AccessSettings, FieldError> {
    let Some(raw) = raw else {
        return Ok(from_rtmp(rtmp));
    };
    if from_rtmp(rtmp) != AccessSettings::default() {
        let message = "publisher logins and publish_control are set in RtmpSettings too: \
                       state them in Access only";
        return Err(FieldError::new("Access", message));
    }
    check_credentials(&raw.login, &raw.password).map_err(|e| e.under("Access"))?;
    let apps = each(raw.apps, "Access.apps", RawAppAccess::validate)?;
    unique(&apps, "Access.apps", "app", |app| app.app.clone())?;
    Ok(AccessSettings {
        login: raw.login,
        password: raw.password,
        apps,
    })
}

impl RawAppAccess {
    fn validate(self) -> Result<AppAccess, FieldError> {
        check_media_name("app", &self.app)?;
        check_credentials(&self.login, &self.password)?;
        let publish_control = match self.publish_control {
            None => None,
            Some(raw) => Some(raw.validate().map_err(|e| e.under("publish_control"))?),
        };
        Ok(AppAccess {
            app: self.app,
            login: self.login,
            password: self.password,
            publish_control,
        })
    }
}

/// The access settings of a validated `RtmpSettings`.
fn from_rtmp(rtmp: &RtmpSettings) -> AccessSettings {
    AccessSettings {
        login: rtmp.login.clone(),
        password: rtmp.password.clone(),
        apps: rtmp
            .apps
            .iter()
            .filter(|app| !app.login.is_empty() || app.publish_control.is_some())
            .map(|app| AppAccess {
                app: app.app.clone(),
                login: app.login.clone(),
                password: app.password.clone(),
                publish_control: app.publish_control.clone(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;

    #[test]
    fn both_forms_state_the_same_access_for_every_protocol() {
        let in_rtmp_settings = r#"{"RtmpSettings": {"login": "global", "password": "g",
                "apps": [{"app": "own", "login": "alice", "password": "p"},
                         {"app": "signed", "publish_control": {"password": "s"}},
                         {"app": "plain", "duration": 2}]}}"#;
        let in_access = r#"{"Access": {"login": "global", "password": "g",
                "apps": [{"app": "own", "login": "alice", "password": "p"},
                         {"app": "signed", "publish_control": {"password": "s"}}]},
                "RtmpSettings": {"apps": [{"app": "plain", "duration": 2}]}}"#;
        for text in [in_rtmp_settings, in_access] {
            let rules = parse(text, std::path::Path::new("rules.conf")).unwrap();
            let access = &rules.access;
            assert_eq!(access.publisher_login("own"), Some(("alice", "p")));
            assert_eq!(access.publisher_login("signed"), Some(("global", "g")));
            assert_eq!(access.publisher_login("plain"), Some(("global", "g")));
            assert!(access.publish_control("signed").is_some());
            assert_eq!(
                access.apps.len(),
                2,
                "apps with nothing to say are left out"
            );
        }
    }

    #[test]
    fn access_stated_twice_or_badly_is_refused() {
        for (text, expected) in [
            (
                r#"{"Access": {"apps": []}, "RtmpSettings": {"login": "a", "password": "b"}}"#,
                "state them in Access only",
            ),
            (
                r#"{"Access": {"apps": [{"app": "x", "login": "a"}]}}"#,
                "Access.apps[0].password",
            ),
            (
                r#"{"Access": {"apps": [{"app": "x"}, {"app": "x"}]}}"#,
                "\"x\" is already used by Access.apps[0]",
            ),
            (
                r#"{"Access": {"apps": [{"app": "x", "publish_control": {"password": ""}}]}}"#,
                "publish_control.password",
            ),
            (r#"{"Access": {"users": []}}"#, "users"),
        ] {
            let error = match parse(text, std::path::Path::new("rules.conf")) {
                Ok(_) => String::new(),
                Err(e) => e.to_string(),
            };
            assert!(error.contains(expected), "{text}: {error}");
        }
    }
}
