//! The guard a publisher holds while it publishes (who it is: [`crate::PublisherInfo`]).
//!
//! [`crate::Gate::publish`] and [`crate::Hub::own_publisher`] hand out a [`Publishing`]; the stream stays claimed exactly as
//! long as the guard lives. Dropping it (a publisher that ends, errors or whose task
//! panics) releases the stream and announces the release, so no stream is left claimed
//! by a task that is gone. A client's publish also holds its session in the gate's
//! registry, which ends when the guard drops.

use crate::gate::ownership::NameClaim;
use crate::gate::sessions::Session;
use crate::hub::Hub;
use crate::key::StreamKey;
use crate::stream::Stream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use strom_media::frame::Frame;

/// A publisher's hold on its stream; releases it when dropped.
pub struct Publishing {
    hub: Hub,
    stream: Arc<Stream>,
    session_id: u64,
    /// Whether the hub's announcer was told of this publish (not for relays).
    announced: bool,
    /// The name held across the server's workers; let go right after the release.
    name: std::sync::Mutex<Option<NameClaim>>,
    released: AtomicBool,
    /// The client's session, for a client's publish ([`crate::Gate::publish`]): it ends
    /// with the publish.
    session: Option<Session>,
}

impl Publishing {
    pub(crate) fn new(
        hub: Hub,
        stream: Arc<Stream>,
        session_id: u64,
        announced: bool,
        name: Option<NameClaim>,
    ) -> Self {
        Self {
            hub,
            stream,
            session_id,
            announced,
            name: std::sync::Mutex::new(name),
            released: AtomicBool::new(false),
            session: None,
        }
    }

    pub(crate) fn with_session(mut self, session: Session) -> Self {
        self.session = Some(session);
        self
    }

    /// The client's session (none for the operator's own producers).
    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    pub fn key(&self) -> &StreamKey {
        &self.stream.key
    }

    pub fn stream(&self) -> &Arc<Stream> {
        &self.stream
    }

    /// Hands `frame` to every reader of the stream. Never blocks.
    pub fn publish(&self, frame: Frame) {
        self.stream.publish(frame, None);
    }

    /// Like [`Publishing::publish`], with the container bytes the frame was parsed from
    /// (readers of the same container forward them untouched).
    pub fn publish_with_container(&self, frame: Frame, container: bytes::Bytes) {
        self.stream.publish(frame, Some(container));
    }

    /// Starts a new timeline within this publish (a producer whose codec parameters
    /// changed): readers see a new generation, as after a publisher restart (HLS marks
    /// a discontinuity), but the stream never goes offline.
    pub fn restart_timeline(&self) {
        self.stream.restart_timeline();
    }

    /// Ends the publish now; `true` when this call released the stream (the first
    /// release of a publisher that still held it).
    pub fn release(&self) -> bool {
        if self.released.swap(true, Ordering::AcqRel) {
            return false;
        }
        let released = self
            .hub
            .release(&self.stream.key, self.session_id, self.announced);
        // After the hub let go and announced it: the next owner's publish is announced
        // after this release.
        drop(strom_worker_runtime::sync::locked(&self.name).take());
        released
    }
}

impl Drop for Publishing {
    fn drop(&mut self) {
        if self.release() {
            tracing::info!(stream = %self.stream.key, session = self.session_id, "publisher gone: stream released");
        }
    }
}
