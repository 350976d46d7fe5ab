//! Which source frames a push sends and at what timestamp.
//!
//! Media starts at the first video keyframe (the first audio frame of a stream without
//! video); metadata and sequence headers always pass. Timestamps are rebased so the
//! destination's timeline starts at 0 on every connection, and a new source publisher
//! (another frame generation) continues that timeline instead of jumping back to its own
//! zero.

use crate::frame::RtmpFrame;
use strom_media::frame::Track;
use strom_stream::SharedFrame;

#[derive(Debug, Default)]
pub struct Forwarder {
    /// Source timestamp that maps to `offset`, once media started.
    base: Option<u32>,
    offset: u32,
    /// Highest timestamp sent; headers and metadata go out at it.
    last: u32,
    generation: Option<u32>,
    has_video: bool,
}

impl Forwarder {
    /// The timestamp to send `frame` at, or `None` to skip it.
    pub fn timestamp(&mut self, frame: &SharedFrame) -> Option<u32> {
        if self.generation != Some(frame.generation) {
            if self.generation.is_some() && self.base.is_some() {
                // A new publisher: wait for its first keyframe, continue after `last`.
                self.base = None;
                self.offset = self.last.saturating_add(1);
                self.has_video = false;
            }
            self.generation = Some(frame.generation);
        }
        match (frame.frame.track, frame.frame.config) {
            (Track::Data, _) | (Track::Audio, true) => return Some(self.last),
            (Track::Video, true) => {
                self.has_video = true;
                return Some(self.last);
            }
            _ => {}
        }
        let base = match self.base {
            Some(base) => base,
            None => {
                let starts = match frame.frame.track {
                    Track::Video => frame.frame.keyframe,
                    Track::Audio => !self.has_video,
                    Track::Data => false,
                };
                if !starts {
                    return None;
                }
                self.base = Some(frame.timestamp_ms());
                frame.timestamp_ms()
            }
        };
        // Audio a few milliseconds older than the starting keyframe goes out at its time.
        let since_base = (frame.timestamp_ms().wrapping_sub(base) as i32).max(0) as u32;
        let timestamp = self.offset.wrapping_add(since_base);
        self.last = self.last.max(timestamp);
        Some(timestamp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(track: Track, ms: u32, key: bool, header: bool, generation: u32) -> SharedFrame {
        crate::frame::test_frame(track, ms, key, header, generation)
    }

    #[test]
    fn starts_at_a_keyframe_at_zero() {
        let mut f = Forwarder::default();
        assert_eq!(
            f.timestamp(&frame(Track::Data, 0, false, false, 1)),
            Some(0)
        );
        assert_eq!(f.timestamp(&frame(Track::Video, 0, true, true, 1)), Some(0));
        assert_eq!(
            f.timestamp(&frame(Track::Audio, 0, false, true, 1)),
            Some(0)
        );
        assert_eq!(
            f.timestamp(&frame(Track::Video, 5000, false, false, 1)),
            None
        );
        assert_eq!(
            f.timestamp(&frame(Track::Audio, 5010, false, false, 1)),
            None
        );
        assert_eq!(
            f.timestamp(&frame(Track::Video, 6000, true, false, 1)),
            Some(0)
        );
        assert_eq!(
            f.timestamp(&frame(Track::Audio, 5990, false, false, 1)),
            Some(0)
        );
        assert_eq!(
            f.timestamp(&frame(Track::Video, 6040, false, false, 1)),
            Some(40)
        );
        // Headers repeated later go out at the current time, never back in time.
        assert_eq!(
            f.timestamp(&frame(Track::Video, 0, true, true, 1)),
            Some(40)
        );
    }

    #[test]
    fn audio_only_streams_start_with_audio() {
        let mut f = Forwarder::default();
        assert_eq!(
            f.timestamp(&frame(Track::Audio, 0, false, true, 1)),
            Some(0)
        );
        assert_eq!(
            f.timestamp(&frame(Track::Audio, 700, false, false, 1)),
            Some(0)
        );
        assert_eq!(
            f.timestamp(&frame(Track::Audio, 723, false, false, 1)),
            Some(23)
        );
    }

    #[test]
    fn a_new_publisher_continues_the_timeline() {
        let mut f = Forwarder::default();
        f.timestamp(&frame(Track::Video, 0, true, true, 1));
        assert_eq!(
            f.timestamp(&frame(Track::Video, 1000, true, false, 1)),
            Some(0)
        );
        assert_eq!(
            f.timestamp(&frame(Track::Video, 3000, false, false, 1)),
            Some(2000)
        );
        assert_eq!(
            f.timestamp(&frame(Track::Video, 0, true, true, 2)),
            Some(2000)
        );
        assert_eq!(f.timestamp(&frame(Track::Video, 10, false, false, 2)), None);
        assert_eq!(
            f.timestamp(&frame(Track::Video, 40, true, false, 2)),
            Some(2001)
        );
        assert_eq!(
            f.timestamp(&frame(Track::Video, 80, false, false, 2)),
            Some(2041)
        );
    }
}
