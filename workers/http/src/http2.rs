//! HTTP/2 on the delivery port: which connections speak it, and the limits an HTTP/2
//! connection is served under.
//!
//! A connection speaks HTTP/2 when TLS negotiated `h2` by ALPN, or, on plain HTTP, when
//! it opens with the HTTP/2 preface (`PRI * HTTP/2.0`, "prior knowledge" h2c; there is
//! no `Upgrade: h2c` from HTTP/1.1, which browsers never use). Everything else stays
//! HTTP/1.1, Icecast sources included (they are told apart before either).
//!
//! The HTTP/1.1 limits hold per connection and per stream:
//! - a connection is one place under `http_max_connections[_per_ip]`, and carries at
//!   most [`MAX_CONCURRENT_STREAMS`] requests at once (more are refused by the protocol,
//!   `REFUSED_STREAM`);
//! - a request's header block is bounded like an HTTP/1.1 head (431 past it), and h2's
//!   own bounds on CONTINUATION floods and reset storms ("rapid reset": a peer that
//!   resets more streams than [`MAX_PENDING_RESETS`] before the server has seen them
//!   gets `GOAWAY`) are kept on;
//! - `http_header_timeout`: a connection with no request in flight that completes none
//!   within it (an idle client, or one dripping a header block) is closed, as HTTP/1.1
//!   closes a kept-alive connection whose next head does not come;
//! - a peer that stops answering pings is dropped ([`KEEP_ALIVE_INTERVAL`]).

use hyper::server::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The client connection preface's first line, which no HTTP/1.x request starts with
/// (RFC 9113 §3.4).
const PREFACE_START: &[u8] = b"PRI * HTTP/2.0";

/// Concurrent requests on one connection: a page of players (master playlist, media
/// playlists, held LL-HLS reloads, parts and segments of a few renditions) fits many
/// times over; browsers open a second connection past it.
pub const MAX_CONCURRENT_STREAMS: u32 = 100;
/// Streams a peer may reset before the server has accepted them (h2's defence against
/// the rapid-reset attack, CVE-2023-44487).
pub const MAX_PENDING_RESETS: usize = 20;
/// Streams the server itself may reset for a peer's protocol errors before it gives up
/// on the connection.
const MAX_LOCAL_ERROR_RESETS: usize = 256;
/// Bytes buffered per stream for a peer that reads slowly (h2's flow control bounds what
/// the peer may have in flight on top of it).
const MAX_SEND_BUFFER: usize = 256 * 1024;
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(30);
/// How long a connection told to go away (`GOAWAY`: the worker stops, or it was idle)
/// may take to finish its streams and acknowledge before it is dropped.
pub const GOAWAY_GRACE: Duration = Duration::from_secs(5);
const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// Whether the first bytes of a plain connection open HTTP/2 (`Some(true)`), do not
/// (`Some(false)`), or are too few to say (`None`).
pub fn opens_h2(start: &[u8]) -> Option<bool> {
    let n = start.len().min(PREFACE_START.len());
    if start[..n] != PREFACE_START[..n] {
        Some(false)
    } else if n < PREFACE_START.len() {
        None
    } else {
        Some(true)
    }
}

/// hyper's HTTP/2 server with the delivery port's limits; `max_header_list` bounds a
/// request's header block like the HTTP/1.1 head limit.
pub fn builder(max_header_list: u32) -> http2::Builder<TokioExecutor> {
    let mut builder = http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_CONCURRENT_STREAMS)
        .max_header_list_size(max_header_list)
        .max_pending_accept_reset_streams(MAX_PENDING_RESETS)
        .max_local_error_reset_streams(MAX_LOCAL_ERROR_RESETS)
        .max_send_buf_size(MAX_SEND_BUFFER)
        .keep_alive_interval(KEEP_ALIVE_INTERVAL)
        .keep_alive_timeout(KEEP_ALIVE_TIMEOUT);
    builder
}

/// The requests in flight on one HTTP/2 connection, for its idle watchdog.
#[derive(Debug, Default)]
pub struct InFlight {
    requests: AtomicUsize,
    /// Requests completed, so that the watchdog sees activity between two looks.
    completed: AtomicUsize,
}

