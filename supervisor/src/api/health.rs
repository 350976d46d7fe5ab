//! `GET /health` (no auth, outside `/manage`): what a load balancer checks. 200
//! `{"status":"ok"}` when every worker is `ready`; 503 `{"status":"draining"}` while
//! draining, 503 `{"status":"unavailable","not_ready":[kinds]}` while a worker is not ready.
//! `POST /manage/drain` and `DELETE /manage/drain` start and end a drain
//! ([`crate::drain`]).

use crate::api::ApiState;
use crate::api::error::ok;
use crate::process::state::WorkerState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

pub async fn health(State(state): State<ApiState>) -> (StatusCode, Json<Value>) {
    if state.supervisor.drain.is_draining() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "draining"})),
        );
    }
    let not_ready: Vec<&str> = state
        .supervisor
        .workers
        .all()
        .iter()
        .filter(|w| w.status().state != WorkerState::Ready)
        .map(|w| w.kind.as_str())
        .collect();
    if not_ready.is_empty() {
        (StatusCode::OK, Json(json!({"status": "ok"})))
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "unavailable", "not_ready": not_ready})),
        )
    }
}

#[utoipa::path(post, path = "/manage/drain", responses((status = 200, body = crate::api::shapes::StatusReply)))]
pub async fn start_drain(State(state): State<ApiState>) -> Json<Value> {
    let supervisor = &state.supervisor;
    supervisor.drain.set(&supervisor.workers, true).await;
    ok()
}

#[utoipa::path(delete, path = "/manage/drain", responses((status = 200, body = crate::api::shapes::StatusReply)))]
pub async fn end_drain(State(state): State<ApiState>) -> Json<Value> {
    let supervisor = &state.supervisor;
    supervisor.drain.set(&supervisor.workers, false).await;
    ok()
}
