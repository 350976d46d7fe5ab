//! Rendering a live (dynamic) MPEG-DASH manifest, ISO/IEC 23009-1 `isoff-live` profile:
//! one `Period` per run of segments that share a timeline and init segment, an
//! `AdaptationSet` per media type, a `Representation` per rendition, each with a
//! `SegmentTemplate` (`$Number$`) and a `SegmentTimeline`, or, with number-based
//! addressing, a `SegmentTemplate@duration` and no timeline.
//!
//! Times: `availabilityStartTime` is fixed for the life of the manifest; a period starts
//! at its wall-clock anchor minus it, and its `presentationTimeOffset` is the media time
//! of that anchor, so that media time maps to wall-clock time for every representation
//! (ABR renditions from different encoders line up by wall clock).

use crate::hls::datetime::iso8601_utc;
use std::fmt::Write;

/// Media type of an adaptation set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentType {
    Video,
    Audio,
}

impl ContentType {
    fn name(self) -> &'static str {
        match self {
            ContentType::Video => "video",
            ContentType::Audio => "audio",
        }
    }
}

/// One segment on a representation's timeline, in its timescale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimelineEntry {
    pub start: u64,
    pub duration: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Representation {
    pub id: String,
    /// RFC 6381 codec string of this track.
    pub codecs: String,
    pub bandwidth: u64,
    /// Video: width, height and frames per second.
    pub video: Option<(u32, u32, Option<f64>)>,
    /// Audio: sample rate and channels.
    pub audio: Option<(u32, Option<u8>)>,
    pub timescale: u32,
    /// Media time (in `timescale`) at the start of the period.
    pub presentation_time_offset: u64,
    /// Init segment URL (relative to the manifest).
    pub initialization: String,
    /// Media segment URL template with `$Number$`.
    pub media: String,
    /// `$Number$` of the first timeline entry; the others follow one by one. With
    /// `segment_duration`: the number of the segment at the period's start.
    pub start_number: u64,
    /// Number-based addressing (`SegmentTemplate@duration`, in `timescale`): segment
    /// `n` starts `(n - start_number) * duration` after the period's start, and no
    /// `SegmentTimeline` is written.
    pub segment_duration: Option<u64>,
    pub timeline: Vec<TimelineEntry>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AdaptationSet {
    pub content_type: ContentType,
    pub representations: Vec<Representation>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Period {
    pub id: String,
    /// Milliseconds after `availabilityStartTime`.
    pub start_ms: i64,
    /// SCTE-35 markers of the period; rendered only when it has events.
    pub scte35: EventStream,
    pub adaptation_sets: Vec<AdaptationSet>,
}

/// The period's SCTE-35 markers as an `EventStream` (SCTE 214-1 §6.7, DASH-IF IOP
/// "SCTE-35 in MPD"): scheme `urn:scte:scte35:2014:xml+bin`, each event's
/// splice_info_section in base64 inside `<Signal><Binary>`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventStream {
    pub timescale: u32,
    /// Media time (in `timescale`) at the start of the period, as the representations'.
    pub presentation_time_offset: u64,
    pub events: Vec<Event>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Media time in the stream's `timescale` (`presentationTimeOffset` is the period start).
    pub presentation_time: u64,
    /// The break's planned duration, in `timescale`.
    pub duration: Option<u64>,
    /// Unique in the stream: players handle an id once.
    pub id: u64,
    /// The splice_info_section, base64.
    pub binary: String,
}

/// The scheme of SCTE-35 sections carried in binary form in MPD events.
pub const SCTE35_SCHEME: &str = "urn:scte:scte35:2014:xml+bin";

#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// `availabilityStartTime`, Unix milliseconds.
    pub availability_start_ms: i64,
    /// `publishTime` and the `UTCTiming` clock value, Unix milliseconds.
    pub now_ms: i64,
    /// `minimumUpdatePeriod` and `maxSegmentDuration`, seconds (the target duration).
    pub segment_secs: u32,
    /// `timeShiftBufferDepth`, seconds.
    pub time_shift_secs: f64,
    /// `<Location>`: where the client fetches later updates (its session's URL).
    pub location: Option<String>,
    /// The stream is over: `mediaPresentationDuration` (milliseconds after
    /// `availabilityStartTime`) and no `minimumUpdatePeriod`, so players stop at its
    /// end instead of waiting for more (DASH-IF IOP, end of a live presentation).
    pub ended_ms: Option<i64>,
    pub periods: Vec<Period>,
}

fn seconds(ms: i64) -> String {
    format!("PT{}.{:03}S", ms.div_euclid(1000), ms.rem_euclid(1000))
}

