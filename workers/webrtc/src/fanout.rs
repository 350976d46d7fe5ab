//! A stream's connected viewers, written to from the stream's frames in one pass per
//! frame. The viewers are spread over shards, one per thread of the worker's runtime;
//! each shard is a task that receives the feed's frames and, for each frame, writes it
//! to every viewer of the shard (a lock of the viewer's [`Core`], its packets' headers
//! and encryption) and sends all their datagrams together (`sendmmsg`, many viewers per
//! system call). A viewer's own task wakes only for its peer's packets and its timers,
//! not for every frame.
//!
//! Frames carry a sequence number: a viewer that joins is sent the kept GOP by its
//! session and the frames from the next number on by its shard, so nothing is sent
//! twice or out of order. A shard that falls behind the feed's broadcast loses frames
//! for all its viewers, who resume at the next keyframe.

use crate::core::Core;
use crate::feed_frame::FeedFrame;
use crate::udp_batch::UdpBatch;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;
use strom_worker_runtime::sync::locked;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// Timers already due after a frame's drain that the shard serves itself, at most.
const DUE_TIMERS_SERVED: usize = 2;

/// A viewer as its shard holds it: gone when its session is.
struct Member {
    core: Weak<Mutex<Core>>,
    /// The first frame (by sequence number) the shard sends it.
    from: u64,
}

/// One shard's viewers that joined since its last frame.
#[derive(Default)]
pub struct Shard {
    joining: Mutex<Vec<Member>>,
}

/// The shards of one stream.
pub struct Fanout {
    shards: Vec<Arc<Shard>>,
}

impl Fanout {
    /// One shard per runtime thread, each a task fed by `frames` until `stop`.
    pub fn start(
        sender: &broadcast::Sender<Arc<FeedFrame>>,
        stop: &CancellationToken,
        key: &strom_stream::StreamKey,
    ) -> Self {
        let threads = tokio::runtime::Handle::current()
            .metrics()
            .num_workers()
            .max(1);
        let shards = (0..threads)
            .map(|_| {
                let shard = Arc::new(Shard::default());
                tokio::spawn(run(
                    Arc::clone(&shard),
                    sender.subscribe(),
                    stop.clone(),
                    key.to_string(),
                ));
                shard
            })
            .collect();
        Self { shards }
    }

    /// Adds a viewer (`id` picks its shard); it is sent frames numbered `from` on.
    pub fn join(&self, id: u64, core: &Arc<Mutex<Core>>, from: u64) {
        let index = (id % self.shards.len() as u64) as usize;
        if let Some(shard) = self.shards.get(index) {
            locked(&shard.joining).push(Member {
                core: Arc::downgrade(core),
                from,
            });
        }
    }
}

async fn run(
    shard: Arc<Shard>,
    mut frames: broadcast::Receiver<Arc<FeedFrame>>,
    stop: CancellationToken,
    stream: String,
) {
    let mut members: Vec<Member> = Vec::new();
    let mut batch = UdpBatch::default();
    loop {
        let frame = tokio::select! {
            () = stop.cancelled() => return,
            frame = frames.recv() => frame,
        };
        members.append(&mut locked(&shard.joining));
        match frame {
            Ok(frame) => {
                members.retain(|member| write(member, &frame, &mut batch));
                batch.flush();
                let refused = batch.take_refused();
                if refused > 0 {
                    // The shared socket had no room: every viewer of the shard lost
                    // packets, and skips to the next keyframe.
                    for member in &members {
                        if let Some(core) = member.core.upgrade() {
                            locked(&core).fell_behind("the server's UDP socket is full", refused);
                        }
                    }
                }
            }
            Err(broadcast::error::RecvError::Lagged(lost)) => {
                tracing::info!(%stream, lost, viewers = members.len(), "webrtc fan-out fell behind the stream");
                members.retain(|member| {
                    let Some(core) = member.core.upgrade() else {
                        return false;
                    };
                    let mut core = locked(&core);
                    core.count_dropped(lost);
                    core.fell_behind("it fell behind the stream", lost as usize);
                    !core.closed
                });
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// Writes `frame` to one viewer; whether the viewer stays in the shard.
fn write(member: &Member, frame: &Arc<FeedFrame>, batch: &mut UdpBatch) -> bool {
    let Some(core) = member.core.upgrade() else {
        return false;
    };
    let mut core = locked(&core);
    if core.closed {
        return false;
    }
    if frame.seq < member.from {
        return true;
    }
    core.send(frame);
    if core.sends_itself() {
        // strom's own RTP path: the frame's packets are sealed, and str0m was given
        // nothing, so it has nothing new to say; its timers are its session task's.
        core.flush_own(batch);
        return core.ended.is_none();
    }
    let mut next = core.drain(batch);
    // str0m's pacer asks for its timer right after it released packets: served here,
    // rather than by waking the viewer's task for it after every frame.
    for _ in 0..DUE_TIMERS_SERVED {
        match next {
            Some(at) if at <= Instant::now() => {
                core.timeout();
                next = core.drain(batch);
            }
            _ => break,
        }
    }
    core.wake_if_sooner(next);
    next.is_some()
}
