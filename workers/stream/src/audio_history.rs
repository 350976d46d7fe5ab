//! The recent audio of an audio-only stream (an internet radio: no video, so no GOP to
//! start a reader with), kept so that a reader that asks for it ([`crate::Hub::
//! subscribe_with_audio_burst`]) starts with a burst of the latest audio, as icecast2's
//! `burst-size` gives new listeners, and a player fills its pre-buffer at once. Other
//! readers do not get it: an RTMP player or a packager starts at the live edge as
//! before.

use crate::reader::READER_QUEUE_FRAMES;
use crate::shared_frame::SharedFrame;
use std::collections::VecDeque;
use std::sync::Arc;

/// The most audio payload kept per stream: the largest burst a reader can ask for.
pub const MAX_AUDIO_BURST_BYTES: usize = 512 * 1024;
/// The most frames kept: with the configuration frames they fit a reader's queue, so
/// handing them over at subscribe cannot fill it.
const MAX_FRAMES: usize = READER_QUEUE_FRAMES - 64;

#[derive(Default)]
pub(crate) struct AudioHistory {
    frames: VecDeque<Arc<SharedFrame>>,
    bytes: usize,
}

impl AudioHistory {
    pub(crate) fn push(&mut self, frame: &Arc<SharedFrame>) {
        self.bytes += frame.frame.payload.len();
        self.frames.push_back(Arc::clone(frame));
        while self.bytes > MAX_AUDIO_BURST_BYTES || self.frames.len() > MAX_FRAMES {
            match self.frames.pop_front() {
                Some(old) => self.bytes -= old.frame.payload.len(),
                None => break,
            }
        }
    }

    pub(crate) fn clear(&mut self) {
        self.frames.clear();
        self.bytes = 0;
    }

    /// The latest frames holding at least `bytes` of audio payload (all of them when
    /// fewer are kept), oldest first.
    pub(crate) fn tail(&self, bytes: usize) -> impl Iterator<Item = Arc<SharedFrame>> + '_ {
        let mut taken = 0;
        let count = self
            .frames
            .iter()
            .rev()
            .take_while(|frame| {
                let more = taken < bytes;
                taken += frame.frame.payload.len();
                more
            })
            .count();
        self.frames.iter().skip(self.frames.len() - count).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use strom_media::frame::{Codec, Frame, Track};

    fn frame(dts: i64, len: usize) -> Arc<SharedFrame> {
        let frame = Frame::neutral(Track::Audio, Codec::Mp3, dts, Bytes::from(vec![0; len]));
        Arc::new(SharedFrame::new(frame, 0))
    }

    #[test]
    fn keeps_the_latest_audio_and_hands_out_a_tail_of_at_least_the_burst() {
        let mut history = AudioHistory::default();
        for dts in 0..2000 {
            history.push(&frame(dts, 400));
        }
        assert!(history.bytes <= MAX_AUDIO_BURST_BYTES);
        assert!(history.frames.len() <= MAX_FRAMES);
        let tail: Vec<i64> = history.tail(1000).map(|f| f.frame.dts).collect();
        assert_eq!(
            tail,
            [1997, 1998, 1999],
            "3 × 400 bytes ≥ 1000, oldest first"
        );
        assert_eq!(history.tail(0).count(), 0);
        assert_eq!(history.tail(usize::MAX).count(), history.frames.len());
        history.clear();
        assert_eq!(history.tail(1000).count(), 0);
    }
}