/// The manifest as XML.
pub fn render(manifest: &Manifest) -> String {
    let segment = i64::from(manifest.segment_secs.max(1)) * 1000;
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let updates = match manifest.ended_ms {
        Some(end) => format!("mediaPresentationDuration=\"{}\"", seconds(end.max(0))),
        None => format!("minimumUpdatePeriod=\"{}\"", seconds(segment)),
    };
    let _ = writeln!(
        out,
        "<MPD xmlns=\"urn:mpeg:dash:schema:mpd:2011\" profiles=\"urn:mpeg:dash:profile:isoff-live:2011\" type=\"dynamic\" availabilityStartTime=\"{}\" publishTime=\"{}\" {updates} minBufferTime=\"{}\" timeShiftBufferDepth=\"{}\" suggestedPresentationDelay=\"{}\" maxSegmentDuration=\"{}\">",
        iso8601_utc(manifest.availability_start_ms),
        iso8601_utc(manifest.now_ms),
        seconds(segment),
        seconds((manifest.time_shift_secs.max(0.0) * 1000.0) as i64),
        seconds(3 * segment),
        seconds(segment),
    );
    if let Some(location) = &manifest.location {
        let _ = writeln!(out, "  <Location>{}</Location>", escape(location));
    }
    for period in &manifest.periods {
        let _ = writeln!(
            out,
            "  <Period id=\"{}\" start=\"{}\">",
            escape(&period.id),
            seconds(period.start_ms.max(0))
        );
        render_events(&mut out, &period.scte35);
        for (index, set) in period.adaptation_sets.iter().enumerate() {
            render_set(&mut out, index, set);
        }
        out.push_str("  </Period>\n");
    }
    let _ = writeln!(
        out,
        "  <UTCTiming schemeIdUri=\"urn:mpeg:dash:utc:direct:2014\" value=\"{}\"/>",
        iso8601_utc(manifest.now_ms)
    );
    out.push_str("</MPD>\n");
    out
}

fn render_events(out: &mut String, stream: &EventStream) {
    if stream.events.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "    <EventStream schemeIdUri=\"{SCTE35_SCHEME}\" timescale=\"{}\" presentationTimeOffset=\"{}\">",
        stream.timescale.max(1),
        stream.presentation_time_offset
    );
    for event in &stream.events {
        let _ = write!(
            out,
            "      <Event presentationTime=\"{}\"",
            event.presentation_time
        );
        if let Some(duration) = event.duration {
            let _ = write!(out, " duration=\"{duration}\"");
        }
        let _ = writeln!(
            out,
            " id=\"{}\"><Signal xmlns=\"http://www.scte.org/schemas/35/2016\"><Binary>{}</Binary></Signal></Event>",
            event.id,
            escape(&event.binary)
        );
    }
    out.push_str("    </EventStream>\n");
}

fn render_set(out: &mut String, index: usize, set: &AdaptationSet) {
    let kind = set.content_type.name();
    // Renditions from different encoders (ABR members) are not cut at the same times.
    let aligned = set.representations.len() <= 1;
    let _ = writeln!(
        out,
        "    <AdaptationSet id=\"{index}\" contentType=\"{kind}\" mimeType=\"{kind}/mp4\" segmentAlignment=\"{aligned}\" startWithSAP=\"1\">"
    );
    for representation in &set.representations {
        let _ = write!(
            out,
            "      <Representation id=\"{}\" codecs=\"{}\" bandwidth=\"{}\"",
            escape(&representation.id),
            escape(&representation.codecs),
            representation.bandwidth.max(1)
        );
        if let Some((width, height, rate)) = representation.video {
            let _ = write!(out, " width=\"{width}\" height=\"{height}\"");
            if let Some(rate) = rate.filter(|r| r.is_finite() && *r > 0.0) {
                // An integer, or a fraction with 1000 as denominator.
                let thousandths = (rate * 1000.0).round() as u64;
                if thousandths.is_multiple_of(1000) {
                    let _ = write!(out, " frameRate=\"{}\"", thousandths / 1000);
                } else {
                    let _ = write!(out, " frameRate=\"{thousandths}/1000\"");
                }
            }
        }
        if let Some((rate, _)) = representation.audio {
            let _ = write!(out, " audioSamplingRate=\"{rate}\"");
        }
        out.push_str(">\n");
        if let Some((_, Some(channels))) = representation.audio {
            let _ = writeln!(
                out,
                "        <AudioChannelConfiguration schemeIdUri=\"urn:mpeg:dash:23003:3:audio_channel_configuration:2011\" value=\"{channels}\"/>"
            );
        }
        let _ = write!(
            out,
            "        <SegmentTemplate timescale=\"{}\" presentationTimeOffset=\"{}\" initialization=\"{}\" media=\"{}\" startNumber=\"{}\"",
            representation.timescale,
            representation.presentation_time_offset,
            escape(&representation.initialization),
            escape(&representation.media),
            representation.start_number
        );
        if let Some(duration) = representation.segment_duration {
            let _ = writeln!(out, " duration=\"{duration}\"/>");
            out.push_str("      </Representation>\n");
            continue;
        }
        out.push_str(">\n          <SegmentTimeline>\n");
        let mut expected: Option<u64> = None;
        for entry in &representation.timeline {
            // `t` only where the timeline does not simply go on.
            if expected == Some(entry.start) {
                let _ = writeln!(out, "            <S d=\"{}\"/>", entry.duration);
            } else {
                let _ = writeln!(
                    out,
                    "            <S t=\"{}\" d=\"{}\"/>",
                    entry.start, entry.duration
                );
            }
            expected = Some(entry.start.saturating_add(entry.duration));
        }
        out.push_str("          </SegmentTimeline>\n        </SegmentTemplate>\n");
        out.push_str("      </Representation>\n");
    }
    out.push_str("    </AdaptationSet>\n");
}

