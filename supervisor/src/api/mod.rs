//! The management API (`/manage/...`), wire-compatible with `spec/management-api.md`.
//!
//! One module per resource; handlers reach workers through [`gateway::WorkerGateway`].
//! Every request passes [`auth`] first when a token is configured.

mod advertizer;
mod auth;
pub mod dto;
pub mod error;
pub mod gateway;

mod dvr;
mod icecast;
mod inputs;
mod publish_control;
mod reload;
mod republish;
mod server_status;
mod sessions;
mod streams;
mod workers;

use crate::state::SupervisorState;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use error::{ApiError, MAX_BODY_BYTES};
use gateway::WorkerGateway;
use std::sync::Arc;

/// What every handler gets.
#[derive(Clone)]
pub struct ApiState {
    pub supervisor: Arc<SupervisorState>,
    pub workers: Arc<dyn WorkerGateway>,
}

/// All routes of the API.
pub fn router(state: ApiState) -> Router {
    let token = state.supervisor.instance.management_token.clone();
    Router::new()
        .route("/manage/server_status", get(server_status::get))
        .route("/manage/workers", get(workers::list))
        .route("/manage/rtmp_status", get(streams::rtmp_status))
        .route(
            "/manage/live_streams_status",
            get(streams::live_streams_status),
        )
        .route("/manage/sessions", get(sessions::list))
        .route("/manage/sessions/delete", post(sessions::delete))
        .route("/manage/rtmp_settings", get(streams::rtmp_settings))
        .route("/manage/rtmp/republish/stats", get(republish::stats))
        .route(
            "/manage/rtmp/republish",
            get(republish::list).post(republish::create),
        )
        .route(
            "/manage/rtmp/republish/{id}",
            get(republish::get_one).delete(republish::delete),
        )
        .route("/manage/mpeg2ts_status", get(inputs::mpegts_status))
        .route("/manage/mpeg2ts_settings", get(inputs::mpegts_settings))
        .route("/manage/srt_sender_stats", get(inputs::srt_sender_stats))
        .route(
            "/manage/srt_receiver_stats",
            get(inputs::srt_receiver_stats),
        )
        .route("/manage/rist_sender_stats", get(inputs::rist_sender_stats))
        .route(
            "/manage/rist_receiver_stats",
            get(inputs::rist_receiver_stats),
        )
        .route("/manage/ndi/list", get(inputs::ndi_list))
        .route(
            "/manage/icecast_stream_info/{app}/{stream}",
            get(icecast::info),
        )
        .route(
            "/manage/icecast_metadata/{app}/{stream}",
            post(icecast::metadata),
        )
        .route(
            "/manage/advertizer/scte35_out/{app}/{stream}",
            post(advertizer::scte35_out),
        )
        .route(
            "/manage/advertizer/scte35_in/{app}/{stream}",
            post(advertizer::scte35_in),
        )
        .route(
            "/manage/server_playlist_status",
            get(streams::server_playlists),
        )
        .route(
            "/manage/publish_control/status",
            get(publish_control::status),
        )
        .route("/manage/publish_control/deny", post(publish_control::deny))
        .route("/manage/dvr_status", get(dvr::status_all))
        .route("/manage/dvr_status/{app}/{stream}", get(dvr::status_one))
        .route(
            "/manage/dvr/export_mp4/{app}/{stream}",
            get(dvr::export_mp4),
        )
        .route(
            "/manage/dvr/cleanup_archive/{app}/{stream}",
            post(dvr::cleanup),
        )
        .route(
            "/manage/reload_ssl_certificates",
            post(reload::ssl_certificates),
        )
        .route("/manage/sync_panel_settings", post(reload::sync_panel))
        .route("/manage/reload_config", post(reload::config))
        .fallback(|| async { ApiError::not_found("no such API path") })
        .method_not_allowed_fallback(|| async {
            ApiError {
                code: axum::http::StatusCode::METHOD_NOT_ALLOWED,
                status: "MethodNotAllowed",
                error: "method not allowed for this path".to_owned(),
            }
        })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(move |request, next| {
            auth::require(token.clone(), request, next)
        }))
        .layer(axum::middleware::from_fn(
            crate::api_latency::record_api_latency,
        ))
        .with_state(state)
}

/// A reply that does not fit the request: a worker's typed failure (mapped to its HTTP
/// status), or a bug between supervisor and worker.
pub(crate) fn unexpected(reply: strom_ipc::messages::WorkerReply) -> ApiError {
    if let Some((kind, message)) = reply.failure() {
        return ApiError::from_worker(kind, message);
    }
    tracing::error!(other = ?reply, "unexpected worker reply");
    ApiError::internal("unexpected worker reply")
}
