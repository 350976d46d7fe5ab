//! What the gate hands out to a reader: a [`Reader`] of one stream (its frames, its drop
//! counter and its [`ReaderPlace`] among the stream's readers, left when dropped), in the
//! form its [`ReadMode`] asks for.
//!
//! A client's reader gets one only from [`crate::Gate::read`], with the [`Reading`] its
//! admission returned; the operator's own readers (pushes, recordings, packagers, the
//! shared feeds that serve admitted viewers) from [`crate::Hub::own_reader`]. The hub's
//! subscribe calls themselves are private to the stream core:
//!
//! ```compile_fail
//! fn bypass(hub: &strom_stream::Hub, key: &strom_stream::StreamKey) {
//!     let _ = hub.subscribe(key, 1);
//! }
//! ```
//!
//! ```compile_fail
//! fn bypass(hub: &strom_stream::Hub, key: &strom_stream::StreamKey) {
//!     let _ = hub.subscribe_cursor(key, 1);
//! }
//! ```
//!
//! [`Reading`]: super::reader::Reading

use super::sessions::Session;
use crate::cursor::Cursor;
use crate::hub::Hub;
use crate::key::StreamKey;
use crate::reader::{DropCounter, FrameReceiver};

/// How a reader reads a stream; sealed, so only these three exist.
pub trait ReadMode: sealed::Sealed {
    /// What the reader receives frames through.
    type Frames;
    #[doc(hidden)]
    fn join(self, hub: &Hub, key: &StreamKey, id: u64) -> (Self::Frames, DropCounter);
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Queue {}
    impl Sealed for super::AudioBurst {}
    impl Sealed for super::Fanout {}
}

/// Its own bounded queue that starts at the last keyframe.
#[derive(Debug, Clone, Copy)]
pub struct Queue;

/// [`Queue`], but an audio-only stream starts with the latest this many bytes of audio
/// (at most [`crate::audio_history::MAX_AUDIO_BURST_BYTES`]): a radio listener's burst.
#[derive(Debug, Clone, Copy)]
pub struct AudioBurst(pub usize);

/// A [`Cursor`] over the stream's ring, for a reader among many that read the same
/// frames (the players of a fan-out).
#[derive(Debug, Clone, Copy)]
pub struct Fanout;

impl ReadMode for Queue {
    type Frames = FrameReceiver;
    fn join(self, hub: &Hub, key: &StreamKey, id: u64) -> (FrameReceiver, DropCounter) {
        hub.subscribe(key, id)
    }
}

impl ReadMode for AudioBurst {
    type Frames = FrameReceiver;
    fn join(self, hub: &Hub, key: &StreamKey, id: u64) -> (FrameReceiver, DropCounter) {
        hub.subscribe_with_audio_burst(key, id, self.0)
    }
}

impl ReadMode for Fanout {
    type Frames = Cursor;
    fn join(self, hub: &Hub, key: &StreamKey, id: u64) -> (Cursor, DropCounter) {
        hub.subscribe_cursor(key, id)
    }
}

impl Hub {
    /// The operator's own reader of `key` as reader `id`: a push, a recording, a packager,
    /// an output, the shared feed that serves admitted viewers. A client's reader gets its
    /// [`Reader`] from [`crate::Gate::read`]. (Here rather than in `hub.rs`, so that the
    /// hub does not import its handles.)
    pub fn own_reader<M: ReadMode>(&self, key: &StreamKey, mode: M, id: u64) -> Reader<M::Frames> {
        Reader::join(self, key, mode, id, None)
    }
}

/// A reader of one stream.
pub struct Reader<F> {
    pub frames: F,
    /// The frames it lost by falling behind (whole GOPs), shown per session in the API.
    pub dropped: DropCounter,
    /// Its place among the stream's readers: the reader leaves the stream when it drops.
    pub place: ReaderPlace,
}

impl<F> Reader<F> {
    pub(crate) fn join<M: ReadMode<Frames = F>>(
        hub: &Hub,
        key: &StreamKey,
        mode: M,
        id: u64,
        session: Option<Session>,
    ) -> Self {
        let (frames, dropped) = mode.join(hub, key, id);
        if let Some(session) = &session {
            let _ = session.dropped.set(std::sync::Arc::clone(&dropped));
        }
        Self {
            frames,
            dropped,
            place: ReaderPlace {
                leave: Leave {
                    hub: hub.clone(),
                    key: key.clone(),
                    id,
                },
                session,
            },
        }
    }
}

/// A reader's place among a stream's readers; dropping it leaves the stream (the first
/// reader is demand for the stream, the last one leaving ends it) and ends the client's
/// session.
pub struct ReaderPlace {
    leave: Leave,
    session: Option<Session>,
}

impl ReaderPlace {
    /// The client's session (none for the operator's own readers).
    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// The reader's id (its session id where it has a session).
    pub fn id(&self) -> u64 {
        self.leave.id
    }

    pub fn key(&self) -> &StreamKey {
        &self.leave.key
    }

    /// Leaves the stream now, where the order of leaving matters (dropping the place
    /// later changes nothing).
    pub fn leave(&self) {
        self.leave.leave_now();
    }

    /// Something that makes the reader leave from elsewhere, before the place drops: its
    /// queue closes, which wakes a reader blocked on it (an output thread).
    pub fn leave_handle(&self) -> Leave {
        self.leave.clone()
    }
}

impl Drop for ReaderPlace {
    fn drop(&mut self) {
        self.leave.leave_now();
        drop(self.session.take());
    }
}

/// Makes a reader leave its stream ([`ReaderPlace::leave_handle`]); leaving twice only
/// says again that the demand ended.
#[derive(Clone)]
pub struct Leave {
    hub: Hub,
    key: StreamKey,
    id: u64,
}

impl Leave {
    pub fn leave_now(&self) {
        self.hub.leave(&self.key, self.id);
    }
}
