//! A stream's recent frames in publish order, kept once for all its cursor readers.
//!
//! A queue reader ([`crate::reader`]) costs the publisher a queue push per frame, and
//! its reader a pop; a stream that thousands of players read (RTMP fan-out) keeps its
//! frames once here instead, and each cursor reader ([`crate::Cursor`]) only remembers
//! the sequence number it reads next. The ring keeps what the slowest cursor has not
//! read yet, at most [`READER_QUEUE_FRAMES`] frames (a queue reader's bound). A cursor
//! left further behind loses frames when the ring lets them go (counted on its
//! [`DropCounter`] then, so a stalled reader's drops show while it stalls): like a queue
//! reader it then skips to the next place to resume (a video keyframe, or any audio
//! frame of a stream without video), gets the stream's configuration frames as they were
//! there, and goes on. The start and end of each run of drops are logged.

use crate::key::StreamKey;
use crate::reader::{DropCounter, READER_QUEUE_FRAMES};
use crate::shared_frame::SharedFrame;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A closed cursor's position: it holds nothing in the ring back.
const CLOSED: u64 = u64::MAX;
/// The ring trims to its slowest cursor each time it grew by this many frames, and lets
/// go of this many at once past its bound (not per frame: each is a pass over every
/// cursor).
const TRIM_EVERY: usize = 32;

/// The configuration frames a cursor gets again where it resumes.
pub(crate) type ResumeHeaders = Arc<[Arc<SharedFrame>]>;

struct Entry {
    frame: Arc<SharedFrame>,
    /// Set where a cursor that fell behind may resume.
    resume: Option<ResumeHeaders>,
}

/// One cursor's place, shared by the cursor and its stream. Only changed under the
/// stream's lock (the atomics make it shareable, not lock-free).
#[derive(Default)]
pub(crate) struct CursorState {
    /// The sequence number it reads next; [`CLOSED`] once the cursor is gone.
    next: AtomicU64,
    /// Frames were let go before it read them: it skips to a place to resume.
    lagging: AtomicBool,
    pub dropped: DropCounter,
}

impl CursorState {
    pub fn close(&self) {
        self.next.store(CLOSED, Ordering::Relaxed);
    }
}

/// A registered cursor, as the stream sees it.
pub(crate) struct CursorSlot {
    pub id: u64,
    pub state: Arc<CursorState>,
}

impl CursorSlot {
    fn next(&self) -> u64 {
        self.state.next.load(Ordering::Relaxed)
    }
}

#[derive(Default)]
pub(crate) struct Ring {
    entries: VecDeque<Entry>,
    /// Sequence number of `entries[0]`.
    base: u64,
    /// Length at which the ring next trims to its slowest cursor.
    trim_at: usize,
}

impl Ring {
    /// The sequence number the next frame will get.
    pub fn end(&self) -> u64 {
        self.base + self.entries.len() as u64
    }

    /// The sequence number of the oldest frame kept.
    #[cfg(test)]
    pub fn base(&self) -> u64 {
        self.base
    }

    /// A new cursor's state: it reads from the next frame on.
    pub fn new_cursor(&self) -> Arc<CursorState> {
        let state = CursorState::default();
        state.next.store(self.end(), Ordering::Relaxed);
        Arc::new(state)
    }

    /// Appends `frame` (with the configuration frames to resume at it, if it is a place
    /// to resume), then lets go of what every cursor has read and, past the bound, of
    /// the oldest frames whoever still needs them.
    pub fn push(
        &mut self,
        frame: Arc<SharedFrame>,
        resume: Option<ResumeHeaders>,
        cursors: &mut Vec<CursorSlot>,
        key: &StreamKey,
    ) {
        self.entries.push_back(Entry { frame, resume });
        if self.entries.len() >= self.trim_at {
            self.trim(cursors);
        }
        if self.entries.len() > READER_QUEUE_FRAMES {
            self.let_go(READER_QUEUE_FRAMES - TRIM_EVERY, cursors, key);
        }
    }

    /// Drops the frames every open cursor has read, and forgets closed cursors.
    fn trim(&mut self, cursors: &mut Vec<CursorSlot>) {
        cursors.retain(|slot| slot.next() != CLOSED);
        let slowest = cursors
            .iter()
            .map(CursorSlot::next)
            .min()
            .unwrap_or_else(|| self.end());
        while self.base < slowest && !self.entries.is_empty() {
            self.entries.pop_front();
            self.base += 1;
        }
        self.trim_at = self.entries.len() + TRIM_EVERY;
    }

    /// Keeps only the newest `keep` frames; the cursors that had not read the others
    /// lose them.
    fn let_go(&mut self, keep: usize, cursors: &[CursorSlot], key: &StreamKey) {
        while self.entries.len() > keep {
            self.entries.pop_front();
            self.base += 1;
        }
        for slot in cursors {
            let next = slot.next();
            if next >= self.base {
                continue;
            }
            let cursor = &slot.state;
            cursor
                .dropped
                .fetch_add(self.base - next, Ordering::Relaxed);
            cursor.next.store(self.base, Ordering::Relaxed);
            if !cursor.lagging.swap(true, Ordering::Relaxed) {
                tracing::warn!(stream = %key, reader = slot.id, dropped = cursor.dropped.load(Ordering::Relaxed), "reader too slow: dropping until the next keyframe");
            }
        }
        self.trim_at = self.entries.len() + TRIM_EVERY;
    }

    /// Forgets every frame (the last cursor left); sequence numbers go on.
    pub fn clear(&mut self) {
        self.base = self.end();
        self.entries.clear();
        self.trim_at = 0;
    }

    /// Hands cursor `id`'s next frames to `each`, at most `max` of them (plus the
    /// configuration frames where a lagging cursor resumes); returns how many.
    pub fn read(
        &self,
        id: u64,
        cursor: &CursorState,
        max: usize,
        key: &StreamKey,
        each: &mut impl FnMut(&Arc<SharedFrame>),
    ) -> usize {
        let mut next = cursor.next.load(Ordering::Relaxed);
        let mut taken = 0;
        let mut lagging = cursor.lagging.load(Ordering::Relaxed);
        while lagging && let Some(entry) = self.entry(next) {
            if let Some(headers) = &entry.resume {
                headers.iter().for_each(&mut *each);
                taken += headers.len();
                lagging = false;
                cursor.lagging.store(false, Ordering::Relaxed);
                tracing::info!(stream = %key, reader = id, dropped = cursor.dropped.load(Ordering::Relaxed), "reader caught up at a keyframe");
                break;
            }
            cursor.dropped.fetch_add(1, Ordering::Relaxed);
            next += 1;
        }
        if !lagging {
            while taken < max
                && let Some(entry) = self.entry(next)
            {
                each(&entry.frame);
                next += 1;
                taken += 1;
            }
        }
        cursor.next.store(next, Ordering::Relaxed);
        taken
    }

    fn entry(&self, seq: u64) -> Option<&Entry> {
        let index = usize::try_from(seq.checked_sub(self.base)?).ok()?;
        self.entries.get(index)
    }
}
