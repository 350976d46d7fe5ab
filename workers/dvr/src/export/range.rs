//! The HTTP `Range` header of an export, against the size of the file (RFC 9110 §14).
//!
//! One byte range is served as 206; a range that starts past the end is 416. Anything
//! else (another unit, several ranges, a malformed or inverted range) is ignored, as
//! the RFC allows, and the whole file is sent.

/// What to send of a file of `total` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wanted {
    Whole,
    /// Bytes `first..=last`.
    Part {
        first: u64,
        last: u64,
    },
    Unsatisfiable,
}

pub(super) fn wanted(range: Option<&str>, total: u64) -> Wanted {
    let Some(spec) = range.and_then(|r| r.trim().strip_prefix("bytes=")) else {
        return Wanted::Whole;
    };
    if spec.contains(',') || total == 0 {
        return Wanted::Whole;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return Wanted::Whole;
    };
    let number = |s: &str| -> Option<u64> {
        let s = s.trim();
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // Longer than u64: past any file's end.
        Some(s.parse().unwrap_or(u64::MAX))
    };
    match (first.trim().is_empty(), number(first), number(last)) {
        // bytes=-N: the last N bytes.
        (true, _, Some(0)) => Wanted::Unsatisfiable,
        (true, _, Some(suffix)) => Wanted::Part {
            first: total.saturating_sub(suffix),
            last: total - 1,
        },
        (false, Some(first), _) if first >= total => Wanted::Unsatisfiable,
        (false, Some(first), None) if last.trim().is_empty() => Wanted::Part {
            first,
            last: total - 1,
        },
        (false, Some(first), Some(last)) if last >= first => Wanted::Part {
            first,
            last: last.min(total - 1),
        },
        _ => Wanted::Whole,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_against_a_file_of_1000_bytes() {
        let part = |first, last| Wanted::Part { first, last };
        for (range, expected) in [
            (None, Wanted::Whole),
            (Some("bytes=0-99"), part(0, 99)),
            (Some("bytes=100-"), part(100, 999)),
            (Some("bytes=-100"), part(900, 999)),
            (Some("bytes=-5000"), part(0, 999)),
            (Some("bytes=990-5000"), part(990, 999)),
            (Some("bytes=999-999"), part(999, 999)),
            (Some("bytes=1000-"), Wanted::Unsatisfiable),
            (Some("bytes=1000-1001"), Wanted::Unsatisfiable),
            (Some("bytes=-0"), Wanted::Unsatisfiable),
            (
                Some("bytes=99999999999999999999999-"),
                Wanted::Unsatisfiable,
            ),
            (Some("bytes=5-1"), Wanted::Whole),
            (Some("bytes=0-1,5-9"), Wanted::Whole),
            (Some("items=0-1"), Wanted::Whole),
            (Some("bytes=a-b"), Wanted::Whole),
            (Some("bytes=-"), Wanted::Whole),
            (Some("bytes=+1-2"), Wanted::Whole),
        ] {
            assert_eq!(wanted(range, 1000), expected, "{range:?}");
        }
    }
}
