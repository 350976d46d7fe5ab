//! One RTSP connection: requests in, responses and (TCP interleaved) media out, on one
//! task. A connection holds at most one session: DESCRIBE joins a stream, SETUP picks
//! each track's transport, PLAY starts the frames; TEARDOWN, `sessions/delete`, a
//! broken or idle connection end it. Anything that is not RTSP closes only this
//! connection. A SETUP of the stream's URL without DESCRIBE plays it as MPEG-TS
//! ([`mp2t`]); one of a track without DESCRIBE describes first ([`undescribed`]).
//!
//! Over 800 lines on purpose: the RTSP method state machine of one connection reads as one
//! piece; recording, playing and admission are already in modules of their own.

mod admit;
mod mp2t;
mod record;
mod undescribed;

use crate::describe::{self, Described};
use crate::message::{self, Incoming, MessageError, Request, response};
use crate::sender::TrackSender;
use crate::shared::Shared;
use crate::transport::{self, Transport};
use bytes::{Bytes, BytesMut};
use record::Announced;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime};
use strom_ipc::rtsp_rules::RtspLimits;
use strom_media::rtp::rtcp;
use strom_stream::gate::sessions::SessionEntry;
use strom_stream::{FrameReceiver, Reading, SharedFrame, StreamKey};
use strom_worker_runtime::counters::ConnectionGuard;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A player that cannot take its media for this long is dropped.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Media for a TCP player is written at most this late, several frames per system call:
/// one write per frame would cost most of a player's CPU (see BENCHMARKS.md).
const PLAY_COALESCE: Duration = Duration::from_millis(50);
/// Past this many bytes waiting, media is written at once.
const COALESCE_BYTES: usize = 64 * 1024;
/// UDP port pairs one connection may have bound (a publisher announces at most
/// `strom_media::rtp::announce::MAX_TRACKS` tracks, a player sets up two).
const MAX_UDP_PAIRS: usize = 16;
/// Sender reports go out this often per track.
const REPORT_INTERVAL: Duration = Duration::from_secs(5);
const PUBLIC: &str = "OPTIONS, DESCRIBE, ANNOUNCE, SETUP, PLAY, RECORD, TEARDOWN, GET_PARAMETER";

#[derive(Debug, thiserror::Error)]
enum ConnectionError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Message(#[from] MessageError),
    #[error("player not reading for {0:?}")]
    WriteTimeout(Duration),
}

/// A track's UDP sockets and where its packets go.
struct UdpLink {
    rtp: Arc<UdpSocket>,
    rtcp: Arc<UdpSocket>,
    rtp_to: SocketAddr,
    rtcp_to: SocketAddr,
}

struct Track {
    sender: TrackSender,
    udp: Option<UdpLink>,
}

/// The player's mapping from stream time to wall-clock time, anchored at the first frame
/// sent: stream time then runs with the wall clock. Shared by all tracks, so that the
/// sender reports of audio and video agree.
#[derive(Clone, Copy)]
struct StreamClock {
    at: Instant,
    wall: SystemTime,
    pts: i64,
}

impl StreamClock {
    /// The stream time and NTP time of now.
    fn now(&self) -> (i64, u64) {
        let elapsed = self.at.elapsed();
        let pts = self.pts + (elapsed.as_micros() * 9 / 100) as i64;
        (pts, rtcp::ntp_time(self.wall + elapsed))
    }
}

/// Where a connection came in: the client, the local address it reached (UDP media is
/// sent from there) and whether it is RTSP over TLS.
pub struct Accepted {
    pub peer: SocketAddr,
    pub local_ip: Option<IpAddr>,
    /// Over TLS only interleaved transports are offered: UDP media would travel in clear.
    pub secure: bool,
}

