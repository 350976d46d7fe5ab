//! MPEG-TS over HTTP: `GET /<app>/<stream>/mpegts.stream` answers one endless
//! `video/mp2t` response per viewer, for streams whose delivery outputs include `MPEGTS`.
//!
//! The response starts with a PAT, a PMT and a keyframe ([`TsFeed`]) and follows the
//! stream live. Each viewer reads the delivery worker's hub through its own bounded reader;
//! between that reader and the socket sit at most [`BODY_CHUNKS`] frames, so a viewer
//! that stops reading fills its reader queue and loses whole GOPs there (counted in its
//! session), never slowing the stream or anyone else. The response ends when the viewer
//! goes away, when `sessions/delete` names its session, or [`IDLE_END`] after the last
//! frame (the publisher left and nobody took over).
//!
//! Icecast listeners of an audio-only stream start with the latest `icecast_burst_size`
//! bytes of audio, written at once, so that players fill their pre-buffer and start
//! (icecast2's `burst-size`). A listener that asks with `Icy-MetaData` gets an ICY
//! answer as icecast2 gives it: `HTTP/1.0`, no `Transfer-Encoding: chunked` (clients
//! that do not de-chunk would read the chunk sizes as audio and lose the metadata
//! blocks), the body ending when the connection closes.

use crate::icecast::{IcyWriter, METAINT, Titles, content_type};
use crate::packaging::mpegts_enabled;
use crate::source::IceInfo;
use crate::ts_viewers::TsViewers;
use bytes::{Bytes, BytesMut};
use hyper::body::{Body, Frame, SizeHint};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Response, StatusCode};
use std::convert::Infallible;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use strom_ipc::rules::DeliveryOutput;
use strom_stream::gate::sessions::SessionEntry;
use strom_stream::{
    AudioBurst, FrameReceiver, Gate, Queue, Reader, ReaderPlace, Reading, SharedFrame, StreamKey,
    TsFeed,
};
use strom_worker_runtime::WorkerCounters;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The file name that asks for MPEG-TS over HTTP.
pub const FILE_NAME: &str = "mpegts.stream";
/// Rendered frames waiting for the socket, per viewer.
const BODY_CHUNKS: usize = 8;
/// A response with no frame for this long ends.
const IDLE_END: Duration = Duration::from_secs(15);
/// Icecast listeners get their audio in blocks of this much time (players buffer
/// seconds; video viewers of `mpegts.stream` get every frame at once).
const ICY_COALESCE: Duration = Duration::from_millis(500);

/// The body of an `mpegts.stream` response: chunks from the viewer's task.
pub struct TsBody {
    chunks: Option<mpsc::Receiver<Bytes>>,
}

impl TsBody {
    fn empty() -> Self {
        Self { chunks: None }
    }
}

impl Body for TsBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let Some(chunks) = self.chunks.as_mut() else {
            return Poll::Ready(None);
        };
        chunks
            .poll_recv(cx)
            .map(|chunk| chunk.map(|bytes| Ok(Frame::data(bytes))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        match self.chunks {
            None => SizeHint::with_exact(0),
            Some(_) => SizeHint::default(),
        }
    }
}

/// What an `mpegts.stream` request needs from the packager.
pub struct TsDelivery<'a> {
    pub gate: &'a Gate,
    pub rules: &'a strom_ipc::rules::Rules,
    pub viewers: &'a Arc<TsViewers>,
    pub counters: &'a Arc<WorkerCounters>,
    pub shutdown: &'a CancellationToken,
}

/// What a listener gets: MPEG-TS (`mpegts.stream`) or the audio as Icecast
/// (`icecast.stream`, with ICY metadata blocks when asked for).
pub enum Format {
    MpegTs,
    Icecast {
        metadata: bool,
        titles: Arc<Titles>,
        /// What the stream's Icecast source said about itself, if it has one.
        station: Option<IceInfo>,
        /// Audio a new listener of an audio-only stream starts with (`icecast_burst_size`).
        burst_bytes: usize,
    },
}

