//! What an Icecast source is told, as Icecast 2.4 tells it (status lines encoders and
//! their users recognize), and the HTTP Basic check of its credentials.

use base64::Engine;
use strom_ipc::rules::IcecastSourceSettings;
use subtle::ConstantTimeEq;

/// Why a source is not taken; each has Icecast's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No credentials, wrong ones, or no `IcecastSources` entry for the mount.
    Unauthorized,
    MountInUse,
    ContentTypeNotSupported,
    BadMount,
    TooManySources,
    BadRequest(String),
}

impl Refusal {
    /// The whole answer: status line, headers, a short body.
    pub fn answer(&self) -> Vec<u8> {
        let (status, text) = match self {
            Refusal::Unauthorized => ("401 Authentication Required", "You need to authenticate"),
            Refusal::MountInUse => ("403 Mountpoint in use", "Mountpoint in use"),
            Refusal::ContentTypeNotSupported => (
                "403 Content-type not supported",
                "Content-type not supported",
            ),
            Refusal::BadMount => ("403 Mountpoint not allowed", "Mountpoint not allowed"),
            Refusal::TooManySources => ("403 Too many sources connected", "Too many sources"),
            Refusal::BadRequest(_) => ("400 Bad Request", "Bad request"),
        };
        let challenge = if *self == Refusal::Unauthorized {
            "WWW-Authenticate: Basic realm=\"Icecast2 Server\"\r\n"
        } else {
            ""
        };
        format!(
            "HTTP/1.0 {status}\r\n{challenge}Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\r\n{text}\r\n",
            text.len() + 2
        )
        .into_bytes()
    }
}

/// Whether `authorization` (an `Authorization` header) carries `entry`'s user and
/// password; both are compared in constant time.
pub fn authorized(authorization: Option<&str>, entry: &IcecastSourceSettings) -> bool {
    let Some((user, password)) = authorization.and_then(basic_credentials) else {
        return false;
    };
    let user_ok = user.as_bytes().ct_eq(entry.user.as_bytes());
    let password_ok = password.as_bytes().ct_eq(entry.password.as_bytes());
    bool::from(user_ok & password_ok)
}

/// `Basic base64(user:password)` split into its two parts.
fn basic_credentials(header: &str) -> Option<(String, String)> {
    let (scheme, encoded) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") || encoded.len() > 2048 {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> IcecastSourceSettings {
        IcecastSourceSettings {
            app: "live".into(),
            stream: String::new(),
            user: "source".into(),
            password: "hackme".into(),
        }
    }

    #[test]
    fn basic_credentials_are_checked() {
        // base64("source:hackme")
        assert!(authorized(Some("Basic c291cmNlOmhhY2ttZQ=="), &entry()));
        assert!(authorized(Some("basic  c291cmNlOmhhY2ttZQ== "), &entry()));
        // base64("source:hackm")
        assert!(!authorized(Some("Basic c291cmNlOmhhY2tt"), &entry()));
        assert!(!authorized(Some("Bearer c291cmNlOmhhY2ttZQ=="), &entry()));
        assert!(!authorized(Some("Basic !!!"), &entry()));
        assert!(!authorized(None, &entry()));
    }

    #[test]
    fn answers_carry_icecasts_status_lines() {
        let text = String::from_utf8(Refusal::MountInUse.answer()).unwrap();
        assert!(
            text.starts_with("HTTP/1.0 403 Mountpoint in use\r\n"),
            "{text}"
        );
        let text = String::from_utf8(Refusal::Unauthorized.answer()).unwrap();
        assert!(text.starts_with("HTTP/1.0 401 "), "{text}");
        assert!(text.contains("WWW-Authenticate: Basic"), "{text}");
        let text = String::from_utf8(Refusal::ContentTypeNotSupported.answer()).unwrap();
        assert!(text.starts_with("HTTP/1.0 403 Content-type not supported\r\n"));
    }
}