/// Serves one accepted connection (plain TCP or TLS) until it ends.
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin + Send>(
    stream: S,
    accepted: Accepted,
    shared: Arc<Shared>,
    _guard: ConnectionGuard,
    shutdown: CancellationToken,
) {
    let Accepted {
        peer,
        local_ip,
        secure,
    } = accepted;
    let _place = match shared.caps().take(peer.ip()) {
        Ok(place) => place,
        Err(reached) => {
            tracing::warn!(%peer, %reached, "rtsp connection refused");
            return;
        }
    };
    let limits = shared.rules().rtsp.limits;
    let (udp_in, mut udp_packets) = mpsc::channel(record::UDP_QUEUE_PACKETS);
    let mut connection = Connection {
        peer,
        local_ip,
        secure,
        shared,
        limits,
        kill: CancellationToken::new(),
        user_agent: String::new(),
        described: None,
        admitted: None,
        session_id: None,
        tracks: Vec::new(),
        player: None,
        start_frames: None,
        started: Instant::now(),
        activity_ms: Arc::new(AtomicI64::new(0)),
        out: Vec::new(),
        closing: false,
        clock: None,
        urgent: false,
        media_since: None,
        udp_pairs: 0,
        udp_places: Vec::new(),
        nonce: crate::auth::nonce(),
        announced: None,
        udp_in,
        mp2t: None,
    };
    match connection.run(stream, &mut udp_packets, shutdown).await {
        Ok(()) => tracing::debug!(%peer, "rtsp connection closed"),
        Err(error) => tracing::info!(%peer, %error, "rtsp connection dropped"),
    }
    connection.finish();
}

struct Connection {
    peer: SocketAddr,
    local_ip: Option<IpAddr>,
    /// RTSP over TLS: SETUP considers interleaved transports only.
    secure: bool,
    shared: Arc<Shared>,
    limits: RtspLimits,
    /// Ends the connection (`sessions/delete`); also stops its UDP receive tasks.
    kill: CancellationToken,
    user_agent: String,
    /// The stream DESCRIBE joined, until PLAY takes its frames.
    described: Option<Described>,
    session_id: Option<u64>,
    /// Per track of the description, once set up.
    tracks: Vec<Option<Track>>,
    player: Option<Arc<SessionEntry>>,
    /// Frames for the run loop once PLAY started, with the stream's live flag.
    start_frames: Option<(FrameReceiver, Option<watch::Receiver<bool>>)>,
    started: Instant,
    /// Milliseconds after `started` of the last thing the client sent (requests,
    /// interleaved or UDP RTCP).
    activity_ms: Arc<AtomicI64>,
    /// Bytes for the socket, written after each event.
    out: Vec<u8>,
    closing: bool,
    clock: Option<StreamClock>,
    /// `out` holds a response: write it now.
    urgent: bool,
    /// UDP port pairs bound for this connection so far.
    udp_pairs: usize,
    /// Their places in the worker's [`crate::udp_budget::UdpBudget`], given back when
    /// the connection ends (its UDP tasks stop then too).
    udp_places: Vec<crate::udp_budget::UdpPlace>,
    /// When the oldest media in `out` was queued (see [`PLAY_COALESCE`]).
    media_since: Option<Instant>,
    /// The Digest nonce of this connection's challenges.
    nonce: String,
    /// A publisher's announced stream.
    announced: Option<Announced>,
    /// Where UDP receive tasks put a publisher's RTP packets (track index, packet).
    udp_in: mpsc::Sender<(usize, Bytes)>,
    /// A player of the whole stream as MPEG-TS (a SETUP without DESCRIBE).
    mp2t: Option<mp2t::Mp2tTrack>,
    /// The stream the gate let this connection read, and the pay-per-view id it showed.
    admitted: Option<Reading>,
}

