//! The muxing path fed hostile frames: whatever a producer put on the bus (codecs,
//! tracks, configuration and keyframe flags, decode and presentation times anywhere in
//! `i64`, payloads of any bytes) through [`TrackBuilder`], the HLS [`Segmenter`], the
//! MPEG-TS segment muxer ([`TsMuxer::write_segment_with_metadata`]), the fMP4 init
//! segment and [`Fragmenter`], the SCTE-35 [`CueTracker`], and the live MPEG-TS renderer
//! (`TsMuxer::live`, `write_live_sample`, `write_scte35`, [`Continuity`]), chained as the
//! packager's `packaging.rs` (`package`, `finish`) and the stream crate's `ts_feed.rs`
//! chain them. Errors are fine; a panic (overflow included) is a bug.
//!
//! The input: one byte of settings (segment duration, cue style), then frames, each a
//! header byte (bits 0-3 the codec, 4 keyframe, 5 config, 6 control, 7 track from the
//! codec or from the next byte), a time byte (how dts and pts are encoded: deltas of 1,
//! 2 or 4 bytes from the previous frame, or 8-byte absolute values), the times, a 2-byte
//! payload length and the payload. Seeds: `fuzz/corpus/muxing` (the frames of the
//! ffmpeg capture in `corpus/rtmp_server_input`: `cargo run --example make_seeds`).
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use strom_media::fmp4::{Fragmenter, codecs, init_segment};
use strom_media::frame::{Codec, Frame, SourceForm, Track};
use strom_media::hls::cues::{CueStyle, CueTracker};
use strom_media::hls::segmenter::{CutSegment, Segmenter};
use strom_media::sample::TrackKind;
use strom_media::track_builder::TrackBuilder;
use strom_media::ts::TsMuxer;
use strom_media::ts::continuity::Continuity;
use strom_media::ts::live::tables_precede;

struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let n = n.min(self.0.len());
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        (n > 0).then_some(head)
    }

    fn byte(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    /// A signed big-endian value of `n` bytes (1, 2, 4 or 8), missing bytes as 0.
    fn signed(&mut self, n: usize) -> i64 {
        let mut bytes = [0u8; 8];
        if let Some(taken) = self.take(n) {
            bytes[8 - taken.len()..].copy_from_slice(taken);
        }
        let shift = 64 - 8 * n as u32;
        (i64::from_be_bytes(bytes) << shift) >> shift
    }
}

/// A time from the time mode: 0-2 a delta of 1, 2 or 4 bytes, 3 an absolute value.
fn time(input: &mut Input<'_>, mode: u8, previous: i64) -> i64 {
    match mode & 3 {
        0 => previous.wrapping_add(input.signed(1)),
        1 => previous.wrapping_add(input.signed(2)),
        2 => previous.wrapping_add(input.signed(4)),
        _ => input.signed(8),
    }
}

fn next_frame(input: &mut Input<'_>, last_dts: i64) -> Option<Frame> {
    let header = input.byte()?;
    let codec = Codec::from_u8(header & 0x0f);
    let track = if header & 0x80 == 0 {
        codec.track().unwrap_or(Track::Data)
    } else {
        match input.byte()? % 3 {
            0 => Track::Video,
            1 => Track::Audio,
            _ => Track::Data,
        }
    };
    let times = input.byte()?;
    let dts = time(input, times, last_dts);
    // The composition offset: none, or as encoded (pts relative to the new dts).
    let pts = if times & 0x04 == 0 {
        dts
    } else {
        time(input, times >> 3, dts)
    };
    let length = input.take(2).map_or(0, |b| {
        usize::from(b[0]) << 8 | b.get(1).map_or(0, |&b| usize::from(b))
    });
    let payload = Bytes::copy_from_slice(input.take(length).unwrap_or_default());
    Some(Frame {
        track,
        codec,
        dts,
        pts,
        keyframe: header & 0x10 != 0,
        config: header & 0x20 != 0,
        control: header & 0x40 != 0,
        payload,
        form: SourceForm::Neutral,
    })
}

/// The packager's muxers for one timeline (`packaging.rs` `Timeline`).
struct Hls {
    duration: u32,
    tracks: TrackBuilder,
    cues: CueTracker,
    titles: Vec<(i64, Bytes)>,
    segmenter: Option<Segmenter>,
    ts: Option<TsMuxer>,
    fragmenter: Fragmenter,
}

