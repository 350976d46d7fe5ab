//! SRT inputs (`Cameras` entries with `protocol` `srt`): a listener on the socket the
//! supervisor lends (many callers, each choosing its stream with the standard
//! `streamid` `#!::r=app/stream,m=publish`, or taking the entry's `app/stream`), or a
//! caller that dials a remote listener (`receive_mode` `pull`) and redials with backoff.
//!
//! libsrt's API blocks, so every listener and every connection runs on its own thread,
//! polling its stop token between short waits; each connection feeds a [`TsInput`]
//! directly (demuxing and publishing never wait). Connected callers are listed for the
//! stats API and as sessions, and `sessions/delete` closes one. A connection that sends no
//! data for the input's `idle_timeout_secs` (default 10) is closed, so that silent
//! callers cannot hold every place under `max_callers`.

use crate::shared::MpegTsShared;
use crate::srt::accepting::accept_callers;
use crate::srt::{SrtOptions, SrtSocket};
use crate::srt_connections::{Connection, SocketBytes};
use crate::ts_input::TsInput;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strom_ipc::rules::CameraSettings;
use strom_stream::gate::Admission;
use strom_stream::{
    Access, Credentials, Protocol, PublisherInfo, Publishing, Refusal, Session, SessionEntry,
    StreamKey,
};
use strom_worker_runtime::InheritedUdpSocket;
use strom_worker_runtime::clock::unix_now;
use strom_worker_runtime::limited_log;
use strom_worker_runtime::login_throttle::SOURCE_LOGINS;
use tokio_util::sync::CancellationToken;

/// How long a thread waits in libsrt before looking at its stop token.
const POLL: Duration = Duration::from_millis(250);
/// Callers one listener serves at once unless `max_callers` says otherwise.
const DEFAULT_MAX_CALLERS: usize = 16;
/// Live-mode messages are at most this long.
const MESSAGE_BUFFER: usize = 1500;
/// How long a connection may send no data before it is closed, unless the input's
/// `idle_timeout_secs` says otherwise: RTMP publishers' default. Without it, silent
/// callers hold their places under `max_callers` for as long as they like.
const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(10);

fn max_callers(camera: &CameraSettings) -> usize {
    camera
        .parameter("max_callers")
        .and_then(|value| value.parse().ok())
        .unwrap_or(DEFAULT_MAX_CALLERS)
}

/// The no-data timeout of `camera` (`idle_timeout_secs`, validated by the supervisor as
/// 1..=3600; anything else falls back to the default).
fn idle_timeout(camera: &CameraSettings) -> Duration {
    camera
        .parameter("idle_timeout_secs")
        .and_then(|value| value.parse::<u64>().ok())
        .filter(|secs| (1..=3600).contains(secs))
        .map_or(DEFAULT_IDLE_TIMEOUT, Duration::from_secs)
}

/// The SRT options of `camera`'s parameters; `None` (logged) when they are invalid.
fn options_of(camera: &CameraSettings) -> Option<SrtOptions> {
    SrtOptions::from_parameters(&camera.parameters)
        .inspect_err(|e| tracing::error!(input = %camera.id, error = %e, "SRT input not started"))
        .ok()
}

/// Runs a listening SRT input on the lent socket until `stop`.
pub fn listen(
    inherited: Arc<InheritedUdpSocket>,
    camera: CameraSettings,
    shared: Arc<MpegTsShared>,
    stop: CancellationToken,
) {
    let Some(options) = options_of(&camera) else {
        return;
    };
    let limit = max_callers(&camera);
    let name = format!("input {}", camera.id);
    accept_callers(
        &inherited,
        &options,
        16,
        &name,
        &stop,
        None,
        |socket, peer, stream_id| {
            let key = match crate::srt::stream_id::requested(&stream_id, "publish") {
                Ok(Some(key)) => key,
                Ok(None) => StreamKey::new(camera.app.clone(), camera.stream.clone()),
                Err(why) => {
                    tracing::warn!(input = %camera.id, %peer, %stream_id, %why, "SRT caller refused");
                    return;
                }
            };
            let credentials = credentials(&options, &stream_id);
            let shown = Shown {
                guess: matches!(credentials, Credentials::Login { .. }),
                proven: !matches!(credentials, Credentials::None),
            };
            let access = Access::new(Protocol::Srt, key.clone(), peer.ip())
                .with_credentials(credentials)
                .with_signature(crate::srt::stream_id::value(&stream_id, "publishsign"));
            let Some(admission) = admit(&shared, &camera, peer, &access, shown) else {
                return;
            };
            if shared.srt.count_for(&camera.id) >= limit {
                tracing::warn!(input = %camera.id, %peer, limit, "SRT caller refused: too many callers");
                return;
            }
            // The name is claimed at connect, not at the first media: a caller of a name
            // another producer holds (in any worker, over any protocol) is refused now.
            let session_id = shared.ids.next_id();
            let info = PublisherInfo {
                session_id,
                ip: peer.ip().to_string(),
                publish_time: unix_now(),
                query: String::new(),
                source_url: None,
                relayed_from: None,
                protocol: "SRT",
                admitted_id: None,
            };
            let socket = Arc::new(socket);
            let session = SessionEntry::publisher(
                session_id,
                "SRT",
                &admission,
                peer.ip(),
                CancellationToken::new(),
            )
            .metered(Arc::new(SocketBytes(Arc::clone(&socket))));
            let session = shared.gate.sessions().open(session);
            let entry = Arc::clone(session.entry());
            let publishing = match shared.gate.publish(&admission, info, session) {
                Ok(publishing) => publishing,
                Err(refusal) => {
                    tracing::warn!(input = %camera.id, %peer, stream = %key, %refusal, "SRT publisher refused");
                    return;
                }
            };
            let caller = Caller {
                key,
                socket,
                peer,
                session: entry,
                held: None,
                publishing: Some(publishing),
            };
            spawn_connection(&shared, &camera, caller, &stop);
        },
    );
}

