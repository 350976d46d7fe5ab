//! HTTP(S) delivery: playlists and segments of packaged streams, with viewer sessions,
//! CORS, caching headers, HEAD and byte ranges.
//!
//! URLs, under `/<app>/<stream>/`:
//! `playlist.m3u8` (master, MPEG-TS) and `playlist_fmp4.m3u8` (master, fMP4) open a
//! viewer session; `chunks.m3u8?sid=N` / `chunks_fmp4.m3u8?sid=N` are the live media
//! playlists; `seg_<n>.ts`, `seg_<n>.m4s` and `init_<id>.mp4` the segments;
//! `manifest.mpd` and its segments are MPEG-DASH ([`dash_routes`]);
//! `mpegts.stream` is the live stream as MPEG-TS over HTTP ([`crate::ts_http`]);
//! `playlist[_fmp4]_dvr*.m3u8` and the rest of DVR playback are [`dvr_routes`].
//! Streams delivered as LL-HLS get an LL-HLS `chunks_fmp4.m3u8` (parts, delta updates,
//! rendition reports), their parts `part_<msn>_<index>.m4s`, and blocking reloads
//! ([`ll_routes`]).
//!
//! An `<app>` or `<stream>` that fails `strom_ipc::names` is answered 404 before anything
//! is looked up. A viewer past the session caps ([`crate::viewers`]) gets its playlists
//! without `?sid=` and plays all the same.
//!
//! Over 800 lines on purpose: it is the delivery port's one routing table, URL shape by URL
//! shape; the work behind each route lives in its own module.

use crate::edge_demand::EdgeDemand;
use crate::icecast::Titles;
use crate::json_error::error;
use crate::packaging::Packaging;
use crate::prefixed::Prefixed;
use crate::source::Sources;
use crate::source::admin::{Update, iceresponse};
use crate::tls::SwappableCertificate;
use crate::ts_http::{Format, Refusal, TsBody, TsDelivery};
use crate::ts_viewers::TsViewers;
use crate::viewers::{Lookup, Viewer, Viewers};
use bytes::Bytes;
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use strom_ipc::messages::{ListenerRole, ListenerSpec};
use strom_media::icy_request::SourceMethod;
use strom_stream::{Access, Protocol};
use strom_worker_runtime::accept::ConnectionHandler;
use strom_worker_runtime::connection_caps::ConnectionCaps;
use strom_worker_runtime::counters::{ConnectionGuard, WorkerCounters};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// A client that has not finished its TLS handshake by then is dropped.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest request head (and per-connection read buffer) hyper accepts; a larger
/// head is answered 431.
const MAX_REQUEST_HEAD: usize = 64 * 1024;

mod dash_routes;
mod dvr_routes;
mod ll_routes;

pub struct Delivery {
    pub counters: Arc<WorkerCounters>,
    pub certificate: Arc<SwappableCertificate>,
    pub tls: Arc<rustls::ServerConfig>,
    pub packaging: Arc<Packaging>,
    /// Edge apps: a request makes the stream wanted ([`crate::edge_demand`]).
    pub edge: Arc<EdgeDemand>,
    /// Draining: new viewers (HLS sessions, HTTP listeners) are refused with 503.
    pub draining: Arc<AtomicBool>,
    pub viewers: Arc<Viewers>,
    pub ts_viewers: Arc<TsViewers>,
    /// Icecast titles (`icecast_metadata`).
    pub titles: Arc<Titles>,
    /// The front door: playback protection and denied pay-per-view ids.
    pub gate: Arc<strom_stream::Gate>,
    /// `Access-Control-Allow-Origin` on every answer.
    pub cors_origin: HeaderValue,
    /// Icecast sources (`PUT`/`SOURCE`) and their `/admin/metadata`.
    pub sources: Arc<Sources>,
    /// `http_max_connections` and `http_max_connections_per_ip`.
    pub caps: Arc<ConnectionCaps>,
    /// `http_header_timeout`: a request head (the first, or the next on a kept-alive
    /// connection) must be complete this long after the wait for it began.
    pub header_timeout: Duration,
    /// DVR playback from the archives ([`crate::dvr_playback`]).
    pub dvr: Arc<crate::dvr_playback::DvrPlayback>,
    /// `icecast_burst_size`: the audio a new Icecast listener starts with.
    pub icecast_burst_bytes: usize,
    /// WHEP and WHIP requests, forwarded to the webrtc worker within their limits.
    pub signaling: Arc<crate::webrtc_proxy::SignalingProxy>,
}

