//! Who may publish to an app, apart from the RTMP listener settings: the publisher login
//! (global and per app) and publish control (`publishsign`, approval handler). In
//! `rules.conf` they are still written in `RtmpSettings` (`login`, `password`,
//! `apps[].login`, `apps[].password`, `apps[].publish_control`), so existing files keep
//! their meaning; the supervisor derives these settings from there (as it derives
//! `Delivery` when that key is absent) and the gate of every worker reads only these,
//! whatever protocol a publisher uses. A leaf: `rules` holds it.

use serde::{Deserialize, Serialize};

/// Signed publishing (`publishsign`) for one app.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishControl {
    pub password: String,
    /// Asked to approve every publish when set.
    pub handler_url: Option<String>,
    pub handler_timeout_ms: u32,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AccessSettings {
    /// The login of apps without their own; empty: none.
    pub login: String,
    pub password: String,
    pub apps: Vec<AppAccess>,
}

/// One app's own login and publish control.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct AppAccess {
    pub app: String,
    /// Empty: the global login applies.
    pub login: String,
    pub password: String,
    pub publish_control: Option<PublishControl>,
}

impl std::fmt::Debug for AccessSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a password into a log.
        f.debug_struct("AccessSettings")
            .field("login", &self.login)
            .field("password", &"***")
            .field("apps", &self.apps)
            .finish()
    }
}

impl std::fmt::Debug for AppAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppAccess")
            .field("app", &self.app)
            .field("login", &self.login)
            .field("password", &"***")
            .field("publish_control", &self.publish_control.is_some())
            .finish()
    }
}

impl AccessSettings {
    /// The login and password publishers of `app` must give: the app's own, else the
    /// global ones; `None` when no login is required.
    pub fn publisher_login(&self, app: &str) -> Option<(&str, &str)> {
        let (login, password) = match self.apps.iter().find(|a| a.app == app) {
            Some(own) if !own.login.is_empty() => (&own.login, &own.password),
            _ => (&self.login, &self.password),
        };
        (!login.is_empty()).then_some((login.as_str(), password.as_str()))
    }

    /// The publish control of `app`, if it has one.
    pub fn publish_control(&self, app: &str) -> Option<&PublishControl> {
        self.apps
            .iter()
            .find(|a| a.app == app)
            .and_then(|a| a.publish_control.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_apps_own_login_beats_the_global_one() {
        let app = |app: &str, login: &str, control: bool| AppAccess {
            app: app.into(),
            login: login.into(),
            password: "p".into(),
            publish_control: control.then(|| PublishControl {
                password: "s".into(),
                handler_url: None,
                handler_timeout_ms: 1000,
            }),
        };
        let mut access = AccessSettings {
            login: "global".into(),
            password: "g".into(),
            apps: vec![app("own", "alice", false), app("signed", "", true)],
        };
        assert_eq!(access.publisher_login("own"), Some(("alice", "p")));
        assert_eq!(access.publisher_login("signed"), Some(("global", "g")));
        assert_eq!(access.publisher_login("other"), Some(("global", "g")));
        assert!(access.publish_control("signed").is_some());
        assert!(access.publish_control("own").is_none());
        assert!(
            !format!("{access:?}").contains("\"g\""),
            "no password in Debug"
        );
        access.login.clear();
        assert_eq!(access.publisher_login("other"), None);
    }
}