/// What kind of credentials a caller showed.
#[derive(Debug, Clone, Copy)]
struct Shown {
    /// A login (`u=`/`s=`): a wrong one is a failed login.
    guess: bool,
    /// Any credentials (a login, or the input's passphrase).
    proven: bool,
}

/// The publish gate's answer for a caller (its control id), with `u=`/`s=` logins
/// throttled per address as every source login is (see `login_throttle`): `None`
/// (logged, rate limited) when refused.
fn admit(
    shared: &MpegTsShared,
    camera: &CameraSettings,
    peer: SocketAddr,
    access: &Access,
    shown: Shown,
) -> Option<Admission> {
    let client = peer.ip();
    // An address that failed too often is refused unchecked.
    if shown.guess && !SOURCE_LOGINS.allows(client) {
        limited_log!(warn, 5, Duration::from_secs(10); input = %camera.id, %peer, "SRT publisher refused: too many failed logins from this address");
        return None;
    }
    match shared.gate.admit_publisher(access) {
        Ok(admission) => {
            if shown.proven {
                SOURCE_LOGINS.succeeded(client);
            }
            Some(admission)
        }
        Err(Refusal::BadAuth) if shown.guess => {
            let locked_out = SOURCE_LOGINS.failed(client);
            limited_log!(warn, 5, Duration::from_secs(10); input = %camera.id, %peer, locked_out, "SRT publisher authentication failed");
            None
        }
        Err(refusal) => {
            tracing::warn!(input = %camera.id, %peer, %refusal, "SRT publisher refused");
            None
        }
    }
}

/// What an SRT caller showed as publisher credentials: `u=`/`s=` in its streamid (the
/// convention mediamtx and hardware encoders use), else the input's passphrase when it
/// has one (the caller could not have connected without it), else nothing.
fn credentials(options: &SrtOptions, stream_id: &str) -> Credentials {
    let value = |key| crate::srt::stream_id::value(stream_id, key);
    match (value("u"), value("s")) {
        (Some(login), password) => Credentials::Login {
            login,
            password: password.unwrap_or_default(),
        },
        (None, _) if options.passphrase.is_some() => Credentials::Proven,
        (None, _) => Credentials::None,
    }
}

/// The local address of a `rendezvous` input: `local_ip` (required by validation) and
/// `local_port` (default: the remote port, as SRT rendezvous peers usually use).
fn rendezvous_local(camera: &CameraSettings) -> Option<SocketAddr> {
    let ip = camera.parameter("local_ip")?.parse().ok()?;
    let port = match camera.parameter("local_port") {
        Some(port) => port.parse().ok()?,
        None => camera.port,
    };
    Some(SocketAddr::new(ip, port))
}

