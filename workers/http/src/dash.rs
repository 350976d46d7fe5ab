//! MPEG-DASH delivery of packaged streams: the live manifest (`manifest.mpd`), built from
//! the same fMP4 segments as HLS (each segment holds one CMAF fragment per track, and
//! each track's fragment is that track's DASH segment), and the names of its files under
//! `/<app>/<stream>/`: `dash_v_<n>.m4s`, `dash_a_<n>.m4s`, `dash_init_v_<id>.mp4`,
//! `dash_init_a_<id>.mp4`.
//!
//! A stream's manifest has a period per run of segments with one timeline and init
//! segment (a new publisher starts a new period). An ABR group's manifest has one
//! period with a representation per member stream, from each member's latest run; the
//! members' media times map to wall-clock time, so their segments line up by the time
//! they were live.

use crate::store::{DashListing, DashParts, DashTrack, PLAYLIST_WINDOW};
use base64::Engine;
use strom_media::dash::mpd::{
    AdaptationSet, ContentType, Event, EventStream, Manifest, Period, Representation,
    TimelineEntry, render,
};
use strom_media::hls::cues::MAX_MARKERS_PER_SEGMENT;
use strom_media::scte35::SpliceInfo;

/// The manifest's file name.
pub const MANIFEST: &str = "manifest.mpd";
/// Its content type.
pub const MANIFEST_TYPE: &str = "application/dash+xml";

/// A DASH file other than the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DashFile {
    Segment { sequence: u64, audio: bool },
    Init { id: u64, audio: bool },
}

impl DashFile {
    pub fn parse(name: &str) -> Option<Self> {
        let number = |rest: &str, suffix: &str| rest.strip_suffix(suffix)?.parse::<u64>().ok();
        if let Some(rest) = name.strip_prefix("dash_init_") {
            let (audio, rest) = track(rest)?;
            return Some(DashFile::Init {
                id: number(rest, ".mp4")?,
                audio,
            });
        }
        let (audio, rest) = track(name.strip_prefix("dash_")?)?;
        Some(DashFile::Segment {
            sequence: number(rest, ".m4s")?,
            audio,
        })
    }
}

fn track(rest: &str) -> Option<(bool, &str)> {
    match rest.split_at_checked(2)? {
        ("v_", rest) => Some((false, rest)),
        ("a_", rest) => Some((true, rest)),
        _ => None,
    }
}

/// One stream in a manifest: what it holds and the URL prefix of its files relative to
/// the manifest (`""`, or `../../<app>/<stream>/` for an ABR member).
pub struct Rendition {
    pub listing: DashListing,
    pub prefix: String,
}

/// Segments of one period of one stream.
struct Run {
    init_id: u64,
    period_ms: i64,
    period_time: i64,
    segments: Vec<(u64, DashParts)>,
}

fn runs(listing: &DashListing) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for &(sequence, init_id, parts) in &listing.segments {
        match runs.last_mut() {
            Some(run) if run.init_id == init_id && run.period_ms == parts.period_ms => {
                run.segments.push((sequence, parts));
            }
            _ => runs.push(Run {
                init_id,
                period_ms: parts.period_ms,
                period_time: parts.period_time,
                segments: vec![(sequence, parts)],
            }),
        }
    }
    runs
}

