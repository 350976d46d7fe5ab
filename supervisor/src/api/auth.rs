//! The API's gate: when a management token is set, every request must carry a valid
//! `salt` and `hash` (see [`crate::auth`]), or, for an MP4 export link only, a
//! short-lived link signature (see [`crate::link_signature`]); otherwise 403 with the
//! reason.

use crate::api::error::ApiError;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

pub async fn require(token: Option<String>, request: Request, next: Next) -> Response {
    if let Some(token) = token.as_deref()
        && let Err(failure) = check(&request, token)
    {
        tracing::warn!(path = request.uri().path(), reason = %failure, "management request refused");
        return ApiError {
            code: StatusCode::FORBIDDEN,
            status: "Forbidden",
            error: failure,
        }
        .into_response();
    }
    next.run(request).await
}

/// Checks `salt`/`hash`, or a link signature where one is accepted; the reason on failure.
fn check(request: &Request, token: &str) -> Result<(), String> {
    let (path, query) = (request.uri().path(), request.uri().query());
    let link = request.method() == axum::http::Method::GET
        && path.starts_with(crate::link_signature::LINK_PATH_PREFIX)
        && crate::link_signature::is_signed_link(query);
    if link {
        // Before 1970 only on a broken clock: every link is then expired.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        return crate::link_signature::verify(path, query, token, now).map_err(|e| e.to_string());
    }
    crate::auth::verify(query, token).map_err(|e| e.to_string())
}
