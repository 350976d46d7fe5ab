//! The management API (`/manage/...`), wire-compatible with `spec/management-api.md`.
//!
//! One module per resource; handlers reach workers through [`gateway::WorkerGateway`].
//! Every request passes [`auth`] first when a token is configured, except `GET /health`
//! ([`health`]), which load balancers check without credentials, and the web console's
//! static files ([`crate::console`]), whose API calls carry the token themselves.

mod advertizer;
mod auth;
pub mod dto;
pub mod error;
pub mod gateway;

mod cluster;
mod dvr;
mod health;
mod icecast;
mod inputs;
pub mod openapi;
mod publish_control;
mod reload;
mod republish;
mod server_status;
mod sessions;
mod shapes;
mod stream_urls;
mod streams;
mod transcodes;
mod workers;

use crate::state::SupervisorState;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use error::{ApiError, MAX_BODY_BYTES};
use gateway::WorkerGateway;
use std::sync::Arc;
use utoipa::OpenApi;
use utoipa_axum::{router::OpenApiRouter, routes};

/// What every handler gets.
#[derive(Clone)]
pub struct ApiState {
    pub supervisor: Arc<SupervisorState>,
    pub workers: Arc<dyn WorkerGateway>,
}

/// Every documented route: the handlers with the paths their `#[utoipa::path]` names.
fn documented_routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(server_status::get))
        .routes(routes!(workers::list))
        .routes(routes!(streams::rtmp_status))
        .routes(routes!(streams::live_streams_status))
        .routes(routes!(sessions::list))
        .routes(routes!(sessions::delete))
        .routes(routes!(streams::rtmp_settings))
        .routes(routes!(republish::stats))
        .routes(routes!(republish::list, republish::create))
        .routes(routes!(republish::get_one, republish::delete))
        .routes(routes!(inputs::mpegts_status))
        .routes(routes!(inputs::mpegts_settings))
        .routes(routes!(inputs::srt_sender_stats))
        .routes(routes!(inputs::srt_receiver_stats))
        .routes(routes!(inputs::rist_sender_stats))
        .routes(routes!(inputs::rist_receiver_stats))
        .routes(routes!(inputs::ndi_list))
        .routes(routes!(transcodes::list))
        .routes(routes!(cluster::state))
        .routes(routes!(icecast::info))
        .routes(routes!(icecast::metadata))
        .routes(routes!(advertizer::scte35_out))
        .routes(routes!(advertizer::scte35_in))
        .routes(routes!(streams::server_playlists))
        .routes(routes!(stream_urls::get))
        .routes(routes!(publish_control::status))
        .routes(routes!(publish_control::deny))
        .routes(routes!(dvr::status_all))
        .routes(routes!(dvr::status_one))
        .routes(routes!(dvr::export_mp4))
        .routes(routes!(dvr::cleanup))
        .routes(routes!(reload::ssl_certificates))
        .routes(routes!(reload::sync_panel))
        .routes(routes!(reload::config))
        .routes(routes!(health::start_drain, health::end_drain))
}

/// The OpenAPI document of [`router`]'s routes (`strom openapi`, `docs/openapi.json`).
pub fn openapi_document() -> String {
    let (_, document) = documented_routes().split_for_parts();
    openapi::document_text(&document)
}

/// All routes of the API.
pub fn router(state: ApiState) -> Router {
    let token = state.supervisor.instance.management_token.clone();
    let (routes, document) = documented_routes().split_for_parts();
    let document = Arc::new(openapi::document_text(&document));
    routes
        .route(
            "/manage/openapi.json",
            get(move || {
                let document = Arc::clone(&document);
                async move {
                    (
                        [(axum::http::header::CONTENT_TYPE, "application/json")],
                        document.as_str().to_owned(),
                    )
                }
            }),
        )
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
        // Load balancers check this one without credentials.
        .route("/health", get(health::health))
        // Static files only: every API call the console makes is signed like any other.
        .merge(crate::console::routes())
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
