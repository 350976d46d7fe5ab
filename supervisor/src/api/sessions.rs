//! `GET /manage/sessions` and `POST /manage/sessions/delete`.
//!
//! The list is fetched from the workers page by page (see
//! [`crate::api::gateway::all_sessions`]), so it is complete however many sessions there
//! are; a running worker that does not answer makes it a 503 (see
//! [`crate::api::gateway`]).

use crate::api::ApiState;
use crate::api::dto::Session;
use crate::api::error::{ApiError, JsonBody, ok};
use crate::api::gateway::{Incomplete, all_sessions, gather, listed};
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use strom_ipc::messages::{WorkerReply, WorkerRequest};

/// Most ids one delete request may name.
const MAX_IDS: usize = 10_000;

#[utoipa::path(get, path = "/manage/sessions", responses((status = 200, body = Vec<Session>), (status = 503, body = crate::api::shapes::ErrorBody)))]
pub async fn list(State(state): State<ApiState>) -> Result<Response, Incomplete> {
    let sessions = all_sessions(state.workers.as_ref()).await?;
    let body: Vec<Session> = sessions.items.into_iter().map(Session::from).collect();
    Ok(listed(&sessions.not_running, body))
}

/// Both body shapes deployed clients send: `[1,2]` and `{"data":[1,2]}`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum DeleteBody {
    Bare(Vec<SessionId>),
    Wrapped { data: Vec<SessionId> },
}

/// An id as a JSON number or a string of digits.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum SessionId {
    Number(u64),
    Text(String),
}

fn ids(body: DeleteBody) -> Result<Vec<u64>, ApiError> {
    let raw = match body {
        DeleteBody::Bare(ids) | DeleteBody::Wrapped { data: ids } => ids,
    };
    if raw.len() > MAX_IDS {
        return Err(ApiError::bad_request(format!(
            "at most {MAX_IDS} ids per request"
        )));
    }
    raw.into_iter()
        .map(|id| match id {
            SessionId::Number(n) => Ok(n),
            SessionId::Text(text) => text
                .trim()
                .parse()
                .map_err(|_| ApiError::bad_request(format!("session id {text:?} is not a number"))),
        })
        .collect()
}

/// A running worker that did not confirm makes the answer 503 (naming it): its sessions
/// may still be open, and deleting again is harmless.
#[utoipa::path(post, path = "/manage/sessions/delete", request_body = crate::api::shapes::DeleteSessionsBody, responses((status = 200, body = crate::api::shapes::StatusReply), (status = 400, body = crate::api::shapes::ErrorBody), (status = 503, body = crate::api::shapes::ErrorBody)))]
pub async fn delete(
    State(state): State<ApiState>,
    JsonBody(body): JsonBody<serde_json::Value>,
) -> Result<Json<serde_json::Value>, Response> {
    let body: DeleteBody = serde_json::from_value(body).map_err(|_| {
        ApiError::bad_request("expected a JSON array of session ids or {\"data\":[ids]}")
            .into_response()
    })?;
    let ids = ids(body).map_err(IntoResponse::into_response)?;
    let deleted = gather(
        state
            .workers
            .ask_all(WorkerRequest::DeleteSessions(ids.clone()))
            .await,
        |reply| match reply {
            WorkerReply::SessionsDeleted(ids) => Some(ids),
            _ => None,
        },
    )
    .map_err(IntoResponse::into_response)?
    .items;
    tracing::info!(requested = ?ids, ended = ?deleted, "sessions deleted");
    Ok(ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_both_body_shapes_and_digit_strings() {
        let bare: DeleteBody = serde_json::from_str("[1, \"2\"]").unwrap();
        assert_eq!(ids(bare).unwrap(), vec![1, 2]);
        let wrapped: DeleteBody = serde_json::from_str("{\"data\":[4294967297]}").unwrap();
        assert_eq!(ids(wrapped).unwrap(), vec![4_294_967_297]);
        let bad: DeleteBody = serde_json::from_str("[\"x\"]").unwrap();
        assert!(ids(bad).is_err());
        assert!(serde_json::from_str::<DeleteBody>("{\"ids\":[1]}").is_err());
    }
}
