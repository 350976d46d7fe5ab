//! SCTE-35 cues on demand (spec §4 #19-20): `advertizer/scte35_out` and `scte35_in`
//! reach the worker that produces the stream (the registry knows which), which puts the
//! marker into the stream before its next keyframe. A stream that is not live is 404; a
//! stream without `AdInsertion` `time_sync` `scte35` is 409 with the reason. strom's
//! own `command=time_signal` sends the out as a time_signal (its in follows in kind).

use crate::api::ApiState;
use crate::api::error::{ApiError, QueryParams, ok};
use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;
use serde_json::Value;
use strom_ipc::messages::{Scte35Cue, WorkerReply, WorkerRequest};

#[derive(Debug, Deserialize)]
pub struct CueQuery {
    /// Seconds until the return to the programme (auto-return).
    duration: Option<u32>,
    /// strom's own: the SCTE-35 command the out is sent as.
    command: Option<CueCommand>,
}

/// `command`: `splice_insert` (the default) or `time_signal` (with a Provider
/// Placement Opportunity Start segmentation descriptor, the form most ad-decision
/// systems now expect).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum CueCommand {
    SpliceInsert,
    TimeSignal,
}

/// Sends `cue` to the producer of `app/stream`.
async fn cue(
    state: &ApiState,
    app: String,
    stream: String,
    cue: Scte35Cue,
) -> Result<Json<Value>, ApiError> {
    let Some(producer) = state.supervisor.producer_of(&app, &stream) else {
        return Err(ApiError::not_found(format!(
            "no such stream {app}/{stream}"
        )));
    };
    let reply = state
        .workers
        .ask(producer, WorkerRequest::Scte35 { app, stream, cue })
        .await?;
    if let Some((kind, message)) = reply.failure() {
        return Err(ApiError::from_worker(kind, message));
    }
    match reply {
        WorkerReply::Done => Ok(ok()),
        other => Err(super::unexpected(other)),
    }
}

#[utoipa::path(post, path = "/manage/advertizer/scte35_out/{app}/{stream}", params(("app" = String, Path), ("stream" = String, Path), ("duration" = Option<u32>, Query, description = "seconds until the return"), ("command" = Option<String>, Query, description = "strom's own: `splice_insert` (default) or `time_signal`; the in that closes a break is sent in the out's form")), responses((status = 200, body = crate::api::shapes::StatusReply), (status = 400, body = crate::api::shapes::ErrorBody), (status = 404, body = crate::api::shapes::ErrorBody), (status = 409, body = crate::api::shapes::ErrorBody)))]
pub async fn scte35_out(
    State(state): State<ApiState>,
    Path((app, stream)): Path<(String, String)>,
    QueryParams(query): QueryParams<CueQuery>,
) -> Result<Json<Value>, ApiError> {
    if query.duration == Some(0) {
        return Err(ApiError::bad_request("duration must be at least 1 second"));
    }
    let cue_out = Scte35Cue::Out {
        duration_secs: query.duration,
        time_signal: query.command == Some(CueCommand::TimeSignal),
    };
    cue(&state, app, stream, cue_out).await
}

#[utoipa::path(post, path = "/manage/advertizer/scte35_in/{app}/{stream}", params(("app" = String, Path, description = "application"), ("stream" = String, Path, description = "stream")), responses((status = 200, body = crate::api::shapes::StatusReply), (status = 404, body = crate::api::shapes::ErrorBody), (status = 409, body = crate::api::shapes::ErrorBody)))]
pub async fn scte35_in(
    State(state): State<ApiState>,
    Path((app, stream)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    cue(&state, app, stream, Scte35Cue::In).await
}
