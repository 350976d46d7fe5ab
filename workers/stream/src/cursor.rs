//! A cursor reader of a stream: where it is in the stream's ring ([`crate::ring`]).
//!
//! For readers that are many and read the same frames at the same moment (the players
//! of a fan-out): nothing is queued for a cursor when a frame is published, and reading
//! takes the frames the cursor has not had yet straight from the ring. Like a queue
//! reader it starts with the stream's metadata, configuration frames and current GOP,
//! and a cursor that falls behind loses frames up to the next keyframe, counted on its
//! [`DropCounter`](crate::DropCounter).

use crate::ring::CursorState;
use crate::shared_frame::SharedFrame;
use crate::stream::Stream;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;

pub struct Cursor {
    stream: Arc<Stream>,
    id: u64,
    /// The frames a new reader starts with, taken when it subscribed.
    start: VecDeque<Arc<SharedFrame>>,
    state: Arc<CursorState>,
}

impl Cursor {
    pub(crate) fn new(
        stream: Arc<Stream>,
        id: u64,
        start: VecDeque<Arc<SharedFrame>>,
        state: Arc<CursorState>,
    ) -> Self {
        Self {
            stream,
            id,
            start,
            state,
        }
    }

    /// Hands the next frames, in order, to `each`: at most `max` (a reader resuming after
    /// drops gets the configuration frames on top). Returns how many; 0 when it has had
    /// every frame published so far. Never waits: [`Stream::watch_delivered`] says when
    /// there is more.
    pub fn take(&mut self, max: usize, mut each: impl FnMut(&Arc<SharedFrame>)) -> usize {
        let mut taken = 0;
        while taken < max {
            let Some(frame) = self.start.pop_front() else {
                break;
            };
            each(&frame);
            taken += 1;
        }
        if taken < max {
            taken += self
                .stream
                .read_ring(self.id, &self.state, max - taken, &mut each);
        }
        taken
    }

    /// Frames this reader lost because it fell behind.
    pub fn dropped(&self) -> u64 {
        self.state.dropped.load(Ordering::Relaxed)
    }
}

impl Drop for Cursor {
    fn drop(&mut self) {
        // The ring need not keep anything for it any more; the hub forgets it when it
        // leaves, or at the ring's next trim.
        self.state.close();
    }
}
