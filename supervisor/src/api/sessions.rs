//! `GET /manage/sessions` and `POST /manage/sessions/delete`.

use crate::api::ApiState;
use crate::api::dto::Session;
use crate::api::error::{ApiError, JsonBody, ok};
use crate::api::gateway::gather;
use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use strom_ipc::messages::{WorkerReply, WorkerRequest};

/// Most ids one delete request may name.
const MAX_IDS: usize = 10_000;

pub async fn list(State(state): State<ApiState>) -> Json<Vec<Session>> {
    let mut sessions = gather(
        state.workers.ask_all(WorkerRequest::ListSessions).await,
        |reply| match reply {
            WorkerReply::Sessions(sessions) => Some(sessions),
            _ => None,
        },
    );
    sessions.sort_by_key(|s| s.id);
    Json(sessions.into_iter().map(Session::from).collect())
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

pub async fn delete(
    State(state): State<ApiState>,
    JsonBody(body): JsonBody<serde_json::Value>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let body: DeleteBody = serde_json::from_value(body).map_err(|_| {
        ApiError::bad_request("expected a JSON array of session ids or {\"data\":[ids]}")
    })?;
    let ids = ids(body)?;
    let deleted = gather(
        state
            .workers
            .ask_all(WorkerRequest::DeleteSessions(ids.clone()))
            .await,
        |reply| match reply {
            WorkerReply::SessionsDeleted(ids) => Some(ids),
            _ => None,
        },
    );
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
