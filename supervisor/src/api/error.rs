//! Error answers of the management API and the JSON body extractor.
//!
//! Errors the spec does not define use HTTP status codes with a body
//! `{"status":"<word>","error":"<why>"}`; statuses the spec defines in the body
//! (`NotFound`, `Not found`) are produced by the handlers themselves.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::management::BodyTimeout;
use crate::process::RequestError;
use strom_ipc::FailureKind;

/// Body timeout when the connection did not say (requests built in tests).
const DEFAULT_BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Largest request body the API reads.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

#[derive(Debug)]
pub struct ApiError {
    pub code: StatusCode,
    pub status: &'static str,
    pub error: String,
}

impl ApiError {
    pub fn bad_request(error: impl Into<String>) -> Self {
        Self {
            code: StatusCode::BAD_REQUEST,
            status: "BadRequest",
            error: error.into(),
        }
    }

    pub fn not_found(error: impl Into<String>) -> Self {
        Self {
            code: StatusCode::NOT_FOUND,
            status: "NotFound",
            error: error.into(),
        }
    }

    pub fn unprocessable(error: impl Into<String>) -> Self {
        Self {
            code: StatusCode::UNPROCESSABLE_ENTITY,
            status: "Error",
            error: error.into(),
        }
    }

    pub fn bad_gateway(error: impl Into<String>) -> Self {
        Self {
            code: StatusCode::BAD_GATEWAY,
            status: "Error",
            error: error.into(),
        }
    }

    pub fn request_timeout(error: impl Into<String>) -> Self {
        Self {
            code: StatusCode::REQUEST_TIMEOUT,
            status: "RequestTimeout",
            error: error.into(),
        }
    }

    pub fn internal(error: impl Into<String>) -> Self {
        Self {
            code: StatusCode::INTERNAL_SERVER_ERROR,
            status: "Error",
            error: error.into(),
        }
    }
}

impl ApiError {
    /// A worker's typed failure as an HTTP answer. Statuses the spec puts in the body
    /// (`{"status":"NotFound"}` with 200, for example) are answered by the handlers
    /// before they get here.
    pub fn from_worker(kind: FailureKind, message: &str) -> Self {
        let (code, status, fallback) = match kind {
            FailureKind::NotFound => (StatusCode::NOT_FOUND, "NotFound", "not found"),
            FailureKind::Refused => (StatusCode::CONFLICT, "Conflict", "refused"),
            FailureKind::Invalid => (StatusCode::UNPROCESSABLE_ENTITY, "Error", "invalid"),
            FailureKind::Unavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                "Unavailable",
                "worker unavailable",
            ),
            // A request routed to a worker that does not handle it is our bug, not the
            // client's: the same 500 as a worker's internal failure.
            FailureKind::Internal | FailureKind::Unsupported => {
                (StatusCode::INTERNAL_SERVER_ERROR, "Error", "worker failure")
            }
        };
        Self {
            code,
            status,
            error: if message.is_empty() {
                fallback.to_owned()
            } else {
                message.to_owned()
            },
        }
    }
}

impl From<RequestError> for ApiError {
    fn from(e: RequestError) -> Self {
        Self {
            code: StatusCode::SERVICE_UNAVAILABLE,
            status: "Unavailable",
            error: e.to_string(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.code,
            Json(json!({"status": self.status, "error": self.error})),
        )
            .into_response()
    }
}

/// A JSON body parsed whatever the Content-Type says (deployed clients do not always
/// send one); malformed JSON is a 400 that says where. A body that does not arrive
/// within the management body timeout is a 408.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let limit = request
            .extensions()
            .get::<BodyTimeout>()
            .map_or(DEFAULT_BODY_TIMEOUT, |timeout| timeout.0);
        let bytes = tokio::time::timeout(limit, Bytes::from_request(request, state))
            .await
            .map_err(|_| {
                ApiError::request_timeout(format!(
                    "request body not received within {} s",
                    limit.as_secs()
                ))
            })?
            .map_err(|e| ApiError::bad_request(format!("unreadable body: {e}")))?;
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|e| ApiError::bad_request(format!("malformed JSON body: {e}")))
    }
}

/// `{"status":"Ok"}`
pub fn ok() -> Json<serde_json::Value> {
    Json(json!({"status": "Ok"}))
}

/// Query parameters; a bad one is a 400 JSON answer that names it.
#[derive(Debug)]
pub struct QueryParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> axum::extract::FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or_default();
        serde_urlencoded_from_str(query)
            .map(QueryParams)
            .map_err(|e| ApiError::bad_request(format!("bad query parameter: {e}")))
    }
}

fn serde_urlencoded_from_str<T: DeserializeOwned>(query: &str) -> Result<T, String> {
    axum::extract::Query::<T>::try_from_uri(
        &format!("/?{query}")
            .parse()
            .map_err(|e: axum::http::uri::InvalidUri| e.to_string())?,
    )
    .map(|axum::extract::Query(value)| value)
    .map_err(|e| e.body_text())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_failures_map_to_http_statuses() {
        let cases = [
            (FailureKind::NotFound, StatusCode::NOT_FOUND),
            (FailureKind::Refused, StatusCode::CONFLICT),
            (FailureKind::Invalid, StatusCode::UNPROCESSABLE_ENTITY),
            (FailureKind::Internal, StatusCode::INTERNAL_SERVER_ERROR),
            (FailureKind::Unavailable, StatusCode::SERVICE_UNAVAILABLE),
            (FailureKind::Unsupported, StatusCode::INTERNAL_SERVER_ERROR),
        ];
        for (kind, code) in cases {
            let error = ApiError::from_worker(kind, "why");
            assert_eq!(error.code, code, "{kind:?}");
            assert_eq!(error.error, "why");
        }
        assert_eq!(
            ApiError::from_worker(FailureKind::NotFound, "").error,
            "not found"
        );
    }

    /// Older workers' untyped failures keep answering 500 with their message.
    #[test]
    fn untyped_failures_stay_internal_errors() {
        let error = crate::api::unexpected(strom_ipc::messages::WorkerReply::Failed("x".into()));
        assert_eq!(error.code, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(error.error, "x");
    }
}
