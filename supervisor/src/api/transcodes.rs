//! `GET /manage/transcodes` (strom's own): every running transcode of the transcoder
//! worker, with its state, frames in and out, speed, CPU, restarts and last error.

use crate::api::ApiState;
use crate::api::error::ApiError;
use axum::Json;
use axum::extract::State;
use serde_json::Value;
use strom_ipc::WorkerKind;
use strom_ipc::messages::{WorkerReply, WorkerRequest};

#[utoipa::path(get, path = "/manage/transcodes", responses((status = 200, body = Vec<crate::api::shapes::Transcode>)))]
pub async fn list(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    match state
        .workers
        .ask(WorkerKind::Transcoder, WorkerRequest::Transcodes)
        .await?
    {
        WorkerReply::JsonItems(items) => Ok(Json(Value::Array(
            items
                .iter()
                .filter_map(|item| match serde_json::from_str(item) {
                    Ok(value) => Some(value),
                    Err(e) => {
                        tracing::warn!(error = %e, "transcoder worker sent a status that is not JSON");
                        None
                    }
                })
                .collect(),
        ))),
        other => Err(super::unexpected(other)),
    }
}
