//! WHEP and WHIP on the delivery port: `.../whep.stream` and `.../whip.stream` requests
//! (and their session resources) are forwarded as they are to the webrtc worker's
//! signaling socket, so SDP, the gate's decision for WebRTC and every session live in
//! that worker. The packager adds who the client is (`x-strom-peer`) and the address it
//! connected to (`x-strom-local`, the ICE candidate address of `*` interfaces), and the
//! CORS headers browser pages on other origins need (`Location` exposed: WHEP/WHIP
//! clients read the session URL from it).

use crate::json_error::error;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::Duration;

/// Bodies larger than this are refused here (the webrtc worker enforces its own,
/// smaller `max_sdp_bytes`).
const MAX_BODY: usize = 1024 * 1024;
/// The worker answers an offer once the stream's first frames are known (an on-demand
/// pull may need to start): up to its own wait, plus room.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);
/// Request headers the worker reads; nothing else is forwarded.
const FORWARDED: [HeaderName; 4] = [
    header::CONTENT_TYPE,
    header::AUTHORIZATION,
    header::USER_AGENT,
    header::IF_MATCH,
];
/// Response headers a page's script may read.
const EXPOSED: &str = "Location, ETag, Link, Accept-Patch, Accept-Post";

/// Whether `path` is a WHEP or WHIP endpoint or session resource.
pub fn is_signaling(path: &str) -> bool {
    let mut parts = path.trim_start_matches('/').split('/');
    let file = parts.nth(2);
    matches!(file, Some("whep.stream" | "whip.stream"))
}

/// Forwards `request` and returns the worker's answer with CORS added.
pub async fn forward(
    request: Request<Incoming>,
    peer: SocketAddr,
    local: Option<IpAddr>,
    socket: &Path,
    cors_origin: &HeaderValue,
) -> Response<Full<Bytes>> {
    let preflight = request.method() == hyper::Method::OPTIONS
        && request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    let mut response = if preflight {
        let mut response = Response::new(Full::new(Bytes::new()));
        *response.status_mut() = StatusCode::NO_CONTENT;
        let headers = response.headers_mut();
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("POST, PATCH, DELETE, OPTIONS"),
        );
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static("Content-Type, Authorization, If-Match"),
        );
        headers.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("86400"),
        );
        response
    } else {
        match tokio::time::timeout(ANSWER_TIMEOUT, relay(request, peer, local, socket)).await {
            Ok(response) => response,
            Err(_) => error(
                StatusCode::GATEWAY_TIMEOUT,
                "the webrtc worker did not answer in time",
            ),
        }
    };
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, cors_origin.clone());
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSED),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn relay(
    request: Request<Incoming>,
    peer: SocketAddr,
    local: Option<IpAddr>,
    socket: &Path,
) -> Response<Full<Bytes>> {
    let (parts, body) = request.into_parts();
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return error(StatusCode::PAYLOAD_TOO_LARGE, "the body is too large"),
    };
    let stream = match tokio::net::UnixStream::connect(socket).await {
        Ok(stream) => stream,
        Err(e) => {
            tracing::debug!(socket = %socket.display(), error = %e, "webrtc worker not reachable");
            return error(
                StatusCode::NOT_FOUND,
                "WebRTC is not enabled on this server (WebRtcSettings)",
            );
        }
    };
    let Ok((mut sender, connection)) =
        hyper::client::conn::http1::handshake::<_, Full<Bytes>>(TokioIo::new(stream)).await
    else {
        return error(
            StatusCode::BAD_GATEWAY,
            "the webrtc worker is not answering",
        );
    };
    tokio::spawn(connection);
    let uri = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "/".to_owned());
    let mut forwarded = Request::builder().method(parts.method).uri(uri);
    for name in FORWARDED {
        if let Some(value) = parts.headers.get(&name) {
            forwarded = forwarded.header(name, value);
        }
    }
    forwarded = forwarded
        .header(header::HOST, "strom-webrtc")
        .header("x-strom-peer", peer.ip().to_canonical().to_string());
    if let Some(local) = local {
        forwarded = forwarded.header("x-strom-local", local.to_canonical().to_string());
    }
    let Ok(forwarded) = forwarded.body(Full::new(body)) else {
        return error(StatusCode::BAD_REQUEST, "the request cannot be forwarded");
    };
    let response = match sender.send_request(forwarded).await {
        Ok(response) => response,
        Err(e) => {
            tracing::warn!(error = %e, "webrtc signaling request failed");
            return error(
                StatusCode::BAD_GATEWAY,
                "the webrtc worker is not answering",
            );
        }
    };
    let (parts, body) = response.into_parts();
    match Limited::new(body, MAX_BODY).collect().await {
        Ok(body) => Response::from_parts(parts, Full::new(body.to_bytes())),
        Err(_) => error(
            StatusCode::BAD_GATEWAY,
            "the webrtc worker's answer is too large",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signaling_paths_are_recognised() {
        assert!(is_signaling("/live/cam/whep.stream"));
        assert!(is_signaling("/live/cam/whip.stream/5-ab"));
        assert!(!is_signaling("/live/cam/playlist.m3u8"));
        assert!(!is_signaling("/whep.stream"));
        assert!(!is_signaling("/live/whep.stream"));
    }
}