impl InFlight {
    /// Counts a request until the returned guard drops (its response was produced).
    pub fn begin(self: &Arc<Self>) -> RequestGuard {
        self.requests.fetch_add(1, Ordering::Relaxed);
        RequestGuard(Arc::clone(self))
    }

    /// Waits until the connection has had no request in flight and completed none for
    /// `idle` (then it may be closed).
    pub async fn idle_for(&self, idle: Duration) {
        let mut seen = self.completed.load(Ordering::Relaxed);
        loop {
            tokio::time::sleep(idle).await;
            let completed = self.completed.load(Ordering::Relaxed);
            let busy = self.requests.load(Ordering::Relaxed) > 0;
            if !busy && completed == seen {
                return;
            }
            seen = completed;
        }
    }
}

/// A request in flight on an HTTP/2 connection.
pub struct RequestGuard(Arc<InFlight>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.0.requests.fetch_sub(1, Ordering::Relaxed);
        self.0.completed.fetch_add(1, Ordering::Relaxed);
    }
}

/// Serves `input`, after the client preface, to an HTTP/2 connection made by
/// [`builder`] whose service answers every request at once: for the fuzz target
/// (`fuzz/fuzz_targets/http2_frames.rs`). Frames in any order, size or state must end
/// in answers, resets or `GOAWAY`, never a panic, a hang or unbounded memory.
pub fn exercise(input: &[u8]) {
    use bytes::Bytes;
    use http_body_util::Full;
    use hyper::Response;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    else {
        return;
    };
    runtime.block_on(async {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let service = hyper::service::service_fn(|request: hyper::Request<_>| async move {
            let body = Bytes::from(request.uri().path().len().to_string());
            Ok::<_, std::convert::Infallible>(Response::new(Full::new(body)))
        });
        let connection =
            builder(64 * 1024).serve_connection(hyper_util::rt::TokioIo::new(server), service);
        let (mut from_server, mut to_server) = tokio::io::split(client);
        let send = async move {
            let _ = to_server.write_all(PREFACE).await;
            let _ = to_server.write_all(input).await;
            let _ = to_server.shutdown().await;
        };
        let drain = async move {
            let mut sink = [0u8; 16 * 1024];
            while matches!(from_server.read(&mut sink).await, Ok(n) if n > 0) {}
        };
        let all = async { tokio::join!(connection, send, drain) };
        let _ = tokio::time::timeout(Duration::from_secs(5), all).await;
    });
}

/// The whole client connection preface (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preface_is_told_from_http1_and_icecast() {
        assert_eq!(opens_h2(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), Some(true));
        assert_eq!(opens_h2(b"PRI * HT"), None);
        assert_eq!(opens_h2(b""), None);
        assert_eq!(opens_h2(b"GET / HTTP/1.1\r\n"), Some(false));
        assert_eq!(opens_h2(b"PUT /live/radio"), Some(false));
        assert_eq!(opens_h2(b"PRI / HTTP/1.1"), Some(false));
    }

    #[test]
    fn garbage_and_a_real_request_end_without_a_hang() {
        exercise(b"");
        exercise(&[0xff; 300]);
        // SETTINGS, then a GET of `/` (HEADERS, END_STREAM | END_HEADERS, stream 1).
        let mut frames = vec![0, 0, 0, 4, 0, 0, 0, 0, 0];
        frames.extend_from_slice(&[0, 0, 3, 1, 5, 0, 0, 0, 1, 0x82, 0x86, 0x84]);
        exercise(&frames);
    }

    #[tokio::test]
    async fn a_connection_is_idle_only_with_nothing_in_flight_and_nothing_done() {
        let in_flight = Arc::new(InFlight::default());
        let held = in_flight.begin();
        let idle = in_flight.idle_for(Duration::from_millis(100));
        tokio::pin!(idle);
        // A held request (an LL-HLS blocking reload) keeps the connection.
        let kept = tokio::time::timeout(Duration::from_millis(600), idle.as_mut()).await;
        assert!(kept.is_err(), "idle with a request in flight");
        drop(held);
        // Completing it counts as activity: one more quiet period, then idle.
        tokio::time::timeout(Duration::from_secs(5), idle)
            .await
            .unwrap_or_else(|_| panic!("never idle"));
    }
}