/// The manifest of `renditions` (one stream, or the members of an ABR group); `None`
/// while none has a segment. `number_secs`: number-based addressing with segments of
/// that many seconds (`dash_segment_addressing` `number`), else a `SegmentTimeline`.
pub fn manifest(
    renditions: &[Rendition],
    session: Option<u128>,
    now_ms: i64,
    number_secs: Option<u32>,
) -> Option<String> {
    let query = session.map(|id| format!("?sid={id}")).unwrap_or_default();
    let all: Vec<(&Rendition, Vec<Run>)> = renditions
        .iter()
        .map(|r| (r, runs(&r.listing)))
        .filter(|(_, runs)| !runs.is_empty())
        .collect();
    let first = all.first()?.0;
    let periods: Vec<Period> = if let [(rendition, runs)] = all.as_slice() {
        runs.iter()
            .filter_map(|run| {
                period(
                    &[(rendition, run)],
                    run.init_id.to_string(),
                    &query,
                    number_secs,
                )
            })
            .collect()
    } else {
        let latest: Vec<(&Rendition, &Run)> = all
            .iter()
            .filter_map(|(r, runs)| Some((*r, runs.last()?)))
            .collect();
        let id = latest
            .iter()
            .map(|(_, run)| run.init_id.to_string())
            .collect::<Vec<_>>()
            .join("-");
        period(&latest, id, &query, number_secs)
            .into_iter()
            .collect()
    };
    let listed: f64 = first
        .listing
        .segments
        .iter()
        .filter_map(|(_, _, parts)| parts.video.or(parts.audio))
        .map(|t| t.duration as f64 / f64::from(t.timescale.max(1)))
        .sum();
    // What the window holds once full, from the first segment on: shorter, a player's
    // DVR window (now - depth .. now - presentation delay) would be empty, or would
    // slide past the listed timeline between two updates (dash.js: INVALID_DVR_WINDOW).
    // The store keeps more segments than it lists, so all of it is there to fetch.
    let full = f64::from(first.listing.target_duration.max(1)) * PLAYLIST_WINDOW as f64;
    let time_shift_secs = listed.max(full);
    let availability_start_ms = epoch_ms(&all)?;
    let mut periods = periods;
    for period in &mut periods {
        period.start_ms = period.start_ms.saturating_sub(availability_start_ms);
    }
    Some(render(&Manifest {
        availability_start_ms,
        now_ms,
        segment_secs: first.listing.target_duration,
        time_shift_secs,
        location: session.map(|id| format!("{MANIFEST}?sid={id}")),
        ended_ms: all
            .iter()
            .all(|(r, _)| r.listing.ended)
            .then(|| end_ms(&periods))
            .flatten(),
        periods,
    }))
}

/// The manifest's `availabilityStartTime` (Unix ms): the earliest of its streams' DASH
/// epochs (where each one's first period started), the same in every update. Near the
/// stream's start, not Unix time 0: GStreamer 1.22's dashdemux joins a live timeline
/// at about twice the time since `availabilityStartTime` (it adds the first listed
/// segment's start to the seek target), which lands decades in the future with a 1970
/// epoch; ABR members still share one start, so their media times map to the same
/// wall clock.
fn epoch_ms(all: &[(&Rendition, Vec<Run>)]) -> Option<i64> {
    all.iter()
        .filter_map(|(rendition, runs)| {
            let first = runs.first().map(|run| run.period_ms);
            match (rendition.listing.epoch_ms, first) {
                (Some(epoch), Some(first)) => Some(epoch.min(first)),
                (epoch, first) => epoch.or(first),
            }
        })
        .min()
}

/// Where the last period's media ends, milliseconds after `availabilityStartTime`.
fn end_ms(periods: &[Period]) -> Option<i64> {
    let period = periods.last()?;
    period
        .adaptation_sets
        .iter()
        .flat_map(|set| &set.representations)
        .filter_map(|r| {
            let last = r.timeline.last()?;
            let end = last
                .start
                .saturating_add(last.duration)
                .saturating_sub(r.presentation_time_offset);
            let ms = i64::try_from(u128::from(end) * 1000 / u128::from(r.timescale.max(1))).ok()?;
            Some(period.start_ms.saturating_add(ms))
        })
        .max()
}

