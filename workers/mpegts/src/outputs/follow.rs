//! A blocking reader of a stream for an output thread (libsrt and librist send from
//! their own threads): the frames of the stream as MPEG-TS through a [`TsFeed`], until
//! the output stops.
//!
//! The thread waits in `blocking_recv` on its hub reader. To wake it when the output is
//! stopped (a reload, `sessions/delete`) while the stream is quiet, a small task on the
//! worker's runtime removes the reader from the hub, which closes its queue.

use bytes::BytesMut;
use strom_stream::{DropCounter, FrameReceiver, Hub, StreamKey, TsFeed};
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

pub struct Follower {
    hub: Hub,
    key: StreamKey,
    reader: u64,
    frames: FrameReceiver,
    dropped: DropCounter,
    feed: TsFeed,
    /// Ends the task that leaves the hub on `stop`, once the follower is gone.
    done: CancellationToken,
}

impl Follower {
    /// Reads `key` as reader `reader` (a session id) until `stop` or drop.
    pub fn start(
        hub: &Hub,
        key: StreamKey,
        reader: u64,
        stop: &CancellationToken,
        runtime: &Handle,
    ) -> Self {
        let (frames, dropped) = hub.subscribe(&key, reader);
        let done = CancellationToken::new();
        let (waker_hub, waker_key, waker_done, stop) =
            (hub.clone(), key.clone(), done.clone(), stop.clone());
        runtime.spawn(async move {
            tokio::select! {
                () = stop.cancelled() => waker_hub.leave(&waker_key, reader),
                () = waker_done.cancelled() => {}
            }
        });
        Self {
            hub: hub.clone(),
            key,
            reader,
            frames,
            dropped,
            feed: TsFeed::new(),
            done,
        }
    }

    /// The frames this reader lost by falling behind (whole GOPs).
    pub fn dropped(&self) -> DropCounter {
        std::sync::Arc::clone(&self.dropped)
    }

    /// Waits for the next frame that makes TS packets and appends them to `out`; `false`
    /// when the output stopped (its reader was removed).
    pub fn next_packets(&mut self, out: &mut BytesMut) -> bool {
        loop {
            let Some(frame) = self.frames.blocking_recv() else {
                return false;
            };
            if self.feed.push(&frame, out) > 0 {
                return true;
            }
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.done.cancel();
        self.hub.leave(&self.key, self.reader);
    }
}
