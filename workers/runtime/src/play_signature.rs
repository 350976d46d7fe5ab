//! Playback signatures (`wmsAuthSign`), the scheme paywall code for this API already
//! generates: the query value is base64 of
//! `server_time=<M/D/YYYY h:mm:ss AM|PM>&hash_value=<h>&validminutes=<n>[&strm_len=<n>][&id=<ppv id>]`
//! where `h = base64(md5(<client ip, or id> + key + server_time + validminutes [+ the
//! first strm_len characters of app/stream]))`.
//!
//! `server_time` is hashed exactly as sent (zero-padded or not) and read as UTC; unknown
//! keys are tolerated. A signature is valid from `server_time` (minus the allowed skew)
//! until `validminutes` later (plus the skew). Several keys may be configured (rotation);
//! hashes are compared in constant time. With `id`, the hash covers the id instead of
//! the address: a pay-per-view customer, whatever network they watch from. An `id` that is
//! an IP address is refused: the hash cannot tell it from an address-bound signature's, so
//! appending `&id=<that address>` would make a signature bound to one address work from
//! any.

use base64::Engine;
use md5::{Digest, Md5};
use std::net::IpAddr;
use subtle::ConstantTimeEq;

/// Longest signature accepted (base64 text); real ones are about 200 characters.
const MAX_SIGNATURE: usize = 2048;

/// What a signature is checked against.
pub struct SignatureCheck<'a> {
    pub keys: &'a [String],
    pub client_ip: IpAddr,
    /// `app/stream` being played.
    pub stream: &'a str,
    pub now_unix: i64,
    /// Clock difference tolerated between the signing site and this server.
    pub skew_secs: i64,
}

/// A valid signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// The pay-per-view id the signature carries.
    pub ppv_id: Option<String>,
}

/// Why a signature was refused (for the log; clients only get the protocol's refusal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no signature")]
    Missing,
    #[error("malformed signature")]
    Malformed,
    #[error("signature expired or not yet valid")]
    Expired,
    #[error("signature does not cover this stream")]
    OtherStream,
    #[error("bad hash (wrong key, address or tampered)")]
    BadHash,
    #[error("pay-per-view id is an IP address")]
    IdIsAnAddress,
}

/// Checks `signature` (the `wmsAuthSign` value, percent-decoding already done).
pub fn verify(signature: Option<&str>, check: &SignatureCheck<'_>) -> Result<Signed, Refusal> {
    let signature = signature.ok_or(Refusal::Missing)?.trim();
    if signature.is_empty() {
        return Err(Refusal::Missing);
    }
    if signature.len() > MAX_SIGNATURE {
        return Err(Refusal::Malformed);
    }
    // Un-encoded `+` arrives as a space in query strings.
    let signature = signature.replace(' ', "+");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(signature.as_bytes())
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(signature.as_bytes()))
        .map_err(|_| Refusal::Malformed)?;
    let text = String::from_utf8(decoded).map_err(|_| Refusal::Malformed)?;
    let field = |name: &str| {
        text.split('&')
            .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
    };
    let server_time = field("server_time").ok_or(Refusal::Malformed)?;
    let hash_value = field("hash_value").ok_or(Refusal::Malformed)?;
    let valid_minutes = field("validminutes").ok_or(Refusal::Malformed)?;
    let minutes: i64 = valid_minutes.parse().map_err(|_| Refusal::Malformed)?;
    let signed_at = parse_server_time(server_time).ok_or(Refusal::Malformed)?;
    let skew = check.skew_secs.max(0);
    let expires = signed_at.saturating_add(minutes.saturating_mul(60));
    if check.now_unix < signed_at - skew || check.now_unix > expires.saturating_add(skew) {
        return Err(Refusal::Expired);
    }
    let prefix = match field("strm_len") {
        None => "",
        Some(length) => {
            let length: usize = length.parse().map_err(|_| Refusal::Malformed)?;
            check.stream.get(..length).ok_or(Refusal::OtherStream)?
        }
    };
    let ppv_id = field("id").filter(|id| !id.is_empty());
    if ppv_id.is_some_and(|id| id.trim().parse::<IpAddr>().is_ok()) {
        return Err(Refusal::IdIsAnAddress);
    }
    let subject = match ppv_id {
        Some(id) => id.to_owned(),
        None => check.client_ip.to_string(),
    };
    let hash_value = hash_value.replace(' ', "+");
    let matches = check.keys.iter().any(|key| {
        let expected = hash(&subject, key, server_time, valid_minutes, prefix);
        bool::from(expected.as_bytes().ct_eq(hash_value.as_bytes()))
    });
    if !matches {
        return Err(Refusal::BadHash);
    }
    Ok(Signed {
        ppv_id: ppv_id.map(str::to_owned),
    })
}

