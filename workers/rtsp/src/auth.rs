//! Publisher credentials over RTSP (RFC 2617 as RFC 2326 uses it): the server asks with
//! `WWW-Authenticate` for Digest (MD5, a nonce per connection) and Basic, and checks the
//! `Authorization` a client answers with against the login and password RTMP publishers
//! use (`RtmpSettings`, per app or global), comparing in constant time.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use md5::{Digest, Md5};
use subtle::ConstantTimeEq;

pub const REALM: &str = "strom";

/// The challenges of a 401 response, Digest first (what ffmpeg and cameras prefer).
pub fn challenges(nonce: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "WWW-Authenticate",
            format!("Digest realm=\"{REALM}\", nonce=\"{nonce}\""),
        ),
        ("WWW-Authenticate", format!("Basic realm=\"{REALM}\"")),
    ]
}

/// A fresh nonce for a connection's Digest challenges.
pub fn nonce() -> String {
    let bytes: [u8; 16] = rand::random();
    hex(&bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn md5_hex(text: &str) -> String {
    hex(&Md5::digest(text.as_bytes()))
}

fn equal(a: &str, b: &str) -> bool {
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// Whether `authorization` (the header's value) proves `login`/`password` for a
/// `method` request, Digest answers against `nonce`.
pub fn check(
    authorization: Option<&str>,
    method: &str,
    nonce: &str,
    login: &str,
    password: &str,
) -> bool {
    let Some(authorization) = authorization.map(str::trim) else {
        return false;
    };
    if let Some(encoded) = authorization.strip_prefix("Basic ") {
        let Ok(decoded) = STANDARD.decode(encoded.trim()) else {
            return false;
        };
        let Some((user, pass)) = std::str::from_utf8(&decoded)
            .ok()
            .and_then(|t| t.split_once(':'))
        else {
            return false;
        };
        // Both compared, so the time does not tell which one was wrong.
        return equal(user, login) & equal(pass, password);
    }
    let Some(params) = authorization.strip_prefix("Digest ") else {
        return false;
    };
    let field = |name: &str| digest_param(params, name);
    let (Some(user), Some(realm), Some(given_nonce), Some(uri), Some(response)) = (
        field("username"),
        field("realm"),
        field("nonce"),
        field("uri"),
        field("response"),
    ) else {
        return false;
    };
    let ha1 = md5_hex(&format!("{login}:{realm}:{password}"));
    let ha2 = md5_hex(&format!("{method}:{uri}"));
    let expected = md5_hex(&format!("{ha1}:{nonce}:{ha2}"));
    equal(user, login)
        & equal(given_nonce, nonce)
        & equal(&response.to_ascii_lowercase(), &expected)
}

/// The value of `name` in a Digest parameter list (`a="x", b=y`).
fn digest_param<'a>(params: &'a str, name: &str) -> Option<&'a str> {
    let mut rest = params;
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=')?;
        let after = after.trim_start();
        let (value, tail) = if let Some(quoted) = after.strip_prefix('"') {
            let end = quoted.find('"')?;
            (
                &quoted[..end],
                quoted[end + 1..].trim_start().trim_start_matches(','),
            )
        } else {
            match after.split_once(',') {
                Some((value, tail)) => (value.trim(), tail),
                None => (after.trim(), ""),
            }
        };
        if key.trim().eq_ignore_ascii_case(name) {
            return Some(value);
        }
        rest = tail.trim_start();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_and_digest_answers_are_checked() {
        let basic = format!("Basic {}", STANDARD.encode("user:pw"));
        assert!(check(Some(&basic), "ANNOUNCE", "n", "user", "pw"));
        assert!(!check(Some(&basic), "ANNOUNCE", "n", "user", "other"));
        assert!(!check(None, "ANNOUNCE", "n", "user", "pw"));
        assert!(!check(Some("Basic !!!"), "ANNOUNCE", "n", "user", "pw"));

        // RFC 2617's example arithmetic, with this server's realm and nonce.
        let nonce = "0123456789abcdef";
        let ha1 = md5_hex("user:strom:pw");
        let ha2 = md5_hex("ANNOUNCE:rtsp://h/live/cam");
        let response = md5_hex(&format!("{ha1}:{nonce}:{ha2}"));
        let digest = format!(
            "Digest username=\"user\", realm=\"strom\", nonce=\"{nonce}\", uri=\"rtsp://h/live/cam\", response=\"{response}\""
        );
        assert!(check(Some(&digest), "ANNOUNCE", nonce, "user", "pw"));
        assert!(!check(
            Some(&digest),
            "ANNOUNCE",
            "another nonce",
            "user",
            "pw"
        ));
        assert!(!check(Some(&digest), "SETUP", nonce, "user", "pw"));
        assert!(!check(Some(&digest), "ANNOUNCE", nonce, "user", "wrong"));
        assert!(!check(
            Some("Digest username=\"user\""),
            "ANNOUNCE",
            nonce,
            "user",
            "pw"
        ));
    }

    #[test]
    fn digest_parameters_are_read_quoted_or_not() {
        let params = "username=\"a b\", realm=strom,nonce=\"x,y\" , uri=\"rtsp://h/a\"";
        assert_eq!(digest_param(params, "username"), Some("a b"));
        assert_eq!(digest_param(params, "realm"), Some("strom"));
        assert_eq!(digest_param(params, "nonce"), Some("x,y"));
        assert_eq!(digest_param(params, "uri"), Some("rtsp://h/a"));
        assert_eq!(digest_param(params, "response"), None);
        assert_eq!(digest_param("broken\"", "x"), None);
    }
}