/// XML attribute and text escaping.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn representation(kind: ContentType) -> Representation {
        Representation {
            id: format!("{}0", kind.name()),
            codecs: match kind {
                ContentType::Video => "avc1.42c01e".into(),
                ContentType::Audio => "mp4a.40.2".into(),
            },
            bandwidth: 500_000,
            video: (kind == ContentType::Video).then_some((320, 240, Some(29.97))),
            audio: (kind == ContentType::Audio).then_some((44_100, Some(2))),
            timescale: 90_000,
            presentation_time_offset: 900_000,
            initialization: "dash_init_v_7.mp4?sid=3".into(),
            media: "dash_v_$Number$.m4s?sid=3&x=<1>".into(),
            start_number: 12,
            segment_duration: None,
            timeline: vec![
                TimelineEntry {
                    start: 900_000,
                    duration: 180_000,
                },
                TimelineEntry {
                    start: 1_080_000,
                    duration: 180_000,
                },
                TimelineEntry {
                    start: 1_300_000,
                    duration: 90_000,
                },
            ],
        }
    }

    #[test]
    fn renders_a_dynamic_live_profile_manifest() {
        let manifest = Manifest {
            availability_start_ms: 1_795_238_400_000,
            now_ms: 1_795_238_460_500,
            segment_secs: 2,
            time_shift_secs: 12.5,
            location: Some("manifest.mpd?sid=3".into()),
            ended_ms: None,
            periods: vec![Period {
                id: "65537".into(),
                start_ms: 1_500,
                scte35: EventStream {
                    timescale: 90_000,
                    presentation_time_offset: 900_000,
                    events: vec![Event {
                        presentation_time: 1_080_000,
                        duration: Some(2_700_000),
                        id: 97,
                        binary: "/DAl".into(),
                    }],
                },
                adaptation_sets: vec![
                    AdaptationSet {
                        content_type: ContentType::Video,
                        representations: vec![representation(ContentType::Video)],
                    },
                    AdaptationSet {
                        content_type: ContentType::Audio,
                        representations: vec![representation(ContentType::Audio)],
                    },
                ],
            }],
        };
        let xml = render(&manifest);
        for expected in [
            "type=\"dynamic\"",
            "profiles=\"urn:mpeg:dash:profile:isoff-live:2011\"",
            "availabilityStartTime=\"2026-11-21T05:20:00.000Z\"",
            "publishTime=\"2026-11-21T05:21:00.500Z\"",
            "minimumUpdatePeriod=\"PT2.000S\"",
            "timeShiftBufferDepth=\"PT12.500S\"",
            "<Location>manifest.mpd?sid=3</Location>",
            "<Period id=\"65537\" start=\"PT1.500S\">\n    <EventStream schemeIdUri=\"urn:scte:scte35:2014:xml+bin\" timescale=\"90000\" presentationTimeOffset=\"900000\">\n      <Event presentationTime=\"1080000\" duration=\"2700000\" id=\"97\"><Signal xmlns=\"http://www.scte.org/schemas/35/2016\"><Binary>/DAl</Binary></Signal></Event>\n    </EventStream>\n    <AdaptationSet id=\"0\"",
            "contentType=\"video\" mimeType=\"video/mp4\"",
            "width=\"320\" height=\"240\" frameRate=\"29970/1000\"",
            "audioSamplingRate=\"44100\"",
            "audio_channel_configuration:2011\" value=\"2\"",
            "presentationTimeOffset=\"900000\"",
            "media=\"dash_v_$Number$.m4s?sid=3&amp;x=&lt;1&gt;\" startNumber=\"12\"",
            "<S t=\"900000\" d=\"180000\"/>\n            <S d=\"180000\"/>\n            <S t=\"1300000\" d=\"90000\"/>",
            "<UTCTiming schemeIdUri=\"urn:mpeg:dash:utc:direct:2014\" value=\"2026-11-21T05:21:00.500Z\"/>",
        ] {
            assert!(xml.contains(expected), "{expected} missing from:\n{xml}");
        }
        assert!(xml.ends_with("</MPD>\n"));
        assert_eq!(xml.matches("<AdaptationSet").count(), 2);
        assert!(!xml.contains("mediaPresentationDuration"));
        let ended = render(&Manifest {
            ended_ms: Some(61_250),
            ..manifest
        });
        assert!(
            ended.contains(" mediaPresentationDuration=\"PT61.250S\" "),
            "{ended}"
        );
        assert!(!ended.contains("minimumUpdatePeriod"));
    }
}