/// Dials the remote side of a `pull` input (or meets it, `rendezvous`) until `stop`,
/// again after every end.
pub fn call(camera: CameraSettings, shared: Arc<MpegTsShared>, stop: CancellationToken) {
    crate::srt::startup();
    let Some(options) = options_of(&camera) else {
        return;
    };
    let key = StreamKey::new(camera.app.clone(), camera.stream.clone());
    let mut backoff = FIRST_BACKOFF;
    while !stop.is_cancelled() {
        // `ip` may be a host name: resolved again for every call (this thread may block).
        let resolved = (camera.ip.as_str(), camera.port)
            .to_socket_addrs()
            .map(|mut addrs| addrs.next());
        let remote = match resolved {
            Ok(Some(remote)) => remote,
            Ok(None) | Err(_) => {
                tracing::warn!(input = %camera.id, host = %camera.ip, "SRT pull input: host not resolved");
                SocketAddr::from(([0, 0, 0, 0], 0))
            }
        };
        let connected = match (remote.port(), camera.receive_mode.as_str()) {
            (0, _) => Err(crate::srt::SrtError::Config("unresolved host".into())),
            (_, "rendezvous") => match rendezvous_local(&camera) {
                Some(local) => {
                    SrtSocket::rendezvous(local, remote, &options, Duration::from_secs(3))
                }
                None => Err(crate::srt::SrtError::Config(
                    "rendezvous needs local_ip (and a valid local_port)".into(),
                )),
            },
            _ => SrtSocket::connect(remote, &options, Duration::from_secs(3)),
        };
        match connected {
            Ok(socket) => {
                backoff = FIRST_BACKOFF;
                tracing::info!(input = %camera.id, %remote, "SRT connected");
                let socket = Arc::new(socket);
                let session = SessionEntry::new(
                    shared.ids.next_id(),
                    "SRT",
                    &key,
                    remote.ip(),
                    CancellationToken::new(),
                )
                .metered(Arc::new(SocketBytes(Arc::clone(&socket))));
                let held = shared.gate.sessions().open(session);
                let caller = Caller {
                    key: key.clone(),
                    socket,
                    peer: remote,
                    session: Arc::clone(held.entry()),
                    held: Some(held),
                    publishing: None,
                };
                let (connection, _) = connection(&shared, &camera, caller);
                receive(&shared, &connection, None, &stop);
                tracing::info!(input = %camera.id, %remote, "SRT connection ended");
            }
            Err(e) => {
                tracing::debug!(input = %camera.id, %remote, error = %e, "SRT connect failed")
            }
        }
        let until = Instant::now() + backoff;
        while Instant::now() < until && !stop.is_cancelled() {
            std::thread::sleep(POLL.min(backoff));
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// An accepted (or dialled) SRT connection before its thread starts.
struct Caller {
    key: StreamKey,
    socket: Arc<SrtSocket>,
    peer: SocketAddr,
    /// Its session: held by `publishing` for a listener's caller, by `held` otherwise.
    session: Arc<SessionEntry>,
    held: Option<Session>,
    /// The stream, claimed at connect for listener callers; dialled inputs claim it at
    /// their first media (a silent source is not live).
    publishing: Option<Publishing>,
}

/// The input's SRT address as stats report it: `ip:port` of the entry (the listener's
/// bound address, or the remote listener of a pull), `[v6]:port` for IPv6.
fn input_addr(camera: &CameraSettings) -> String {
    match camera.ip.parse::<std::net::IpAddr>() {
        Ok(ip) => SocketAddr::new(ip, camera.port).to_string(),
        Err(_) => format!("{}:{}", camera.ip, camera.port),
    }
}

fn connection(
    shared: &Arc<MpegTsShared>,
    camera: &CameraSettings,
    caller: Caller,
) -> (Arc<Connection>, Option<Publishing>) {
    let connection = Arc::new(Connection {
        session_id: caller.session.id,
        camera: camera.id.clone(),
        key: caller.key,
        input_addr: input_addr(camera),
        peer: caller.peer,
        socket: caller.socket,
        idle_timeout: idle_timeout(camera),
        session: caller.session,
        _held: caller.held,
    });
    shared.srt.add(Arc::clone(&connection));
    (connection, caller.publishing)
}

fn spawn_connection(
    shared: &Arc<MpegTsShared>,
    camera: &CameraSettings,
    caller: Caller,
    stop: &CancellationToken,
) {
    let peer = caller.peer;
    let (connection, publishing) = connection(shared, camera, caller);
    tracing::info!(input = %camera.id, %peer, stream = %connection.key, session = connection.session_id, "SRT caller connected");
    let (shared, stop) = (Arc::clone(shared), stop.clone());
    let spawned = std::thread::Builder::new()
        .name("srt-connection".into())
        .spawn(move || {
            receive(&shared, &connection, publishing, &stop);
            tracing::info!(peer = %connection.peer, stream = %connection.key, "SRT caller gone");
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "no thread for an SRT connection");
    }
}

/// Feeds what `connection` receives into its stream until it ends or `stop`.
fn receive(
    shared: &Arc<MpegTsShared>,
    connection: &Arc<Connection>,
    publishing: Option<Publishing>,
    stop: &CancellationToken,
) {
    let mut input = TsInput::new(
        connection.camera.clone(),
        connection.key.clone(),
        "SRT",
        shared.status_of(&connection.camera),
        shared.hub.clone(),
        Arc::clone(&shared.ids),
    )
    .with_claim(publishing);
    let mut buffer = vec![0u8; MESSAGE_BUFFER];
    let mut last_data = Instant::now();
    while !stop.is_cancelled() {
        if connection.session.kill.is_cancelled() {
            tracing::info!(peer = %connection.peer, stream = %connection.key, session = connection.session_id, "SRT publisher disconnected: its session was ended");
            break;
        }
        match connection.socket.recv(&mut buffer, POLL) {
            Ok(Some(len)) => {
                last_data = Instant::now();
                shared.counters.add_received(len as u64);
                input.status.received(len);
                input.feed(&buffer[..len], connection.peer);
            }
            // libsrt's keepalives keep a silent caller connected: only data counts.
            Ok(None) if last_data.elapsed() >= connection.idle_timeout => {
                tracing::info!(peer = %connection.peer, stream = %connection.key, session = connection.session_id, idle_secs = connection.idle_timeout.as_secs(), "SRT connection closed: no data");
                break;
            }
            Ok(None) => {}
            Err(_) => break,
        }
    }
    input.stopped();
    connection.socket.close();
    shared.srt.remove(connection.session_id);
}
