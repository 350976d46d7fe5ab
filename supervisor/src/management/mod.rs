//! The management listener: accepts connections under a cap, speaks HTTP/1.1 (HTTPS when
//! `management_ssl_certificate` is set) through hyper, and closes connections that
//! trickle, idle or stall (see [`watch`] for the deadlines).
//!
//! `axum::serve` has none of these knobs, so connections are served here with hyper's
//! connection builder and the API's [`axum::Router`] as the service.
//!
//! Descriptor budget: every management connection costs the supervisor one descriptor.
//! The cap (`management_max_connections`, default 256) is lowered at start so that the
//! cap plus [`fd_limit::RESERVED_FDS`] plus the listening sockets stay below the
//! supervisor's `RLIMIT_NOFILE` (raised to its hard limit first), so a flood of
//! management connections can never leave the supervisor without the descriptors it
//! needs to restart a worker (a socketpair, the exec pipe and `/dev/null` each time).
//! Connections over the cap are accepted and closed at once, with a log line at most
//! every 10 seconds.
//!
//! Requests from browsers on other sites, and with a `Host` that does not name the
//! listener (DNS rebinding), are refused before the router sees them (see
//! [`cross_site`]) on the listeners that ask for it (the API; not `/metrics`).

pub mod cross_site;
pub mod eviction;
pub mod fd_limit;
pub mod watch;

use axum::Router;
use axum::body::Bytes;
use eviction::Eviction;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use strom_ipc::sync::locked;
use strom_worker_runtime::connection_caps::ConnectionCaps;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;
use watch::{ResponseGuard, Watch, Watched};

/// The largest request head (and per-connection read buffer) accepted; a larger head is
/// answered 431.
const MAX_REQUEST_HEAD: usize = 64 * 1024;

/// How long a new connection waits for the place an evicted one frees (it is closed at
/// once; this only covers its task ending).
const EVICTED_PLACE_WAIT: Duration = Duration::from_secs(2);

/// How long a handler may take to read a request body; put into every request's
/// extensions for [`crate::api::error::JsonBody`].
#[derive(Debug, Clone, Copy)]
pub struct BodyTimeout(pub Duration);

/// Everything the management listeners share.
pub struct Management {
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub body_timeout: Duration,
    /// `Some`: HTTPS only.
    pub tls: Option<TlsAcceptor>,
    /// One permit per open connection, shared by every management listener.
    slots: Arc<Semaphore>,
    capacity: usize,
    /// At most `management_max_connections_per_ip` from one client address.
    per_ip: Arc<ConnectionCaps>,
    over_cap: RateLimitedLog,
    accept_failed: RateLimitedLog,
    /// `Some`: when full, a new connection takes the place of the oldest idle one.
    eviction: Option<Arc<Eviction>>,
    /// `Some`: cross-site requests and foreign `Host` names are refused.
    cross_site: Option<Arc<cross_site::CrossSite>>,
}