/// The playback check a delivery worker runs: `Ok(None)` when `app/stream` is not
/// protected for `protocol`, `Ok(Some(..))` for a valid signature, `Err` (to log) else.
pub fn check_playback(
    rules: &strom_ipc::rules::Rules,
    app: &str,
    stream: &str,
    protocol: strom_ipc::rules::ProtectedProtocol,
    signature: Option<&str>,
    client_ip: IpAddr,
) -> Result<Option<Signed>, Refusal> {
    let Some(protection) = rules.protection_for(app, stream, protocol) else {
        return Ok(None);
    };
    let path = format!("{app}/{stream}");
    let check = SignatureCheck {
        keys: &protection.keys,
        client_ip,
        stream: &path,
        now_unix: crate::clock::unix_now(),
        skew_secs: i64::from(protection.skew_secs),
    };
    verify(signature, &check).map(Some)
}

/// The value of `parameter` in a query string (`a=b&wmsAuthSign=...`), percent-decoded;
/// the gate's `Access::from_query` reads every signed token through it.
pub fn query_value(query: &str, parameter: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        (name == parameter).then(|| percent_decode(value))
    })
}

/// `%XX` escapes decoded (`+` kept: base64 uses it, and a space is read as one anyway).
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `base64(md5(subject + key + server_time + validminutes + prefix))`.
pub fn hash(
    subject: &str,
    key: &str,
    server_time: &str,
    valid_minutes: &str,
    prefix: &str,
) -> String {
    let mut md5 = Md5::new();
    for part in [subject, key, server_time, valid_minutes, prefix] {
        md5.update(part.as_bytes());
    }
    base64::engine::general_purpose::STANDARD.encode(md5.finalize())
}

