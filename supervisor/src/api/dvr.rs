//! DVR archives: status, MP4 export, cleanup (the dvr worker owns the files).

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

#[utoipa::path(get, path = "/manage/dvr/export_mp4/{app}/{stream}", params(("app" = String, Path), ("stream" = String, Path), ("start" = Option<i64>, Query), ("end" = Option<i64>, Query)), responses((status = 200, content_type = "video/mp4", body = Vec<u8>), (status = 404, body = crate::api::shapes::ErrorBody)))]
pub async fn export_mp4(
    State(state): State<ApiState>,
    Path((app, stream)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    // Export needs a recorded archive; with none recorded for this stream the answer is
    // the same 404 an unknown stream gets.
    match state
        .workers
        .ask(
            WorkerKind::Dvr,
            WorkerRequest::DvrStatus {
                stream: Some((app.clone(), stream.clone())),
                timeline: false,
            },
        )
        .await?
    {
        WorkerReply::DvrArchives(archives) if archives.is_empty() => Err(ApiError::not_found(
            format!("no DVR archive for {app}/{stream}"),
        )),
        WorkerReply::DvrArchives(_) => Err(ApiError::internal(
            "MP4 export is not available in this build",
        )),
        other => Err(super::unexpected(other)),
    }
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
