//! One RTMP connection: handshake, the `rml_rtmp` server session, and what its events
//! mean for strom (authentication, publish control, publishing into a stream, playing).
//!
//! Over 800 lines for now: the session's event handlers share the connection's state;
//! splitting publish and play into their own files is the next step (issue 42).

use crate::admission::{Place, PlaceKind};
use crate::auth::adobe::Verdict;
use crate::auth::{handler, param, split_query};
use crate::chunking::OUTGOING_CHUNK_SIZE;
use crate::connect_info::ConnectInfo;
use crate::publish_frames::{PublishClock, audio_frame, metadata_frame, video_frame};
use crate::server_input::{InputError, ServerInput};
use crate::shared::Shared;
use crate::sink::{MediaFeed, Sink, flush_loop};
use crate::status_message::{RML_DATA_CSID, on_status, play_start_data};
use bytes::Bytes;
use rml_rtmp::handshake::{Handshake, HandshakeProcessResult, PeerType};
use rml_rtmp::sessions::{
    ServerSession, ServerSessionConfig, ServerSessionEvent, ServerSessionResult,
};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use strom_ipc::names;
use strom_ipc::rules::RtmpLimits;
use strom_stream::gate::sessions::SessionEntry;
use strom_stream::{
    Access, Credentials, Fanout, Intent, Protocol, PublisherInfo, Reader, ReaderPlace, Reading,
    Refusal, StreamKey,
};
use strom_worker_runtime::clock::unix_now;
use strom_worker_runtime::counters::ConnectionGuard;
use strom_worker_runtime::limited_log;
use strom_worker_runtime::login_throttle::SOURCE_LOGINS;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedReadHalf;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Time a client has to send its first command after the handshake.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// A connection's read buffer to start with: the handshake and a player's commands fit.
const FIRST_READ_BUFFER: usize = 4 * 1024;
/// What it grows to once a read fills it (a publisher).
const READ_BUFFER: usize = 16 * 1024;
/// How long a refused client gets to read the refusal and hang up.
const LINGER: Duration = Duration::from_secs(3);
/// Window of the rate limits on log lines a client can cause.
const LOG_WINDOW: Duration = Duration::from_secs(10);

/// Why a connection ended early.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    #[error("handshake failed: {0}")]
    Handshake(String),
    #[error("handshake not finished within {0:?}")]
    HandshakeTimeout(Duration),
    #[error("rtmp protocol error: {0}")]
    Protocol(String),
    #[error("no command within {0:?}")]
    Idle(Duration),
    #[error("publisher sent no media for {0:?}")]
    PublisherIdle(Duration),
    #[error("no publisher on {0} for {1:?}")]
    NoPublisher(String, Duration),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

struct Publishing {
    key: StreamKey,
    /// The claim on the stream: dropping it (whatever ends the connection) releases it.
    claim: strom_stream::Publishing,
    clock: PublishClock,
    last_media: Instant,
    /// Breaks this publisher's `onCuePoint`s started (their SCTE-35 event ids).
    cue_events: u32,
    /// The latest media decode time, for markers from `onCuePoint`.
    last_dts: i64,
    _place: Place,
}

struct Playing {
    key: StreamKey,
    /// The message stream the player plays on (for status messages).
    stream_id: u32,
    /// Whether the stream has a publisher, followed without a per-frame cost.
    live: Option<watch::Receiver<bool>>,
    /// A publisher was seen since the player started (then the wait is the unpublish
    /// grace; otherwise it is the time a stream gets to appear).
    had_publisher: bool,
    /// Since when the stream has had no publisher.
    unpublished_since: Option<Instant>,
    place: Place,
    /// The player's place among the stream's readers.
    reader: ReaderPlace,
}

impl Playing {
    /// How long the player may still wait for a publisher; `None` while one publishes.
    fn patience(&self, limits: &RtmpLimits) -> Option<Duration> {
        let since = self.unpublished_since?;
        let limit = if self.had_publisher {
            Duration::from_secs(u64::from(limits.unpublish_grace_secs))
        } else {
            Duration::from_secs(u64::from(limits.player_wait_timeout_secs))
        };
        Some(limit.saturating_sub(since.elapsed()))
    }
}

