//! Management API authentication: `hash = base64(md5("<salt>/<token>"))`.
//!
//! Used by the API middleware to check requests and by `strom sign` to make them.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use md5::{Digest, Md5};
use subtle::ConstantTimeEq;

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AuthFailure {
    #[error("missing salt parameter")]
    MissingSalt,
    #[error("missing hash parameter")]
    MissingHash,
    #[error("hash does not match salt and token")]
    WrongHash,
}

/// The hash a caller must send with `salt` for `token`.
pub fn hash_for(salt: &str, token: &str) -> String {
    let digest = Md5::digest(format!("{salt}/{token}").as_bytes());
    STANDARD.encode(digest)
}

/// Checks the `salt` and `hash` query parameters of a request against `token`.
///
/// Callers often put the hash in the URL without encoding it, so its `+` arrives as a
/// space; spaces are turned back into `+` before comparing. The comparison takes the same
/// time wherever the first difference is.
pub fn verify(raw_query: Option<&str>, token: &str) -> Result<(), AuthFailure> {
    let mut salt = None;
    let mut hash = None;
    for (key, value) in form_urlencoded::parse(raw_query.unwrap_or_default().as_bytes()) {
        match key.as_ref() {
            "salt" if salt.is_none() => salt = Some(value.into_owned()),
            "hash" if hash.is_none() => hash = Some(value.replace(' ', "+")),
            _ => {}
        }
    }
    let salt = salt
        .filter(|s| !s.is_empty())
        .ok_or(AuthFailure::MissingSalt)?;
    let hash = hash
        .filter(|h| !h.is_empty())
        .ok_or(AuthFailure::MissingHash)?;
    let expected = hash_for(&salt, token);
    if bool::from(expected.as_bytes().ct_eq(hash.as_bytes())) {
        Ok(())
    } else {
        Err(AuthFailure::WrongHash)
    }
}

/// Appends `salt` and `hash` for `token` to a management path or URL.
pub fn sign_url(base: &str, path: &str, token: &str, salt: u32) -> String {
    let hash = hash_for(&salt.to_string(), token);
    let encoded: String = form_urlencoded::byte_serialize(hash.as_bytes()).collect();
    let separator = if path.contains('?') { '&' } else { '?' };
    let path = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    };
    format!(
        "{}{path}{separator}salt={salt}&hash={encoded}",
        base.trim_end_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// base64(md5("12345/secret")), computed independently with openssl:
    /// `printf 12345/secret | openssl md5 -binary | base64`.
    const VECTOR: &str = "4++kTfafPcBE3wZtfYYcJA==";

    #[test]
    fn hash_matches_the_reference_vector() {
        assert_eq!(hash_for("12345", "secret"), VECTOR);
    }

    #[test]
    fn auth_vectors() {
        let encoded: String = form_urlencoded::byte_serialize(VECTOR.as_bytes()).collect();
        let good = format!("salt=12345&hash={encoded}");
        assert_eq!(verify(Some(&good), "secret"), Ok(()));
        assert_eq!(
            verify(
                Some("salt=12345&hash=AAAAAAAAAAAAAAAAAAAAAA%3D%3D"),
                "secret"
            ),
            Err(AuthFailure::WrongHash)
        );
        assert_eq!(
            verify(Some(&format!("hash={encoded}")), "secret"),
            Err(AuthFailure::MissingSalt)
        );
        assert_eq!(
            verify(Some("salt=12345"), "secret"),
            Err(AuthFailure::MissingHash)
        );
        assert_eq!(verify(None, "secret"), Err(AuthFailure::MissingSalt));
        let other_token = hash_for("12345", "other");
        let other: String = form_urlencoded::byte_serialize(other_token.as_bytes()).collect();
        assert_eq!(
            verify(Some(&format!("salt=12345&hash={other}")), "secret"),
            Err(AuthFailure::WrongHash)
        );
    }

    #[test]
    fn an_unencoded_plus_still_passes() {
        // The vector has '+' in it; sent raw, form decoding turns each into a space.
        let raw = format!("salt=12345&hash={VECTOR}");
        assert!(raw.contains('+'));
        assert_eq!(verify(Some(&raw), "secret"), Ok(()));
    }

    #[test]
    fn signed_urls_verify() {
        let url = sign_url(
            "http://127.0.0.1:8082",
            "/manage/server_status",
            "secret",
            777,
        );
        let query = url.split_once('?').unwrap().1;
        assert_eq!(verify(Some(query), "secret"), Ok(()));
        let with_query = sign_url("http://h:1/", "manage/dvr_status?timeline=true", "t", 1);
        assert!(with_query.starts_with("http://h:1/manage/dvr_status?timeline=true&salt=1&hash="));
    }
}
