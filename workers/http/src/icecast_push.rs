//! Pushing to Icecast servers (`IcecastPush`): the audio of a stream sent as an Icecast
//! source (`PUT <mount>` over HTTP/1.1, as ffmpeg and libshout do) to another server.
//!
//! One task per entry reads the stream from this worker's hub (the stream is relayed
//! here while an entry wants it, see `packaging::streamed`) through its own bounded
//! reader and renders the audio as `icecast.stream` listeners get it (AAC as ADTS, MP3
//! as is, [`IcyWriter`], but never ICY metadata blocks). It connects once the stream
//! has AAC or MP3 audio; on any failure (connection refused, 401/403 or another
//! refusal, the server gone, a write stuck for [`WRITE_TIMEOUT`]) it connects again
//! after a backoff that doubles from [`FIRST_BACKOFF`] to [`MAX_BACKOFF`], and starts
//! over at [`FIRST_BACKOFF`] after a connection that lasted [`STEADY`]. While a write
//! waits for the server, the reader's queue in the hub fills and the hub drops whole
//! GOPs for it (counted and logged): a slow server never slows the stream. A connection
//! left without audio for [`IDLE_CLOSE`] (the publisher left) is closed, and opened
//! again when audio comes back.
//!
//! The title set with `icecast_metadata` ([`Titles`]) goes to the server with
//! `GET /admin/metadata?mode=updinfo` and the same credentials, when a connection opens
//! and whenever it changes. Passwords are never logged.
//!
//! [`IcecastPushes`] starts and stops the tasks as the rules change.

use crate::icecast::{IcyWriter, Title, Titles};
use base64::Engine;
use bytes::BytesMut;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strom_ipc::rules::{IcecastPushSettings, Rules};
use strom_media::frame::{Codec, Track};
use strom_stream::{FrameReceiver, Hub, Queue, Reader, SharedFrame, StreamKey};
use strom_worker_runtime::SessionIds;
use strom_worker_runtime::sync::locked;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The first wait before connecting again after a failure.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A connection that lasted this long starts the backoff over.
const STEADY: Duration = Duration::from_secs(10);
/// Connecting and hearing the server's answer, at most.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A write the server does not take within this long fails the connection.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection without audio for this long is closed (the publisher left).
const IDLE_CLOSE: Duration = Duration::from_secs(10);
/// A publisher that sent frames but no AAC or MP3 audio for this long is logged.
const NO_AUDIO_WARNING: Duration = Duration::from_secs(10);
/// The longest answer head read from a server.
const MAX_ANSWER_BYTES: usize = 8 * 1024;
/// How often the idle connection and the title are checked.
const TICK: Duration = Duration::from_secs(1);

/// What went wrong with one connection.
#[derive(Debug, thiserror::Error)]
enum PushError {
    #[error("cannot connect: {0}")]
    Connect(std::io::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("no answer within {} s", CONNECT_TIMEOUT.as_secs())]
    Timeout,
    #[error("refused: {0}")]
    Refused(String),
    #[error("not an HTTP answer: {0:?}")]
    BadAnswer(String),
    #[error("the server closed the connection")]
    Closed,
    #[error("the server took no data for {} s", WRITE_TIMEOUT.as_secs())]
    Stuck,
}

/// The running push tasks, one per `IcecastPush` entry.
pub struct IcecastPushes {
    hub: Hub,
    ids: Arc<SessionIds>,
    titles: Arc<Titles>,
    shutdown: CancellationToken,
    running: Mutex<Vec<(IcecastPushSettings, CancellationToken)>>,
}

impl IcecastPushes {
    pub fn new(
        hub: Hub,
        ids: Arc<SessionIds>,
        titles: Arc<Titles>,
        shutdown: CancellationToken,
    ) -> Self {
        Self {
            hub,
            ids,
            titles,
            shutdown,
            running: Mutex::new(Vec::new()),
        }
    }

    /// Starts the entries of `rules` that are not running and stops the running ones it
    /// no longer has; an entry changed in any way is stopped and started again.
    pub fn apply(&self, rules: &Rules) {
        let mut running = locked(&self.running);
        running.retain(|(settings, stop)| {
            let keep = rules.icecast_pushes.contains(settings);
            if !keep {
                stop.cancel();
            }
            keep
        });
        for settings in &rules.icecast_pushes {
            if running.iter().any(|(s, _)| s == settings) {
                continue;
            }
            let key = StreamKey::new(settings.app.clone(), settings.stream.clone());
            let reading = self.hub.own_reader(&key, Queue, self.ids.next_id());
            let stop = self.shutdown.child_token();
            tracing::info!(stream = %key, target = %settings.target(), "icecast push started");
            let pushing = Pushing {
                settings: settings.clone(),
                key,
                titles: Arc::clone(&self.titles),
            };
            tokio::spawn(pushing.run(reading, stop.clone()));
            running.push((settings.clone(), stop));
        }
    }
}