struct Connection {
    shared: Arc<Shared>,
    peer: SocketAddr,
    session: ServerSession,
    sink: Arc<Sink>,
    kill: CancellationToken,
    connect: ConnectInfo,
    /// Checks what the client sends (chunk stream, message sizes, AMF, createStream count)
    /// before rml_rtmp parses it, and reads the connect facts.
    guard: ServerInput,
    app: String,
    app_params: Vec<(String, String)>,
    authenticated: bool,
    publishing: Option<Publishing>,
    playing: Option<Playing>,
    bytes_in: u64,
    /// Close after the queued packets are written (a rejected client).
    closing: bool,
    _ip_place: Place,
}

pub async fn serve(
    stream: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    _guard: ConnectionGuard,
    shutdown: CancellationToken,
) {
    let limits = shared.rules().rtmp.limits;
    if shared.counters.snapshot().connections > u64::from(limits.max_connections) {
        limited_log!(warn, 5, LOG_WINDOW; %peer, max = limits.max_connections, "rtmp connection refused: connection limit reached");
        return;
    }
    let Some(ip_place) = shared
        .admission
        .take(PlaceKind::Ip(peer.ip()), limits.max_connections_per_ip)
    else {
        limited_log!(warn, 5, LOG_WINDOW; %peer, max = limits.max_connections_per_ip, "rtmp connection refused: connections per address limit reached");
        return;
    };
    let _ = stream.set_nodelay(true);
    let (mut reader, mut writer) = stream.into_split();
    // The connection's one read buffer, from the handshake on: on the heap, not in the
    // connection's task, and small until a client sends enough to fill it (a player
    // sends a few KiB in all), see `read_some`.
    let mut buffer = Vec::with_capacity(FIRST_READ_BUFFER);
    let handshake_limit = Duration::from_secs(u64::from(limits.handshake_timeout_secs));
    let leftover = match tokio::time::timeout(
        handshake_limit,
        handshake(&mut reader, &mut writer, &mut buffer),
    )
    .await
    {
        Ok(Ok(leftover)) => leftover,
        Ok(Err(e)) => {
            limited_log!(info, 10, LOG_WINDOW; %peer, error = %e, "rtmp connection dropped before its handshake ended");
            return;
        }
        Err(_) => {
            limited_log!(info, 10, LOG_WINDOW; %peer, error = %ConnectionError::HandshakeTimeout(handshake_limit), "rtmp connection dropped before its handshake ended");
            return;
        }
    };
    let mut config = ServerSessionConfig::new();
    config.chunk_size = OUTGOING_CHUNK_SIZE;
    let (session, initial) = match ServerSession::new(config) {
        Ok(created) => created,
        Err(e) => {
            tracing::error!(%peer, error = ?e, "rtmp session could not start");
            return;
        }
    };
    let kill = shutdown.child_token();
    let sink = Arc::new(Sink::new(
        writer,
        Arc::clone(&shared.counters),
        kill.clone(),
    ));
    let flush_task = tokio::spawn(flush_loop(Arc::clone(&sink)));
    let mut connection = Connection {
        shared,
        peer,
        session,
        sink: Arc::clone(&sink),
        kill: kill.clone(),
        connect: ConnectInfo::default(),
        guard: ServerInput::new(limits.max_message_bytes),
        app: String::new(),
        app_params: Vec::new(),
        authenticated: false,
        publishing: None,
        playing: None,
        bytes_in: 0,
        closing: false,
        _ip_place: ip_place,
    };
    let result = connection
        .run(&mut reader, &mut buffer, initial, leftover)
        .await;
    match &result {
        Ok(()) => tracing::debug!(%peer, "rtmp connection closed"),
        Err(e) => limited_log!(info, 20, LOG_WINDOW; %peer, error = %e, "rtmp connection dropped"),
    }
    connection.finish();
    drop(connection);
    // Let the flush loop write what is queued (a rejection's reason), then stop it.
    sink.close();
    if tokio::time::timeout(Duration::from_secs(2), flush_task)
        .await
        .is_err()
    {
        kill.cancel();
    }
}

