//! RFC 3339 times of playlist files (`2026-11-23T08:00:00Z`, `...T08:00:00.500+01:00`)
//! as Unix milliseconds, without a date-time crate for one format. [`parse_civil`] reads
//! the date and time of day alone, for the zone-less form ([`super::local_time`]).

/// A date and time of day as written, before any zone is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    pub month: i64,
    pub day: i64,
    pub hour: i64,
    pub minute: i64,
    pub second: i64,
    pub millis: i64,
}

/// `YYYY-MM-DD[T ]HH:MM:SS[.fff]` at the start of `text`, checked for range, and the
/// rest of `text` (the zone, if any).
pub fn parse_civil(text: &str) -> Option<(Civil, &str)> {
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    if bytes.len() < 19 || bytes[4] != b'-' || bytes[7] != b'-' {
        return None;
    }
    if !matches!(bytes[10], b'T' | b't' | b' ') || bytes[13] != b':' || bytes[16] != b':' {
        return None;
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = text.get(19..)?;
    let mut millis = 0;
    if let Some(fraction) = rest.strip_prefix('.') {
        let len = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if len == 0 {
            return None;
        }
        let padded = format!("{:0<3}", &fraction[..len.min(3)]);
        millis = padded.parse::<i64>().ok()?;
        rest = &fraction[len..];
    }
    let civil = Civil {
        year,
        month,
        day,
        hour,
        minute,
        second,
        millis,
    };
    Some((civil, rest))
}

/// Unix milliseconds of an RFC 3339 date-time; `None` when it is not one.
pub fn parse_ms(text: &str) -> Option<i64> {
    let (civil, rest) = parse_civil(text)?;
    let offset_minutes = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let zone = rest.get(1..)?;
            let (h, m) = zone.split_once(':')?;
            if h.len() != 2 || m.len() != 2 {
                return None;
            }
            let (h, m) = (h.parse::<i64>().ok()?, m.parse::<i64>().ok()?);
            if h > 23 || m > 59 {
                return None;
            }
            sign * (h * 60 + m)
        }
    };
    let days = days_from_civil(civil.year, civil.month, civil.day);
    let seconds =
        days * 86_400 + civil.hour * 3600 + civil.minute * 60 + civil.second - offset_minutes * 60;
    Some(seconds * 1000 + civil.millis)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
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
    use super::parse_ms;

    #[test]
    fn rfc3339_times_read_as_unix_milliseconds() {
        assert_eq!(parse_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_ms("2026-11-23T08:00:00Z"), Some(1_795_420_800_000));
        assert_eq!(
            parse_ms("2026-11-23T09:00:00.5+01:00"),
            Some(1_795_420_800_500)
        );
        assert_eq!(
            parse_ms("2024-02-29T00:00:00.123Z"),
            Some(1_709_164_800_123)
        );
        for bad in [
            "",
            "2026-11-23",
            "2026-11-23T08:00:00",
            "2026-13-01T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2026-11-23T24:00:00Z",
            "2026-11-23T08:00:00.Z",
            "2026-11-23T08:00:00+1:00",
            "2026-11-23T08:00:00Zjunk",
            "２０２６-11-23T08:00:00Z",
        ] {
            assert_eq!(parse_ms(bad), None, "{bad}");
        }
    }
}
