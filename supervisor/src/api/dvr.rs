//! DVR archives: status, MP4 export, cleanup (the dvr worker owns the files).

mod export;

use crate::api::ApiState;
use crate::api::dto::Archive;
use crate::api::error::{ApiError, QueryParams, ok};
use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;
use serde_json::{Value, json};
use strom_ipc::messages::{WorkerReply, WorkerRequest};
use strom_ipc::{FailureKind, WorkerKind};

#[derive(Debug, Deserialize)]
pub struct StatusQuery {
    #[serde(default)]
    timeline: Option<String>,
}

impl StatusQuery {
    fn timeline(&self) -> bool {
        matches!(self.timeline.as_deref(), Some("" | "true" | "1" | "yes"))
    }
}

async fn archives(
    state: &ApiState,
    stream: Option<(String, String)>,
    timeline: bool,
) -> Result<Json<Vec<Archive>>, ApiError> {
    match state
        .workers
        .ask(
            WorkerKind::Dvr,
            WorkerRequest::DvrStatus { stream, timeline },
        )
        .await?
    {
        WorkerReply::DvrArchives(archives) => {
            Ok(Json(archives.into_iter().map(Archive::from).collect()))
        }
        other => Err(super::unexpected(other)),
    }
}

#[utoipa::path(get, path = "/manage/dvr_status", params(("timeline" = Option<bool>, Query)), responses((status = 200, body = Vec<crate::api::dto::Archive>)))]
pub async fn status_all(
    State(state): State<ApiState>,
    QueryParams(query): QueryParams<StatusQuery>,
) -> Result<Json<Vec<Archive>>, ApiError> {
    archives(&state, None, query.timeline()).await
}

#[utoipa::path(get, path = "/manage/dvr_status/{app}/{stream}", params(("app" = String, Path), ("stream" = String, Path), ("timeline" = Option<bool>, Query)), responses((status = 200, body = Vec<crate::api::dto::Archive>)))]
pub async fn status_one(
    State(state): State<ApiState>,
    Path((app, stream)): Path<(String, String)>,
    QueryParams(query): QueryParams<StatusQuery>,
) -> Result<Json<Vec<Archive>>, ApiError> {
    archives(&state, Some((app, stream)), query.timeline()).await
}

/// `start`/`end` of an export: Unix seconds UTC, either open.
#[derive(Debug, Deserialize)]
pub struct ExportQuery {
    start: Option<i64>,
    end: Option<i64>,
}

#[utoipa::path(
    get,
    path = "/manage/dvr/export_mp4/{app}/{stream}",
    params(
        ("app" = String, Path),
        ("stream" = String, Path),
        ("start" = Option<i64>, Query, description = "Unix seconds UTC; playback begins here (from the keyframe before it)"),
        ("end" = Option<i64>, Query, description = "Unix seconds UTC"),
        ("Range" = Option<String>, Header, description = "One byte range, e.g. bytes=0-1023"),
    ),
    responses(
        (status = 200, content_type = "video/mp4", body = Vec<u8>, description = "The whole progressive MP4"),
        (status = 206, content_type = "video/mp4", body = Vec<u8>, description = "The requested byte range"),
        (status = 400, body = crate::api::shapes::ErrorBody, description = "Empty or inverted range, bad parameters, nothing recorded in the range"),
        (status = 404, body = crate::api::shapes::ErrorBody, description = "No DVR archive for the stream"),
        (status = 416, body = crate::api::shapes::ErrorBody, description = "Range outside the file"),
        (status = 503, body = crate::api::shapes::ErrorBody, description = "The dvr worker is unavailable or busy with other exports"),
    )
)]
pub async fn export_mp4(
    State(state): State<ApiState>,
    Path((app, stream)): Path<(String, String)>,
    QueryParams(query): QueryParams<ExportQuery>,
    headers: axum::http::HeaderMap,
) -> Result<axum::response::Response, ApiError> {
    let range = headers
        .get(axum::http::header::RANGE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let request = strom_ipc::dvr_export::ExportRequest {
        app,
        stream,
        start: query.start,
        end: query.end,
        range,
    };
    export::export(&state.supervisor.instance.run_dir, request).await
}

/// Cleanup parameters travel in the query string; none means everything.
#[derive(Debug, Deserialize)]
pub struct CleanupQuery {
    target_depth: Option<u64>,
    from: Option<i64>,
    to: Option<i64>,
    older_than: Option<i64>,
}

#[utoipa::path(post, path = "/manage/dvr/cleanup_archive/{app}/{stream}", params(("app" = String, Path), ("stream" = String, Path), ("target_depth" = Option<i64>, Query), ("from" = Option<i64>, Query), ("to" = Option<i64>, Query)), responses((status = 200, body = crate::api::shapes::StatusReply)))]
pub async fn cleanup(
    State(state): State<ApiState>,
    Path((app, stream)): Path<(String, String)>,
    QueryParams(query): QueryParams<CleanupQuery>,
) -> Result<Json<Value>, ApiError> {
    let request = WorkerRequest::DvrCleanup {
        app,
        stream,
        target_depth_minutes: query.target_depth,
        from: query.from,
        to: query.to.or(query.older_than),
    };
    match state.workers.ask(WorkerKind::Dvr, request).await? {
        WorkerReply::Done => Ok(ok()),
        // The spec answers a missing archive in the body, with 200.
        WorkerReply::NotFound
        | WorkerReply::Error {
            kind: FailureKind::NotFound,
            ..
        } => Ok(Json(json!({"status": "Not found"}))),
        other => Err(super::unexpected(other)),
    }
}