async fn handshake(
    reader: &mut OwnedReadHalf,
    writer: &mut tokio::net::tcp::OwnedWriteHalf,
    buffer: &mut Vec<u8>,
) -> Result<Vec<u8>, ConnectionError> {
    let mut handshake = Handshake::new(PeerType::Server);
    loop {
        let read = read_some(reader, buffer).await?;
        if read == 0 {
            return Err(ConnectionError::Handshake(
                "closed during handshake".to_owned(),
            ));
        }
        match handshake.process_bytes(&buffer[..read]) {
            Ok(HandshakeProcessResult::InProgress { response_bytes }) => {
                writer.write_all(&response_bytes).await?
            }
            Ok(HandshakeProcessResult::Completed {
                response_bytes,
                remaining_bytes,
            }) => {
                writer.write_all(&response_bytes).await?;
                return Ok(remaining_bytes);
            }
            Err(e) => return Err(ConnectionError::Handshake(format!("{e:?}"))),
        }
    }
}

impl Connection {
    async fn run(
        &mut self,
        reader: &mut OwnedReadHalf,
        buffer: &mut Vec<u8>,
        initial: Vec<ServerSessionResult>,
        leftover: Vec<u8>,
    ) -> Result<(), ConnectionError> {
        self.results(initial).await?;
        if !leftover.is_empty() {
            self.input(&leftover).await?;
        }
        let limits = self.shared.rules().rtmp.limits;
        let idle_limit = Duration::from_secs(u64::from(limits.publisher_idle_timeout_secs));
        let kill = self.kill.clone();
        while !self.closing {
            let wait = match (&self.publishing, &self.playing) {
                (Some(publishing), _) => idle_limit.saturating_sub(publishing.last_media.elapsed()),
                (None, Some(playing)) => playing
                    .patience(&limits)
                    .unwrap_or(Duration::from_secs(24 * 3600)),
                (None, None) => COMMAND_TIMEOUT,
            };
            let read = tokio::select! {
                () = kill.cancelled() => return Ok(()),
                live = publisher_change(self.playing.as_mut()) => {
                    self.publisher_changed(live).await;
                    continue;
                }
                read = tokio::time::timeout(wait.max(Duration::from_millis(10)), read_some(reader, buffer)) => read,
            };
            match read {
                Ok(Ok(0)) => return Ok(()),
                Ok(Ok(_)) => self.input(buffer).await?,
                Ok(Err(e)) => return Err(e.into()),
                Err(_) => {
                    if let Some(publishing) = &self.publishing {
                        if publishing.last_media.elapsed() >= idle_limit {
                            return Err(ConnectionError::PublisherIdle(idle_limit));
                        }
                    } else if let Some(playing) = &self.playing {
                        if playing.patience(&limits) == Some(Duration::ZERO) {
                            let waited = playing
                                .unpublished_since
                                .map(|since| since.elapsed())
                                .unwrap_or_default();
                            return Err(ConnectionError::NoPublisher(
                                playing.key.to_string(),
                                waited,
                            ));
                        }
                    } else {
                        return Err(ConnectionError::Idle(COMMAND_TIMEOUT));
                    }
                }
            }
        }
        self.linger(reader, buffer).await;
        Ok(())
    }

    /// A publisher came or went on the stream being played: a player learns that its
    /// publisher left (`NetStream.Play.UnpublishNotify`, as nginx-rtmp says it; not on an
    /// edge app, whose pull fails over) and is closed if none comes back within the
    /// grace; a new publisher ends the wait.
    async fn publisher_changed(&mut self, live: Option<bool>) {
        let Some(playing) = self.playing.as_mut() else {
            return;
        };
        match live {
            None => playing.live = None,
            Some(true) => {
                playing.had_publisher = true;
                playing.unpublished_since = None;
            }
            Some(false) => {
                playing.unpublished_since.get_or_insert_with(Instant::now);
                // An edge stream's pull that failed is pulled again from the next origin
                // (or the registry's new holder) within the grace: its players wait in
                // silence, as many players end their session on the notice.
                let edge = self.shared.rules().edge_for(&playing.key.app).is_some();
                if playing.had_publisher && !edge {
                    let (stream_id, key) = (playing.stream_id, playing.key.to_string());
                    tracing::info!(peer = %self.peer, stream = %key, "publisher left; telling the player");
                    self.send(on_status(
                        stream_id,
                        "status",
                        "NetStream.Play.UnpublishNotify",
                        &format!("{key} is now unpublished."),
                    ))
                    .await;
                }
            }
        }
    }

