//! Short-lived signatures for one management URL: the web console's "Export MP4" link.
//!
//! A download link ends up in the browser's download history (and in whatever else
//! records URLs); signed with `salt` and `hash` it would carry a credential that is valid
//! for every endpoint, forever (see [`crate::auth`]). The console signs that link instead
//! with `expires=<unix seconds>&sig=<base64(md5("<token>/<expires>/<path>/<token>"))>`:
//! valid for that one path, until `expires`, which may lie at most
//! [`MAX_LINK_SECS`] ahead. The token on both sides keeps MD5's length extension from
//! stretching a signature to another path, and makes a link signature useless as a
//! `salt`/`hash` pair (whose salt would have to start with the token).
//!
//! Only `GET /manage/dvr/export_mp4/...` accepts it ([`LINK_PATH_PREFIX`]).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use md5::{Digest, Md5};
use subtle::ConstantTimeEq;

/// The paths a link signature opens.
pub const LINK_PATH_PREFIX: &str = "/manage/dvr/export_mp4/";

/// How far ahead a link may expire: long enough for a click after the page signed it,
/// short enough that a link from the history is dead.
pub const MAX_LINK_SECS: u64 = 300;

/// Why a signed link was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LinkFailure {
    #[error("missing or malformed expires parameter")]
    BadExpires,
    #[error("missing sig parameter")]
    MissingSignature,
    #[error("the signed link has expired")]
    Expired,
    #[error("the signed link expires more than {MAX_LINK_SECS} s ahead")]
    TooLong,
    #[error("sig does not match the path, expires and token")]
    WrongSignature,
}

/// The `sig` of `path` until `expires` for `token`.
pub fn signature(token: &str, expires: u64, path: &str) -> String {
    let digest = Md5::digest(format!("{token}/{expires}/{path}/{token}").as_bytes());
    STANDARD.encode(digest)
}

/// Whether the query carries a link signature (`sig`) rather than `salt`/`hash`.
pub fn is_signed_link(raw_query: Option<&str>) -> bool {
    form_urlencoded::parse(raw_query.unwrap_or_default().as_bytes()).any(|(key, _)| key == "sig")
}

/// Checks a link signature of `path` (the raw path, as sent) at `now` (Unix seconds).
pub fn verify(
    path: &str,
    raw_query: Option<&str>,
    token: &str,
    now: u64,
) -> Result<(), LinkFailure> {
    let mut expires = None;
    let mut sig = None;
    for (key, value) in form_urlencoded::parse(raw_query.unwrap_or_default().as_bytes()) {
        match key.as_ref() {
            "expires" if expires.is_none() => expires = Some(value.into_owned()),
            // An unencoded '+' arrives as a space, as with `hash`.
            "sig" if sig.is_none() => sig = Some(value.replace(' ', "+")),
            _ => {}
        }
    }
    let expires: u64 = expires
        .and_then(|text| text.parse().ok())
        .ok_or(LinkFailure::BadExpires)?;
    let sig = sig
        .filter(|s| !s.is_empty())
        .ok_or(LinkFailure::MissingSignature)?;
    if expires < now {
        return Err(LinkFailure::Expired);
    }
    if expires - now > MAX_LINK_SECS {
        return Err(LinkFailure::TooLong);
    }
    let expected = signature(token, expires, path);
    if bool::from(expected.as_bytes().ct_eq(sig.as_bytes())) {
        Ok(())
    } else {
        Err(LinkFailure::WrongSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: &str = "/manage/dvr/export_mp4/live/cam";

    fn query(expires: u64, sig: &str) -> String {
        let sig: String = form_urlencoded::byte_serialize(sig.as_bytes()).collect();
        format!("start=10&expires={expires}&sig={sig}")
    }

    #[test]
    fn a_link_opens_its_path_until_it_expires() {
        let now = 1_700_000_000;
        let sig = signature("t0ken", now + 60, PATH);
        let good = query(now + 60, &sig);
        assert_eq!(verify(PATH, Some(&good), "t0ken", now), Ok(()));
        assert_eq!(verify(PATH, Some(&good), "t0ken", now + 60), Ok(()));
        assert_eq!(
            verify(PATH, Some(&good), "t0ken", now + 61),
            Err(LinkFailure::Expired)
        );
        let other_path = "/manage/dvr/export_mp4/live/other";
        assert_eq!(
            verify(other_path, Some(&good), "t0ken", now),
            Err(LinkFailure::WrongSignature)
        );
        assert_eq!(
            verify(PATH, Some(&good), "other", now),
            Err(LinkFailure::WrongSignature)
        );
        let far = now + MAX_LINK_SECS + 1;
        let long = query(far, &signature("t0ken", far, PATH));
        assert_eq!(
            verify(PATH, Some(&long), "t0ken", now),
            Err(LinkFailure::TooLong)
        );
        assert_eq!(
            verify(PATH, Some("sig=abc"), "t0ken", now),
            Err(LinkFailure::BadExpires)
        );
        assert_eq!(
            verify(PATH, Some("expires=5"), "t0ken", 0),
            Err(LinkFailure::MissingSignature)
        );
        assert!(is_signed_link(Some(&good)));
        assert!(!is_signed_link(Some("salt=1&hash=x")));
    }

    #[test]
    fn a_link_signature_is_no_salt_and_hash() {
        let now = 1_700_000_000;
        let sig = signature("t0ken", now + 60, PATH);
        // The pair a captured link could be turned into: salt "<expires>/<path>".
        let salt = format!("{}/{PATH}", now + 60);
        let encoded: String = form_urlencoded::byte_serialize(sig.as_bytes()).collect();
        let salt: String = form_urlencoded::byte_serialize(salt.as_bytes()).collect();
        let pair = format!("salt={salt}&hash={encoded}");
        assert!(crate::auth::verify(Some(&pair), "t0ken").is_err());
    }

    /// The console computes the same signature (`StromSign.linkSignature` in
    /// `assets/console/sign.js`): printf 't0ken/1700000060//manage/dvr/export_mp4/live/cam/t0ken' | openssl md5 -binary | base64
    #[test]
    fn signature_vector() {
        assert_eq!(signature("t0ken", 1_700_000_060, PATH), LINK_VECTOR);
    }

    const LINK_VECTOR: &str = "cTcjDO1tkgsoe3bzERwD2w==";
}