/// One period of `members` (each with its run), starting at the latest of their starts.
fn period(
    members: &[(&Rendition, &Run)],
    id: String,
    query: &str,
    number_secs: Option<u32>,
) -> Option<Period> {
    let start_ms = members.iter().map(|(_, run)| run.period_ms).max()?;
    let mut video = Vec::new();
    let mut audio = Vec::new();
    for (index, (rendition, run)) in members.iter().enumerate() {
        // The run's media time at the period's start, 90 kHz.
        let start_time = run
            .period_time
            .saturating_add(start_ms.saturating_sub(run.period_ms).saturating_mul(90));
        let codecs: Vec<&str> = rendition.listing.codecs.split(',').collect();
        let video_codec = codecs.iter().find(|c| !c.starts_with("mp4a"));
        let audio_codec = codecs.iter().find(|c| c.starts_with("mp4a"));
        if let Some(codec) = video_codec
            && let Some(mut representation) = representation(run, false, start_time, number_secs)
        {
            representation.id = format!("v{index}");
            representation.codecs = (*codec).to_owned();
            let listing = &rendition.listing;
            representation.video = Some((listing.width, listing.height, listing.frame_rate));
            representation.initialization =
                format!("{}dash_init_v_{}.mp4{query}", rendition.prefix, run.init_id);
            representation.media = format!("{}dash_v_$Number$.m4s{query}", rendition.prefix);
            video.push(representation);
        }
        // One audio representation: ABR renditions carry the same audio.
        if audio.is_empty()
            && let Some(codec) = audio_codec
            && let Some(mut representation) = representation(run, true, start_time, number_secs)
        {
            representation.id = format!("a{index}");
            representation.codecs = (*codec).to_owned();
            representation.audio = Some((representation.timescale, None));
            representation.initialization =
                format!("{}dash_init_a_{}.mp4{query}", rendition.prefix, run.init_id);
            representation.media = format!("{}dash_a_$Number$.m4s{query}", rendition.prefix);
            audio.push(representation);
        }
    }
    // Markers on the timeline of the first member's first representation.
    let scte35 = match (members.first(), video.first().or(audio.first())) {
        (Some((rendition, run)), Some(timeline)) => {
            events(rendition, run, timeline, video.is_empty())
        }
        _ => EventStream::default(),
    };
    let adaptation_sets: Vec<AdaptationSet> =
        [(ContentType::Video, video), (ContentType::Audio, audio)]
            .into_iter()
            .filter(|(_, representations)| !representations.is_empty())
            .map(|(content_type, representations)| AdaptationSet {
                content_type,
                representations,
            })
            .collect();
    (!adaptation_sets.is_empty()).then_some(Period {
        id,
        start_ms,
        scte35,
        adaptation_sets,
    })
}

/// The SCTE-35 markers of `run`'s segments as events on `timeline`'s media time (the
/// video track's, or the audio track's when `audio`): each at the start of the segment
/// that carries it, while that segment is in the representation's window.
fn events(rendition: &Rendition, run: &Run, timeline: &Representation, audio: bool) -> EventStream {
    let timescale = timeline.timescale.max(1);
    let mut events = Vec::new();
    let mut last: Option<(u64, u64)> = None;
    for (sequence, section) in &rendition.listing.scte35 {
        // The n-th marker of its segment.
        let n = match last {
            Some((seq, n)) if seq == *sequence => n + 1,
            _ => 0,
        };
        last = Some((*sequence, n));
        let Some((_, parts)) = run.segments.iter().find(|(s, _)| s == sequence) else {
            continue;
        };
        let Some(track) = (if audio { parts.audio } else { parts.video }) else {
            continue;
        };
        if track.start.saturating_add(track.duration) <= timeline.presentation_time_offset {
            continue;
        }
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(section) else {
            continue;
        };
        let break_ticks = SpliceInfo::parse(&bytes)
            .ok()
            .and_then(|info| strom_media::ad_break::break_signal(&info)?.duration);
        events.push(Event {
            presentation_time: rescale(track.start, track.timescale, timescale),
            duration: break_ticks.map(|d| rescale(d, 90_000, timescale)),
            id: sequence
                .saturating_mul(MAX_MARKERS_PER_SEGMENT as u64)
                .saturating_add(n),
            binary: section.clone(),
        });
    }
    EventStream {
        timescale,
        presentation_time_offset: timeline.presentation_time_offset,
        events,
    }
}

fn rescale(value: u64, from: u32, to: u32) -> u64 {
    let scaled = u128::from(value) * u128::from(to) / u128::from(from.max(1));
    u64::try_from(scaled).unwrap_or(u64::MAX)
}