    /// After a refusal the client must get to read the reason: closing at once races with
    /// its next write (ffmpeg then reports a broken pipe instead of the reason). Wait for
    /// the client to hang up, a short while at most, ignoring what it sends.
    async fn linger(&self, reader: &mut OwnedReadHalf, buffer: &mut Vec<u8>) {
        let deadline = tokio::time::Instant::now() + LINGER;
        loop {
            match tokio::time::timeout_at(deadline, read_some(reader, buffer)).await {
                Ok(Ok(n)) if n > 0 => continue,
                _ => return,
            }
        }
    }

    async fn input(&mut self, bytes: &[u8]) -> Result<(), ConnectionError> {
        self.bytes_in += bytes.len() as u64;
        self.shared.counters.add_received(bytes.len() as u64);
        let publishing = self.publishing.as_ref().and_then(|p| p.claim.session());
        let playing = self.playing.as_ref().and_then(|p| p.reader.session());
        if let Some(session) = publishing.or(playing) {
            session
                .bytes_recv
                .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        }
        // The guard sees the bytes before rml_rtmp does; a refusal closes this connection
        // (logged with the reason as it is dropped).
        let handled = self
            .guard
            .handle(&mut self.session, bytes)
            .map_err(|e| match e {
                InputError::Refused(_) => ConnectionError::Protocol(e.to_string()),
                InputError::Session(e) => ConnectionError::Protocol(format!("{e:?}")),
            })?;
        if let Some(info) = handled.connect {
            self.connect = info;
        }
        self.results(handled.results).await?;
        // After the media of the same read: a marker never goes before media that came
        // ahead of it (it may follow some that came after; it splices at the next
        // keyframe anyway).
        for cue_point in handled.cue_points {
            self.cue_point(&cue_point);
        }
        Ok(())
    }

    async fn results(&mut self, results: Vec<ServerSessionResult>) -> Result<(), ConnectionError> {
        for result in results {
            match result {
                ServerSessionResult::OutboundResponse(packet) => {
                    self.send(Bytes::from(packet.bytes)).await
                }
                ServerSessionResult::RaisedEvent(event) => self.event(event).await?,
                ServerSessionResult::UnhandleableMessageReceived(_) => {}
            }
        }
        Ok(())
    }

    async fn send(&self, bytes: Bytes) {
        self.sink.send(bytes);
    }

    async fn answer(
        &mut self,
        outcome: Result<Vec<ServerSessionResult>, rml_rtmp::sessions::ServerSessionError>,
    ) -> Result<(), ConnectionError> {
        let results = outcome.map_err(|e| ConnectionError::Protocol(format!("{e:?}")))?;
        Box::pin(self.results(results)).await
    }

    async fn event(&mut self, event: ServerSessionEvent) -> Result<(), ConnectionError> {
        match event {
            ServerSessionEvent::ConnectionRequested {
                request_id,
                app_name,
            } => self.on_connect(request_id, &app_name).await,
            ServerSessionEvent::ReleaseStreamRequested { request_id, .. } => {
                let outcome = self.session.accept_request(request_id);
                self.answer(outcome).await
            }
            ServerSessionEvent::PublishStreamRequested {
                request_id,
                stream_key,
                ..
            } => self.on_publish(request_id, &stream_key).await,
            ServerSessionEvent::PublishStreamFinished { .. } => {
                self.stop_publishing();
                Ok(())
            }
            ServerSessionEvent::StreamMetadataChanged { metadata, .. } => {
                if let Some(publishing) = &self.publishing {
                    publishing.claim.publish(metadata_frame(&metadata));
                }
                Ok(())
            }
            ServerSessionEvent::VideoDataReceived {
                data, timestamp, ..
            } => {
                self.media(data, timestamp.value, true);
                Ok(())
            }
            ServerSessionEvent::AudioDataReceived {
                data, timestamp, ..
            } => {
                self.media(data, timestamp.value, false);
                Ok(())
            }
            ServerSessionEvent::PlayStreamRequested {
                request_id,
                stream_key,
                stream_id,
                ..
            } => self.on_play(request_id, &stream_key, stream_id).await,
            ServerSessionEvent::PlayStreamFinished { .. } => {
                self.stop_playing().await;
                Ok(())
            }
            ServerSessionEvent::UnhandleableAmf0Command { command_name, .. } => {
                tracing::debug!(peer = %self.peer, command = %command_name, "rtmp command ignored");
                Ok(())
            }
            _ => Ok(()),
        }
    }

