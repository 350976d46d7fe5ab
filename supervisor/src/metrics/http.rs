//! The metrics listener's HTTP side: `GET /metrics` (in the exposition format the scrape's
//! `Accept` asks for), behind `Authorization: Bearer
//! <metrics_token>` when a token is set (what Prometheus sends for `authorization:
//! {credentials: ...}` or `bearer_token`). The token is compared in constant time, over
//! SHA-256 digests so that its length does not show either. Anything else is 404.

use super::{exposition, render, snapshot};
use crate::api::ApiState;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// The metrics routes; `token`: the bearer token every request must carry.
pub fn router(api: ApiState, token: Option<String>) -> Router {
    let token: Option<Arc<[u8; 32]>> = token.map(|t| Arc::new(Sha256::digest(t).into()));
    Router::new()
        .route("/metrics", get(metrics))
        .fallback(|| async { (StatusCode::NOT_FOUND, "only /metrics is served here\n") })
        .layer(axum::middleware::from_fn(move |request, next| {
            require_token(token.clone(), request, next)
        }))
        .with_state(api)
}

/// One scrape, in the format its `Accept` negotiates ([`exposition`]).
async fn metrics(State(api): State<ApiState>, headers: HeaderMap) -> Response {
    let accept: Vec<&str> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .collect();
    let format = exposition::negotiate((!accept.is_empty()).then(|| accept.join(",")).as_deref());
    let snapshot = snapshot::take(&api).await;
    let openmetrics = render::render(&snapshot, &crate::api_latency::api_latencies());
    let text = match format {
        exposition::Format::OpenMetrics => openmetrics,
        exposition::Format::Text => exposition::to_text(&openmetrics),
    };
    (
        [
            (header::CONTENT_TYPE, format.content_type()),
            (header::VARY, "Accept"),
        ],
        text,
    )
        .into_response()
}

async fn require_token(expected: Option<Arc<[u8; 32]>>, request: Request, next: Next) -> Response {
    match expected {
        Some(expected) if !bearer_matches(request.headers(), &expected) => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer realm=\"strom metrics\"")],
            "a valid bearer token (metrics_token) is required\n",
        )
            .into_response(),
        _ => next.run(request).await,
    }
}

/// Whether `Authorization` carries `Bearer <token>` whose digest is `expected`.
fn bearer_matches(headers: &HeaderMap, expected: &[u8; 32]) -> bool {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return false;
    };
    let value = value.as_bytes();
    // The scheme is case-insensitive (RFC 9110); one or more spaces follow it.
    let Some((scheme, credentials)) = value.split_at_checked(6) else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case(b"bearer") || credentials.first() != Some(&b' ') {
        return false;
    }
    let credentials = credentials.trim_ascii();
    let presented: [u8; 32] = Sha256::digest(credentials).into();
    presented.ct_eq(expected).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(authorization: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(authorization).unwrap(),
        );
        headers
    }

    #[test]
    fn bearer_tokens_are_checked() {
        let expected: [u8; 32] = Sha256::digest("s3cret").into();
        for good in ["Bearer s3cret", "bearer s3cret", "BEARER   s3cret "] {
            assert!(bearer_matches(&headers(good), &expected), "{good}");
        }
        for bad in [
            "Bearer s3cre",
            "Bearer s3crett",
            "Bearers3cret",
            "Basic czNjcmV0",
            "s3cret",
            "Bearer ",
            "",
        ] {
            assert!(!bearer_matches(&headers(bad), &expected), "{bad}");
        }
        assert!(!bearer_matches(&HeaderMap::new(), &expected));
    }
}