impl ConnectionHandler for Delivery {
    async fn handle(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        listener: &ListenerSpec,
        _guard: ConnectionGuard,
        shutdown: CancellationToken,
    ) {
        let _place = match self.caps.take(peer.ip()) {
            Ok(place) => place,
            Err(reached) => {
                strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); %peer, cap = %reached, max_connections = self.caps.total_limit(), max_connections_per_ip = self.caps.per_ip_limit(), "http connection refused");
                return;
            }
        };
        let _ = stream.set_nodelay(true);
        let local = stream.local_addr().ok().map(|a| a.ip());
        match listener.role {
            ListenerRole::Https => {
                if !self.certificate.is_loaded() {
                    tracing::warn!(%peer, "https connection closed: no certificate loaded");
                    return;
                }
                let acceptor = TlsAcceptor::from(Arc::clone(&self.tls));
                match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                    Ok(Ok(tls)) => {
                        let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
                        self.sniff_and_serve(tls, peer, local, h2, shutdown).await;
                    }
                    Ok(Err(e)) => tracing::debug!(%peer, error = %e, "tls handshake failed"),
                    Err(_) => tracing::debug!(%peer, "tls handshake timed out"),
                }
            }
            _ => {
                self.sniff_and_serve(stream, peer, local, false, shutdown)
                    .await;
            }
        }
    }
}

impl Delivery {
    /// Reads the first bytes: an Icecast source (`PUT`, `SOURCE`) goes to
    /// [`crate::source`], everything else to the HTTP server, bytes read included, as
    /// HTTP/2 when TLS negotiated it (`alpn_h2`) or the bytes are its preface
    /// ([`crate::http2`]).
    async fn sniff_and_serve<S>(
        &self,
        mut io: S,
        peer: SocketAddr,
        local: Option<std::net::IpAddr>,
        alpn_h2: bool,
        shutdown: CancellationToken,
    ) where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let mut start = Vec::new();
        let mut chunk = [0u8; 2048];
        let source = loop {
            if let Some(source) = SourceMethod::starts(&start)
                && (source || crate::http2::opens_h2(&start).is_some())
            {
                break source;
            }
            let read = tokio::select! {
                () = shutdown.cancelled() => return,
                read = tokio::time::timeout(self.header_timeout, io.read(&mut chunk)) => read,
            };
            match read {
                Ok(Ok(n)) if n > 0 => start.extend_from_slice(&chunk[..n]),
                _ => return,
            }
        };
        if source {
            let rules = self.packaging.rules();
            self.sources.serve(io, peer, start, rules, shutdown).await;
        } else {
            let h2 = alpn_h2 || crate::http2::opens_h2(&start) == Some(true);
            self.serve(
                TokioIo::new(Prefixed::new(start, io)),
                peer,
                local,
                h2,
                shutdown,
            )
            .await;
        }
    }
}

