//! WHEP and WHIP on the delivery port: `.../whep.stream` and `.../whip.stream` requests
//! (and their session resources) are forwarded as they are to the webrtc worker's
//! signaling socket, so SDP, the gate's decision for WebRTC and every session live in
//! that worker. The packager adds who the client is (`x-strom-peer`) and the address it
//! connected to (`x-strom-local`, the ICE candidate address of `*` interfaces), and the
//! CORS headers browser pages on other origins need (`Location` exposed: WHEP/WHIP
//! clients read the session URL from it).
//!
//! What a signaling request may hold here is bounded before its body is read
//! ([`limits`]): with WebRTC off it is answered 404, a declared body over
//! `max_sdp_bytes` 413, and past the pending-request cap or the byte budgets (in all,
//! per client address) 503 with `Retry-After`. The body is then read whole, at most
//! `max_sdp_bytes` and within `http_header_timeout` (408 past it), and only then is the
//! socket to the worker opened, with a slot of the descriptor budget (503 without one).
//! Reading first rather than streaming the body through: the worker needs the whole
//! offer before it can answer anyway, and a client that trickles its body then holds
//! only its own socket and at most `max_sdp_bytes`, never a worker connection and its
//! descriptor (nor a task in the worker).

use crate::json_error::error;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Body as _, Incoming};
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::http::request::Parts;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use limits::SignalingLimits;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use strom_ipc::webrtc_rules::{WebRtcLimits, WebRtcSettings};
use strom_worker_runtime::counters::{DescriptorGuard, WorkerCounters};

pub mod limits;

/// The largest answer read from the worker (an SDP answer is a few KB; the worker is
/// ours, but what the packager holds stays bounded all the same).
const MAX_ANSWER: usize = 256 * 1024;
/// The worker answers an offer once the stream's first frames are known (an on-demand
/// pull may need to start): up to its own wait, plus room.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);
/// `Retry-After` of a 503: pending requests end within seconds (an offer for a stream
/// that is not live waits 8 s at most).
const RETRY_AFTER_SECS: &str = "2";
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

/// The delivery port's way to the webrtc worker, with the bounds on what pending
/// requests hold.
#[derive(Debug)]
pub struct SignalingProxy {
    socket: Arc<Path>,
    limits: Arc<SignalingLimits>,
    /// `http_header_timeout`: the body must be complete this long after the head.
    body_timeout: Duration,
}

impl SignalingProxy {
    pub fn new(socket: &Path, counters: Arc<WorkerCounters>, body_timeout: Duration) -> Self {
        Self {
            socket: Arc::from(socket),
            limits: SignalingLimits::new(
                strom_worker_runtime::fd_budget::of_this_process(),
                counters,
            ),
            body_timeout,
        }
    }

    /// Forwards `request` and returns the worker's answer (or the packager's refusal)
    /// with CORS added. `webrtc` is the rules' `WebRtcSettings`.
    pub async fn forward(
        &self,
        request: Request<Incoming>,
        peer: SocketAddr,
        local: Option<IpAddr>,
        webrtc: &WebRtcSettings,
        cors_origin: &HeaderValue,
    ) -> Response<Full<Bytes>> {
        let mut response = self.answer(request, peer, local, webrtc).await;
        let headers = response.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, cors_origin.clone());
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSED),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }

    async fn answer(
        &self,
        request: Request<Incoming>,
        peer: SocketAddr,
        local: Option<IpAddr>,
        webrtc: &WebRtcSettings,
    ) -> Response<Full<Bytes>> {
        let Some(limits) = self.enabled(webrtc) else {
            return error(
                StatusCode::NOT_FOUND,
                "WebRTC is not enabled on this server (WebRtcSettings)",
            );
        };
        if request.method() == hyper::Method::OPTIONS
            && request
                .headers()
                .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
        {
            return preflight();
        }
        let largest = u64::from(limits.max_sdp_bytes);
        // hyper knows a `Content-Length` body's length exactly; a chunked one is
        // charged the largest it may be.
        let declared = request.body().size_hint().exact();
        if declared.is_some_and(|length| length > largest) {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the body is larger than max_sdp_bytes",
            );
        }
        let _admitted = match self
            .limits
            .admit(peer.ip(), declared.unwrap_or(largest), largest)
        {
            Ok(admitted) => admitted,
            Err(refusal) => {
                strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); %peer, reason = refusal.text(), "webrtc signaling request refused");
                return busy(refusal.text());
            }
        };
        let (parts, body) = request.into_parts();
        let limit = usize::try_from(largest).unwrap_or(usize::MAX);
        let body = match tokio::time::timeout(
            self.body_timeout,
            Limited::new(body, limit).collect(),
        )
        .await
        {
            Ok(Ok(body)) => body.to_bytes(),
            Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => {
                return error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "the body is larger than max_sdp_bytes",
                );
            }
            Ok(Err(_)) => return error(StatusCode::BAD_REQUEST, "the body was cut short"),
            Err(_) => {
                strom_worker_runtime::limited_log!(info, 5, Duration::from_secs(10); %peer, "webrtc signaling body not complete in time");
                return error(
                    StatusCode::REQUEST_TIMEOUT,
                    "the body did not arrive in time (http_header_timeout)",
                );
            }
        };
        // The socket to the worker is a descriptor a client makes the packager open:
        // it takes a slot of the budget its connections take, so it can never use the
        // descriptors kept for HLS files.
        let Some(slot) = self.limits.descriptor() else {
            strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); %peer, "webrtc signaling request refused: the descriptor budget is used up");
            return busy("no descriptor is free for this request; retry later");
        };
        let relay = relay(parts, body, peer, local, &self.socket, slot);
        match tokio::time::timeout(ANSWER_TIMEOUT, relay).await {
            Ok(response) => response,
            Err(_) => error(
                StatusCode::GATEWAY_TIMEOUT,
                "the webrtc worker did not answer in time",
            ),
        }
    }

    /// The limits in force when WebRTC is on (`WebRtcSettings` has interfaces).
    fn enabled(&self, webrtc: &WebRtcSettings) -> Option<WebRtcLimits> {
        (!webrtc.interfaces.is_empty()).then_some(webrtc.limits)
    }
}

fn preflight() -> Response<Full<Bytes>> {
    crate::preflight::preflight(
        "POST, PATCH, DELETE, OPTIONS",
        "Content-Type, Authorization, If-Match",
    )
}

/// 503 with `Retry-After`.
fn busy(text: &'static str) -> Response<Full<Bytes>> {
    let mut response = error(StatusCode::SERVICE_UNAVAILABLE, text);
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from_static(RETRY_AFTER_SECS),
    );
    response
}

/// Sends the request to the worker over a new connection; `slot` is that connection's
/// descriptor slot, held until its socket is closed.
async fn relay(
    parts: Parts,
    body: Bytes,
    peer: SocketAddr,
    local: Option<IpAddr>,
    socket: &Path,
    slot: DescriptorGuard,
) -> Response<Full<Bytes>> {
    let stream = match tokio::net::UnixStream::connect(socket).await {
        Ok(stream) => stream,
        Err(e) if strom_worker_runtime::fd_budget::is_exhaustion(&e) => {
            strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); error = %e, "webrtc signaling request refused: no descriptor");
            return busy("no descriptor is free for this request; retry later");
        }
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
    // The connection task owns the socket, so it owns the slot: the slot is given back
    // when the socket is closed, not when this request gives up waiting.
    tokio::spawn(async move {
        let _slot = slot;
        let _ = connection.await;
    });
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
    match Limited::new(body, MAX_ANSWER).collect().await {
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
