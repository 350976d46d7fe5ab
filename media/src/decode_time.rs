//! Decode times for video that arrives with presentation times only (RTP), in decoding
//! order. With B-frames, presentation times go back and forth, and muxers (FLV, MP4,
//! MPEG-TS) need a decode time that only increases and never passes the presentation
//! time.
//!
//! A decoder may hold at most `depth` frames back (the SPS's reorder depth: H.264
//! `max_num_reorder_frames`, H.265 `sps_max_num_reorder_pics`), so every frame's rank
//! among all presentation times is at least its decoding index minus `depth`. The
//! decode time of the n-th frame is therefore the (n - depth)-th smallest presentation
//! time: it only grows, is at most the frame's own presentation time, and is known on
//! the frame's arrival (a window of `depth + 1` times), so nothing is delayed. Streams
//! without reordering (depth 0) keep `dts = pts`. A stream that reorders deeper than its
//! SPS says widens the window once it shows it.

use crate::avc::AvcDecoderConfig;
use crate::frame::Codec;
use crate::hevc::HevcDecoderConfig;
use bytes::Bytes;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The deepest reorder accepted (the H.264/H.265 decoded picture buffer holds 16).
const MAX_DEPTH: usize = 16;
/// Reorder depth assumed when the parameter sets do not say: x264 and x265 with their
/// default B-frame pyramid.
const UNKNOWN_DEPTH: usize = 2;
/// The least step between invented decode times: 1 ms, the coarsest clock a stream is
/// written in (FLV), where a smaller step would round to equal times.
const STEP: i64 = 90;

/// Decode times for one video track.
#[derive(Debug, Default)]
pub struct DecodeTimes {
    depth: usize,
    /// Presentation times not yet handed out as decode times, smallest first.
    window: BinaryHeap<Reverse<i64>>,
    last: Option<i64>,
}

impl DecodeTimes {
    /// Takes the reorder depth from a decoder configuration record (`avcC` for H.264,
    /// `hvcC` for H.265). A new record never narrows the window, so decode times stay
    /// increasing across a parameter change.
    pub fn configure(&mut self, codec: Codec, record: &Bytes) {
        self.depth = self.depth.max(reorder_depth(codec, record).min(MAX_DEPTH));
    }

    /// The decode time of the next frame in decoding order, presented at `pts`.
    pub fn next(&mut self, pts: i64) -> i64 {
        self.window.push(Reverse(pts));
        let popped = self.window.len() > self.depth;
        let dts = if popped {
            self.window.pop().map_or(pts, |Reverse(smallest)| smallest)
        } else {
            // The first `depth` frames: the smallest time so far, minus the frames
            // still to come before the window is full, a step apart.
            let smallest = self.window.peek().map_or(pts, |Reverse(s)| *s);
            smallest - (self.depth + 1 - self.window.len()) as i64 * STEP
        };
        let dts = match self.last {
            Some(last) if dts <= last => {
                // Deeper reordering than declared: widen the window (the time goes back
                // in, to come out later) and keep this frame in order as far as `pts`
                // allows.
                if popped && self.depth < MAX_DEPTH {
                    self.window.push(Reverse(dts));
                    self.depth += 1;
                }
                (last + STEP).min(pts)
            }
            _ => dts,
        };
        self.last = Some(dts);
        dts
    }
}

/// The reorder depth a configuration record declares; [`UNKNOWN_DEPTH`] where it does not.
fn reorder_depth(codec: Codec, record: &Bytes) -> usize {
    let declared = match codec {
        Codec::H264 => AvcDecoderConfig::parse(record)
            .and_then(|config| config.sps_info())
            .ok()
            .and_then(|sps| match sps.profile_idc {
                // Baseline (and Constrained Baseline) has no B slices.
                66 => Some(0),
                _ => sps.max_num_reorder_frames,
            }),
        Codec::H265 => HevcDecoderConfig::parse(record)
            .and_then(|config| config.sps_info())
            .ok()
            .map(|sps| sps.max_num_reorder_pics),
        _ => Some(0),
    };
    declared.map_or(UNKNOWN_DEPTH, |depth| depth as usize)
}

#[cfg(test)]
#[path = "decode_time_tests.rs"]
mod tests;