    async fn on_connect(&mut self, request_id: u32, app_name: &str) -> Result<(), ConnectionError> {
        let (app, params) = split_query(app_name);
        if let Err(e) = names::check_app(app) {
            tracing::warn!(peer = %self.peer, error = %e, "rtmp connect refused");
            let outcome = self.session.reject_request(
                request_id,
                "NetConnection.Connect.Rejected",
                &e.to_string(),
            );
            self.closing = true;
            return self.answer(outcome).await;
        }
        self.app = app.to_owned();
        self.app_params = params;
        let login = self.shared.gate.publisher_login(&self.app);
        if let Some((login, password)) =
            login.filter(|_| self.connect.publisher || param(&self.app_params, "authmod").is_some())
        {
            let client = self.peer.ip();
            // A response to a challenge is a password attempt: an address that failed
            // too often is answered as if wrong, without a check.
            let attempt = param(&self.app_params, "response").is_some();
            let verdict = if attempt && !SOURCE_LOGINS.allows(client) {
                limited_log!(warn, 5, Duration::from_secs(10); peer = %self.peer, app = %self.app, "publisher refused: too many failed logins from this address");
                Verdict::Reject(
                    "[ AccessManager.Reject ] : [ authmod=adobe ] : ?reason=authfailed".to_owned(),
                )
            } else {
                let verdict = self.shared.adobe.check(&self.app_params, &login, &password);
                match &verdict {
                    Verdict::Accept => SOURCE_LOGINS.succeeded(client),
                    Verdict::Reject(description) if description.contains("authfailed") => {
                        let locked_out = SOURCE_LOGINS.failed(client);
                        limited_log!(warn, 5, Duration::from_secs(10); peer = %self.peer, app = %self.app, locked_out, "publisher authentication failed");
                    }
                    Verdict::Reject(_) => {}
                }
                verdict
            };
            match verdict {
                Verdict::Accept => {
                    tracing::info!(peer = %self.peer, app = %self.app, "publisher authenticated");
                    self.authenticated = true;
                }
                Verdict::Reject(description) => {
                    // Failures are logged above (rate limited).
                    if !description.contains("authfailed") {
                        tracing::debug!(peer = %self.peer, app = %self.app, "publisher authentication challenge");
                    }
                    let outcome = self.session.reject_request(
                        request_id,
                        "NetConnection.Connect.Rejected",
                        &description,
                    );
                    self.closing = true;
                    return self.answer(outcome).await;
                }
            }
        }
        let outcome = self.session.accept_request(request_id);
        self.answer(outcome).await
    }

    async fn refuse_publish(
        &mut self,
        stream_id: u32,
        code: &str,
        why: &str,
    ) -> Result<(), ConnectionError> {
        tracing::warn!(peer = %self.peer, app = %self.app, code, reason = why, "publish refused");
        self.send(on_status(stream_id, "error", code, why)).await;
        self.closing = true;
        Ok(())
    }