impl Hls {
    fn push(&mut self, frame: &Frame) {
        if frame.codec == Codec::Scte35 {
            if self.cues.marker(&frame.payload)
                && let Some(segmenter) = self.segmenter.as_mut()
            {
                segmenter.cut_at_next_start();
            }
            return;
        }
        if frame.codec == Codec::TimedMetadata {
            if self.titles.len() >= 16 {
                self.titles.remove(0);
            }
            self.titles.push((frame.pts, frame.payload.clone()));
            return;
        }
        let sample = self.tracks.accept_frame(frame.clone());
        let _ = self.tracks.take_unmuxed_video();
        let Some(sample) = sample else {
            return;
        };
        let has_video = self.tracks.tracks.video.is_some();
        let segmenter = self
            .segmenter
            .get_or_insert_with(|| Segmenter::new(self.duration, self.duration, has_video));
        let was_started = segmenter.started();
        match segmenter.push(sample) {
            Some(cut) => {
                self.finish(cut);
                self.cues.segment_started();
            }
            None if !was_started && segmenter.started() => self.cues.segment_started(),
            None => {}
        }
    }

    fn finish(&mut self, cut: CutSegment) {
        let tracks = &self.tracks.tracks;
        let _ = init_segment(tracks);
        let muxer = self.ts.get_or_insert_with(|| TsMuxer::new(tracks));
        let markers = self.cues.sections_of_current();
        let titles = std::mem::take(&mut self.titles);
        let timed: Vec<(i64, &[u8])> = titles.iter().map(|(pts, tag)| (*pts, &tag[..])).collect();
        let mut ts = Vec::new();
        if muxer
            .write_segment_with_metadata(tracks, &markers, &timed, &cut.samples, &mut ts)
            .is_ok()
        {
            assert_eq!(ts.len() % 188, 0, "whole TS packets");
        }
        let next_video = tracks.video.as_ref().map(|_| cut.end);
        let mut m4s = Vec::new();
        let _ = self
            .fragmenter
            .fragment(tracks, &cut.samples, next_video, None, &mut m4s);
        let duration_secs = cut.duration_secs();
        assert!(duration_secs >= 0.0);
        let program_date_time_ms = 1_795_000_000_000 - (duration_secs * 1000.0) as i64;
        let _ = self.cues.tags_for(cut.start, program_date_time_ms);
        let _ = codecs(tracks);
    }
}

/// One receiver of the live MPEG-TS outputs (`ts_feed.rs` `TsFeed`), one generation.
#[derive(Default)]
struct Live {
    tracks: TrackBuilder,
    muxer: Option<TsMuxer>,
    continuity: Continuity,
    started: bool,
    scte35: bool,
}

impl Live {
    fn push(&mut self, frame: &Frame) {
        let mut out = Vec::new();
        if frame.codec == Codec::Scte35 {
            if !self.started || !frame.is_sample() {
                return;
            }
            let tracks = &self.tracks.tracks;
            let muxer = self.muxer.get_or_insert_with(|| TsMuxer::live(tracks));
            if !self.scte35 {
                self.scte35 = true;
                muxer.write_tables(tracks, true, &mut out);
            }
            muxer.write_scte35(&frame.payload, &mut out);
        } else {
            let Some(sample) = self.tracks.accept_frame(frame.clone()) else {
                return;
            };
            let tracks = &self.tracks.tracks;
            if !self.started {
                let may_start = match sample.kind {
                    TrackKind::Video => sample.keyframe,
                    TrackKind::Audio => tracks.video.is_none(),
                };
                if !may_start {
                    return;
                }
                self.started = true;
                self.muxer
                    .get_or_insert_with(|| TsMuxer::live(tracks))
                    .write_tables(tracks, self.scte35, &mut out);
            }
            let _ = tables_precede(tracks, &sample);
            let muxer = self.muxer.get_or_insert_with(|| TsMuxer::live(tracks));
            let _ = muxer.write_live_sample(tracks, self.scte35, &sample, &mut out);
        }
        assert_eq!(out.len() % 188, 0, "whole TS packets");
        self.continuity.restamp(&mut out);
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let Some(settings) = input.byte() else {
        return;
    };
    let style = match settings >> 6 {
        0 => CueStyle::Cue,
        1 => CueStyle::SplicePoint,
        _ => CueStyle::DateRange,
    };
    let mut hls = Hls {
        duration: u32::from(settings & 0x0f),
        tracks: TrackBuilder::default(),
        cues: CueTracker::new(style),
        titles: Vec::new(),
        segmenter: None,
        ts: None,
        fragmenter: Fragmenter::new(),
    };
    let mut live = Live::default();
    let mut last_dts = 0;
    let mut frames = 0;
    while let Some(frame) = next_frame(&mut input, last_dts) {
        last_dts = frame.dts;
        hls.push(&frame);
        live.push(&frame);
        frames += 1;
        if frames > 2000 {
            break;
        }
    }
    // The publisher stops: the segment being built is flushed.
    if let Some(cut) = hls.segmenter.as_mut().and_then(Segmenter::flush) {
        hls.finish(cut);
    }
});
