//! Publish control: live publishers and the deny list.
//!
//! The deny list is held by the supervisor, so a restarted rtmp worker receives it again
//! with its hello and keeps refusing denied ids.

use crate::api::ApiState;
use crate::api::error::{ApiError, JsonBody};
use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};
use strom_ipc::WorkerKind;
use strom_ipc::messages::{WorkerReply, WorkerRequest};

const MAX_IDS: usize = 10_000;

pub async fn status(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    match state
        .workers
        .ask(WorkerKind::Rtmp, WorkerRequest::ListPublishers)
        .await?
    {
        WorkerReply::Publishers(publishers) => {
            let entries: Vec<Value> = publishers
                .into_iter()
                .map(|p| json!({"key": p.key, "id": p.id, "ip": p.ip, "stream": p.stream}))
                .collect();
            Ok(Json(json!({"PublishControlStatus": entries})))
        }
        other => Err(super::unexpected(other)),
    }
}

#[derive(Debug, Deserialize)]
#[allow(non_snake_case)]
pub struct DenyBody {
    PublishControlDenyRequest: Vec<String>,
}

pub async fn deny(
    State(state): State<ApiState>,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<Value>, ApiError> {
    let body: DenyBody = serde_json::from_value(body).map_err(|_| {
        ApiError::bad_request("expected {\"PublishControlDenyRequest\":[\"id\",...]}")
    })?;
    let ids = body.PublishControlDenyRequest;
    if ids.len() > MAX_IDS {
        return Err(ApiError::bad_request(format!(
            "at most {MAX_IDS} ids per request"
        )));
    }
    state.supervisor.deny_publishers(&ids);
    tracing::info!(?ids, "publishers denied");
    // Recorded above first: if the worker is restarting, its hello carries the list.
    match state
        .workers
        .ask(WorkerKind::Rtmp, WorkerRequest::DenyPublishers(ids))
        .await
    {
        Ok(WorkerReply::Done) => {}
        Ok(other) => return Err(super::unexpected(other)),
        Err(e) => tracing::warn!(error = %e, "rtmp worker gets the deny list when it starts"),
    }
    Ok(Json(
        json!({"PublishControlDenyResponse": {"status": "success"}}),
    ))
}
