//! Signed publishing: `publishsign = base64("id=<ID>&sign=<S>&ip=<IP>")` with
//! `S = base64(md5(<ID> + "/<app>/<stream>" + <password> + <IP>))`; `ip` is optional, and
//! when present the publisher's address must match it. Publishers of every protocol that
//! can carry it (RTMP in the app or stream query, SRT in the `streamid`) are checked here.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use md5::{Digest, Md5};
use subtle::ConstantTimeEq;

use crate::play_signature::percent_decode;

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    #[error("publishsign is missing")]
    Missing,
    #[error("publishsign is not valid base64 text")]
    Malformed,
    #[error("publishsign has no id or no sign")]
    Incomplete,
    #[error("publishsign is bound to {expected}, publisher is {actual}")]
    WrongAddress { expected: String, actual: String },
    #[error("publishsign signature does not match")]
    BadSignature,
}

/// The signature an operator's signer computes.
pub fn signature(id: &str, app: &str, stream: &str, password: &str, ip: &str) -> String {
    let digest = Md5::digest(format!("{id}/{app}/{stream}{password}{ip}").as_bytes());
    STANDARD.encode(digest)
}

/// Checks a `publishsign` value; returns the publisher id it carries.
pub fn verify(
    publishsign: Option<&str>,
    app: &str,
    stream: &str,
    password: &str,
    peer_ip: &str,
) -> Result<String, SignError> {
    let raw = publishsign
        .filter(|s| !s.is_empty())
        .ok_or(SignError::Missing)?;
    // The gate's adapters pass it percent-decoded (`Access::from_query`); decoding again
    // changes nothing in base64 text (no '%' in its alphabet) and keeps callers that pass
    // the raw query value ('%2B', '%3D') working. A '+' may arrive as ' '.
    let raw = percent_decode(raw).replace(' ', "+");
    let decoded = STANDARD
        .decode(raw.as_bytes())
        .map_err(|_| SignError::Malformed)?;
    let text = String::from_utf8(decoded).map_err(|_| SignError::Malformed)?;
    let mut id = None;
    let mut sign = None;
    let mut ip = None;
    for pair in text.split('&') {
        match pair.split_once('=') {
            Some(("id", v)) => id = Some(v),
            Some(("sign", v)) => sign = Some(v),
            Some(("ip", v)) => ip = Some(v),
            _ => {}
        }
    }
    let (Some(id), Some(sign)) = (id.filter(|v| !v.is_empty()), sign) else {
        return Err(SignError::Incomplete);
    };
    let ip = ip.unwrap_or_default();
    if !ip.is_empty() && ip != peer_ip {
        return Err(SignError::WrongAddress {
            expected: ip.to_owned(),
            actual: peer_ip.to_owned(),
        });
    }
    let expected = signature(id, app, stream, password, ip);
    if bool::from(expected.as_bytes().ct_eq(sign.as_bytes())) {
        Ok(id.to_owned())
    } else {
        Err(SignError::BadSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn make(id: &str, ip: &str, password: &str) -> String {
        let sign = signature(id, "live", "cam", password, ip);
        let text = if ip.is_empty() {
            format!("id={id}&sign={sign}")
        } else {
            format!("id={id}&sign={sign}&ip={ip}")
        };
        STANDARD.encode(text)
    }

    #[test]
    fn verifies_signed_publishes() {
        assert_eq!(
            verify(
                Some(&make("pub1", "", "pw")),
                "live",
                "cam",
                "pw",
                "10.0.0.1"
            ),
            Ok("pub1".into())
        );
        assert_eq!(
            verify(
                Some(&make("pub1", "10.0.0.1", "pw")),
                "live",
                "cam",
                "pw",
                "10.0.0.1"
            ),
            Ok("pub1".into())
        );
        assert!(matches!(
            verify(
                Some(&make("pub1", "10.0.0.2", "pw")),
                "live",
                "cam",
                "pw",
                "10.0.0.1"
            ),
            Err(SignError::WrongAddress { .. })
        ));
        assert_eq!(
            verify(
                Some(&make("pub1", "", "other")),
                "live",
                "cam",
                "pw",
                "1.1.1.1"
            ),
            Err(SignError::BadSignature)
        );
        assert_eq!(
            verify(
                Some(&make("pub1", "", "pw")),
                "live",
                "other",
                "pw",
                "1.1.1.1"
            ),
            Err(SignError::BadSignature)
        );
        assert_eq!(
            verify(None, "live", "cam", "pw", "1.1.1.1"),
            Err(SignError::Missing)
        );
        assert_eq!(
            verify(Some("!!!"), "live", "cam", "pw", "1.1.1.1"),
            Err(SignError::Malformed)
        );
        let encoded: String = make("pub1", "", "pw")
            .replace('+', "%2B")
            .replace('=', "%3D");
        assert_eq!(
            verify(Some(&encoded), "live", "cam", "pw", "1.1.1.1"),
            Ok("pub1".into())
        );
    }
}