    async fn on_publish(
        &mut self,
        request_id: u32,
        stream_key: &str,
    ) -> Result<(), ConnectionError> {
        let (stream_name, stream_params) = split_query(stream_key);
        let stream_name = stream_name.to_owned();
        // The message stream id the client publishes on (ffmpeg and OBS: 1).
        let stream_id = 1;
        if let Some(publishing) = &self.publishing {
            // One connection publishes one stream: a second claim would outlive the
            // session the API can end.
            let why = format!("this connection already publishes {}", publishing.key);
            return self
                .refuse_publish(stream_id, "NetStream.Publish.BadName", &why)
                .await;
        }
        if let Err(e) = names::check_stream(&stream_name) {
            return self
                .refuse_publish(stream_id, "NetStream.Publish.BadName", &e.to_string())
                .await;
        }
        let Some(place) = self.shared.admission.take(
            PlaceKind::Publisher,
            self.shared.rules().rtmp.limits.max_publishers,
        ) else {
            return self
                .refuse_publish(
                    stream_id,
                    "NetStream.Publish.Rejected",
                    "the server's publisher limit is reached",
                )
                .await;
        };
        let key = StreamKey {
            app: self.app.clone(),
            stream: stream_name.clone(),
        };
        let peer_ip = self.peer.ip().to_string();
        let access = Access::new(Protocol::Rtmp, key.clone(), self.peer.ip())
            .with_credentials(if self.authenticated {
                Credentials::Proven
            } else {
                Credentials::None
            })
            .with_signature(
                param(&self.app_params, Intent::Publish.parameter())
                    .or_else(|| param(&stream_params, Intent::Publish.parameter()))
                    .map(strom_worker_runtime::play_signature::percent_decode),
            );
        let admission = match self.shared.gate.admit_publisher(&access) {
            Ok(admission) => admission,
            Err(refusal) => {
                let code = match refusal {
                    Refusal::BadAuth => "NetStream.Publish.BadAuth",
                    _ => "NetStream.Publish.Rejected",
                };
                return self
                    .refuse_publish(stream_id, code, &refusal.to_string())
                    .await;
            }
        };
        if let (Some(id), Some(approval)) = (&admission.control_id, &admission.handler)
            && let Err(why) = handler::approve(
                &self.shared.http,
                &approval.url,
                approval.timeout,
                id,
                &peer_ip,
                &key.to_string(),
            )
            .await
        {
            return self
                .refuse_publish(stream_id, "NetStream.Publish.Rejected", &why)
                .await;
        }
        let session_id = self.shared.ids.next_id();
        let info = PublisherInfo {
            session_id,
            ip: peer_ip.clone(),
            publish_time: unix_now(),
            query: stream_key
                .split_once('?')
                .map(|(_, query)| query.to_owned())
                .unwrap_or_default(),
            source_url: None,
            relayed_from: None,
            protocol: "RTMP",
            admitted_id: None,
        };
        // RTMP's publishers have never been in the API's session list.
        let session =
            SessionEntry::publisher(session_id, "RTMP", &admission, peer_ip, self.kill.clone())
                .with_user_agent(&self.connect.flash_ver)
                .unlisted();
        let session = self.shared.gate.sessions().open(session);
        let claim = match self.shared.gate.publish(&admission, info, session) {
            Ok(claim) => claim,
            Err(refusal) => {
                return self
                    .refuse_publish(stream_id, "NetStream.Publish.BadName", &refusal.to_string())
                    .await;
            }
        };
        tracing::info!(peer = %self.peer, stream = %key, session = session_id, "publishing");
        self.publishing = Some(Publishing {
            key,
            claim,
            clock: PublishClock::default(),
            last_media: Instant::now(),
            cue_events: 0,
            last_dts: 0,
            _place: place,
        });
        let outcome = self.session.accept_request(request_id);
        self.answer(outcome).await
    }

    /// An `onCuePoint` of the publisher: a SCTE-35 marker in the stream when it is a cue.
    fn cue_point(&mut self, payload: &[u8]) {
        let Some(publishing) = self.publishing.as_mut() else {
            return;
        };
        let Some(section) = crate::cue_point::to_section(payload, &mut publishing.cue_events)
        else {
            tracing::debug!(peer = %self.peer, stream = %publishing.key, "onCuePoint that is no SCTE-35 cue ignored");
            return;
        };
        tracing::info!(peer = %self.peer, stream = %publishing.key, "onCuePoint: SCTE-35 marker");
        publishing.claim.publish(strom_media::frame::Frame {
            track: strom_media::frame::Track::Data,
            codec: strom_media::frame::Codec::Scte35,
            dts: publishing.last_dts,
            pts: publishing.last_dts,
            keyframe: false,
            config: false,
            control: false,
            payload: Bytes::from(section),
            form: strom_media::frame::SourceForm::Neutral,
        });
    }

    fn media(&mut self, data: Bytes, timestamp: u32, video: bool) {
        let Some(publishing) = self.publishing.as_mut() else {
            return;
        };
        publishing.last_media = Instant::now();
        if let Some(session) = publishing.claim.session() {
            session.touch();
        }
        let frame = if video {
            video_frame(&mut publishing.clock, &data, timestamp)
        } else {
            audio_frame(&mut publishing.clock, &data, timestamp)
        };
        match frame {
            Ok(frame) => {
                publishing.last_dts = frame.dts;
                publishing.claim.publish_with_container(frame, data)
            }
            Err(e) => {
                tracing::debug!(peer = %self.peer, stream = %publishing.key, error = %e, "unparsable media message dropped")
            }
        }
    }

