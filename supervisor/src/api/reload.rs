//! `reload_config`, `reload_ssl_certificates`, `sync_panel_settings`.

use crate::api::ApiState;
use crate::api::error::{ApiError, QueryParams, ok};
use crate::reload::{self, ReloadError};
use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::Value;

impl From<ReloadError> for ApiError {
    fn from(e: ReloadError) -> Self {
        match e {
            ReloadError::TlsNotConfigured | ReloadError::PanelNotConfigured => {
                ApiError::bad_request(e.to_string())
            }
            ReloadError::Panel(_) => ApiError::bad_gateway(e.to_string()),
            ReloadError::Internal(_) => ApiError::internal(e.to_string()),
            ReloadError::Config(config) => {
                let config = config.with_file_name_only();
                ApiError::unprocessable(format!("{config}; keeping the rules in force"))
            }
            ReloadError::Bind(_) => {
                ApiError::unprocessable(format!("{e}; keeping the rules in force"))
            }
            ReloadError::Tls(_) => ApiError::unprocessable(e.to_string()),
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct ReloadQuery {
    drm: Option<String>,
}

#[utoipa::path(post, path = "/manage/reload_config", params(("drm" = Option<bool>, Query)), responses((status = 200, body = crate::api::shapes::StatusReply), (status = 422, body = crate::api::shapes::ErrorBody)))]
pub async fn config(
    State(state): State<ApiState>,
    QueryParams(query): QueryParams<ReloadQuery>,
) -> Result<Json<Value>, ApiError> {
    let drm = matches!(query.drm.as_deref(), Some("true" | "1" | "yes"));
    let note = reload::reload_rules(&state.supervisor, drm)
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "reload_config failed; keeping the rules in force");
            ApiError::from(e)
        })?;
    Ok(ok_with(note))
}

#[utoipa::path(post, path = "/manage/reload_ssl_certificates", responses((status = 200, body = crate::api::shapes::StatusReply), (status = 422, body = crate::api::shapes::ErrorBody)))]
pub async fn ssl_certificates(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let note = reload::reload_certificates(&state.supervisor)
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "reload_ssl_certificates failed");
            ApiError::from(e)
        })?;
    Ok(ok_with(note))
}

/// The spec's success shape, plus a `note` when there was nothing to reload: deployed
/// clients read any non-2xx answer as a failed reload.
fn ok_with(note: Option<&str>) -> Json<Value> {
    let Json(mut body) = ok();
    if let (Some(note), Value::Object(fields)) = (note, &mut body) {
        fields.insert("note".to_owned(), Value::String(note.to_owned()));
    }
    Json(body)
}

#[utoipa::path(post, path = "/manage/sync_panel_settings", responses((status = 200, body = crate::api::shapes::StatusReply), (status = 400, body = crate::api::shapes::ErrorBody), (status = 502, body = crate::api::shapes::ErrorBody)))]
pub async fn sync_panel(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    reload::sync_panel(&state.supervisor).await.map_err(|e| {
        tracing::error!(error = %e, "sync_panel_settings failed");
        ApiError::from(e)
    })?;
    Ok(ok())
}
