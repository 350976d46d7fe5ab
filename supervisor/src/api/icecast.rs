//! Icecast per-stream commands: `icecast_stream_info` (the packager answers: it serves
//! the listeners) and `icecast_metadata`, which reaches the worker that produces the
//! stream (the registry knows which; as SCTE-35 cues do): the title goes into the
//! stream there as timed metadata, so RTMP players (`onMetaData` `StreamTitle`), HLS
//! (timed ID3) and Icecast listeners all get it in timeline order.

use crate::api::ApiState;
use crate::api::error::{ApiError, JsonBody, ok};
use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;
use serde_json::{Value, json};
use strom_ipc::messages::{WorkerReply, WorkerRequest};
use strom_ipc::{FailureKind, WorkerKind};

async fn ask_packager(
    state: &ApiState,
    request: WorkerRequest,
    what: &str,
) -> Result<WorkerReply, ApiError> {
    match state.workers.ask(WorkerKind::Packager, request).await? {
        WorkerReply::NotFound
        | WorkerReply::Error {
            kind: FailureKind::NotFound,
            ..
        } => Err(ApiError::not_found(format!("no such stream {what}"))),
        reply => Ok(reply),
    }
}

#[utoipa::path(get, path = "/manage/icecast_stream_info/{app}/{stream}", params(("app" = String, Path, description = "application"), ("stream" = String, Path, description = "stream")), responses((status = 200, body = crate::api::shapes::IcecastInfo), (status = 404, body = crate::api::shapes::ErrorBody)))]
pub async fn info(
    State(state): State<ApiState>,
    Path((app, stream)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let what = format!("{app}/{stream}");
    match ask_packager(&state, WorkerRequest::IcecastInfo { app, stream }, &what).await? {
        WorkerReply::Icecast(info) => Ok(Json(json!({
            "icy-name": info.name,
            "icy-description": info.description,
            "icy-genre": info.genre,
            "icy-br": info.bitrate_kbps,
            "streamtitle": info.stream_title,
        }))),
        other => Err(super::unexpected(other)),
    }
}

#[derive(Debug, Deserialize)]
pub struct MetadataBody {
    streamtitle: String,
    #[serde(default)]
    streamurl: String,
}

#[utoipa::path(post, path = "/manage/icecast_metadata/{app}/{stream}", params(("app" = String, Path, description = "application"), ("stream" = String, Path, description = "stream")), request_body = crate::api::shapes::IcecastMetadataBody, responses((status = 200, body = crate::api::shapes::StatusReply), (status = 400, body = crate::api::shapes::ErrorBody), (status = 404, body = crate::api::shapes::ErrorBody)))]
pub async fn metadata(
    State(state): State<ApiState>,
    Path((app, stream)): Path<(String, String)>,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<Value>, ApiError> {
    let body: MetadataBody = serde_json::from_value(body).map_err(|e| {
        ApiError::bad_request(format!(
            "expected {{\"streamtitle\":..,\"streamurl\":..}}: {e}"
        ))
    })?;
    let Some(producer) = state.supervisor.producer_of(&app, &stream) else {
        return Err(ApiError::not_found(format!(
            "no such stream {app}/{stream}"
        )));
    };
    let what = format!("{app}/{stream}");
    let request = WorkerRequest::IcecastMetadata {
        app,
        stream,
        title: body.streamtitle,
        url: body.streamurl,
    };
    match state.workers.ask(producer, request).await? {
        WorkerReply::NotFound
        | WorkerReply::Error {
            kind: FailureKind::NotFound,
            ..
        } => Err(ApiError::not_found(format!("no such stream {what}"))),
        reply => match reply.failure() {
            Some((kind, message)) => Err(ApiError::from_worker(kind, message)),
            None => done(reply),
        },
    }
}

fn done(reply: WorkerReply) -> Result<Json<Value>, ApiError> {
    match reply {
        WorkerReply::Done => Ok(ok()),
        other => Err(super::unexpected(other)),
    }
}