impl Delivery {
    async fn serve<I>(
        &self,
        io: I,
        peer: SocketAddr,
        local: Option<std::net::IpAddr>,
        h2: bool,
        shutdown: CancellationToken,
    ) where
        I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    {
        let context = Context {
            counters: Arc::clone(&self.counters),
            packaging: Arc::clone(&self.packaging),
            edge: Arc::clone(&self.edge),
            draining: Arc::clone(&self.draining),
            viewers: Arc::clone(&self.viewers),
            ts_viewers: Arc::clone(&self.ts_viewers),
            titles: Arc::clone(&self.titles),
            gate: Arc::clone(&self.gate),
            cors_origin: self.cors_origin.clone(),
            sources: Arc::clone(&self.sources),
            dvr: Arc::clone(&self.dvr),
            icecast_burst_bytes: self.icecast_burst_bytes,
            signaling: Arc::clone(&self.signaling),
            peer,
            local,
            shutdown: shutdown.clone(),
        };
        let context = Arc::new(context);
        let in_flight = Arc::new(crate::http2::InFlight::default());
        let counted = Arc::clone(&in_flight);
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            let context = Arc::clone(&context);
            // Only HTTP/2 connections have an idle watchdog to tell.
            let request_guard = h2.then(|| counted.begin());
            async move {
                let _request = request_guard;
                if crate::webrtc_proxy::is_signaling(request.uri().path()) {
                    let rules = context.packaging.rules();
                    let response = context
                        .signaling
                        .forward(
                            request,
                            context.peer,
                            context.local,
                            &rules.webrtc,
                            &context.cors_origin,
                        )
                        .await;
                    return Ok(response.map(Either::Left));
                }
                context.edge_demand(&request).await;
                if let Some(response) = context.dvr(&request).await {
                    return Ok(response.map(Either::Left));
                }
                if let Some(response) = context.hold_low_latency(&request).await {
                    return Ok(context.respond_with(response).map(Either::Left));
                }
                Ok::<_, Infallible>(context.respond_any(&request))
            }
        });
        if h2 {
            self.serve_h2(io, service, &in_flight, peer, shutdown).await;
            return;
        }
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(self.header_timeout)
            .max_buf_size(MAX_REQUEST_HEAD)
            .serve_connection(io, service);
        tokio::pin!(connection);
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(%peer, error = %e, "http connection ended with an error");
                }
            }
            () = shutdown.cancelled() => {
                connection.as_mut().graceful_shutdown();
                let _ = connection.await;
            }
        }
    }
}

impl Delivery {
    /// Serves an HTTP/2 connection under [`crate::http2`]'s limits until the peer or the
    /// worker ends it, or it stays idle for `http_header_timeout`.
    async fn serve_h2<I, S>(
        &self,
        io: I,
        service: S,
        in_flight: &crate::http2::InFlight,
        peer: SocketAddr,
        shutdown: CancellationToken,
    ) where
        I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
        S: hyper::service::HttpService<Incoming, ResBody = DeliveryBody> + Send + 'static,
        S::Future: Send + 'static,
        S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let builder = crate::http2::builder(MAX_REQUEST_HEAD as u32);
        let connection = builder.serve_connection(io, service);
        tokio::pin!(connection);
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(%peer, error = %e, "http/2 connection ended with an error");
                }
                return;
            }
            () = shutdown.cancelled() => {}
            () = in_flight.idle_for(self.header_timeout) => {
                tracing::debug!(%peer, "http/2 connection idle: closed");
            }
        }
        connection.as_mut().graceful_shutdown();
        let _ = tokio::time::timeout(crate::http2::GOAWAY_GRACE, connection).await;
    }
}

struct Context {
    counters: Arc<WorkerCounters>,
    packaging: Arc<Packaging>,
    edge: Arc<EdgeDemand>,
    draining: Arc<AtomicBool>,
    viewers: Arc<Viewers>,
    ts_viewers: Arc<TsViewers>,
    titles: Arc<Titles>,
    gate: Arc<strom_stream::Gate>,
    cors_origin: HeaderValue,
    sources: Arc<Sources>,
    dvr: Arc<crate::dvr_playback::DvrPlayback>,
    icecast_burst_bytes: usize,
    signaling: Arc<crate::webrtc_proxy::SignalingProxy>,
    peer: SocketAddr,
    local: Option<std::net::IpAddr>,
    shutdown: CancellationToken,
}

/// Every answer's body: whole (playlists, segments, errors) or a live stream.
type DeliveryBody = Either<Full<Bytes>, TsBody>;

const PLAYLIST_TYPE: &str = "application/vnd.apple.mpegurl";

/// `bytes=a-b`, `bytes=a-`, `bytes=-n` for a body of `len` bytes; `None` when the range
/// cannot be satisfied.
pub fn parse_range(value: &str, len: usize) -> Option<(usize, usize)> {
    let spec = value.strip_prefix("bytes=")?;
    if spec.contains(',') || len == 0 {
        return None;
    }
    let (start, end) = spec.split_once('-')?;
    let (start, end) = match (start.trim(), end.trim()) {
        ("", suffix) => {
            let n: usize = suffix.parse().ok()?;
            (len.checked_sub(n.min(len))?, len - 1)
        }
        (start, "") => (start.parse().ok()?, len - 1),
        (start, end) => (start.parse().ok()?, end.parse::<usize>().ok()?.min(len - 1)),
    };
    (start <= end && start < len).then_some((start, end))
}

