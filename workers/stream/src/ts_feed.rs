//! One receiver's live MPEG-TS view of a stream (SRT, RIST and UDP outputs,
//! `mpegts.stream`): the frames its reader gets, as a transport stream that a decoder can
//! join.
//!
//! Each frame is rendered to TS packets once, in the frame's [`SharedFrame::mpegts`] slot,
//! and every receiver copies those packets and rewrites their continuity counters with
//! its own [`Continuity`], so a receiver that lost whole GOPs (the hub drops them for a
//! slow reader) still gets a stream without continuity errors. A receiver starts with
//! its own PAT and PMT and a video keyframe (any audio frame in a stream without video);
//! a new publisher (a new generation) starts it again the same way. H.264, H.265 and AAC
//! are carried, and SCTE-35 sections on their own PID (listed with the `CUEI`
//! registration descriptor once a marker came); other codecs are left out.

use crate::shared_frame::SharedFrame;
use bytes::{Bytes, BytesMut};
use strom_media::frame::Codec;
use strom_media::sample::{Sample, TrackKind};
use strom_media::track_builder::TrackBuilder;
use strom_media::ts::TsMuxer;
use strom_media::ts::continuity::Continuity;

#[derive(Debug, Default)]
pub struct TsFeed {
    builder: TrackBuilder,
    /// Renders frames no receiver rendered yet; its counters are rewritten anyway.
    muxer: Option<TsMuxer>,
    continuity: Continuity,
    /// The publisher generation this receiver is following, once it started.
    started: Option<u32>,
    /// The stream carried an SCTE-35 marker: the PMT lists the SCTE-35 PID from then on.
    scte35: bool,
    scratch: Vec<u8>,
}

impl TsFeed {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `frame`'s TS packets for this receiver to `out` and returns how many
    /// bytes that was (0 for configuration frames, frames before the receiver can
    /// start, and codecs that are not carried).
    pub fn push(&mut self, frame: &SharedFrame, out: &mut BytesMut) -> usize {
        if frame.frame.codec == Codec::Scte35 {
            return self.push_marker(frame, out);
        }
        let sample = self.builder.accept_frame(frame.frame.clone());
        if let Some(codec) = self.builder.take_unmuxed_video() {
            tracing::warn!(?codec, "video codec not carried in MPEG-TS outputs");
        }
        let Some(sample) = sample else {
            return 0;
        };
        let start = out.len();
        if self.started != Some(frame.generation) {
            if !self.may_start_at(&sample) {
                return 0;
            }
            self.started = Some(frame.generation);
            self.scratch.clear();
            let tracks = &self.builder.tracks;
            self.muxer
                .get_or_insert_with(|| TsMuxer::live(tracks))
                .write_tables(tracks, self.scte35, &mut self.scratch);
            out.extend_from_slice(&self.scratch);
        }
        if let Some(packets) = frame.mpegts(|_| self.render(&sample)) {
            out.extend_from_slice(packets);
        }
        let written = out.get_mut(start..).unwrap_or_default();
        self.continuity.restamp(written);
        written.len()
    }

    /// An SCTE-35 section, once the receiver started: on its own PID, after new tables
    /// when it is the stream's first marker this receiver sees.
    fn push_marker(&mut self, frame: &SharedFrame, out: &mut BytesMut) -> usize {
        if self.started != Some(frame.generation) || !frame.frame.is_sample() {
            return 0;
        }
        let start = out.len();
        let tracks = &self.builder.tracks;
        let muxer = self.muxer.get_or_insert_with(|| TsMuxer::live(tracks));
        if !self.scte35 {
            self.scte35 = true;
            self.scratch.clear();
            muxer.write_tables(tracks, true, &mut self.scratch);
            out.extend_from_slice(&self.scratch);
        }
        let rendered = frame.mpegts(|marker| {
            let mut packets = Vec::new();
            muxer.write_scte35(&marker.payload, &mut packets);
            Some(Bytes::from(packets))
        });
        if let Some(packets) = rendered {
            out.extend_from_slice(packets);
        }
        let written = out.get_mut(start..).unwrap_or_default();
        self.continuity.restamp(written);
        written.len()
    }

    /// Starts again at the next keyframe, with tables (after the caller threw away
    /// packets this feed wrote).
    pub fn restart(&mut self) {
        self.started = None;
    }

    fn may_start_at(&self, sample: &Sample) -> bool {
        match sample.kind {
            TrackKind::Video => sample.keyframe,
            TrackKind::Audio => self.builder.tracks.video.is_none(),
        }
    }

    fn render(&mut self, sample: &Sample) -> Option<Bytes> {
        let tracks = &self.builder.tracks;
        let muxer = self.muxer.get_or_insert_with(|| TsMuxer::live(tracks));
        let mut packets = Vec::new();
        match muxer.write_live_sample(tracks, self.scte35, sample, &mut packets) {
            Ok(()) => Some(Bytes::from(packets)),
            Err(e) => {
                tracing::warn!(error = %e, "frame not rendered as MPEG-TS");
                None
            }
        }
    }
}
