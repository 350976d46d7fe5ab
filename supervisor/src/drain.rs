//! Draining for rolling upgrades: `POST /manage/drain` or SIGUSR1 starts it,
//! `DELETE /manage/drain` or SIGUSR2 ends it. While draining, `GET /health` answers 503
//! (load balancers stop sending new viewers), and the workers that serve viewers (rtmp,
//! packager, rtsp) refuse new ones (RTMP plays, HLS sessions, HTTP listeners) while the open
//! ones go on. A worker that restarts during a drain hears about it again within
//! [`RETELL`] (workers start undrained).

use crate::process::WorkerTable;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use strom_ipc::WorkerKind;
use strom_ipc::messages::{WorkerReply, WorkerRequest};

/// How often the drain is told again to the workers while it lasts.
const RETELL: Duration = Duration::from_secs(2);
/// The workers that serve viewers.
const VIEWER_WORKERS: [WorkerKind; 4] = [
    WorkerKind::Rtmp,
    WorkerKind::Packager,
    WorkerKind::Rtsp,
    WorkerKind::WebRtc,
];

/// Whether the server drains (part of the supervisor state).
#[derive(Debug, Default)]
pub struct Drain {
    draining: AtomicBool,
}

impl Drain {
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// Starts (`true`) or ends the drain and tells the workers at once.
    pub async fn set(&self, workers: &WorkerTable, draining: bool) {
        if self.draining.swap(draining, Ordering::Relaxed) != draining {
            let what = if draining {
                "draining: new viewers are refused, open ones go on"
            } else {
                "drain ended: new viewers accepted"
            };
            tracing::info!(draining, "{what}");
        }
        tell(workers, draining).await;
    }

    /// Tells the workers again every [`RETELL`] while draining (a restarted worker starts
    /// undrained); runs for ever.
    pub async fn keep_told(&self, workers: &WorkerTable) {
        let mut tick = tokio::time::interval(RETELL);
        loop {
            tick.tick().await;
            if self.is_draining() {
                tell(workers, true).await;
            }
        }
    }
}

async fn tell(workers: &WorkerTable, draining: bool) {
    for kind in VIEWER_WORKERS {
        let handle = workers.get(kind);
        match handle.request(WorkerRequest::SetDraining(draining)).await {
            Ok(WorkerReply::Done) => {}
            Ok(other) => tracing::warn!(worker = %kind, ?other, "worker did not take the drain"),
            // Not running: it starts undrained and is told at the next round.
            Err(e) => tracing::debug!(worker = %kind, error = %e, "drain not told"),
        }
    }
}