impl Context {
    /// A request under `/<app>/<stream>/` of an edge app keeps the stream wanted; a
    /// playlist request waits for its first segments (the pull from the origin), and so
    /// does one of a live stream that has none yet.
    async fn edge_demand(&self, request: &Request<Incoming>) {
        let method = request.method();
        if method != Method::GET && method != Method::HEAD {
            return;
        }
        let mut parts = request.uri().path().trim_start_matches('/').split('/');
        let (Some(app), Some(stream), Some(file), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return;
        };
        if strom_ipc::names::check_pair(app, stream).is_err() {
            return;
        }
        let master = matches!(
            file,
            "playlist.m3u8" | "playlist_fmp4.m3u8" | crate::dash::MANIFEST
        );
        let listener = matches!(file, crate::ts_http::FILE_NAME | crate::icecast::FILE_NAME);
        if (master || listener) && self.draining.load(Ordering::Relaxed) {
            return;
        }
        let playlist = master || matches!(file, "chunks.m3u8" | "chunks_fmp4.m3u8");
        if !self.edge.demand(app, stream, self.peer.ip()) {
            if playlist {
                self.edge
                    .wait_for_first_segment(app, stream, &self.shutdown)
                    .await;
            }
            return;
        }
        if playlist {
            self.edge
                .wait_for_segments(app, stream, &self.shutdown)
                .await;
        } else if listener {
            self.edge.wait_for_live(app, stream, &self.shutdown).await;
        }
    }

    /// `mpegts.stream` answers with a streaming body, everything else with a whole one.
    fn respond_any(&self, request: &Request<Incoming>) -> Response<Either<Full<Bytes>, TsBody>> {
        match self.mpegts(request) {
            Some(response) => response,
            None => self.respond(request).map(Either::Left),
        }
    }

