//! `GET /manage/workers` (strom's own addition): kind, pid, state, restarts, uptime, and
//! bytes received from the last heartbeat.

use crate::api::ApiState;
use axum::Json;
use axum::extract::State;
use serde::Serialize;

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WorkerEntry {
    kind: &'static str,
    /// 0 while no process runs.
    pid: u32,
    state: &'static str,
    restarts: u32,
    /// Seconds since the current process reported ready; 0 while not ready.
    uptime: u64,
    /// Bytes the current process has received (ingest: UDP datagrams included).
    bytes_received: u64,
}

#[utoipa::path(get, path = "/manage/workers", responses((status = 200, body = Vec<WorkerEntry>)))]
pub async fn list(State(state): State<ApiState>) -> Json<Vec<WorkerEntry>> {
    Json(
        state
            .supervisor
            .workers
            .all()
            .iter()
            .map(|worker| {
                let status = worker.status();
                WorkerEntry {
                    kind: worker.kind.as_str(),
                    pid: status.pid.unwrap_or_default(),
                    state: status.state.as_str(),
                    restarts: status.restarts,
                    uptime: status
                        .ready_since
                        .map(|t| t.elapsed().as_secs())
                        .unwrap_or_default(),
                    bytes_received: status.counters.bytes_received,
                }
            })
            .collect(),
    )
}
