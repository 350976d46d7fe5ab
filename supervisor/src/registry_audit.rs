//! The registry of live streams is kept by the workers' `StreamPublished` and
//! `StreamUnpublished` events, which a worker drops rather than block media work when
//! its queue to the supervisor is full (thousands of publishers leaving at once). So
//! every [`AUDIT_INTERVAL`] the supervisor asks each running worker which streams it
//! produces (`ListStreams`) and corrects the registry: a stream it lists is added, and a
//! stream the registry had for it before the question and that it no longer lists is
//! removed. Subscribers and the cluster registry's claims follow the corrected registry.

use crate::state::SupervisorState;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use strom_ipc::messages::{WorkerReply, WorkerRequest};
use tokio_util::sync::CancellationToken;

const AUDIT_INTERVAL: Duration = Duration::from_secs(5);

pub async fn run(state: Arc<SupervisorState>, stop: CancellationToken) {
    let mut ticks = tokio::time::interval(AUDIT_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = ticks.tick() => {}
        }
        for worker in state.workers.all() {
            if worker.link().is_none() {
                continue;
            }
            let before = state.produced_by(worker.kind);
            let Ok(WorkerReply::Streams(listed)) = worker.request(WorkerRequest::ListStreams).await
            else {
                continue;
            };
            let listed: BTreeSet<(String, String)> =
                listed.into_iter().map(|s| (s.app, s.stream)).collect();
            let (added, removed) = state.audit_registry(worker.kind, &before, &listed);
            if added + removed > 0 {
                tracing::warn!(
                    worker = %worker.kind,
                    added,
                    removed,
                    "stream registry corrected: the worker's publish events were lost (its queue to the supervisor was full)"
                );
            }
        }
    }
}