impl Format {
    fn name(&self) -> &'static str {
        match self {
            Format::MpegTs => "mpegts.stream",
            Format::Icecast { .. } => "icecast.stream",
        }
    }

    /// The session `type`.
    fn protocol(&self) -> &'static str {
        match self {
            Format::MpegTs => "MPEGTS",
            Format::Icecast { .. } => "ICECAST",
        }
    }
}

/// Turns a listener's frames into its bytes.
enum Renderer {
    Ts(TsFeed),
    Icy {
        writer: IcyWriter,
        titles: Arc<Titles>,
        key: StreamKey,
    },
}

impl Renderer {
    fn push(&mut self, frame: &SharedFrame, out: &mut BytesMut) -> usize {
        match self {
            Renderer::Ts(feed) => feed.push(frame, out),
            Renderer::Icy {
                writer,
                titles,
                key,
            } => {
                let start = out.len();
                // The stream's titles come in band; `set_here` only for relayed streams
                // titled at this worker.
                writer.push(&frame.frame, &titles.set_here(key), out);
                out.len() - start
            }
        }
    }

    /// How long to gather frames before writing them.
    fn coalescing(&self) -> Option<Duration> {
        match self {
            Renderer::Ts(_) => None,
            Renderer::Icy { .. } => Some(ICY_COALESCE),
        }
    }
}

/// Why a request gets no stream.
pub enum Refusal {
    NotFound,
    TooManyViewers,
}

impl TsDelivery<'_> {
    /// Opens a viewer of `app/stream` (names already checked) and answers its response.
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        &self,
        format: Format,
        app: &str,
        stream: &str,
        client_ip: IpAddr,
        user_agent: &str,
        reading: Reading,
        head: bool,
    ) -> Result<Response<TsBody>, Refusal> {
        let key = StreamKey::new(app, stream);
        let live = self
            .gate
            .hub()
            .get(&key)
            .filter(|s| s.publisher().is_some());
        let Some(live) = live else {
            return Err(Refusal::NotFound);
        };
        let delivery = self.rules.delivery.for_stream(app, stream);
        let content_type = match &format {
            Format::MpegTs if mpegts_enabled(self.rules, app, stream) => "video/mp2t",
            Format::Icecast { .. } if delivery.has(DeliveryOutput::Icecast) => {
                content_type(&live.codecs().acodec).ok_or(Refusal::NotFound)?
            }
            _ => return Err(Refusal::NotFound),
        };
        let mut head_response = response(TsBody::empty(), content_type);
        if let Format::Icecast {
            metadata, station, ..
        } = &format
        {
            let mut station = station.clone().unwrap_or_default();
            if station.name.is_empty() {
                station.name = key.to_string();
            }
            let measured = u32::try_from(live.bandwidth_bps() / 1000).unwrap_or(u32::MAX);
            station.bitrate_kbps.get_or_insert(measured.max(1));
            icy_headers(&station, *metadata, head_response.headers_mut());
            if *metadata {
                // icecast2's answer: close-delimited, so hyper writes no chunked encoding.
                *head_response.version_mut() = hyper::Version::HTTP_10;
                head_response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
        }
        if head {
            return Ok(head_response);
        }
        // The session id names the reader too, so the hub's drop log lines name it.
        let stop = self.shutdown.child_token();
        let session = match (self.viewers).open(
            format.protocol(),
            &reading,
            client_ip,
            user_agent,
            stop,
        ) {
            Ok(session) => session,
            Err(_) => {
                tracing::warn!(%client_ip, stream = %key, file = format.name(), "refused: too many viewers");
                return Err(Refusal::TooManyViewers);
            }
        };
        let viewer = Arc::clone(session.entry());
        let Reader { frames, place, .. } = match &format {
            Format::Icecast { burst_bytes, .. } => {
                self.gate.read(&reading, AudioBurst(*burst_bytes), session)
            }
            Format::MpegTs => self.gate.read(&reading, Queue, session),
        };
        tracing::info!(session = viewer.id, %client_ip, stream = %key, file = format.name(), "viewer started");
        let renderer = match format {
            Format::MpegTs => Renderer::Ts(TsFeed::new()),
            Format::Icecast {
                metadata, titles, ..
            } => Renderer::Icy {
                writer: IcyWriter::new(metadata),
                titles,
                key: key.clone(),
            },
        };
        let (tx, rx) = mpsc::channel(BODY_CHUNKS);
        tokio::spawn(follow(
            Following {
                reader: place,
                viewer,
            },
            frames,
            renderer,
            tx,
            Arc::clone(self.counters),
        ));
        *head_response.body_mut() = TsBody { chunks: Some(rx) };
        Ok(head_response)
    }
}