/// A representation of one track of `run` (its timeline, from the latest unbroken
/// stretch of segments that have the track and end after the period's start);
/// names and codecs are the caller's. With `number_secs`, number-based addressing.
fn representation(
    run: &Run,
    audio: bool,
    start_time: i64,
    number_secs: Option<u32>,
) -> Option<Representation> {
    let part = |parts: &DashParts| if audio { parts.audio } else { parts.video };
    // `$Number$` counts timeline entries: they must be consecutive segments.
    let mut kept: Vec<(u64, DashTrack)> = Vec::new();
    for (sequence, parts) in &run.segments {
        let consecutive = kept
            .last()
            .is_none_or(|(last, _)| last.checked_add(1) == Some(*sequence));
        match part(parts) {
            Some(track) if consecutive => kept.push((*sequence, track)),
            Some(track) => kept = vec![(*sequence, track)],
            None => kept.clear(),
        }
    }
    let timescale = kept.first()?.1.timescale.max(1);
    let offset =
        u64::try_from(i128::from(start_time.max(0)) * i128::from(timescale) / 90_000).ok()?;
    kept.retain(|(_, t)| t.start.saturating_add(t.duration) > offset);
    let (first_sequence, first) = *kept.first()?;
    let (start_number, segment_duration) = match number_secs {
        Some(secs) => number_addressing(first_sequence, first.start, offset, secs, timescale),
        None => (first_sequence, None),
    };
    let bandwidth = kept
        .iter()
        .map(|(_, t)| {
            let seconds = (t.duration as f64 / f64::from(timescale)).max(0.1);
            (f64::from(t.len) * 8.0 / seconds) as u64
        })
        .max()
        .unwrap_or(1);
    Some(Representation {
        id: String::new(),
        codecs: String::new(),
        bandwidth,
        video: None,
        audio: None,
        timescale,
        presentation_time_offset: offset,
        initialization: String::new(),
        media: String::new(),
        start_number,
        segment_duration,
        timeline: kept
            .iter()
            .map(|(_, t)| TimelineEntry {
                start: t.start,
                duration: t.duration,
            })
            .collect(),
    })
}