impl Connection {
    async fn run<S: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        mut stream: S,
        udp_packets: &mut mpsc::Receiver<(usize, Bytes)>,
        shutdown: CancellationToken,
    ) -> Result<(), ConnectionError> {
        let mut buffer = BytesMut::with_capacity(4096);
        let max_request = self.limits.max_request_bytes as usize;
        let idle_limit = Duration::from_secs(u64::from(self.limits.session_timeout_secs));
        let request_limit = Duration::from_secs(u64::from(self.limits.request_timeout_secs));
        // Since when a request is awaited and not complete: from the connection's start,
        // then from the first byte of each request (or the end of the one before it, when
        // its bytes came together). Only completing a request moves it, so a client that
        // trickles bytes (each of which counts as activity) cannot hold its connection.
        let mut pending_since = Some(Instant::now());
        let kill = self.kill.clone();
        let mut frames: Option<FrameReceiver> = None;
        let mut live: Option<watch::Receiver<bool>> = None;
        let mut unpublished_since: Option<Instant> = None;
        let mut reports = tokio::time::interval(REPORT_INTERVAL);
        let mut checks = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                _ = kill.cancelled() => return Ok(()),
                read = stream.read_buf(&mut buffer) => {
                    let n = read?;
                    if n == 0 {
                        return Ok(());
                    }
                    self.touch(n);
                    let mut progressed = false;
                    while let Some(incoming) = message::parse(&mut buffer, max_request)? {
                        progressed = true;
                        match incoming {
                            Incoming::Request(request) => self.handle(request).await,
                            // A publisher's RTP (a player's RTCP reports are activity only).
                            Incoming::Interleaved { channel, payload } => {
                                self.received(Some(channel), None, &payload);
                            }
                        }
                        if self.closing {
                            break;
                        }
                    }
                    if progressed {
                        pending_since = (!buffer.is_empty()).then(Instant::now);
                    } else if pending_since.is_none() {
                        pending_since = Some(Instant::now());
                    }
                    if let Some((receiver, watch)) = self.start_frames.take() {
                        frames = Some(receiver);
                        live = watch;
                    }
                }
                Some((index, packet)) = udp_packets.recv() => {
                    self.count_received(packet.len());
                    self.received(None, Some(index), &packet);
                }
                frame = next(&mut frames) => {
                    match frame {
                        Some(frame) => self.queue_frame(&frame),
                        None => return Ok(()),
                    }
                }
                _ = reports.tick(), if frames.is_some() => self.send_reports(),
                () = sleep_or_never(self.media_since.map(|since| since + PLAY_COALESCE)) => {}
                _ = checks.tick() => {
                    let idle = self.started.elapsed()
                        .saturating_sub(Duration::from_millis(self.activity_ms.load(Ordering::Relaxed) as u64));
                    // A TCP player's connection is its liveness; everyone else must
                    // show activity (requests, RTCP) within the session timeout.
                    let tcp_player = frames.is_some()
                        && self.tracks.iter().flatten().all(|t| matches!(t.sender.transport, Transport::Tcp { .. }))
                        && self.mp2t.as_ref().is_none_or(|t| t.interleaved());
                    if idle > idle_limit && !tcp_player {
                        tracing::info!(peer = %self.peer, "rtsp session timed out");
                        return Ok(());
                    }
                    // Interleaved media being received is no request (its frames are
                    // bounded by `max_request_bytes` like requests).
                    let awaited = pending_since.filter(|_| !buffer.starts_with(b"$"));
                    if awaited.is_some_and(|since| since.elapsed() > request_limit) {
                        strom_worker_runtime::limited_log!(info, 5, Duration::from_secs(10); peer = %self.peer, "rtsp connection closed: no complete request in time");
                        return Ok(());
                    }
                    if let Some(live) = &live {
                        let now_live = *live.borrow();
                        match (now_live, unpublished_since) {
                            (true, _) => unpublished_since = None,
                            (false, None) => unpublished_since = Some(Instant::now()),
                            (false, Some(since)) => {
                                let grace = Duration::from_secs(u64::from(self.limits.player_wait_timeout_secs));
                                if since.elapsed() > grace {
                                    tracing::info!(peer = %self.peer, "rtsp player's stream ended");
                                    return Ok(());
                                }
                            }
                        }
                    }
                }
            }
            let flush = self.urgent
                || self.out.len() >= COALESCE_BYTES
                || self
                    .media_since
                    .is_some_and(|since| since.elapsed() >= PLAY_COALESCE);
            if flush {
                self.urgent = false;
                self.media_since = None;
            }
            if flush && !self.out.is_empty() {
                let out = std::mem::take(&mut self.out);
                // Flushed: TLS holds back records that the socket did not take at once.
                let write = async {
                    stream.write_all(&out).await?;
                    stream.flush().await
                };
                match tokio::time::timeout(WRITE_TIMEOUT, write).await {
                    Ok(written) => written?,
                    Err(_) => return Err(ConnectionError::WriteTimeout(WRITE_TIMEOUT)),
                }
                self.count_sent(out.len());
            }
            if self.closing {
                return Ok(());
            }
        }
    }

    fn touch(&self, received: usize) {
        let now = self.started.elapsed().as_millis() as i64;
        self.activity_ms.store(now, Ordering::Relaxed);
        self.count_received(received);
    }

    fn count_received(&self, received: usize) {
        self.shared.counters.add_received(received as u64);
        if let Some(player) = &self.player {
            player
                .bytes_recv
                .fetch_add(received as u64, Ordering::Relaxed);
            player.touch();
        }
    }

    fn count_sent(&self, sent: usize) {
        self.shared.counters.add_sent(sent as u64);
        if let Some(player) = &self.player {
            player.bytes_sent.fetch_add(sent as u64, Ordering::Relaxed);
        }
    }

    fn reply(&mut self, status: u16, request: &Request, headers: &[(&str, String)], body: &[u8]) {
        // Responses go out at once, with any media queued before them.
        self.urgent = true;
        self.out
            .extend(response(status, request.cseq(), headers, body));
    }

    async fn handle(&mut self, mut request: Request) {
        if let Some(agent) = request
            .header("User-Agent")
            .filter(|_| self.user_agent.is_empty())
        {
            self.user_agent = agent.chars().take(256).collect();
        }
        tracing::debug!(peer = %self.peer, method = %request.method, uri = %request.uri, "rtsp request");
        if !self.session_matches(&request) {
            return self.reply(454, &request, &[], b"");
        }
        if self.secure && request.method == "SETUP" && !crate::tls::interleaved_only(&mut request) {
            return self.reply(461, &request, &[], b"");
        }
        match request.method.as_str() {
            "OPTIONS" => self.reply(200, &request, &[("Public", PUBLIC.to_owned())], b""),
            "GET_PARAMETER" => {
                let session = self.session_header();
                self.reply(200, &request, &session, b"")
            }
            "DESCRIBE" => self.describe(&request).await,
            "ANNOUNCE" => self.announce(&request),
            "SETUP" if self.announced.is_some() => self.setup_record(&request).await,
            "SETUP" if self.wants_mp2t(&request) => self.setup_mp2t(&request).await,
            "SETUP" if self.sets_up_undescribed(&request) => self.setup_undescribed(&request).await,
            "SETUP" => self.setup(&request).await,
            "PLAY" => self.play(&request),
            "RECORD" => self.record(&request),
            "TEARDOWN" => {
                self.reply(200, &request, &[], b"");
                self.closing = true;
            }
            _ => self.reply(405, &request, &[("Allow", PUBLIC.to_owned())], b""),
        }
    }

    /// A request that names a session must name this connection's.
    fn session_matches(&self, request: &Request) -> bool {
        let Some(given) = request.header("Session") else {
            return true;
        };
        let given = given.split(';').next().unwrap_or("").trim();
        self.session_id.is_some_and(|id| id.to_string() == given)
    }

    fn session_header(&self) -> Vec<(&'static str, String)> {
        self.session_id
            .map(|id| {
                (
                    "Session",
                    format!("{id};timeout={}", self.limits.session_timeout_secs),
                )
            })
            .into_iter()
            .collect()
    }

    async fn describe(&mut self, request: &Request) {
        if self.player.is_some() || self.announced.is_some() || self.mp2t.is_some() {
            return self.reply(455, request, &[], b"");
        }
        if self.shared.is_draining() {
            return self.reply(503, request, &[], b"");
        }
        let Some(target) = transport::target(&request.uri) else {
            return self.reply(404, request, &[], b"");
        };
        self.leave_described();
        let key = StreamKey::new(target.app, target.stream);
        let Some(reading) = self.admit_player(request, &key) else {
            return;
        };
        let wait = Duration::from_secs(u64::from(self.limits.player_wait_timeout_secs));
        let reader = self.read_as_player(&reading);
        let reader_id = reader.place.id();
        let Some(described) = describe::describe(reader, wait).await else {
            tracing::info!(peer = %self.peer, stream = %key, "rtsp describe: no such live stream");
            return self.reply(404, request, &[], b"");
        };
        let tracks: Vec<_> = described
            .tracks
            .iter()
            .enumerate()
            .map(|(i, plan)| (plan.media.clone(), format!("trackID={i}")))
            .collect();
        let sdp = strom_media::rtp::sdp::session(reader_id, &key.to_string(), &tracks);
        let base = format!("{}/", base_uri(&request.uri));
        self.tracks = (0..described.tracks.len()).map(|_| None).collect();
        self.described = Some(described);
        self.reply(
            200,
            request,
            &[
                ("Content-Type", "application/sdp".to_owned()),
                ("Content-Base", base),
            ],
            sdp.as_bytes(),
        );
    }

    async fn setup(&mut self, request: &Request) {
        let Some(described) = &self.described else {
            return self.reply(455, request, &[], b"");
        };
        let target = transport::target(&request.uri);
        let same_stream = target.as_ref().is_some_and(|t| {
            t.app == described.place.key().app && t.stream == described.place.key().stream
        });
        let index = match target.as_ref().and_then(|t| t.track) {
            Some(index) => index,
            None if described.tracks.len() == 1 => 0,
            None => return self.reply(459, request, &[], b""),
        };
        let Some(plan) = described.tracks.get(index).filter(|_| same_stream) else {
            return self.reply(404, request, &[], b"");
        };
        let default_channel = u8::try_from(index * 2).unwrap_or(0);
        let Some(chosen) = request
            .header("Transport")
            .and_then(|header| transport::choose(header, default_channel))
        else {
            return self.reply(461, request, &[], b"");
        };
        let sender = TrackSender::new(plan, chosen);
        let ssrc = sender.ssrc();
        let (udp, transport_reply) = match chosen {
            Transport::Tcp {
                rtp_channel,
                rtcp_channel,
            } => (
                None,
                format!(
                    "RTP/AVP/TCP;unicast;interleaved={rtp_channel}-{rtcp_channel};ssrc={ssrc:08X}"
                ),
            ),
            Transport::Udp {
                rtp_port,
                rtcp_port,
            } => {
                let link = match self.udp_link(rtp_port, rtcp_port).await {
                    Ok(link) => link,
                    Err(error) => {
                        strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); peer = %self.peer, %error, "rtsp: no UDP sockets for a player");
                        return self.reply(461, request, &[], b"");
                    }
                };
                let server_rtp = link.rtp.local_addr().map(|a| a.port()).unwrap_or(0);
                let server_rtcp = link.rtcp.local_addr().map(|a| a.port()).unwrap_or(0);
                (
                    Some(link),
                    format!(
                        "RTP/AVP;unicast;client_port={rtp_port}-{rtcp_port};server_port={server_rtp}-{server_rtcp};ssrc={ssrc:08X}"
                    ),
                )
            }
        };
        if let Some(slot) = self.tracks.get_mut(index) {
            *slot = Some(Track { sender, udp });
        }
        self.take_session_id();
        let mut headers = self.session_header();
        headers.push(("Transport", transport_reply));
        self.reply(200, request, &headers, b"");
    }

    /// The RTSP session's id from the first SETUP on: a player's is its reader's (the
    /// API lists it under that id), a publisher's a new one.
    pub(super) fn take_session_id(&mut self) {
        if self.session_id.is_none() {
            let reader = self.described.as_ref().map(|d| d.place.id());
            self.session_id = Some(reader.unwrap_or_else(|| self.shared.ids.next_id()));
        }
    }

    /// Two UDP sockets on the address the client reached, sending to its ports; what
    /// arrives on the RTCP one (receiver reports) counts as the player's activity.
    async fn udp_link(&mut self, rtp_port: u16, rtcp_port: u16) -> std::io::Result<UdpLink> {
        self.take_udp_pair(MAX_UDP_PAIRS)?;
        let local = self.local_ip.unwrap_or(IpAddr::from([0, 0, 0, 0]));
        let (rtp, rtcp) = crate::udp_pair::bind(local).await?;
        let (rtp, rtcp) = (Arc::new(rtp), Arc::new(rtcp));
        let activity = Arc::clone(&self.activity_ms);
        let started = self.started;
        let done = self.kill.clone();
        let listen = Arc::clone(&rtcp);
        tokio::spawn(async move {
            let mut scratch = [0u8; 1500];
            loop {
                tokio::select! {
                    _ = done.cancelled() => return,
                    received = listen.recv_from(&mut scratch) => {
                        if received.is_ok() {
                            activity.store(started.elapsed().as_millis() as i64, Ordering::Relaxed);
                        }
                    }
                }
            }
        });
        Ok(UdpLink {
            rtp,
            rtcp,
            rtp_to: SocketAddr::new(self.peer.ip(), rtp_port),
            rtcp_to: SocketAddr::new(self.peer.ip(), rtcp_port),
        })
    }

    /// Counts one more UDP port pair (and its receive task) for this connection; refused
    /// past `per_connection` ([`MAX_UDP_PAIRS`] at most), so repeated SETUPs cannot take
    /// a port and a task each, and past the worker's `max_udp_pairs` in all.
    fn take_udp_pair(&mut self, per_connection: usize) -> std::io::Result<()> {
        let per_connection = per_connection.min(MAX_UDP_PAIRS);
        if self.udp_pairs >= per_connection {
            return Err(std::io::Error::other(format!(
                "more than {per_connection} UDP port pairs on one connection"
            )));
        }
        let limit = self.shared.rules().rtsp.limits.max_udp_pairs as usize;
        let Some(place) = self.shared.udp_budget.take(limit) else {
            return Err(std::io::Error::other(format!(
                "all {limit} UDP port pairs of the worker are taken (max_udp_pairs)"
            )));
        };
        self.udp_places.push(place);
        self.udp_pairs += 1;
        Ok(())
    }

    /// Registers the connection as a player of the described stream (a session of type
    /// RTSP that `sessions/delete` ends) and takes the stream's queue for the play that
    /// starts now; `what` says what it plays, for the log.
    pub(super) fn become_player(&mut self, id: u64, what: &'static str) {
        let Some(described) = self.described.as_mut() else {
            return;
        };
        let key = described.place.key().clone();
        let (_, placeholder) = tokio::sync::mpsc::channel(1);
        let frames = std::mem::replace(&mut described.frames, placeholder);
        if let Some(session) = described.place.session() {
            session.set_listed();
            self.player = Some(Arc::clone(session.entry()));
        }
        self.start_frames = Some((frames, self.shared.hub.watch_live(&key)));
        tracing::info!(peer = %self.peer, stream = %key, session = id, what, "rtsp playing");
    }

    fn play(&mut self, request: &Request) {
        if self.player.is_some() {
            // Already playing: a repeated PLAY changes nothing.
            let session = self.session_header();
            return self.reply(200, request, &session, b"");
        }
        if self.mp2t.is_some() {
            return self.play_mp2t(request);
        }
        let Some(described) = self.described.as_mut() else {
            return self.reply(455, request, &[], b"");
        };
        if self.session_id.is_none() || self.tracks.iter().all(Option::is_none) {
            return self.reply(455, request, &[], b"");
        }
        let mut first = described.first.take();
        let mut start_pts = first.as_ref().map_or(0, |f| f.frame.pts);
        // Over UDP the cached GOP would leave in one burst that overflows the player's
        // socket buffer (lost packets, broken frames): a UDP player starts at the next
        // keyframe that arrives live instead (video waits for one, see `TrackSender`).
        let udp = self
            .tracks
            .iter()
            .flatten()
            .any(|t| matches!(t.sender.transport, Transport::Udp { .. }));
        if udp {
            if let Some(skipped) = first.take() {
                start_pts = skipped.frame.pts;
            }
            while let Ok(skipped) = described.frames.try_recv() {
                start_pts = skipped.frame.pts;
            }
        }
        let base = base_uri(&request.uri);
        let rtp_info: Vec<String> = self
            .tracks
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.as_ref().map(|t| (i, t)))
            .map(|(i, track)| {
                let (seq, rtptime) = track.sender.rtp_info(start_pts);
                format!("url={base}/trackID={i};seq={seq};rtptime={rtptime}")
            })
            .collect();
        let id = self.session_id.unwrap_or_default();
        self.become_player(id, "RTP tracks");
        let mut headers = self.session_header();
        headers.push(("Range", "npt=0.000-".to_owned()));
        headers.push(("RTP-Info", rtp_info.join(",")));
        self.reply(200, request, &headers, b"");
        if let Some(first) = first {
            self.queue_frame(&first);
        }
    }

    /// Packs the frame's packets: interleaved into `out`, or into the UDP queue.
    fn queue_frame(&mut self, frame: &SharedFrame) {
        let queued = self.out.len();
        if self.clock.is_none() && frame.frame.is_sample() {
            self.clock = Some(StreamClock {
                at: Instant::now(),
                wall: SystemTime::now(),
                pts: frame.frame.pts,
            });
        }
        if self.mp2t.is_some() {
            return self.queue_mp2t(frame);
        }
        for track in self.tracks.iter_mut().flatten() {
            if !track.sender.carries(&frame.frame) {
                continue;
            }
            let packets = track.sender.packets(&frame.frame);
            match (&track.sender.transport, &track.udp) {
                (Transport::Tcp { rtp_channel, .. }, _) => {
                    for packet in packets {
                        interleave(&mut self.out, *rtp_channel, &packet);
                    }
                }
                (Transport::Udp { .. }, Some(link)) => {
                    for packet in packets {
                        udp_send(
                            link.rtp.as_ref(),
                            link.rtp_to,
                            &packet,
                            &self.shared,
                            self.player.as_deref(),
                        );
                    }
                }
                (Transport::Udp { .. }, None) => {}
            }
        }
        self.mark_media(queued);
    }

    /// Starts the coalescing delay when media went into `out` after `queued` bytes.
    fn mark_media(&mut self, queued: usize) {
        if self.out.len() > queued && self.media_since.is_none() {
            self.media_since = Some(Instant::now());
        }
    }

    fn send_reports(&mut self) {
        if self.mp2t.is_some() {
            return self.report_mp2t();
        }
        let queued = self.out.len();
        let Some((pts, ntp)) = self.clock.map(|clock| clock.now()) else {
            return;
        };
        for track in self.tracks.iter().flatten() {
            let Some(report) = track.sender.sender_report(pts, ntp) else {
                continue;
            };
            match (&track.sender.transport, &track.udp) {
                (Transport::Tcp { rtcp_channel, .. }, _) => {
                    interleave(&mut self.out, *rtcp_channel, &report)
                }
                (Transport::Udp { .. }, Some(link)) => {
                    udp_send(
                        link.rtcp.as_ref(),
                        link.rtcp_to,
                        &report,
                        &self.shared,
                        self.player.as_deref(),
                    );
                }
                (Transport::Udp { .. }, None) => {}
            }
        }
        self.mark_media(queued);
    }

    fn leave_described(&mut self) {
        // Its reader place leaves the stream.
        self.described = None;
        self.tracks.clear();
    }

    fn finish(&mut self) {
        self.kill.cancel();
        self.leave_described();
        // Dropping the claim releases the stream.
        self.announced = None;
        if let Some(player) = self.player.take() {
            tracing::info!(peer = %self.peer, session = player.id, "rtsp player left");
        }
    }
}

