//! Fan-out of a stream's frames to its RTMP players, driven by the frames' arrival.
//!
//! The players of a stream are grouped (at most [`GROUP_MEMBERS`] per group, one task
//! each, so a popular stream spreads over the runtime's cores). When the hub has handed
//! a frame to every reader it signals the stream ([`strom_stream::Hub::watch_delivered`]);
//! the group wakes once and writes, to each player whose socket is not full, the frames
//! that player has not had yet (read from the stream's ring through its cursor: nothing
//! is queued per player), with one system call ([`Sink::pump`]). Under light load that
//! is every frame at once; under load the frames that arrived while a pass ran go
//! out together in the next one, so batching grows with load instead of adding a fixed
//! delay. A player whose socket is full is skipped: its connection's flush loop writes
//! for it until it caught up (see [`crate::sink`]).
//!
//! After the signal a group waits its gather window before the pass, so the frames an
//! encoder sends together (a video frame and the audio around it, within a millisecond
//! or two) go out in one write: `limits.play_coalesce_ms` (default 2) while the worker
//! has time to spare, longer when fan-out takes most of it ([`crate::fanout_load`]).

use crate::fanout_load::FanoutLoad;
use crate::sink::{BATCH, Pumped, Sink};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use strom_stream::{Hub, StreamKey};
use strom_worker_runtime::sync::locked;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Players written by one task at most.
pub const GROUP_MEMBERS: usize = 1024;

/// A group's players; the pass takes a snapshot (one `Arc` clone), so joins and leaves
/// never wait for a pass.
type Members = Mutex<Arc<Vec<Arc<Sink>>>>;

struct Group {
    members: Arc<Members>,
    stop: CancellationToken,
}

impl Group {
    fn len(&self) -> usize {
        locked(&self.members).len()
    }
}

/// The fan-out groups of the worker's streams.
pub struct FanOuts {
    hub: Hub,
    groups: Mutex<HashMap<StreamKey, Vec<Group>>>,
    /// [`GROUP_MEMBERS`]; tests make groups smaller.
    group_members: AtomicUsize,
    load: Arc<FanoutLoad>,
}

impl FanOuts {
    pub fn new(hub: Hub) -> Self {
        Self {
            hub,
            groups: Mutex::default(),
            group_members: AtomicUsize::new(GROUP_MEMBERS),
            load: Arc::default(),
        }
    }

    /// Adds a player (already a reader of `key`, its feed started) to a group of the
    /// stream and writes what it has to read now (the start of the stream).
    pub fn join(&self, key: &StreamKey, sink: &Arc<Sink>, coalesce: Duration) {
        let group_members = self.group_members.load(Ordering::Relaxed);
        {
            let mut groups = locked(&self.groups);
            let stream_groups = groups.entry(key.clone()).or_default();
            match stream_groups
                .iter()
                .find(|group| group.len() < group_members)
            {
                Some(group) => Arc::make_mut(&mut locked(&group.members)).push(Arc::clone(sink)),
                None => {
                    let Some(delivered) = self.hub.watch_delivered(key) else {
                        // A reader keeps its stream in the hub: this cannot happen.
                        tracing::error!(stream = %key, "fan-out for a stream the hub does not have");
                        return;
                    };
                    let group = Group {
                        members: Arc::new(Mutex::new(Arc::new(vec![Arc::clone(sink)]))),
                        stop: CancellationToken::new(),
                    };
                    tokio::spawn(run_group(
                        Arc::clone(&group.members),
                        delivered,
                        group.stop.clone(),
                        Arc::clone(&self.load),
                        coalesce,
                    ));
                    stream_groups.push(group);
                }
            }
        }
        let mut scratch = Vec::with_capacity(BATCH);
        if sink.pump(&mut scratch) == Pumped::Blocked {
            sink.block();
        }
    }

    /// Removes a player; a group without players ends. Must come before the player
    /// leaves the hub: a group only ever holds readers of the stream it watches.
    pub fn leave(&self, key: &StreamKey, sink: &Arc<Sink>) {
        let mut groups = locked(&self.groups);
        let Some(stream_groups) = groups.get_mut(key) else {
            return;
        };
        stream_groups.retain(|group| {
            let mut members = locked(&group.members);
            if let Some(at) = members.iter().position(|member| Arc::ptr_eq(member, sink)) {
                Arc::make_mut(&mut members).swap_remove(at);
            }
            if members.is_empty() {
                group.stop.cancel();
                return false;
            }
            true
        });
        if stream_groups.is_empty() {
            groups.remove(key);
        }
    }

    #[cfg(test)]
    pub fn set_group_members(&self, members: usize) {
        self.group_members.store(members, Ordering::Relaxed);
    }

    /// Groups of `key` right now (for tests).
    #[cfg(test)]
    pub fn group_count(&self, key: &StreamKey) -> usize {
        locked(&self.groups).get(key).map_or(0, Vec::len)
    }
}

async fn run_group(
    members: Arc<Members>,
    mut delivered: watch::Receiver<u64>,
    stop: CancellationToken,
    load: Arc<FanoutLoad>,
    coalesce: Duration,
) {
    let mut scratch = Vec::with_capacity(BATCH);
    let mut gather = coalesce;
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => return,
            changed = delivered.changed() => if changed.is_err() {
                // The stream is gone; its players leave with their connections.
                stop.cancelled().await;
                return;
            },
        }
        if !gather.is_zero() {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(gather) => {}
            }
            // What arrived meanwhile goes out in this pass: no second wake-up for it.
            delivered.borrow_and_update();
        }
        let started = Instant::now();
        let snapshot = Arc::clone(&*locked(&members));
        for sink in snapshot.iter() {
            if !sink.is_blocked() && sink.pump(&mut scratch) == Pumped::Blocked {
                sink.block();
            }
        }
        // The batch's buffers are shared frames: do not keep them alive until the next pass.
        scratch.clear();
        load.record(started.elapsed());
        gather = load.next_gather(gather, coalesce);
    }
}
