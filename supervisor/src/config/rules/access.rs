//! Publisher access (login and publish control per app) as the `RtmpSettings` section
//! states it: `rules.conf` keeps writing it there, and every protocol's gate reads the
//! derived [`AccessSettings`] (as `Delivery` is derived from the legacy RTMP keys when
//! that section is absent).

use strom_ipc::access_rules::{AccessSettings, AppAccess};
use strom_ipc::rules::RtmpSettings;

/// The access settings of a validated `RtmpSettings`.
pub(super) fn from_rtmp(rtmp: &RtmpSettings) -> AccessSettings {
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
    fn rtmp_settings_keep_their_meaning_for_every_protocol() {
        let rules = parse(
            r#"{"RtmpSettings": {"login": "global", "password": "g",
                "apps": [{"app": "own", "login": "alice", "password": "p"},
                         {"app": "signed", "publish_control": {"password": "s"}},
                         {"app": "plain", "duration": 2}]}}"#,
            std::path::Path::new("rules.conf"),
        )
        .unwrap();
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