/// The waits between attempts: doubling from [`FIRST_BACKOFF`] up to [`MAX_BACKOFF`].
struct Backoff {
    next: Duration,
}

impl Backoff {
    fn new() -> Self {
        Self {
            next: FIRST_BACKOFF,
        }
    }

    /// The wait before the next attempt; the one after it is twice as long.
    fn failed(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(MAX_BACKOFF);
        wait
    }

    fn reset(&mut self) {
        self.next = FIRST_BACKOFF;
    }
}

/// The audio of the stream's current publisher, rendered for the server.
struct Audio {
    generation: Option<u32>,
    writer: IcyWriter,
    /// `audio/aac` or `audio/mpeg` once the publisher sent such audio.
    content_type: Option<&'static str>,
    /// When the current publisher's first frame came.
    since: Instant,
    last_audio: Option<Instant>,
    /// Whether the lack of AAC or MP3 audio was logged for this publisher.
    warned: bool,
}

impl Audio {
    fn new(generation: Option<u32>) -> Self {
        Self {
            generation,
            writer: IcyWriter::new(false),
            content_type: None,
            since: Instant::now(),
            last_audio: None,
            warned: false,
        }
    }

    /// Appends `frame`'s audio to `out` (nothing for other frames); logs once per
    /// publisher when it has no audio the push can carry.
    fn push(&mut self, frame: &SharedFrame, key: &StreamKey, out: &mut BytesMut) {
        if self.generation != Some(frame.generation) {
            // A new publisher: a fresh renderer, but the audio clock goes on (the idle
            // check must not close a connection between its first frames).
            let last_audio = self.last_audio;
            *self = Audio::new(Some(frame.generation));
            self.last_audio = last_audio;
        }
        let content_type = match (frame.frame.track, frame.frame.codec) {
            (Track::Audio, Codec::Aac) => "audio/aac",
            (Track::Audio, Codec::Mp3) => "audio/mpeg",
            (Track::Audio, codec) => {
                if !self.warned {
                    self.warned = true;
                    tracing::warn!(stream = %key, ?codec, "icecast push: the stream's audio is neither AAC nor MP3; waiting for a publisher that sends either");
                }
                return;
            }
            _ => {
                if self.content_type.is_none()
                    && !self.warned
                    && self.since.elapsed() >= NO_AUDIO_WARNING
                {
                    self.warned = true;
                    tracing::warn!(stream = %key, "icecast push: the stream has no audio; waiting for AAC or MP3 audio");
                }
                return;
            }
        };
        self.content_type = Some(content_type);
        let start = out.len();
        self.writer.push(&frame.frame, &Title::default(), out);
        if out.len() > start {
            self.last_audio = Some(Instant::now());
        }
    }
}

/// An open source connection.
struct Link {
    socket: TcpStream,
    content_type: &'static str,
    since: Instant,
    /// The title version sent to the server last.
    title_version: u64,
}

impl Link {
    async fn send(&mut self, bytes: &[u8]) -> Result<(), PushError> {
        match tokio::time::timeout(WRITE_TIMEOUT, self.socket.write_all(bytes)).await {
            Ok(result) => result.map_err(PushError::Io),
            Err(_) => Err(PushError::Stuck),
        }
    }
}

type Connecting = Pin<Box<dyn Future<Output = Result<TcpStream, PushError>> + Send>>;

/// One push: its entry, stream and the titles it forwards.
struct Pushing {
    settings: IcecastPushSettings,
    key: StreamKey,
    titles: Arc<Titles>,
}

