//! A blocking reader of a stream for an output thread (libsrt and librist send from
//! their own threads): the frames of the stream as MPEG-TS through a [`TsFeed`], until
//! the output stops.
//!
//! The thread waits in `blocking_recv` on its hub reader. To wake it when the output is
//! stopped (a reload, `sessions/delete`) while the stream is quiet, a small task on the
//! worker's runtime removes the reader from the hub, which closes its queue.

use bytes::BytesMut;
use strom_stream::{FrameReceiver, Reader, ReaderPlace, TsFeed};
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

pub struct Follower {
    /// Its place among the stream's readers, left when the follower drops (first, so
    /// that it leaves before its queue closes).
    _place: ReaderPlace,
    frames: FrameReceiver,
    feed: TsFeed,
    /// Ends the task that leaves the hub on `stop`, once the follower is gone.
    done: CancellationToken,
}

impl Follower {
    /// Reads through `reader` (from the gate for an admitted viewer, from the hub for the
    /// operator's own output) until `stop` or drop.
    pub fn start(
        reader: Reader<FrameReceiver>,
        stop: &CancellationToken,
        runtime: &Handle,
    ) -> Self {
        let Reader { frames, place, .. } = reader;
        let done = CancellationToken::new();
        let (leave, waker_done, stop) = (place.leave_handle(), done.clone(), stop.clone());
        runtime.spawn(async move {
            tokio::select! {
                () = stop.cancelled() => leave.leave_now(),
                () = waker_done.cancelled() => {}
            }
        });
        Self {
            _place: place,
            frames,
            feed: TsFeed::new(),
            done,
        }
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
    }
}
