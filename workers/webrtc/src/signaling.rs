//! WHEP (draft-ietf-wish-whep) and WHIP (RFC 9725) signaling, served over HTTP/1.1 on
//! the worker's Unix socket; the packager forwards `whep.stream` and `whip.stream`
//! requests of the delivery port here with the client's address (`x-strom-peer`) and
//! the address it connected to (`x-strom-local`) in headers, and adds CORS on the way
//! back.
//!
//! - `POST /<app>/<stream>/whep.stream` (an SDP offer): `201` with the answer and
//!   `Location: /<app>/<stream>/whep.stream/<resource>`; `whip.stream` the same for a
//!   publisher (`Authorization: Bearer <login>:<password>` when the app requires a login,
//!   `?publishsign=` under publish control).
//! - `PATCH <resource>` (trickle ICE, `application/trickle-ice-sdpfrag`): `204`. strom is
//!   an ICE-lite agent: the client's connectivity checks tell it every address it needs,
//!   so candidates trickled in are accepted and not needed.
//! - `DELETE <resource>`: `200`, the session ends.
//! - `OPTIONS`: `204` with `Accept-Post: application/sdp`.

use crate::endpoint::{Target, target};
use crate::offer::{self, OfferError, Request as OfferRequest};
use crate::shared::Shared;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::UnixListener;
use tokio_util::sync::CancellationToken;

/// A request must be complete this soon (the packager sends it at once).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Binds the signaling socket (replacing a stale one) and serves it until `stop`.
pub fn start(path: &Path, shared: Arc<Shared>, stop: CancellationToken) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path).map_err(|e| format!("{}: {e}", path.display()))?;
    tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                () = stop.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(error) => {
                        tracing::warn!(%error, "webrtc signaling accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
            };
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let shared = Arc::clone(&shared);
                    async move { Ok::<_, Infallible>(answer(&shared, request).await) }
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service);
                let _ = tokio::time::timeout(Duration::from_secs(60), connection).await;
            });
        }
    });
    Ok(())
}

fn json_error(status: StatusCode, message: &str) -> Response<Full<Bytes>> {
    let body = serde_like_error(status, message);
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// `{"status":"...","error":"..."}` like every other error of the server.
fn serde_like_error(status: StatusCode, message: &str) -> String {
    let reason = status
        .canonical_reason()
        .unwrap_or("Error")
        .replace(' ', "");
    let escaped: String = message
        .chars()
        .flat_map(|c| match c {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            c if c.is_control() => vec![' '],
            c => vec![c],
        })
        .collect();
    format!("{{\"status\":\"{reason}\",\"error\":\"{escaped}\"}}")
}

fn header_text<'a>(request: &'a Request<Incoming>, name: &str) -> Option<&'a str> {
    request.headers().get(name).and_then(|v| v.to_str().ok())
}

async fn answer(shared: &Arc<Shared>, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let Some(target) = target(request.uri().path()) else {
        return json_error(StatusCode::NOT_FOUND, "not a WHEP or WHIP endpoint");
    };
    let method = request.method().clone();
    match (&method, &target.resource) {
        (&Method::OPTIONS, _) => {
            let mut response = Response::new(Full::new(Bytes::new()));
            *response.status_mut() = StatusCode::NO_CONTENT;
            let headers = response.headers_mut();
            if target.resource.is_none() {
                headers.insert("accept-post", HeaderValue::from_static("application/sdp"));
            }
            headers.insert(
                header::ALLOW,
                HeaderValue::from_static(if target.resource.is_none() {
                    "POST, OPTIONS"
                } else {
                    "PATCH, DELETE, OPTIONS"
                }),
            );
            response
        }
        (&Method::POST, None) => post(shared, request, target).await,
        (&Method::PATCH, Some(resource)) => patch(shared, request, &target, resource).await,
        (&Method::DELETE, Some(resource)) => {
            let resource = resource.clone();
            match offer::end(shared, &target, &resource) {
                true => Response::new(Full::new(Bytes::new())),
                false => json_error(StatusCode::NOT_FOUND, "no such session"),
            }
        }
        _ => {
            let mut response =
                json_error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed here");
            let allow = if target.resource.is_none() {
                "POST, OPTIONS"
            } else {
                "PATCH, DELETE, OPTIONS"
            };
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static(allow));
            response
        }
    }
}

