//! The DVR file names under `/<app>/<stream>/` and what they ask for.
//!
//! Playlists are named like the live ones with a DVR part before `.m3u8`:
//! `playlist[_fmp4]_dvr<window>.m3u8` (master, opens a viewer session) and
//! `chunks[_fmp4]_dvr<window>.m3u8` (media playlist of a session), where `<window>` is
//! empty (the whole archive), `_range-<start>-<duration>` (UTC seconds; `now` as the
//! duration for an open end) or `_timeshift-<shift>-<depth>` (seconds). Segments are
//! `dvr_<seq>.ts`, `dvr_<seq>.m4s` and `dvr_init_<seq>.mp4`, `<seq>` the archive's
//! segment number.

/// Numbers in DVR names have at most this many digits: seconds since 1970 have 10 for
/// centuries, and a bound keeps the arithmetic on them far from overflow.
const MAX_DIGITS: usize = 12;
/// Segment numbers: `u64` has 20 digits.
const MAX_SEQ_DIGITS: usize = 20;

/// Which part of the archive a playlist covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// Everything recorded, up to the live edge.
    Whole,
    /// From `start` (Unix seconds) for `duration` seconds, or up to the live edge.
    Range { start: i64, duration: Option<i64> },
    /// The `depth` seconds that end `shift` seconds before now (sliding).
    Timeshift { shift: i64, depth: i64 },
}

impl Window {
    /// The part of a playlist name after `_dvr` (`_range-<start>-<duration>` ...).
    pub fn suffix(&self) -> String {
        match self {
            Window::Whole => String::new(),
            Window::Range {
                start,
                duration: Some(duration),
            } => format!("_range-{start}-{duration}"),
            Window::Range {
                start,
                duration: None,
            } => format!("_range-{start}-now"),
            Window::Timeshift { shift, depth } => format!("_timeshift-{shift}-{depth}"),
        }
    }
}

/// What a DVR URL asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DvrFile {
    /// A master playlist: opens a viewer session.
    Master { window: Window, fmp4: bool },
    /// The media playlist a master points at.
    Media { window: Window, fmp4: bool },
    /// One archive segment as MPEG-TS or as an fMP4 media segment.
    Segment { seq: u64, fmp4: bool },
    /// The fMP4 init segment of the configuration segment `seq` carries.
    Init { seq: u64 },
}

impl DvrFile {
    /// `None` for every name that is not a DVR name.
    pub fn parse(file: &str) -> Option<Self> {
        if let Some(seq) = file
            .strip_prefix("dvr_init_")
            .and_then(|f| f.strip_suffix(".mp4"))
        {
            return Some(DvrFile::Init {
                seq: number(seq, MAX_SEQ_DIGITS)?,
            });
        }
        if let Some(rest) = file.strip_prefix("dvr_") {
            if let Some(seq) = rest.strip_suffix(".ts") {
                let seq = number(seq, MAX_SEQ_DIGITS)?;
                return Some(DvrFile::Segment { seq, fmp4: false });
            }
            let seq = number(rest.strip_suffix(".m4s")?, MAX_SEQ_DIGITS)?;
            return Some(DvrFile::Segment { seq, fmp4: true });
        }
        let stem = file.strip_suffix(".m3u8")?;
        let (master, rest) = match stem.strip_prefix("playlist") {
            Some(rest) => (true, rest),
            None => (false, stem.strip_prefix("chunks")?),
        };
        let (fmp4, rest) = match rest.strip_prefix("_fmp4") {
            Some(rest) => (true, rest),
            None => (false, rest),
        };
        let window = window(rest.strip_prefix("_dvr")?)?;
        Some(if master {
            DvrFile::Master { window, fmp4 }
        } else {
            DvrFile::Media { window, fmp4 }
        })
    }
}

fn window(text: &str) -> Option<Window> {
    if text.is_empty() {
        return Some(Window::Whole);
    }
    if let Some(args) = text.strip_prefix("_range-") {
        let (start, duration) = args.split_once('-')?;
        let duration = match duration {
            "now" => None,
            secs => Some(number(secs, MAX_DIGITS)?),
        };
        return Some(Window::Range {
            start: number(start, MAX_DIGITS)?,
            duration,
        });
    }
    let (shift, depth) = text.strip_prefix("_timeshift-")?.split_once('-')?;
    Some(Window::Timeshift {
        shift: number(shift, MAX_DIGITS)?,
        depth: number(depth, MAX_DIGITS)?,
    })
}

/// Plain decimal digits only (no sign, no spaces), at most `max` of them.
fn number<T: std::str::FromStr>(text: &str, max: usize) -> Option<T> {
    if text.is_empty() || text.len() > max || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_into_what_they_ask_for() {
        let cases = [
            (
                "playlist_dvr.m3u8",
                Some(DvrFile::Master {
                    window: Window::Whole,
                    fmp4: false,
                }),
            ),
            (
                "playlist_fmp4_dvr_range-1700000000-60.m3u8",
                Some(DvrFile::Master {
                    window: Window::Range {
                        start: 1_700_000_000,
                        duration: Some(60),
                    },
                    fmp4: true,
                }),
            ),
            (
                "chunks_dvr_range-1700000000-now.m3u8",
                Some(DvrFile::Media {
                    window: Window::Range {
                        start: 1_700_000_000,
                        duration: None,
                    },
                    fmp4: false,
                }),
            ),
            (
                "chunks_fmp4_dvr_timeshift-30-120.m3u8",
                Some(DvrFile::Media {
                    window: Window::Timeshift {
                        shift: 30,
                        depth: 120,
                    },
                    fmp4: true,
                }),
            ),
            (
                "dvr_17.ts",
                Some(DvrFile::Segment {
                    seq: 17,
                    fmp4: false,
                }),
            ),
            (
                "dvr_17.m4s",
                Some(DvrFile::Segment {
                    seq: 17,
                    fmp4: true,
                }),
            ),
            ("dvr_init_3.mp4", Some(DvrFile::Init { seq: 3 })),
            ("playlist.m3u8", None),
            ("playlist_fmp4.m3u8", None),
            ("chunks.m3u8", None),
            ("seg_1.ts", None),
            ("playlist_dvr_range-+5-10.m3u8", None),
            ("playlist_dvr_range-5--10.m3u8", None),
            ("playlist_dvr_range-5.m3u8", None),
            ("playlist_dvr_timeshift-1-now.m3u8", None),
            ("playlist_dvr_range-1234567890123-1.m3u8", None),
            ("playlist_dvrx.m3u8", None),
            ("dvr_.ts", None),
            ("dvr_1.mp4", None),
            ("dvr_99999999999999999999999.ts", None),
        ];
        for (name, expected) in cases {
            assert_eq!(DvrFile::parse(name), expected, "{name}");
        }
    }

    #[test]
    fn a_window_names_itself_as_it_was_asked_for() {
        for name in [
            "chunks_dvr.m3u8",
            "chunks_dvr_range-1700000000-60.m3u8",
            "chunks_dvr_range-1700000000-now.m3u8",
            "chunks_dvr_timeshift-30-120.m3u8",
        ] {
            let Some(DvrFile::Media { window, .. }) = DvrFile::parse(name) else {
                panic!("{name} does not parse");
            };
            assert_eq!(format!("chunks_dvr{}.m3u8", window.suffix()), name);
        }
    }
}