impl std::fmt::Debug for Management {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Management")
            .field("header_timeout", &self.header_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("body_timeout", &self.body_timeout)
            .field("tls", &self.tls.is_some())
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl Management {
    pub fn new(
        header_timeout: Duration,
        idle_timeout: Duration,
        body_timeout: Duration,
        max_connections: usize,
        max_connections_per_ip: u32,
        tls: Option<TlsAcceptor>,
    ) -> Self {
        let capacity = max_connections.max(1);
        Self {
            header_timeout,
            idle_timeout,
            body_timeout,
            tls,
            slots: Arc::new(Semaphore::new(capacity)),
            capacity,
            per_ip: ConnectionCaps::new(usize::MAX, max_connections_per_ip),
            over_cap: RateLimitedLog::new(Duration::from_secs(10)),
            accept_failed: RateLimitedLog::new(Duration::from_secs(10)),
            eviction: None,
            cross_site: None,
        }
    }

    /// Refuses cross-site requests and foreign `Host` names before the router runs.
    #[must_use]
    pub fn guarding_cross_site(mut self, guard: cross_site::CrossSite) -> Self {
        self.cross_site = Some(Arc::new(guard));
        self
    }

    /// When every place is taken, a new connection closes the oldest connection that is
    /// not serving a request and takes its place (see [`eviction`]).
    #[must_use]
    pub fn evicting_idle(mut self) -> Self {
        self.eviction = Some(Arc::new(Eviction::default()));
        self
    }
}

/// Accepts on `listener` until `stop` is cancelled; each connection runs in its own task
/// and drains (finishes its request) after `stop`.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    management: Arc<Management>,
    stop: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.cancelled() => return,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                // EMFILE and friends: do not spin; the descriptor budget above makes this
                // rare (another part of the process ran out).
                if let Some(suppressed) = management.accept_failed.note() {
                    tracing::error!(error = %e, suppressed, "management API cannot accept connections");
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(place) = management.per_ip.take(peer.ip()) else {
            drop(stream);
            if let Some(suppressed) = management.over_cap.note() {
                tracing::warn!(
                    %peer,
                    max_connections_per_ip = management.per_ip.per_ip_limit(),
                    refused_since_last_line = suppressed,
                    "management connection refused: too many open connections from this address"
                );
            }
            continue;
        };
        let permit = match Arc::clone(&management.slots).try_acquire_owned() {
            Ok(permit) => Some(permit),
            Err(_)
                if management
                    .eviction
                    .as_ref()
                    .is_some_and(|eviction| eviction.evict_oldest_idle()) =>
            {
                None
            }
            Err(_) => {
                drop(stream);
                if let Some(suppressed) = management.over_cap.note() {
                    tracing::warn!(
                        %peer,
                        max_connections = management.capacity,
                        refused_since_last_line = suppressed,
                        "management connection refused: too many open connections"
                    );
                }
                continue;
            }
        };
        let router = router.clone();
        let management = Arc::clone(&management);
        let stop = stop.clone();
        tokio::spawn(async move {
            // An evicted connection's place comes free when its task ends.
            let permit = match permit {
                Some(permit) => permit,
                None => {
                    let freed = Arc::clone(&management.slots).acquire_owned();
                    match tokio::time::timeout(EVICTED_PLACE_WAIT, freed).await {
                        Ok(Ok(permit)) => permit,
                        _ => return,
                    }
                }
            };
            connection(stream, peer, router, &management, stop).await;
            drop(permit);
            drop(place);
        });
    }
}

async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    management: &Management,
    stop: CancellationToken,
) {
    let _ = stream.set_nodelay(true);
    let watch = Arc::new(Watch::new(
        management.header_timeout,
        management.idle_timeout,
    ));
    let Some(eviction) = &management.eviction else {
        serve_connection(stream, peer, router, management, watch, stop).await;
        return;
    };
    let (_registration, evicted) = eviction.register(&watch);
    tokio::select! {
        () = serve_connection(stream, peer, router, management, watch, stop) => {}
        () = evicted.cancelled() => {
            tracing::debug!(%peer, "idle connection closed to make room for a new one");
        }
    }
}

/// Serves one connection (after the TLS handshake, if any) until it ends.
async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    management: &Management,
    watch: Arc<Watch>,
    stop: CancellationToken,
) {
    // The cross-site guard compares `Host` with the address this connection came in on.
    let Ok(local) = stream.local_addr() else {
        tracing::debug!(%peer, "management connection without a local address; closed");
        return;
    };
    let served = Served {
        peer,
        local,
        router,
        body_timeout: management.body_timeout,
        cross_site: management.cross_site.clone(),
    };
    match &management.tls {
        None => {
            let io = Watched::new(stream, Arc::clone(&watch));
            drive(io, served, watch, stop).await;
        }
        Some(acceptor) => {
            let handshake = acceptor.accept(stream);
            match tokio::time::timeout(management.header_timeout, handshake).await {
                Ok(Ok(tls)) => {
                    let io = Watched::new(tls, Arc::clone(&watch));
                    drive(io, served, watch, stop).await;
                }
                Ok(Err(e)) => tracing::debug!(%peer, error = %e, "management TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "management TLS handshake timed out"),
            }
        }
    }
}

/// What serving one connection's requests needs.
#[derive(Clone)]
struct Served {
    peer: SocketAddr,
    /// The address the client connected to.
    local: SocketAddr,
    router: Router,
    body_timeout: Duration,
    cross_site: Option<Arc<cross_site::CrossSite>>,
}

impl Served {
    /// The answer to one request: the guard's refusal, or the router's answer (with CORS
    /// headers for an allowed origin).
    async fn answer(self, request: axum::extract::Request) -> axum::response::Response {
        if head_size(&request) > MAX_REQUEST_HEAD {
            return head_too_large();
        }
        let Some(guard) = &self.cross_site else {
            return route(self.router, request).await;
        };
        let path = request.uri().path();
        let verdict = guard.check(request.method(), path, request.headers(), self.local);
        match verdict {
            Err(refusal) => guard.refuse(&refusal, self.peer, path),
            Ok(cross_site::Verdict::Pass) => route(self.router, request).await,
            Ok(cross_site::Verdict::AllowedOrigin(origin)) => {
                if let Some(answer) =
                    cross_site::preflight(request.method(), request.headers(), &origin)
                {
                    return answer;
                }
                let mut response = route(self.router, request).await;
                cross_site::add_cors(response.headers_mut(), &origin);
                response
            }
        }
    }
}

/// The size of `request`'s head as sent (request line, header lines, blank line), give or
/// take optional whitespace. hyper's read buffer bounds the head only roughly: one read
/// can take in more than [`MAX_REQUEST_HEAD`] and a head complete within it is parsed, so
/// the documented limit is applied here, exactly, to what was parsed.
fn head_size(request: &axum::extract::Request) -> usize {
    let line = request.method().as_str().len()
        + request.uri().to_string().len()
        + " HTTP/1.1\r\n".len()
        + 1;
    let headers: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + ": ".len() + value.len() + "\r\n".len())
        .sum();
    line + headers + "\r\n".len()
}

