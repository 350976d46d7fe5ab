//! Zone-less playlist times (`2026-11-23 08:00:00`, the commercial server's own form) as
//! Unix milliseconds in the server's local time zone, as the commercial server reads
//! them: a migrated playlist plays at the wall-clock times it always did. The zone is
//! the process's (`TZ`, else `/etc/localtime`), applied by the C library's `mktime`, so
//! daylight saving time is handled as the system knows it.

use super::utc::{Civil, parse_civil};

/// Unix milliseconds of `YYYY-MM-DD HH:MM:SS[.fff]` (or with `T`) in local time; `None`
/// when `text` is not that form (one with a zone is RFC 3339, read by `utc`).
pub fn parse_ms(text: &str) -> Option<i64> {
    let (civil, rest) = parse_civil(text)?;
    if !rest.is_empty() {
        return None;
    }
    Some(local_seconds(&civil)? * 1000 + civil.millis)
}

/// `mktime` of `civil`; `tm_isdst = -1` lets the C library decide whether daylight
/// saving time is in force at that date.
fn local_seconds(civil: &Civil) -> Option<libc::time_t> {
    // SAFETY: `tm` is a plain C struct for which all-zero is a valid value.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    tm.tm_year = i32::try_from(civil.year - 1900).ok()?;
    tm.tm_mon = i32::try_from(civil.month - 1).ok()?;
    tm.tm_mday = i32::try_from(civil.day).ok()?;
    tm.tm_hour = i32::try_from(civil.hour).ok()?;
    tm.tm_min = i32::try_from(civil.minute).ok()?;
    tm.tm_sec = i32::try_from(civil.second).ok()?;
    tm.tm_isdst = -1;
    // SAFETY: `tm` is a valid, exclusively borrowed `struct tm`; glibc's `mktime` is
    // thread-safe (it takes its own lock around the time zone state).
    let seconds = unsafe { libc::mktime(&mut tm) };
    // -1 is also a valid time (one second before 1970), never a playlist time.
    (seconds != -1).then_some(seconds)
}

#[cfg(test)]
mod tests {
    use super::parse_ms;

    /// The test process's zone is whatever the machine has: compare against `mktime`'s
    /// own offset for that instant instead of assuming UTC.
    #[test]
    fn zone_less_times_are_local_times() {
        let utc = super::super::utc::parse_ms("2026-11-23T08:00:00Z").unwrap();
        let local = parse_ms("2026-11-23 08:00:00").unwrap();
        let offset_s = (utc - local) / 1000;
        assert!(offset_s.abs() <= 14 * 3600, "offset {offset_s}");
        assert_eq!(
            parse_ms("2026-11-23T08:00:00.250").unwrap(),
            local + 250,
            "T and a fraction are accepted too"
        );
        for bad in [
            "",
            "2026-11-23",
            "2026-11-23 08:00",
            "2026-11-23 08:00:00Z",
            "2026-11-23 08:00:00 ",
            "2026-02-30 08:00:00",
            "2026-11-23 25:00:00",
        ] {
            assert_eq!(parse_ms(bad), None, "{bad}");
        }
    }
}
