//! Sends the registry's copy to the workers: a started worker gets the whole copy
//! (paged), every change goes to all of them, batched with the changes queued behind it,
//! and a change of the connection's state is sent as an empty update carrying it.

use super::copy::{self, Change};
use super::{Host, Shared};
use std::collections::BTreeSet;
use std::sync::Arc;
use strom_ipc::WorkerKind;
use strom_ipc::cluster::ClusterUpdate;
use strom_ipc::messages::WorkerRequest;
use strom_ipc::sync::locked;
use tokio::sync::mpsc;

#[derive(Debug)]
pub(super) enum Push {
    Changes(Vec<Change>),
    /// Every worker gets the whole copy (a new copy after a (re)connection, or the
    /// registry left).
    Snapshot,
    /// The connection's state changed.
    State,
    Ready(WorkerKind),
}

/// Pushes batches at most this many deep at once (more wait for the next round).
const BATCH: usize = 64;

pub(super) async fn run(
    shared: Arc<Shared>,
    host: Arc<dyn Host>,
    mut pushes: mpsc::Receiver<Push>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    while pushes.recv_many(&mut batch, BATCH).await > 0 {
        let mut changes = Vec::new();
        let mut snapshot_for: BTreeSet<WorkerKind> = BTreeSet::new();
        let mut state_changed = false;
        for push in batch.drain(..) {
            match push {
                Push::Changes(more) => changes.extend(more),
                Push::Snapshot => snapshot_for.extend(WorkerKind::ALL),
                Push::State => state_changed = true,
                Push::Ready(kind) => {
                    snapshot_for.insert(kind);
                }
            }
        }
        let settings = shared.settings.borrow().clone();
        let connected = locked(&shared.status).connected;
        let Some(own_id) = settings.map(|s| s.server_id) else {
            for kind in snapshot_for {
                send(&shared, &*host, kind, vec![ClusterUpdate::default()]).await;
            }
            continue;
        };
        let snapshot =
            (!snapshot_for.is_empty()).then(|| locked(&shared.copy).snapshot(&own_id, connected));
        let mut updates = copy::pages(&own_id, connected, changes);
        if updates.is_empty() && state_changed {
            updates.push(ClusterUpdate {
                own_id: Some(own_id.clone()),
                connected,
                ..ClusterUpdate::default()
            });
        }
        for kind in WorkerKind::ALL {
            match &snapshot {
                Some(snapshot) if snapshot_for.contains(&kind) => {
                    send(&shared, &*host, kind, snapshot.clone()).await
                }
                _ if !updates.is_empty() => send(&shared, &*host, kind, updates.clone()).await,
                _ => {}
            }
        }
    }
}

/// Sends `updates` to `kind`; a worker that is not running gets the copy when it starts,
/// and one that missed an update (it did not answer in time) gets the whole copy again.
async fn send(shared: &Shared, host: &dyn Host, kind: WorkerKind, updates: Vec<ClusterUpdate>) {
    let worker = host.worker(kind);
    if worker.link().is_none() {
        return;
    }
    for update in updates {
        if let Err(e) = worker.request(WorkerRequest::Cluster(update)).await {
            tracing::warn!(worker = %kind, error = %e, "cluster: copy update not delivered: the whole copy follows");
            if worker.link().is_some() {
                let _ = shared.push.try_send(Push::Ready(kind));
            }
            return;
        }
    }
}
