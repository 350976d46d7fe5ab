//! Who may publish: the app's publisher credentials and its publish control
//! (`Rules.access`, apart from the RTMP listener settings), the same for every ingest
//! protocol (RTMP, SRT, RTSP, Icecast). Configured inputs (UDP, RIST,
//! SRT callers the server dials) and pulls are the operator's own and do not ask.

use super::{Access, Admission, Admitted, Credentials, Gate, Handler, Refusal};
use std::time::Duration;
use strom_ipc::rules::Rules;
use strom_worker_runtime::publish_sign;
use subtle::ConstantTimeEq;

/// The login and password publishers of `app` must give (see
/// [`strom_ipc::access_rules::AccessSettings::publisher_login`]); `None` when none.
pub fn publisher_login(rules: &Rules, app: &str) -> Option<(String, String)> {
    rules
        .access
        .publisher_login(app)
        .map(|(login, password)| (login.to_owned(), password.to_owned()))
}

fn same(a: &str, b: &str) -> bool {
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

impl Gate {
    /// The login publishers of `app` must prove (for protocols that run a challenge
    /// against it: RTMP Adobe auth, RTSP Digest); `None` when none is required.
    pub fn publisher_login(&self, app: &str) -> Option<(String, String)> {
        publisher_login(&self.rules(), app)
    }

    /// Checks a publisher of `access.key`: its credentials when the app requires a
    /// login, its `publishsign` and the deny list when the app has publish control.
    pub fn admit_publisher(&self, access: &Access) -> Result<Admission, Refusal> {
        let rules = self.rules();
        if let Some((login, password)) = publisher_login(&rules, &access.key.app) {
            let proven = match &access.credentials {
                Credentials::Proven => true,
                Credentials::Login {
                    login: given,
                    password: given_password,
                } => same(given, &login) & same(given_password, &password),
                Credentials::None => false,
            };
            if !proven {
                // Rate limited: a password guesser would write a line per guess.
                strom_worker_runtime::limited_log!(warn, 5, std::time::Duration::from_secs(10); stream = %access.key, peer = %access.peer, protocol = access.protocol.as_str(), given = ?access.credentials, "publish refused: bad credentials");
                return Err(Refusal::BadAuth);
            }
        }
        let Some(control) = rules.access.publish_control(&access.key.app) else {
            return Ok(Admission {
                control_id: None,
                handler: None,
                admitted: Admitted::of(access),
            });
        };
        let id = publish_sign::verify(
            access.signature.as_deref(),
            &access.key.app,
            &access.key.stream,
            &control.password,
            &access.peer.to_string(),
        )
        .map_err(|e| Refusal::Denied(e.to_string()))?;
        if self.is_denied(&id) {
            return Err(Refusal::Denied(format!("publisher id {id} is denied")));
        }
        Ok(Admission {
            admitted: Admitted::of(access),
            control_id: Some(id),
            handler: control.handler_url.as_ref().map(|url| Handler {
                url: url.clone(),
                timeout: Duration::from_millis(u64::from(control.handler_timeout_ms)),
            }),
        })
    }
}