    /// The playback signature check (`wmsAuthSign` in the app's or the stream's query):
    /// the pay-per-view id when it may play, the reason (for the log) when not.
    fn admit_player(
        &self,
        key: &StreamKey,
        stream_params: &[(String, String)],
    ) -> Result<Reading, String> {
        let signature = param(stream_params, Intent::Read.parameter())
            .or_else(|| param(&self.app_params, Intent::Read.parameter()))
            .map(strom_worker_runtime::play_signature::percent_decode);
        let access =
            Access::new(Protocol::Rtmp, key.clone(), self.peer.ip()).with_signature(signature);
        self.shared
            .gate
            .admit_reader(&access)
            .map_err(|refusal| refusal.to_string())
    }

    async fn on_play(
        &mut self,
        request_id: u32,
        stream_key: &str,
        stream_id: u32,
    ) -> Result<(), ConnectionError> {
        let (stream_name, stream_params) = split_query(stream_key);
        let key = StreamKey {
            app: self.app.clone(),
            stream: stream_name.to_owned(),
        };
        let rules = self.shared.rules();
        let limits = rules.rtmp.limits;
        let admitted = match names::check_stream(stream_name) {
            Err(e) => Err(("NetStream.Play.StreamNotFound", e.to_string())),
            // Another strom trying its origins: waiting would cost it a timeout.
            Ok(()) if self.connect.is_strom_pull() && self.shared.gate.cannot_start(&key) => Err((
                "NetStream.Play.StreamNotFound",
                "not live on this server, and nothing here starts it".to_owned(),
            )),
            Ok(()) if self.publishing.is_some() => Err((
                "NetStream.Play.Failed",
                "a publishing connection cannot play".to_owned(),
            )),
            Ok(()) if self.playing.is_none() && self.shared.is_draining() => Err((
                "NetStream.Play.Failed",
                "the server is draining: play from another server".to_owned(),
            )),
            Ok(()) => self
                .admit_player(&key, &stream_params)
                .map_err(|why| ("NetStream.Play.Failed", why)),
        };
        let place = admitted.and_then(|reading| {
            if self.playing.is_some() {
                return Ok((None, reading));
            }
            self.shared
                .admission
                .take(PlaceKind::Player, limits.max_players)
                .map(|place| (Some(place), reading))
                .ok_or((
                    "NetStream.Play.Failed",
                    "the server's player limit is reached".to_owned(),
                ))
        });
        let (place, reading) = match place {
            Ok(admitted) => admitted,
            Err((code, why)) => {
                if code.ends_with("StreamNotFound") {
                    tracing::info!(peer = %self.peer, stream = %key, code, reason = %why, "play refused");
                } else {
                    tracing::warn!(peer = %self.peer, stream = %key, code, reason = %why, "play refused");
                }
                self.send(on_status(stream_id, "error", code, &why)).await;
                self.closing = true;
                return Ok(());
            }
        };
        // The player joins the stream and reads whether it is live before it hears
        // Play.Start: a publisher that leaves right after that is then one it had.
        // A second play on the connection keeps the place of the first.
        let previous = self.stop_playing().await;
        let Some(place) = place.or(previous) else {
            return Err(ConnectionError::Protocol(
                "play without a player place".into(),
            ));
        };
        let id = self.shared.ids.next_id();
        let session = SessionEntry::reader(id, "RTMP", &reading, self.peer.ip(), self.kill.clone())
            .with_user_agent(&self.connect.flash_ver);
        let session = self.shared.gate.sessions().open(session);
        let entry = Arc::clone(session.entry());
        let Reader {
            frames,
            place: reader,
            ..
        } = self.shared.gate.read(&reading, Fanout, session);
        let mut live = self.shared.streams.watch_live(&key);
        let publishing_now = live.as_mut().is_some_and(|live| *live.borrow_and_update());
        tracing::info!(peer = %self.peer, stream = %key, session = id, "playing");
        // Held from here, so that `finish` leaves the stream however this play ends.
        self.playing = Some(Playing {
            key,
            stream_id,
            live,
            had_publisher: publishing_now,
            unpublished_since: (!publishing_now).then(Instant::now),
            place,
            reader,
        });
        let results = self
            .session
            .accept_request(request_id)
            .map_err(|e| ConnectionError::Protocol(format!("{e:?}")))?;
        // rml_rtmp stamps its two play-start data messages with its session clock; ffmpeg
        // then invents a data and a subtitle stream. `|RtmpSampleAccess` goes out again at
        // timestamp 0 on strom's data chunk stream (rml never uses its own data chunk
        // stream for a player again, so dropping its copies cannot desynchronize header
        // compression).
        let results = results
            .into_iter()
            .filter(|result| match result {
                ServerSessionResult::OutboundResponse(packet) => {
                    packet.bytes.first().map(|b| b & 0x3F) != Some(RML_DATA_CSID)
                }
                _ => true,
            })
            .collect();
        Box::pin(self.results(results)).await?;
        self.send(play_start_data(stream_id)).await;
        self.sink.start_media(
            MediaFeed {
                frames,
                stream_id,
                session: entry,
            },
            limits.play_nodelay,
        );
        let coalesce = Duration::from_millis(u64::from(limits.play_coalesce_ms));
        if let Some(playing) = &self.playing {
            self.shared.fanouts.join(&playing.key, &self.sink, coalesce);
        }
        Ok(())
    }

