//! A reader of a stream: its bounded queue, and how a frame is offered to it.
//!
//! The publisher never waits for a reader: delivery is `try_send`. A reader whose queue
//! is full loses frames up to the next keyframe (never part of a frame, so a container
//! stream built from the frames stays valid), gets the current configuration frames
//! again and resumes there. Every dropped frame is counted on the reader's
//! [`DropCounter`] (which the owning worker shows per session in the API) and the start
//! and end of each run of drops is logged.

use crate::key::StreamKey;
use crate::shared_frame::SharedFrame;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use strom_media::frame::{Frame, Track};
use tokio::sync::mpsc;

/// Frames a reader may have queued: a few seconds of 60 fps video plus audio.
pub const READER_QUEUE_FRAMES: usize = 1024;

pub type FrameSender = mpsc::Sender<Arc<SharedFrame>>;
pub type FrameReceiver = mpsc::Receiver<Arc<SharedFrame>>;
/// Frames a reader lost because it fell behind.
pub type DropCounter = Arc<AtomicU64>;

pub(crate) struct QueuedReader {
    pub id: u64,
    pub queue: FrameSender,
    /// Dropping until the next keyframe.
    pub lagging: bool,
    pub dropped: DropCounter,
}

/// Whether a reader that lost frames may resume at `frame`: a video keyframe, or in a
/// stream without video (which has no keyframes) any audio frame.
pub(crate) fn resumes_at(frame: &Frame, has_video: bool) -> bool {
    match frame.track {
        Track::Video => frame.keyframe,
        Track::Audio => !has_video,
        Track::Data => false,
    }
}

/// Offers `frame` to one reader; `false` when the reader is gone.
pub(crate) fn deliver(
    reader: &mut QueuedReader,
    frame: &Arc<SharedFrame>,
    headers: &[Arc<SharedFrame>],
    has_video: bool,
    key: &StreamKey,
) -> bool {
    let resumes_here = resumes_at(&frame.frame, has_video);
    if reader.lagging {
        if !resumes_here || reader.queue.capacity() < headers.len() + 1 {
            reader.dropped.fetch_add(1, Ordering::Relaxed);
            return !reader.queue.is_closed();
        }
        for header in headers {
            if reader.queue.try_send(Arc::clone(header)).is_err() {
                return !reader.queue.is_closed();
            }
        }
        reader.lagging = false;
        tracing::info!(stream = %key, reader = reader.id, dropped = reader.dropped.load(Ordering::Relaxed), "reader caught up at a keyframe");
    }
    match reader.queue.try_send(Arc::clone(frame)) {
        Ok(()) => true,
        Err(mpsc::error::TrySendError::Full(_)) => {
            reader.lagging = true;
            reader.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(stream = %key, reader = reader.id, dropped = reader.dropped.load(Ordering::Relaxed), "reader too slow: dropping until the next keyframe");
            true
        }
        Err(mpsc::error::TrySendError::Closed(_)) => false,
    }
}