/// The next frame of a playing connection; pending forever before PLAY.
async fn next(frames: &mut Option<FrameReceiver>) -> Option<Arc<SharedFrame>> {
    match frames {
        Some(frames) => frames.recv().await,
        None => std::future::pending().await,
    }
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_or_never(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// `$`, channel, length, packet (RFC 2326 10.12).
fn interleave(out: &mut Vec<u8>, channel: u8, packet: &[u8]) {
    let Ok(len) = u16::try_from(packet.len()) else {
        return;
    };
    out.push(b'$');
    out.push(channel);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(packet);
}

/// Sends a datagram without waiting: a full socket buffer loses the packet, as UDP would
/// on the network, instead of holding up the connection.
fn udp_send(
    socket: &UdpSocket,
    to: SocketAddr,
    packet: &[u8],
    shared: &Shared,
    player: Option<&SessionEntry>,
) {
    if socket.try_send_to(packet, to).is_ok() {
        shared.counters.add_sent(packet.len() as u64);
        if let Some(player) = player {
            player
                .bytes_sent
                .fetch_add(packet.len() as u64, Ordering::Relaxed);
        }
    }
}

/// The request URI without query, fragment, trailing slash or track part: the base of
/// the tracks' control URLs.
fn base_uri(uri: &str) -> String {
    let uri = uri
        .split(['?', '#'])
        .next()
        .unwrap_or(uri)
        .trim_end_matches('/');
    match uri.rsplit_once('/') {
        Some((base, last)) if last.starts_with("trackID=") => base.to_owned(),
        _ => uri.to_owned(),
    }
}