    /// Ends the play in progress; its player place is handed back to the caller.
    async fn stop_playing(&mut self) -> Option<Place> {
        let playing = self.playing.take()?;
        self.leave_stream(&playing);
        Some(playing.place)
    }

    /// Leaves the played stream: its fan-out first (a group holds only readers of the
    /// stream it watches), then the hub.
    fn leave_stream(&self, playing: &Playing) {
        self.shared.fanouts.leave(&playing.key, &self.sink);
        self.sink.stop_media();
        playing.reader.leave();
    }

    fn stop_publishing(&mut self) {
        if let Some(publishing) = self.publishing.take()
            && publishing.claim.release()
        {
            tracing::info!(peer = %self.peer, stream = %publishing.key, "publish ended");
        }
    }

    /// Leaves every stream this connection took part in.
    fn finish(&mut self) {
        self.stop_publishing();
        if let Some(playing) = self.playing.take() {
            self.leave_stream(&playing);
            tracing::info!(peer = %self.peer, stream = %playing.key, "player left");
        }
    }
}

/// Waits until the publisher of the played stream comes or goes: `Some(live)`, or `None`
/// once the stream can no longer say; never returns when nothing is played.
async fn publisher_change(playing: Option<&mut Playing>) -> Option<bool> {
    let Some(live) = playing.and_then(|playing| playing.live.as_mut()) else {
        return std::future::pending().await;
    };
    match live.changed().await {
        Ok(()) => Some(*live.borrow_and_update()),
        Err(_) => None,
    }
}

/// Reads what the client sent into `buffer` (emptied first; at most its capacity). A
/// buffer the previous read filled grows to [`READ_BUFFER`] first. Filled by reads only,
/// never zeroed, so pages no read reached cost no resident memory.
async fn read_some(reader: &mut OwnedReadHalf, buffer: &mut Vec<u8>) -> std::io::Result<usize> {
    let filled = buffer.len() == buffer.capacity();
    buffer.clear();
    if filled {
        buffer.reserve_exact(READ_BUFFER);
    }
    reader.read_buf(buffer).await
}

#[cfg(test)]
mod read_buffer_tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    #[tokio::test]
    async fn the_read_buffer_stays_small_for_a_player_and_grows_for_a_publisher() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let (mut reader, _writer) = server.into_split();
        let mut buffer = Vec::with_capacity(FIRST_READ_BUFFER);

        client.write_all(&[7u8; 300]).await.unwrap();
        assert_eq!(read_some(&mut reader, &mut buffer).await.unwrap(), 300);
        assert_eq!(buffer, vec![7u8; 300]);
        assert_eq!(
            buffer.capacity(),
            FIRST_READ_BUFFER,
            "a few bytes keep it small"
        );

        let sent = 3 * READ_BUFFER;
        client.write_all(&vec![9u8; sent]).await.unwrap();
        let (mut received, mut largest) = (0, 0);
        while received < sent {
            let read = read_some(&mut reader, &mut buffer).await.unwrap();
            assert!(read > 0 && buffer.iter().all(|&byte| byte == 9));
            received += read;
            largest = largest.max(read);
        }
        assert_eq!(received, sent);
        assert!(buffer.capacity() >= READ_BUFFER, "{}", buffer.capacity());
        assert!(
            largest > FIRST_READ_BUFFER,
            "reads use the grown buffer: {largest}"
        );
    }
}
