//! MPEG-TS over HTTP: `GET /<app>/<stream>/mpegts.stream` answers one endless
//! `video/mp2t` response per viewer, for streams whose delivery outputs include `MPEGTS`.
//!
//! The response starts with a PAT, a PMT and a keyframe ([`TsFeed`]) and follows the
//! stream live. Each viewer reads the packager's hub through its own bounded reader;
//! between that reader and the socket sit at most [`BODY_CHUNKS`] frames, so a viewer
//! that stops reading fills its reader queue and loses whole GOPs there (counted in its
//! session), never slowing the stream or anyone else. The response ends when the viewer
//! goes away, when `sessions/delete` names its session, or [`IDLE_END`] after the last
//! frame (the publisher left and nobody took over).

use crate::packaging::mpegts_enabled;
use crate::ts_viewers::{TsViewer, TsViewers};
use bytes::{Bytes, BytesMut};
use hyper::body::{Body, Frame, SizeHint};
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use std::convert::Infallible;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use strom_stream::{FrameReceiver, Hub, StreamKey, TsFeed};
use strom_worker_runtime::WorkerCounters;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The file name that asks for MPEG-TS over HTTP.
pub const FILE_NAME: &str = "mpegts.stream";
/// Rendered frames waiting for the socket, per viewer.
const BODY_CHUNKS: usize = 8;
/// A response with no frame for this long ends.
const IDLE_END: Duration = Duration::from_secs(15);

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
    pub hub: &'a Hub,
    pub rules: &'a strom_ipc::rules::Rules,
    pub viewers: &'a Arc<TsViewers>,
    pub counters: &'a Arc<WorkerCounters>,
    pub shutdown: &'a CancellationToken,
}

/// Why a request gets no stream.
pub enum Refusal {
    NotFound,
    TooManyViewers,
}

impl TsDelivery<'_> {
    /// Opens a viewer of `app/stream` (names already checked) and answers its response.
    pub fn open(
        &self,
        app: &str,
        stream: &str,
        client_ip: IpAddr,
        user_agent: &str,
        ppv_id: Option<String>,
        head: bool,
    ) -> Result<Response<TsBody>, Refusal> {
        let key = StreamKey::new(app, stream);
        let live = self.hub.get(&key).is_some_and(|s| s.publisher().is_some());
        if !mpegts_enabled(self.rules, app, stream) || !live {
            return Err(Refusal::NotFound);
        }
        if head {
            return Ok(response(TsBody::empty()));
        }
        // The session id names the reader too, so the hub's drop log lines name it.
        let reader = self.viewers.next_id();
        let (frames, dropped) = self.hub.subscribe(&key, reader);
        let stop = self.shutdown.child_token();
        let viewer = match self.viewers.open(
            reader, app, stream, client_ip, user_agent, ppv_id, dropped, stop,
        ) {
            Ok(viewer) => viewer,
            Err(_) => {
                self.hub.leave(&key, reader);
                tracing::warn!(%client_ip, stream = %key, "mpegts.stream refused: too many viewers");
                return Err(Refusal::TooManyViewers);
            }
        };
        tracing::info!(session = viewer.id, %client_ip, stream = %key, "mpegts.stream viewer started");
        let (tx, rx) = mpsc::channel(BODY_CHUNKS);
        tokio::spawn(follow(
            Following {
                hub: self.hub.clone(),
                key,
                reader,
                viewers: Arc::clone(self.viewers),
                viewer,
            },
            frames,
            tx,
            Arc::clone(self.counters),
        ));
        Ok(response(TsBody { chunks: Some(rx) }))
    }
}

fn response(body: TsBody) -> Response<TsBody> {
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("video/mp2t"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// A viewer's reader and session, both given back when the viewer's task ends.
struct Following {
    hub: Hub,
    key: StreamKey,
    reader: u64,
    viewers: Arc<TsViewers>,
    viewer: Arc<TsViewer>,
}

impl Drop for Following {
    fn drop(&mut self) {
        self.hub.leave(&self.key, self.reader);
        self.viewers.close(self.viewer.id);
    }
}

/// Renders the viewer's frames into its response until it ends (see the module docs).
async fn follow(
    following: Following,
    mut frames: FrameReceiver,
    chunks: mpsc::Sender<Bytes>,
    counters: Arc<WorkerCounters>,
) {
    let viewer = &following.viewer;
    let mut feed = TsFeed::new();
    let mut out = BytesMut::with_capacity(64 * 1024);
    let why = loop {
        let frame = tokio::select! {
            () = viewer.stop.cancelled() => break "ended by request",
            frame = tokio::time::timeout(IDLE_END, frames.recv()) => frame,
        };
        let frame = match frame {
            Ok(Some(frame)) => frame,
            Ok(None) => break "stream removed",
            Err(_) => break "no frames",
        };
        let written = feed.push(&frame, &mut out);
        if written == 0 {
            continue;
        }
        let chunk = out.split().freeze();
        tokio::select! {
            () = viewer.stop.cancelled() => break "ended by request",
            sent = chunks.send(chunk) => if sent.is_err() { break "viewer went away" },
        }
        viewer.sent(written);
        counters.add_sent(written as u64);
    };
    tracing::info!(
        session = viewer.id,
        stream = %following.key,
        bytes = viewer.bytes_sent.load(std::sync::atomic::Ordering::Relaxed),
        reason = why,
        "mpegts.stream viewer ended"
    );
}
