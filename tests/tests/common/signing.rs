//! Playback signatures (`wmsAuthSign`) as an operator's signer writes them, for the tests
//! of signed playback over every protocol.

use base64::Engine;
use md5::{Digest, Md5};
use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in Unix seconds.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// `M/D/YYYY h:mm:ss AM|PM` of Unix time `unix` (UTC).
pub fn server_time(unix: i64) -> String {
    let (days, seconds) = (unix.div_euclid(86_400), unix.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (hour, minute, second) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    let (h12, meridiem) = match hour {
        0 => (12, "AM"),
        1..=11 => (hour, "AM"),
        12 => (12, "PM"),
        _ => (hour - 12, "PM"),
    };
    format!("{month}/{day}/{year} {h12}:{minute:02}:{second:02} {meridiem}")
}

/// A `wmsAuthSign` for a viewer at `subject` (an address), signed with `key` at
/// `signed_at` and valid `minutes`; not URL-encoded.
pub fn signature(subject: &str, key: &str, signed_at: i64, minutes: u32) -> String {
    let time = server_time(signed_at);
    let hash = base64::engine::general_purpose::STANDARD.encode(Md5::digest(
        format!("{subject}{key}{time}{minutes}").as_bytes(),
    ));
    base64::engine::general_purpose::STANDARD.encode(format!(
        "server_time={time}&hash_value={hash}&validminutes={minutes}"
    ))
}

/// `text` percent-encoded for a URL query or an SRT streamid.
pub fn url_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