/// `M/D/YYYY h:mm:ss AM|PM` (zero-padded or not) as Unix seconds, read as UTC.
fn parse_server_time(text: &str) -> Option<i64> {
    let (date, rest) = text.trim().split_once(' ')?;
    let (clock, meridiem) = rest.trim().split_once(' ')?;
    let mut date_parts = date.split('/').map(|p| p.parse::<i64>().ok());
    let (month, day, year) = (
        date_parts.next()??,
        date_parts.next()??,
        date_parts.next()??,
    );
    let mut clock_parts = clock.split(':').map(|p| p.parse::<i64>().ok());
    let (hour, minute, second) = (
        clock_parts.next()??,
        clock_parts.next()??,
        clock_parts.next()??,
    );
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || !(1..=12).contains(&hour)
        || !(0..60).contains(&minute)
        || !(0..61).contains(&second)
        || !(1970..=9999).contains(&year)
    {
        return None;
    }
    let hour = match meridiem.trim().to_ascii_uppercase().as_str() {
        "AM" => hour % 12,
        "PM" => hour % 12 + 12,
        _ => return None,
    };
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "defaultpassword";
    const TIME: &str = "11/21/2026 4:05:09 AM";

    fn sign(fields: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(fields)
    }

    fn check<'a>(keys: &'a [String], ip: &str, stream: &'a str, now: i64) -> SignatureCheck<'a> {
        SignatureCheck {
            keys,
            client_ip: ip.parse().unwrap(),
            stream,
            now_unix: now,
            skew_secs: 60,
        }
    }

    #[test]
    fn the_issue_test_vectors() {
        assert_eq!(
            hash("127.0.0.1", KEY, TIME, "20", "live/stream"),
            "K4EtvKfa7ygfoe+3Bdy2dg=="
        );
        assert_eq!(
            hash("127.0.0.1", KEY, TIME, "20", ""),
            "Bz4QmEA+gllKVUGgMyUA6Q=="
        );
        // 2026-11-21 04:05:09 UTC.
        assert_eq!(parse_server_time(TIME), Some(1_795_233_909));
        assert_eq!(
            parse_server_time("11/21/2026 04:05:09 am"),
            Some(1_795_233_909)
        );
        assert_eq!(parse_server_time("1/1/1970 12:00:00 AM"), Some(0));
        assert_eq!(
            parse_server_time("2/29/2024 12:00:00 PM"),
            Some(1_709_208_000)
        );
        assert_eq!(parse_server_time("13/1/2026 1:00:00 AM"), None);
    }

    #[test]
    fn valid_expired_tampered_other_address_and_rotation() {
        let keys = vec!["old".to_owned(), KEY.to_owned()];
        let signed_at = 1_795_233_909;
        let good = sign(&format!(
            "server_time={TIME}&hash_value=K4EtvKfa7ygfoe+3Bdy2dg==&validminutes=20&strm_len=11&extra=1"
        ));
        let now = signed_at + 600;
        let ok = verify(Some(&good), &check(&keys, "127.0.0.1", "live/stream", now));
        assert_eq!(ok, Ok(Signed { ppv_id: None }));
        // The signed prefix covers the stream only.
        assert_eq!(
            verify(Some(&good), &check(&keys, "127.0.0.1", "live/other1", now)),
            Err(Refusal::BadHash)
        );
        assert_eq!(
            verify(Some(&good), &check(&keys, "127.0.0.1", "live/x", now)),
            Err(Refusal::OtherStream)
        );
        // A prefix protects every stream that starts with it.
        assert!(verify(Some(&good), &check(&keys, "127.0.0.1", "live/stream2", now)).is_ok());
        assert_eq!(
            verify(Some(&good), &check(&keys, "10.0.0.9", "live/stream", now)),
            Err(Refusal::BadHash)
        );
        assert_eq!(
            verify(
                Some(&good),
                &check(&keys, "127.0.0.1", "live/stream", signed_at + 1200 + 61)
            ),
            Err(Refusal::Expired)
        );
        assert_eq!(
            verify(
                Some(&good),
                &check(&keys, "127.0.0.1", "live/stream", signed_at - 61)
            ),
            Err(Refusal::Expired)
        );
        // Tampered validity: the hash no longer matches.
        let longer = sign(&format!(
            "server_time={TIME}&hash_value=K4EtvKfa7ygfoe+3Bdy2dg==&validminutes=2000&strm_len=11"
        ));
        assert_eq!(
            verify(
                Some(&longer),
                &check(&keys, "127.0.0.1", "live/stream", now)
            ),
            Err(Refusal::BadHash)
        );
        // Spaces for `+` in the query are accepted.
        let spaced = good.replace('+', " ");
        assert!(
            verify(
                Some(&spaced),
                &check(&keys, "127.0.0.1", "live/stream", now)
            )
            .is_ok()
        );
        assert_eq!(
            verify(None, &check(&keys, "127.0.0.1", "a/b", now)),
            Err(Refusal::Missing)
        );
        assert_eq!(
            verify(Some("%%%"), &check(&keys, "127.0.0.1", "a/b", now)),
            Err(Refusal::Malformed)
        );
        let only_old = vec!["old".to_owned()];
        assert_eq!(
            verify(
                Some(&good),
                &check(&only_old, "127.0.0.1", "live/stream", now)
            ),
            Err(Refusal::BadHash)
        );
    }

    #[test]
    fn query_values_are_found_by_whole_name_and_decoded() {
        assert_eq!(
            query_value("a=1&wmsAuthSign=c2Vy%3D%3D&b=2", "wmsAuthSign").as_deref(),
            Some("c2Vy==")
        );
        assert_eq!(query_value("xwmsAuthSign=1", "wmsAuthSign"), None);
        assert_eq!(query_value("sid=3", "wmsAuthSign"), None);
    }

    #[test]
    fn escapes_are_decoded_and_plus_kept() {
        assert_eq!(percent_decode("c2Vy%3D%3D"), "c2Vy==");
        assert_eq!(percent_decode("ab+c"), "ab+c");
        assert_eq!(percent_decode("100%"), "100%", "a lone % is kept");
    }

    #[test]
    fn pay_per_view_ids_are_hashed_instead_of_the_address() {
        let keys = vec![KEY.to_owned()];
        let h = hash("customer-7", KEY, TIME, "20", "");
        let signature = sign(&format!(
            "server_time={TIME}&hash_value={h}&validminutes=20&id=customer-7"
        ));
        let now = 1_795_233_909 + 10;
        let signed = verify(
            Some(&signature),
            &check(&keys, "203.0.113.5", "live/x", now),
        )
        .unwrap();
        assert_eq!(signed.ppv_id.as_deref(), Some("customer-7"));
    }

    #[test]
    fn an_id_that_is_an_address_is_refused() {
        let keys = vec![KEY.to_owned()];
        let now = 1_795_233_909 + 10;
        // A signature bound to 127.0.0.1, with `&id=127.0.0.1` appended: the hash
        // matches, but it must not be usable from another address.
        let h = hash("127.0.0.1", KEY, TIME, "20", "");
        for id in ["127.0.0.1", "::1", "::ffff:127.0.0.1", "2001:db8::7"] {
            let h = if id == "127.0.0.1" {
                h.clone()
            } else {
                hash(id, KEY, TIME, "20", "")
            };
            let signature = sign(&format!(
                "server_time={TIME}&hash_value={h}&validminutes=20&id={id}"
            ));
            assert_eq!(
                verify(
                    Some(&signature),
                    &check(&keys, "203.0.113.5", "live/x", now)
                ),
                Err(Refusal::IdIsAnAddress),
                "{id}"
            );
        }
        // The same signature without the id still works from its own address.
        let bound = sign(&format!(
            "server_time={TIME}&hash_value={h}&validminutes=20"
        ));
        assert!(verify(Some(&bound), &check(&keys, "127.0.0.1", "live/x", now)).is_ok());
        // Ids that merely contain digits and dots are ids.
        let h = hash("order-1.2.3", KEY, TIME, "20", "");
        let signature = sign(&format!(
            "server_time={TIME}&hash_value={h}&validminutes=20&id=order-1.2.3"
        ));
        assert!(
            verify(
                Some(&signature),
                &check(&keys, "203.0.113.5", "live/x", now)
            )
            .is_ok()
        );
    }
}