/// 431, as the docs promise for a head over [`MAX_REQUEST_HEAD`].
fn head_too_large() -> axum::response::Response {
    let body = serde_json::json!({
        "status": "RequestHeaderFieldsTooLarge",
        "error": format!("request head larger than {} KiB", MAX_REQUEST_HEAD / 1024),
    });
    let mut response = axum::response::Response::new(axum::body::Body::from(body.to_string()));
    *response.status_mut() = axum::http::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE;
    response.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    response
}

async fn route(router: Router, request: axum::extract::Request) -> axum::response::Response {
    match router.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// Serves HTTP/1.1 on `io` until the client leaves, a deadline passes, or `stop`.
async fn drive<IO>(io: IO, served: Served, watch: Arc<Watch>, stop: CancellationToken)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let peer = served.peer;
    let service_watch = Arc::clone(&watch);
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let served = served.clone();
        let watch = Arc::clone(&service_watch);
        async move {
            watch.request_started();
            let mut request = request.map(axum::body::Body::new);
            request
                .extensions_mut()
                .insert(BodyTimeout(served.body_timeout));
            let response = served.answer(request).await;
            watch.response_ready();
            let guard = ResponseGuard(watch);
            Ok::<_, std::convert::Infallible>(response.map(|body| {
                axum::body::Body::new(body.map_frame(move |frame: hyper::body::Frame<Bytes>| {
                    guard.hold();
                    frame
                }))
            }))
        }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .max_buf_size(MAX_REQUEST_HEAD)
        .serve_connection(TokioIo::new(io), service);
    tokio::pin!(connection);
    let mut stopping = false;
    loop {
        let deadline = watch.deadline();
        let expiry = async move {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(%peer, error = %e, "management connection ended with an error");
                }
                return;
            }
            () = watch.changed() => {}
            () = expiry => {
                if watch.deadline().is_some_and(|at| at <= Instant::now()) {
                    tracing::debug!(%peer, phase = ?watch.phase(), "management connection timed out; closed");
                    return;
                }
            }
            () = stop.cancelled(), if !stopping => {
                stopping = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
}

/// Says "log now" at most once per `every`, counting what it swallowed in between.
#[derive(Debug)]
pub(crate) struct RateLimitedLog {
    every: Duration,
    last: std::sync::Mutex<Option<Instant>>,
    suppressed: AtomicU64,
}

impl RateLimitedLog {
    pub(crate) fn new(every: Duration) -> Self {
        Self {
            every,
            last: std::sync::Mutex::new(None),
            suppressed: AtomicU64::new(0),
        }
    }

    /// `Some(events swallowed since the last line)` when a line should be written now.
    pub(crate) fn note(&self) -> Option<u64> {
        let now = Instant::now();
        let mut last = locked(&self.last);
        if last.is_some_and(|at| now.duration_since(at) < self.every) {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        *last = Some(now);
        Some(self.suppressed.swap(0, Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::error::JsonBody;
    use axum::routing::{get, post};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const HEAD: Duration = Duration::from_millis(300);
    const IDLE: Duration = Duration::from_millis(800);
    const BODY: Duration = Duration::from_millis(300);

    async fn start(cap: usize) -> (SocketAddr, CancellationToken) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = Router::new().route("/", get(|| async { "ok" })).route(
            "/echo",
            post(|JsonBody(value): JsonBody<serde_json::Value>| async move { axum::Json(value) }),
        );
        let management = Arc::new(Management::new(HEAD, IDLE, BODY, cap, 1000, None));
        let stop = CancellationToken::new();
        tokio::spawn(serve(listener, router, management, stop.clone()));
        (addr, stop)
    }

    /// Reads until the server closes; how long that took, and what came.
    async fn until_closed(stream: &mut TcpStream) -> (Duration, Vec<u8>) {
        let started = Instant::now();
        let mut received = Vec::new();
        let mut buffer = [0u8; 1024];
        loop {
            match tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return (started.elapsed(), received),
                Ok(Ok(n)) => received.extend_from_slice(&buffer[..n]),
                Err(_) => panic!("the server kept the connection open for 10 s"),
            }
        }
    }

    async fn get_ok(addr: SocketAddr) -> bool {
        let Ok(mut stream) = TcpStream::connect(addr).await else {
            return false;
        };
        let request = b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
        if stream.write_all(request).await.is_err() {
            return false;
        }
        let (_, answer) = until_closed(&mut stream).await;
        String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200")
    }

    #[tokio::test]
    async fn a_trickled_head_is_cut_off_at_the_header_timeout() {
        let (addr, _stop) = start(8).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: a\r\n")
            .await
            .unwrap();
        let (reader, mut writer) = stream.into_split();
        // One more header byte every 50 ms: never a complete head.
        let trickle = tokio::spawn(async move {
            while writer.write_all(b"X").await.is_ok() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
        let mut reader = reader;
        let started = Instant::now();
        let mut buffer = [0u8; 64];
        let closed = tokio::time::timeout(Duration::from_secs(5), reader.read(&mut buffer)).await;
        assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "{closed:?}");
        let took = started.elapsed();
        assert!(took >= HEAD - Duration::from_millis(50), "{took:?}");
        assert!(
            took < IDLE,
            "closed by the header timeout, not the idle one: {took:?}"
        );
        trickle.abort();
    }

    #[tokio::test]
    async fn idle_connections_close_and_keep_alive_works_until_then() {
        let (addr, _stop) = start(8).await;
        // Nothing sent at all.
        let mut silent = TcpStream::connect(addr).await.unwrap();
        let (took, _) = until_closed(&mut silent).await;
        assert!(took >= IDLE - Duration::from_millis(100), "{took:?}");

        // Two requests on one connection, then silence.
        let mut stream = TcpStream::connect(addr).await.unwrap();
        for _ in 0..2 {
            stream
                .write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
                .await
                .unwrap();
            let mut buffer = [0u8; 256];
            let n = stream.read(&mut buffer).await.unwrap();
            assert!(String::from_utf8_lossy(&buffer[..n]).starts_with("HTTP/1.1 200"));
            // Longer than the header timeout: an idle keep-alive connection is not a
            // slow head.
            tokio::time::sleep(HEAD + Duration::from_millis(100)).await;
        }
        let (took, _) = until_closed(&mut stream).await;
        assert!(took < IDLE, "{took:?}");
    }

    #[tokio::test]
    async fn a_slow_body_is_answered_408() {
        let (addr, _stop) = start(8).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n{\"a\"")
            .await
            .unwrap();
        let (took, answer) = until_closed(&mut stream).await;
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("request body not received"), "{answer}");
        assert!(took < Duration::from_secs(3), "{took:?}");
    }

    #[tokio::test]
    async fn connections_over_the_cap_are_closed_at_once_and_the_api_recovers() {
        let (addr, _stop) = start(2).await;
        let mut held = Vec::new();
        for _ in 0..2 {
            held.push(TcpStream::connect(addr).await.unwrap());
        }
        // Give the accept loop time to take both slots.
        tokio::time::sleep(Duration::from_millis(50)).await;
        for _ in 0..5 {
            let mut extra = TcpStream::connect(addr).await.unwrap();
            let (took, answer) = until_closed(&mut extra).await;
            assert!(answer.is_empty());
            assert!(took < HEAD, "closed at once, not by a timeout: {took:?}");
        }
        drop(held);
        let recovered = async {
            while !get_ok(addr).await {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(5), recovered)
            .await
            .expect("the API answers again once the flood ends");
    }

    #[tokio::test(start_paused = true)]
    async fn log_lines_are_rate_limited() {
        let log = RateLimitedLog::new(Duration::from_secs(10));
        assert_eq!(log.note(), Some(0));
        assert_eq!(log.note(), None);
        assert_eq!(log.note(), None);
        tokio::time::advance(Duration::from_secs(11)).await;
        assert_eq!(log.note(), Some(2));
    }
}
