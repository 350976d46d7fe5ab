//! Live streams (`rtmp_status`, `live_streams_status`), `rtmp_settings` and
//! `server_playlist_status`.

use crate::api::ApiState;
use crate::api::dto::{group_streams, rtmp_settings as render_settings};
use crate::api::error::ApiError;
use crate::api::gateway::{Gathered, Incomplete, all_live_streams, listed};
use axum::Json;
use axum::extract::State;
use axum::response::Response;
use serde_json::{Value, json};
use strom_ipc::WorkerKind;
use strom_ipc::messages::{WorkerReply, WorkerRequest};
use strom_ipc::status::LiveStream;

/// Every worker's live streams; 503 when a running worker does not answer (see
/// [`crate::api::gateway`]).
async fn live_streams(state: &ApiState) -> Result<Gathered<LiveStream>, Incomplete> {
    all_live_streams(state.workers.as_ref()).await
}

#[utoipa::path(get, path = "/manage/rtmp_status", responses((status = 200, body = Vec<crate::api::dto::AppGroup>), (status = 503, body = crate::api::shapes::ErrorBody)))]
pub async fn rtmp_status(State(state): State<ApiState>) -> Result<Response, Incomplete> {
    let streams = live_streams(&state).await?;
    Ok(listed(
        &streams.not_running,
        group_streams(streams.items, false),
    ))
}

#[utoipa::path(get, path = "/manage/live_streams_status", responses((status = 200, body = Vec<crate::api::dto::AppGroup>), (status = 503, body = crate::api::shapes::ErrorBody)))]
pub async fn live_streams_status(State(state): State<ApiState>) -> Result<Response, Incomplete> {
    let streams = live_streams(&state).await?;
    Ok(listed(
        &streams.not_running,
        group_streams(streams.items, true),
    ))
}

#[utoipa::path(get, path = "/manage/rtmp_settings", responses((status = 200, body = Object)))]
pub async fn rtmp_settings(State(state): State<ApiState>) -> Json<Value> {
    Json(render_settings(&state.supervisor.rules().rtmp))
}

#[utoipa::path(get, path = "/manage/server_playlist_status", responses((status = 200, body = Vec<Object>)))]
pub async fn server_playlists(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    match state
        .workers
        .ask(WorkerKind::Ingest, WorkerRequest::ServerPlaylists)
        .await?
    {
        WorkerReply::ServerPlaylists(entries) => Ok(Json(Value::Array(
            entries
                .into_iter()
                .map(|e| {
                    let mut entry = json!({
                        "stream": e.stream,
                        "block_id": e.block_id,
                        "block_duration": e.block_duration,
                        "main_stream": e.main_stream,
                        "main_stream_type": e.main_stream_type,
                        "main_stream_duration": e.main_stream_duration,
                    });
                    if let (Some(object), Some(error)) = (entry.as_object_mut(), e.error) {
                        object.insert("error".into(), json!(error));
                    }
                    if let (Some(object), Some(default)) = (entry.as_object_mut(), e.default_stream)
                    {
                        object.insert("default_stream".into(), json!(default));
                        object.insert(
                            "default_stream_type".into(),
                            json!(e.default_stream_type.unwrap_or_default()),
                        );
                        object.insert(
                            "default_stream_duration".into(),
                            json!(e.default_stream_duration.unwrap_or_default()),
                        );
                    }
                    entry
                })
                .collect(),
        ))),
        other => Err(super::unexpected(other)),
    }
}