fn response(body: TsBody, content_type: &'static str) -> Response<TsBody> {
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The ICY headers of a listener's response.
fn icy_headers(station: &IceInfo, metadata: bool, headers: &mut HeaderMap) {
    let text = |value: &str| HeaderValue::from_str(value).unwrap_or(HeaderValue::from_static(""));
    headers.insert("icy-name", text(&station.name));
    headers.insert("icy-description", text(&station.description));
    headers.insert("icy-genre", text(&station.genre));
    headers.insert("icy-url", text(&station.url));
    headers.insert(
        "icy-pub",
        HeaderValue::from_static(if station.public { "1" } else { "0" }),
    );
    headers.insert(
        "icy-br",
        HeaderValue::from(station.bitrate_kbps.unwrap_or(1)),
    );
    if metadata {
        headers.insert("icy-metaint", HeaderValue::from(METAINT));
    }
}

/// A viewer's reader and session, both given back when the viewer's task ends.
struct Following {
    /// The viewer's place among the stream's readers (which holds its session), left
    /// when the viewer ends.
    reader: ReaderPlace,
    viewer: Arc<SessionEntry>,
}

/// Renders the viewer's frames into its response until it ends (see the module docs).
async fn follow(
    following: Following,
    mut frames: FrameReceiver,
    mut feed: Renderer,
    chunks: mpsc::Sender<Bytes>,
    counters: Arc<WorkerCounters>,
) {
    let viewer = &following.viewer;
    let mut out = BytesMut::with_capacity(64 * 1024);
    // What the reader starts with (configuration, GOP or audio burst) goes out at once,
    // not after a coalescing window: it is what lets a player start.
    let mut written = 0;
    while let Ok(frame) = frames.try_recv() {
        written += feed.push(&frame, &mut out);
    }
    if written > 0 && chunks.send(out.split().freeze()).await.is_ok() {
        viewer.sent(written);
        counters.add_sent(written as u64);
    }
    let why = loop {
        let frame = tokio::select! {
            () = viewer.kill.cancelled() => break "ended by request",
            frame = tokio::time::timeout(IDLE_END, frames.recv()) => frame,
        };
        let frame = match frame {
            Ok(Some(frame)) => frame,
            Ok(None) => break "stream removed",
            Err(_) => break "no frames",
        };
        let mut written = feed.push(&frame, &mut out);
        if let Some(window) = feed.coalescing() {
            // One write per window instead of one per audio frame: a 128 kbit/s MP3
            // listener costs a few writes a second instead of 38.
            tokio::select! {
                () = viewer.kill.cancelled() => break "ended by request",
                () = tokio::time::sleep(window) => {}
            }
            while let Ok(more) = frames.try_recv() {
                written += feed.push(&more, &mut out);
            }
        }
        if written == 0 {
            continue;
        }
        let chunk = out.split().freeze();
        tokio::select! {
            () = viewer.kill.cancelled() => break "ended by request",
            sent = chunks.send(chunk) => if sent.is_err() { break "viewer went away" },
        }
        viewer.sent(written);
        counters.add_sent(written as u64);
    };
    tracing::info!(
        session = viewer.id,
        stream = %following.reader.key(),
        bytes = viewer.bytes_sent.load(std::sync::atomic::Ordering::Relaxed),
        reason = why,
        "viewer ended"
    );
}