/// Number-based addressing of a representation whose first listed segment is number
/// `sequence`, starting at `start` (the track's timescale) in a period whose media
/// time starts at `offset`: the number at the period's start (the listed segment's
/// number less the segments of `secs` before it) and the template's duration. The
/// timeline instead when that number would fall below 0 (segments far shorter than
/// `secs`).
fn number_addressing(
    sequence: u64,
    start: u64,
    offset: u64,
    secs: u32,
    timescale: u32,
) -> (u64, Option<u64>) {
    let duration = u64::from(secs.max(1)) * u64::from(timescale);
    let before = start.saturating_sub(offset).saturating_add(duration / 2) / duration;
    match sequence.checked_sub(before) {
        Some(number) => (number, Some(duration)),
        None => (sequence, None),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn parts(n: u64, period_ms: i64) -> DashParts {
        DashParts {
            video: Some(DashTrack {
                start: 900_000 + n * 180_000,
                duration: 180_000,
                timescale: 90_000,
                offset: 0,
                len: 100_000,
            }),
            audio: Some(DashTrack {
                start: 441_000 + n * 88_200,
                duration: 88_200,
                timescale: 44_100,
                offset: 100_000,
                len: 10_000,
            }),
            period_ms,
            period_time: 900_000,
        }
    }

    fn listing(segments: Vec<(u64, u64, DashParts)>) -> DashListing {
        DashListing {
            segments,
            codecs: "avc1.42c01e,mp4a.40.2".into(),
            width: 320,
            height: 240,
            frame_rate: Some(25.0),
            target_duration: 2,
            ended: false,
            epoch_ms: None,
            scte35: Vec::new(),
        }
    }

    #[test]
    fn file_names() {
        assert_eq!(
            DashFile::parse("dash_v_12.m4s"),
            Some(DashFile::Segment {
                sequence: 12,
                audio: false
            })
        );
        assert_eq!(
            DashFile::parse("dash_init_a_65537.mp4"),
            Some(DashFile::Init {
                id: 65537,
                audio: true
            })
        );
        for bad in [
            "dash_x_1.m4s",
            "dash_v_.m4s",
            "dash_v_1.mp4",
            "dash_init_v_1.m4s",
            "dash_",
        ] {
            assert_eq!(DashFile::parse(bad), None, "{bad}");
        }
    }

    /// A stream with two publishers in its window: two periods, each with a video and
    /// an audio representation whose numbers and times follow the segments.
    #[test]
    fn a_period_per_publisher() {
        let segments = vec![
            (4, 1 << 16, parts(0, 1_000_000)),
            (5, 1 << 16, parts(1, 1_000_000)),
            (6, 2 << 16, parts(0, 1_010_000)),
        ];
        let xml = manifest(
            &[Rendition {
                listing: listing(segments),
                prefix: String::new(),
            }],
            Some(9),
            1_020_000,
            None,
        )
        .unwrap();
        assert_eq!(xml.matches("<Period ").count(), 2, "{xml}");
        // From the first period's start on.
        assert!(
            xml.contains("<Period id=\"65536\" start=\"PT0.000S\">"),
            "{xml}"
        );
        assert!(
            xml.contains("<Period id=\"131072\" start=\"PT10.000S\">"),
            "{xml}"
        );
        assert!(xml.contains("availabilityStartTime=\"1970-01-01T00:16:40.000Z\""));
        // Three segments listed, the depth of a full window (6 x 2 s).
        assert!(xml.contains("timeShiftBufferDepth=\"PT12.000S\""), "{xml}");
        assert!(xml.contains("<Location>manifest.mpd?sid=9</Location>"));
        assert!(xml.contains(
            "initialization=\"dash_init_v_65536.mp4?sid=9\" media=\"dash_v_$Number$.m4s?sid=9\" startNumber=\"4\""
        ));
        assert!(xml.contains("media=\"dash_a_$Number$.m4s?sid=9\" startNumber=\"6\""));
        assert!(xml.contains("presentationTimeOffset=\"441000\""), "{xml}");
        assert!(xml.contains("<S t=\"900000\" d=\"180000\"/>\n            <S d=\"180000\"/>"));
        assert!(
            xml.contains("codecs=\"mp4a.40.2\" bandwidth=\"40000\""),
            "{xml}"
        );
        assert!(xml.contains("codecs=\"avc1.42c01e\" bandwidth=\"400000\" width=\"320\""));
        assert!(!xml.contains("mediaPresentationDuration"));
        assert!(!xml.contains("EventStream"), "no markers, no events: {xml}");
    }

    /// SCTE-35 markers: an event per section at the start of the segment that carries
    /// it, on the video timeline, with the break's duration; gone with its segment.
    #[test]
    fn markers_are_period_events() {
        use strom_media::scte35::BreakDuration;
        let out = SpliceInfo::insert(
            7,
            true,
            Some(0),
            Some(BreakDuration {
                auto_return: true,
                duration: 30 * 90_000,
            }),
        )
        .encode();
        let back = SpliceInfo::insert(7, false, Some(0), None).encode();
        let signal =
            strom_media::ad_break::time_signal(8, 0x30, Some(0), Some(15 * 90_000)).encode();
        let encode = |s: &[u8]| base64::engine::general_purpose::STANDARD.encode(s);
        let mut with_markers = listing(vec![
            (4, 1, parts(0, 1_000_000)),
            (5, 1, parts(1, 1_000_000)),
            (6, 1, parts(2, 1_000_000)),
        ]);
        with_markers.scte35 = vec![
            (5, encode(&out)),
            (5, encode(&back)),
            (6, encode(&signal)),
            (9, encode(&out)),
        ];
        let xml = manifest(
            &[Rendition {
                listing: with_markers,
                prefix: String::new(),
            }],
            None,
            1_020_000,
            None,
        )
        .unwrap();
        assert!(xml.contains("<EventStream schemeIdUri=\"urn:scte:scte35:2014:xml+bin\" timescale=\"90000\" presentationTimeOffset=\"900000\">"), "{xml}");
        let first = format!(
            "<Event presentationTime=\"1080000\" duration=\"2700000\" id=\"20\"><Signal xmlns=\"http://www.scte.org/schemas/35/2016\"><Binary>{}</Binary></Signal></Event>",
            encode(&out)
        );
        assert!(xml.contains(&first), "{xml}");
        assert!(
            xml.contains("<Event presentationTime=\"1080000\" id=\"21\">"),
            "{xml}"
        );
        // A time_signal's segmentation duration is its event's duration.
        assert!(
            xml.contains("<Event presentationTime=\"1260000\" duration=\"1350000\" id=\"24\">"),
            "{xml}"
        );
        // Segment 9 is not listed: its marker is not in the manifest.
        assert_eq!(xml.matches("<Event ").count(), 3, "{xml}");
        // The EventStream comes before the adaptation sets (the MPD schema's order).
        assert!(xml.find("<EventStream").unwrap() < xml.find("<AdaptationSet").unwrap());
    }

    /// Number-based addressing: `SegmentTemplate@duration` and the number at the
    /// period's start (segment 4 starts there; the window lists 6 to 8), no timeline;
    /// the same segments' files.
    #[test]
    fn number_addressing_counts_from_the_period_start() {
        let window = listing((2..5).map(|n| (4 + n, 1, parts(n, 1_000_000))).collect());
        let rendition = || Rendition {
            listing: window.clone(),
            prefix: String::new(),
        };
        let xml = manifest(&[rendition()], None, 1_020_000, Some(2)).unwrap();
        assert!(!xml.contains("<SegmentTimeline>"), "{xml}");
        assert!(
            xml.contains("media=\"dash_v_$Number$.m4s\" startNumber=\"4\" duration=\"180000\"/>"),
            "{xml}"
        );
        assert!(
            xml.contains("media=\"dash_a_$Number$.m4s\" startNumber=\"4\" duration=\"88200\"/>"),
            "{xml}"
        );
        assert!(xml.contains("presentationTimeOffset=\"900000\""), "{xml}");
        // The timeline form of the same window starts at the first listed segment.
        let timeline = manifest(&[rendition()], None, 1_020_000, None).unwrap();
        assert!(timeline.contains("startNumber=\"6\">"), "{timeline}");
        assert_eq!(
            number_addressing(1, 0, 90_000, 6, 90_000),
            (1, Some(540_000))
        );
        assert_eq!(
            number_addressing(1, 5_400_000, 0, 6, 90_000),
            (1, None),
            "below 0"
        );
    }

    /// The first publisher's segments have left the window: `availabilityStartTime`
    /// stays where the stream began (the store's epoch), so the period keeps its start
    /// from one update to the next.
    #[test]
    fn the_availability_start_stays_where_the_stream_began() {
        let mut later = listing((0..8).map(|n| (20 + n, 3, parts(n, 1_010_000))).collect());
        later.epoch_ms = Some(1_000_000);
        let xml = manifest(
            &[Rendition {
                listing: later,
                prefix: String::new(),
            }],
            None,
            1_030_000,
            None,
        )
        .unwrap();
        assert!(xml.contains("availabilityStartTime=\"1970-01-01T00:16:40.000Z\""));
        assert!(
            xml.contains("<Period id=\"3\" start=\"PT10.000S\">"),
            "{xml}"
        );
        // Eight 2 s segments listed: more than a full window's depth.
        assert!(xml.contains("timeShiftBufferDepth=\"PT16.000S\""), "{xml}");
    }

    /// A stream gone for good: the manifest says where its media ends.
    #[test]
    fn an_ended_stream_has_a_presentation_duration() {
        let mut ended = listing(vec![
            (4, 1, parts(0, 1_000_000)),
            (5, 1, parts(1, 1_000_000)),
        ]);
        ended.ended = true;
        let xml = manifest(
            &[Rendition {
                listing: ended,
                prefix: String::new(),
            }],
            None,
            1_020_000,
            None,
        )
        .unwrap();
        // Period start 0 s, media from 10 s (the offset) to 14 s.
        assert!(
            xml.contains("mediaPresentationDuration=\"PT4.000S\""),
            "{xml}"
        );
        assert!(!xml.contains("minimumUpdatePeriod"));
    }

    /// An ABR group: one period from the latest start, a video representation per
    /// member with its own offset, one audio representation.
    #[test]
    fn abr_members_share_one_period() {
        let early = listing(vec![
            (1, 7, parts(0, 1_000_000)),
            (2, 7, parts(1, 1_000_000)),
        ]);
        let mut late = listing(vec![(8, 9, parts(0, 1_001_000))]);
        late.width = 160;
        let xml = manifest(
            &[
                Rendition {
                    listing: early,
                    prefix: "../../live/hi/".into(),
                },
                Rendition {
                    listing: late,
                    prefix: "../../live/lo/".into(),
                },
            ],
            None,
            1_002_000,
            None,
        )
        .unwrap();
        assert_eq!(xml.matches("<Period ").count(), 1);
        assert!(
            xml.contains("<Period id=\"7-9\" start=\"PT1.000S\">"),
            "{xml}"
        );
        assert_eq!(xml.matches("<Representation ").count(), 3, "{xml}");
        // The early member's media time one second after its anchor.
        assert!(xml.contains("presentationTimeOffset=\"990000\" initialization=\"../../live/hi/dash_init_v_7.mp4\" media=\"../../live/hi/dash_v_$Number$.m4s\" startNumber=\"1\""), "{xml}");
        assert!(xml.contains("media=\"../../live/lo/dash_v_$Number$.m4s\" startNumber=\"8\""));
        assert!(!xml.contains("Location"));
    }
}