impl Pushing {
    /// Pushes until `stop` (see the module docs).
    async fn run(self, mut reading: Reader<FrameReceiver>, stop: CancellationToken) {
        let target = self.settings.target();
        let mut audio = Audio::new(None);
        let mut out = BytesMut::with_capacity(16 * 1024);
        let mut link: Option<Link> = None;
        let mut connecting: Option<(Connecting, &'static str)> = None;
        let mut retry_at: Option<Instant> = None;
        let mut backoff = Backoff::new();
        let mut tick = tokio::time::interval(TICK);
        let mut scratch = [0u8; 1024];
        loop {
            // Why the open connection ended, if it did.
            let mut lost: Option<PushError> = None;
            tokio::select! {
                () = stop.cancelled() => break,
                frame = reading.frames.recv() => {
                    // The hub closes a reader's queue only when the reader is removed.
                    let Some(frame) = frame else { break };
                    out.clear();
                    audio.push(&frame, &self.key, &mut out);
                    if let (Some(open), Some(now)) = (&link, audio.content_type)
                        && open.content_type != now
                    {
                        tracing::info!(stream = %self.key, %target, from = open.content_type, to = now, "icecast push: the audio codec changed; reconnecting");
                        link = None;
                    }
                    if out.is_empty() {
                        continue;
                    }
                    match (&mut link, audio.content_type) {
                        (Some(open), _) => tokio::select! {
                            () = stop.cancelled() => break,
                            sent = open.send(&out) => lost = sent.err(),
                        },
                        (None, Some(content_type)) if connecting.is_none() && retry_at.is_none() => {
                            tracing::info!(stream = %self.key, %target, content_type, "icecast push: connecting");
                            let connect = connect(self.settings.clone(), content_type);
                            connecting = Some((Box::pin(connect), content_type));
                        }
                        // Audio while connecting or waiting to retry is not kept.
                        _ => {}
                    }
                }
                connected = until_connected(&mut connecting) => {
                    let content_type = connecting.take().map_or("", |(_, c)| c);
                    match connected {
                        Ok(socket) => {
                            tracing::info!(stream = %self.key, %target, content_type, "icecast push: connected, sending audio");
                            let mut open = Link {
                                socket,
                                content_type,
                                since: Instant::now(),
                                title_version: 0,
                            };
                            self.send_title(&mut open);
                            link = Some(open);
                        }
                        Err(e) => {
                            let wait = backoff.failed();
                            retry_at = Some(Instant::now() + wait);
                            tracing::warn!(stream = %self.key, %target, error = %e, "icecast push failed; reconnecting in {} s", wait.as_secs());
                        }
                    }
                }
                heard = hear(&mut link, &mut scratch) => match heard {
                    Ok(0) => lost = Some(PushError::Closed),
                    Ok(n) => {
                        let text = String::from_utf8_lossy(&scratch[..n]);
                        let line = text.lines().next().unwrap_or_default();
                        tracing::debug!(stream = %self.key, %target, said = %line, "icecast push: the server spoke");
                    }
                    Err(e) => lost = Some(PushError::Io(e)),
                },
                () = sleep_until(retry_at) => retry_at = None,
                _ = tick.tick() => {
                    if let Some(open) = link.as_mut() {
                        let idle = audio.last_audio.is_none_or(|at| at.elapsed() >= IDLE_CLOSE);
                        if idle && open.since.elapsed() >= IDLE_CLOSE {
                            tracing::info!(stream = %self.key, %target, "icecast push: no audio for {} s, disconnected; connecting again when audio comes", IDLE_CLOSE.as_secs());
                            link = None;
                        } else {
                            self.send_title(open);
                        }
                    }
                }
            }
            if let Some(e) = lost
                && let Some(open) = link.take()
            {
                if open.since.elapsed() >= STEADY {
                    backoff.reset();
                }
                let wait = backoff.failed();
                retry_at = Some(Instant::now() + wait);
                tracing::warn!(stream = %self.key, %target, error = %e, "icecast push: connection lost; reconnecting in {} s", wait.as_secs());
            }
        }
        tracing::info!(stream = %self.key, %target, "icecast push stopped");
    }

    /// Sends the stream's title to the server when it changed since the last one sent.
    fn send_title(&self, link: &mut Link) {
        let title = self.titles.get(&self.key);
        if title.version == link.title_version {
            return;
        }
        link.title_version = title.version;
        let request = metadata_request(&self.settings, &title.title);
        let (settings, key) = (self.settings.clone(), self.key.clone());
        tokio::spawn(async move {
            let target = settings.target();
            match tokio::time::timeout(CONNECT_TIMEOUT, ask(&settings, &request)).await {
                Ok(Ok(status))
                    if status.starts_with("HTTP/1.0 2") || status.starts_with("HTTP/1.1 2") =>
                {
                    tracing::info!(stream = %key, %target, "icecast push: title sent");
                }
                Ok(Ok(status)) => {
                    tracing::warn!(stream = %key, %target, %status, "icecast push: title refused");
                }
                Ok(Err(e)) => {
                    tracing::warn!(stream = %key, %target, error = %e, "icecast push: title not sent")
                }
                Err(_) => {
                    tracing::warn!(stream = %key, %target, "icecast push: title not sent: no answer")
                }
            }
        });
    }
}

/// Waits for the connection under way; never ready without one.
async fn until_connected(
    connecting: &mut Option<(Connecting, &'static str)>,
) -> Result<TcpStream, PushError> {
    match connecting {
        Some((future, _)) => future.await,
        None => std::future::pending().await,
    }
}

/// Reads what the server sends on an open connection (nothing, normally: `0` is its
/// end); never ready without a connection.
async fn hear(link: &mut Option<Link>, scratch: &mut [u8]) -> std::io::Result<usize> {
    match link {
        Some(open) => open.socket.read(scratch).await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Opens a source connection: the request head, then the server's answer, which must
/// be `100 Continue` or a 2xx.
async fn connect(
    settings: IcecastPushSettings,
    content_type: &'static str,
) -> Result<TcpStream, PushError> {
    let attempt = async {
        let mut socket = TcpStream::connect((settings.host.as_str(), settings.port))
            .await
            .map_err(PushError::Connect)?;
        let _ = socket.set_nodelay(true);
        socket
            .write_all(request_head(&settings, content_type).as_bytes())
            .await?;
        let status = read_status(&mut socket).await?;
        match status_code(&status) {
            Some(100 | 200..=299) => Ok(socket),
            Some(_) => Err(PushError::Refused(status)),
            None => Err(PushError::BadAnswer(status)),
        }
    };
    tokio::time::timeout(CONNECT_TIMEOUT, attempt)
        .await
        .map_err(|_| PushError::Timeout)?
}

/// Sends `request` on a connection of its own and answers the status line.
async fn ask(settings: &IcecastPushSettings, request: &str) -> Result<String, PushError> {
    let mut socket = TcpStream::connect((settings.host.as_str(), settings.port))
        .await
        .map_err(PushError::Connect)?;
    socket.write_all(request.as_bytes()).await?;
    read_status(&mut socket).await
}

/// Reads an answer head (up to its blank line) and returns its status line.
async fn read_status(socket: &mut (impl AsyncRead + Unpin)) -> Result<String, PushError> {
    let mut head = Vec::with_capacity(256);
    let mut byte = [0u8; 1];
    // Byte by byte: the answer is short, and nothing after its head may be consumed.
    while !head.ends_with(b"\r\n\r\n") && !head.ends_with(b"\n\n") {
        if head.len() >= MAX_ANSWER_BYTES {
            return Err(PushError::BadAnswer(status_line(&head)));
        }
        if socket.read(&mut byte).await? == 0 {
            return match head.is_empty() {
                true => Err(PushError::Closed),
                false => Err(PushError::BadAnswer(status_line(&head))),
            };
        }
        head.push(byte[0]);
    }
    Ok(status_line(&head))
}

/// The first line of `head`, printable, at most 200 characters.
fn status_line(head: &[u8]) -> String {
    String::from_utf8_lossy(head)
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect()
}

/// The code of an HTTP status line (`HTTP/1.1 403 Mountpoint in use` → 403).
fn status_code(line: &str) -> Option<u16> {
    let mut parts = line.split_whitespace();
    let version = parts.next()?;
    if !version.starts_with("HTTP/") && !version.starts_with("ICE/") {
        return None;
    }
    let code = parts.next()?;
    (code.len() == 3).then_some(())?;
    code.parse().ok()
}

/// `Basic base64(user:password)`.
fn authorization(settings: &IcecastPushSettings) -> String {
    let pair = format!("{}:{}", settings.user, settings.password);
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

/// The `Host` header: the port always, brackets around IPv6 addresses.
fn host_header(settings: &IcecastPushSettings) -> String {
    if settings.host.contains(':') {
        format!("[{}]:{}", settings.host, settings.port)
    } else {
        format!("{}:{}", settings.host, settings.port)
    }
}

/// The head of a source request: `PUT <mount>` with the credentials and the stream's
/// description, no `Content-Length` (the body lasts as long as the stream).
fn request_head(settings: &IcecastPushSettings, content_type: &str) -> String {
    let name = match settings.name.as_str() {
        "" => format!("{}/{}", settings.app, settings.stream),
        name => name.to_owned(),
    };
    let mut head = format!(
        "PUT {} HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nUser-Agent: strom/{}\r\n\
         Content-Type: {content_type}\r\nIce-Public: {}\r\nIce-Name: {name}\r\n",
        settings.mount,
        host_header(settings),
        authorization(settings),
        env!("CARGO_PKG_VERSION"),
        u8::from(settings.public),
    );
    for (header, value) in [
        ("Ice-Description", &settings.description),
        ("Ice-Genre", &settings.genre),
    ] {
        if !value.is_empty() {
            head.push_str(&format!("{header}: {value}\r\n"));
        }
    }
    head.push_str("Expect: 100-continue\r\n\r\n");
    head
}

/// The request that sets the mount's title (`song`) on the server.
fn metadata_request(settings: &IcecastPushSettings, title: &str) -> String {
    format!(
        "GET /admin/metadata?mount={}&mode=updinfo&song={}&charset=UTF-8 HTTP/1.0\r\n\
         Host: {}\r\nAuthorization: {}\r\nUser-Agent: strom/{}\r\n\r\n",
        percent_encoded(&settings.mount),
        percent_encoded(title),
        host_header(settings),
        authorization(settings),
        env!("CARGO_PKG_VERSION"),
    )
}

/// `text` with every byte but the unreserved ones as `%XX`.
fn percent_encoded(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
#[path = "icecast_push_tests.rs"]
mod tests;