    /// The answer to a GET or HEAD of `/<app>/<stream>/mpegts.stream` with valid names;
    /// `None` for every other request.
    fn mpegts(&self, request: &Request<Incoming>) -> Option<Response<Either<Full<Bytes>, TsBody>>> {
        let method = request.method();
        if method != Method::GET && method != Method::HEAD {
            return None;
        }
        let mut parts = request.uri().path().trim_start_matches('/').split('/');
        let (Some(app), Some(stream), Some(file), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let (format, protocol) = match file {
            crate::ts_http::FILE_NAME => (Format::MpegTs, Protocol::MpegTs),
            crate::icecast::FILE_NAME => {
                let metadata = request
                    .headers()
                    .get("icy-metadata")
                    .is_some_and(|v| v.as_bytes().trim_ascii() == b"1");
                let titles = Arc::clone(&self.titles);
                let station = self
                    .sources
                    .of_stream(&strom_stream::StreamKey::new(app, stream))
                    .map(|source| source.info.clone());
                (
                    Format::Icecast {
                        metadata,
                        titles,
                        station,
                        burst_bytes: self.icecast_burst_bytes,
                    },
                    Protocol::Icecast,
                )
            }
            _ => return None,
        };
        strom_ipc::names::check_pair(app, stream).ok()?;
        if self.draining.load(Ordering::Relaxed) {
            tracing::info!(peer = %self.peer, %app, %stream, "listener refused: draining");
            return Some(
                self.respond_with(error(StatusCode::SERVICE_UNAVAILABLE, "draining"))
                    .map(Either::Left),
            );
        }
        let rules = self.packaging.rules();
        let Ok(reading) = self.signed(request, app, stream, protocol) else {
            return Some(
                self.respond_with(error(StatusCode::FORBIDDEN, "forbidden"))
                    .map(Either::Left),
            );
        };
        let delivery = TsDelivery {
            gate: &self.gate,
            rules: &rules,
            viewers: &self.ts_viewers,
            counters: &self.counters,
            shutdown: &self.shutdown,
        };
        let user_agent = request
            .headers()
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let head = method == Method::HEAD;
        match delivery.open(
            format,
            app,
            stream,
            self.peer.ip(),
            user_agent,
            reading,
            head,
        ) {
            Ok(mut response) => {
                response.headers_mut().insert(
                    header::ACCESS_CONTROL_ALLOW_ORIGIN,
                    self.cors_origin.clone(),
                );
                Some(response.map(Either::Right))
            }
            // The ordinary routes answer 404 for it.
            Err(Refusal::NotFound) => None,
            Err(Refusal::TooManyViewers) => Some(
                self.respond_with(error(StatusCode::SERVICE_UNAVAILABLE, "too many viewers"))
                    .map(Either::Left),
            ),
        }
    }

    fn respond(&self, request: &Request<Incoming>) -> Response<Full<Bytes>> {
        let response = self.respond_with(self.route(request));
        let sent = response
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        if request.method() != Method::HEAD {
            self.counters.add_sent(sent);
        }
        response
    }

    /// An Icecast encoder's title update ([`crate::source::admin`]).
    fn admin_metadata(&self, request: &Request<Incoming>) -> Response<Full<Bytes>> {
        let rules = self.packaging.rules();
        let authorization = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let query = request.uri().query().unwrap_or_default();
        let (status, text) = match Update::read(&self.sources, &rules, query, authorization) {
            Update::Title { key, song, url } => {
                tracing::info!(stream = %key, title = %song, "icecast title set by the source");
                self.titles.set(&key, &song, &url);
                (
                    StatusCode::OK,
                    iceresponse("Metadata update successful", true),
                )
            }
            Update::Refused { status, message } => (
                StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
                iceresponse(message, false),
            ),
        };
        let mut response = Response::new(Full::new(Bytes::from(text)));
        *response.status_mut() = status;
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/xml"));
        if status == StatusCode::UNAUTHORIZED {
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"Icecast2 Server\""),
            );
        }
        response
    }

    /// Adds the CORS headers every answer carries.
    fn respond_with(&self, mut response: Response<Full<Bytes>>) -> Response<Full<Bytes>> {
        let headers = response.headers_mut();
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            self.cors_origin.clone(),
        );
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("Content-Length, Content-Range"),
        );
        response
    }

    fn route(&self, request: &Request<Incoming>) -> Response<Full<Bytes>> {
        let method = request.method();
        if method == Method::OPTIONS {
            return crate::preflight::preflight("GET, HEAD, OPTIONS", "Range");
        }
        if method != Method::GET && method != Method::HEAD {
            return error(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD");
        }
        if request.uri().path() == "/admin/metadata" {
            return self.admin_metadata(request);
        }
        let mut parts = request.uri().path().trim_start_matches('/').split('/');
        let (Some(app), Some(stream), Some(file), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return error(StatusCode::NOT_FOUND, "no such stream");
        };
        if strom_ipc::names::check_pair(app, stream).is_err() {
            return error(StatusCode::NOT_FOUND, "no such stream");
        }
        let sid = request.uri().query().and_then(|q| {
            q.split('&')
                .find_map(|pair| pair.strip_prefix("sid="))
                .and_then(|v| v.parse::<u128>().ok())
        });
        let head = method == Method::HEAD;
        match file {
            // Live streams are answered before routing (`Context::mpegts`).
            crate::ts_http::FILE_NAME | crate::icecast::FILE_NAME => {
                error(StatusCode::NOT_FOUND, "no such stream")
            }
            "playlist.m3u8" | "playlist_fmp4.m3u8" if self.draining.load(Ordering::Relaxed) => {
                tracing::info!(peer = %self.peer, %app, %stream, "HLS session refused: draining");
                error(StatusCode::SERVICE_UNAVAILABLE, "draining")
            }
            "playlist.m3u8" | "playlist_fmp4.m3u8" => {
                self.master(request, app, stream, file == "playlist_fmp4.m3u8", head)
            }
            crate::dash::MANIFEST => self.dash_manifest(request, app, stream, sid, head),
            _ => {
                let viewer = match sid.map(|token| self.viewers.lookup(token, self.peer.ip())) {
                    Some(Lookup::Revoked) => return error(StatusCode::FORBIDDEN, "session ended"),
                    Some(Lookup::Live(viewer)) => Some(viewer),
                    Some(Lookup::Unknown) | None => None,
                };
                // A protected stream's media needs the session its signed master opened.
                let rules = self.packaging.rules();
                let protected = self
                    .gate
                    .protects(&strom_stream::StreamKey::new(app, stream), Protocol::Hls);
                let covers = |v: &Arc<Viewer>| {
                    (v.app == app && v.stream == stream)
                        || rules.abr_group(&v.app, &v.stream).is_some_and(|g| {
                            g.streams.iter().any(|m| m.app == app && m.stream == stream)
                        })
                };
                if protected && !viewer.as_ref().is_some_and(covers) {
                    tracing::warn!(peer = %self.peer, %app, %stream, "HLS request refused: no signed session");
                    return error(StatusCode::FORBIDDEN, "forbidden");
                }
                self.media(request, app, stream, file, viewer, sid, head)
            }
        }
    }

    /// The signature check of a protected stream: `Ok(its admission)` when it may play
    /// (open, or validly signed within the pay-per-view limit), `Err` (logged) when not.
    fn signed(
        &self,
        request: &Request<Incoming>,
        app: &str,
        stream: &str,
        protocol: Protocol,
    ) -> Result<strom_stream::Reading, ()> {
        let key = strom_stream::StreamKey::new(app, stream);
        let access = Access::from_query(
            protocol,
            key,
            self.peer.ip(),
            strom_stream::Intent::Read,
            request.uri().query().unwrap_or_default(),
        );
        self.gate.admit_reader(&access).map_err(|_| ())
    }

    fn master(
        &self,
        request: &Request<Incoming>,
        app: &str,
        stream: &str,
        fmp4: bool,
        head: bool,
    ) -> Response<Full<Bytes>> {
        let rules = self.packaging.rules();
        let reading = match self.signed(request, app, stream, Protocol::Hls) {
            Ok(reading) => reading,
            Err(()) => return error(StatusCode::FORBIDDEN, "forbidden"),
        };
        let protected = self
            .gate
            .protects(&strom_stream::StreamKey::new(app, stream), Protocol::Hls);
        let abr = rules.abr_group(app, stream);
        let store = &self.packaging.store;
        let members: Vec<_> = match &abr {
            Some(group) => group
                .streams
                .iter()
                .filter_map(|member| {
                    store
                        .get(&member.app, &member.stream)
                        .filter(|s| s.has_segments())
                        .map(|s| (member, s))
                })
                .collect(),
            None => Vec::new(),
        };
        let single = store.get(app, stream).filter(|s| s.has_segments());
        if abr.is_none() && single.is_none() || abr.is_some() && members.is_empty() {
            return error(StatusCode::NOT_FOUND, "no such stream");
        }
        let user_agent = request
            .headers()
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        // `None` past the session caps: the playlist goes out without a session id
        // (not for a protected stream: its media requests need the session).
        // A signature without a pay-per-view id bound the client's address.
        let bind_to_ip = protected && reading.ppv_id.is_none();
        let viewer = (self.viewers).open("HLS", &reading, self.peer.ip(), user_agent, bind_to_ip);
        if protected && viewer.is_none() {
            return error(StatusCode::FORBIDDEN, "forbidden");
        }
        let session = viewer.as_ref().map(|v| v.token);
        let text = match (&abr, single) {
            (Some(_), _) => {
                let variants: Vec<_> = members
                    .iter()
                    .map(|(member, s)| {
                        s.variant(
                            &format!("../../{}/{}/", member.app, member.stream),
                            fmp4,
                            session,
                        )
                    })
                    .collect();
                let independent = members.iter().all(|(_, s)| s.independent());
                strom_media::hls::playlist::master_playlist(
                    &variants,
                    if fmp4 { 7 } else { 3 },
                    independent,
                )
            }
            (None, Some(s)) => s.master(fmp4, session),
            (None, None) => return error(StatusCode::NOT_FOUND, "no such stream"),
        };
        tracing::debug!(session = ?viewer.as_ref().map(|v| v.id), %app, %stream, "hls master playlist served");
        body(
            Bytes::from(text),
            PLAYLIST_TYPE,
            "no-cache",
            viewer.as_deref(),
            head,
            None,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn media(
        &self,
        request: &Request<Incoming>,
        app: &str,
        stream: &str,
        file: &str,
        viewer: Option<Arc<Viewer>>,
        sid: Option<u128>,
        head: bool,
    ) -> Response<Full<Bytes>> {
        let Some(hls) = self.packaging.store.get(app, stream) else {
            return error(StatusCode::NOT_FOUND, "no such stream");
        };
        let viewer = viewer.as_deref();
        match file {
            "chunks.m3u8" | "chunks_fmp4.m3u8" => {
                if !hls.has_segments() {
                    return error(StatusCode::NOT_FOUND, "no segments yet");
                }
                let text = match hls.part_target_secs() {
                    Some(_) if file == "chunks_fmp4.m3u8" => {
                        // A malformed query was answered 400 by `hold_low_latency`.
                        let skip =
                            ll_routes::directives(request.uri().query()).is_ok_and(|d| d.skip);
                        let mut text = hls.media_ll(sid, skip);
                        if !text.ends_with("#EXT-X-ENDLIST\n") {
                            text.push_str(&self.rendition_reports(app, stream, sid));
                        }
                        text
                    }
                    _ => hls.media(file == "chunks_fmp4.m3u8", sid),
                };
                body(
                    Bytes::from(text),
                    PLAYLIST_TYPE,
                    "no-cache",
                    viewer,
                    head,
                    None,
                )
            }
            _ => {
                let found = if let Some(number) = file
                    .strip_prefix("seg_")
                    .and_then(|f| f.strip_suffix(".ts"))
                {
                    number
                        .parse()
                        .ok()
                        .and_then(|n| hls.segment(n, false))
                        .map(|b| (b, "video/mp2t"))
                } else if let Some(number) = file
                    .strip_prefix("seg_")
                    .and_then(|f| f.strip_suffix(".m4s"))
                {
                    number
                        .parse()
                        .ok()
                        .and_then(|n| hls.segment(n, true))
                        .map(|b| (b, "video/iso.segment"))
                } else if let Some((msn, index)) = ll_routes::part_name(file) {
                    hls.part(msn, index).map(|b| (b, "video/iso.segment"))
                } else if let Some(number) = file
                    .strip_prefix("init_")
                    .and_then(|f| f.strip_suffix(".mp4"))
                {
                    number
                        .parse()
                        .ok()
                        .and_then(|n| hls.init(n))
                        .map(|b| (b, "video/mp4"))
                } else {
                    dash_routes::dash_file(&hls, file)
                };
                match found {
                    Some((bytes, content_type)) => {
                        let range = request
                            .headers()
                            .get(header::RANGE)
                            .and_then(|v| v.to_str().ok());
                        body(
                            bytes,
                            content_type,
                            "public, max-age=86400, immutable",
                            viewer,
                            head,
                            range,
                        )
                    }
                    None => error(StatusCode::NOT_FOUND, "no such segment"),
                }
            }
        }
    }
}

fn body(
    bytes: Bytes,
    content_type: &'static str,
    cache: &'static str,
    viewer: Option<&Viewer>,
    head: bool,
    range: Option<&str>,
) -> Response<Full<Bytes>> {
    let total = bytes.len();
    let (status, slice, content_range) = match range {
        Some(spec) => match parse_range(spec, total) {
            Some((start, end)) => (
                StatusCode::PARTIAL_CONTENT,
                bytes.slice(start..=end),
                Some(format!("bytes {start}-{end}/{total}")),
            ),
            None => {
                let mut response =
                    error(StatusCode::RANGE_NOT_SATISFIABLE, "range not satisfiable");
                if let Ok(value) = HeaderValue::from_str(&format!("bytes */{total}")) {
                    response.headers_mut().insert(header::CONTENT_RANGE, value);
                }
                return response;
            }
        },
        None => (StatusCode::OK, bytes, None),
    };
    let length = slice.len();
    if let Some(viewer) = viewer {
        viewer.touch(if head { 0 } else { length as u64 });
    }
    let mut response = Response::new(Full::new(if head { Bytes::new() } else { slice }));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    if let Some(value) = content_range.and_then(|v| HeaderValue::from_str(&v).ok()) {
        headers.insert(header::CONTENT_RANGE, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::parse_range;

    #[test]
    fn ranges() {
        assert_eq!(parse_range("bytes=0-9", 100), Some((0, 9)));
        assert_eq!(parse_range("bytes=90-", 100), Some((90, 99)));
        assert_eq!(parse_range("bytes=-10", 100), Some((90, 99)));
        assert_eq!(parse_range("bytes=50-500", 100), Some((50, 99)));
        assert_eq!(parse_range("bytes=100-", 100), None);
        assert_eq!(parse_range("bytes=5-1", 100), None);
        assert_eq!(parse_range("bytes=0-1,5-6", 100), None);
        assert_eq!(parse_range("items=0-1", 100), None);
    }
}