async fn read_body(
    request: Request<Incoming>,
    limit: usize,
) -> Result<(hyper::http::request::Parts, Bytes), Response<Full<Bytes>>> {
    let (parts, body) = request.into_parts();
    let collected =
        tokio::time::timeout(REQUEST_TIMEOUT, Limited::new(body, limit).collect()).await;
    match collected {
        Ok(Ok(body)) => Ok((parts, body.to_bytes())),
        Ok(Err(_)) => Err(json_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("the body is larger than {limit} bytes (max_sdp_bytes)"),
        )),
        Err(_) => Err(json_error(
            StatusCode::REQUEST_TIMEOUT,
            "the body did not arrive in time",
        )),
    }
}

fn content_type_is(parts: &hyper::http::request::Parts, wanted: &str) -> bool {
    parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(wanted))
}

async fn post(
    shared: &Arc<Shared>,
    request: Request<Incoming>,
    target: Target,
) -> Response<Full<Bytes>> {
    let limit = shared.settings().limits.max_sdp_bytes as usize;
    let peer: Option<IpAddr> = header_text(&request, "x-strom-peer").and_then(|v| v.parse().ok());
    let local: Option<IpAddr> = header_text(&request, "x-strom-local").and_then(|v| v.parse().ok());
    let Some(peer) = peer else {
        return json_error(
            StatusCode::BAD_REQUEST,
            "the request did not come through the delivery port",
        );
    };
    let query = request.uri().query().unwrap_or("").to_owned();
    let authorization = header_text(&request, "authorization").map(str::to_owned);
    let user_agent = header_text(&request, "user-agent").unwrap_or("").to_owned();
    let (parts, body) = match read_body(request, limit).await {
        Ok(read) => read,
        Err(response) => return response,
    };
    if !content_type_is(&parts, "application/sdp") {
        return json_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the offer must be application/sdp",
        );
    }
    let Ok(sdp) = std::str::from_utf8(&body) else {
        return json_error(StatusCode::BAD_REQUEST, "the offer is not UTF-8");
    };
    let request = OfferRequest {
        target: &target,
        sdp,
        peer,
        local,
        query: &query,
        authorization: authorization.as_deref(),
        user_agent,
    };
    match offer::accept(shared, request).await {
        Ok(accepted) => {
            let mut response = Response::new(Full::new(Bytes::from(accepted.answer)));
            *response.status_mut() = StatusCode::CREATED;
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/sdp"),
            );
            if let Ok(location) = HeaderValue::from_str(&accepted.location) {
                headers.insert(header::LOCATION, location);
            }
            if let Ok(etag) = HeaderValue::from_str(&format!("\"{}\"", accepted.etag)) {
                headers.insert(header::ETAG, etag);
            }
            headers.insert(
                "accept-patch",
                HeaderValue::from_static("application/trickle-ice-sdpfrag"),
            );
            response
        }
        Err(error) => {
            let status = match &error {
                OfferError::BadOffer(_) => StatusCode::BAD_REQUEST,
                OfferError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
                OfferError::Forbidden(_) => StatusCode::FORBIDDEN,
                OfferError::NotFound(_) => StatusCode::NOT_FOUND,
                OfferError::Busy(_) => StatusCode::CONFLICT,
                OfferError::Limit(_) => StatusCode::SERVICE_UNAVAILABLE,
                OfferError::NoCodec(_) => StatusCode::NOT_ACCEPTABLE,
                OfferError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            };
            // Like every protocol's refusal, a 403 carries no detail (the log has it).
            let message = match &error {
                OfferError::Forbidden(_) => "forbidden".to_owned(),
                other => other.to_string(),
            };
            let mut response = json_error(status, &message);
            if status == StatusCode::UNAUTHORIZED {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            response
        }
    }
}

async fn patch(
    shared: &Arc<Shared>,
    request: Request<Incoming>,
    target: &Target,
    resource: &str,
) -> Response<Full<Bytes>> {
    let limit = shared.settings().limits.max_sdp_bytes as usize;
    let (parts, body) = match read_body(request, limit).await {
        Ok(read) => read,
        Err(response) => return response,
    };
    if !offer::exists(shared, target, resource) {
        return json_error(StatusCode::NOT_FOUND, "no such session");
    }
    if !content_type_is(&parts, "application/trickle-ice-sdpfrag") {
        return json_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "trickle ICE must be application/trickle-ice-sdpfrag",
        );
    }
    if std::str::from_utf8(&body).is_err() {
        return json_error(StatusCode::BAD_REQUEST, "the fragment is not UTF-8");
    }
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = StatusCode::NO_CONTENT;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_are_json_with_the_message_escaped() {
        let body = serde_like_error(StatusCode::NOT_FOUND, "a \"quoted\"\nname");
        let parsed: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(parsed["status"], "NotFound");
        assert_eq!(parsed["error"], "a \"quoted\" name");
    }
}
