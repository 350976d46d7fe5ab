//! The API's gate: when a management token is set, every request must carry a valid
//! `salt` and `hash` (see [`crate::auth`]); otherwise 403 with the reason.

use crate::api::error::ApiError;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

pub async fn require(token: Option<String>, request: Request, next: Next) -> Response {
    if let Some(token) = token.as_deref()
        && let Err(failure) = crate::auth::verify(request.uri().query(), token)
    {
        tracing::warn!(path = request.uri().path(), reason = %failure, "management request refused");
        return ApiError {
            code: StatusCode::FORBIDDEN,
            status: "Forbidden",
            error: failure.to_string(),
        }
        .into_response();
    }
    next.run(request).await
}
