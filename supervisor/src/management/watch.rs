//! The deadlines of one management connection, and the I/O wrapper that feeds them.
//!
//! ```text
//!   Idle --first byte--> Head --head parsed--> Handling --answer ready--> Responding
//!    ^                                                                       |
//!    +------------------------- answer written (body dropped) ---------------+
//! ```
//! Idle: no request in progress; closed `idle_timeout` after it began (a keep-alive
//! connection nobody uses, or one that never sends anything). Head: a request head is
//! arriving; closed `header_timeout` after its first byte, however slowly the rest
//! trickles (slowloris). Handling: the handler runs; its own timeouts apply (the body
//! read timeout of [`crate::api::error::JsonBody`], the worker request timeout).
//! Responding: the answer is being written; closed when the client reads nothing for
//! `idle_timeout`.

use std::io;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::Duration;
use strom_ipc::sync::locked;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Idle,
    Head,
    Handling,
    Responding,
}

#[derive(Debug)]
struct State {
    phase: Phase,
    /// When the phase began.
    since: Instant,
    /// The last read or write that moved bytes.
    progress: Instant,
}

/// One connection's phase and its deadline.
#[derive(Debug)]
pub struct Watch {
    header_timeout: Duration,
    idle_timeout: Duration,
    state: Mutex<State>,
    /// Woken when a change may bring the deadline forward.
    changed: Notify,
}

impl Watch {
    pub fn new(header_timeout: Duration, idle_timeout: Duration) -> Self {
        let now = Instant::now();
        Self {
            header_timeout,
            idle_timeout,
            state: Mutex::new(State {
                phase: Phase::Idle,
                since: now,
                progress: now,
            }),
            changed: Notify::new(),
        }
    }

    fn enter(&self, phase: Phase) {
        let mut state = locked(&self.state);
        state.phase = phase;
        state.since = Instant::now();
        drop(state);
        self.changed.notify_one();
    }

    /// hyper parsed a request head and calls the service.
    pub fn request_started(&self) {
        self.enter(Phase::Handling);
    }

    /// The handler produced its answer; writing it begins.
    pub fn response_ready(&self) {
        self.enter(Phase::Responding);
    }

    /// hyper wrote the whole answer (and dropped its body).
    pub fn response_done(&self) {
        self.enter(Phase::Idle);
    }

    fn bytes_read(&self) {
        let mut state = locked(&self.state);
        let now = Instant::now();
        state.progress = now;
        if state.phase == Phase::Idle {
            state.phase = Phase::Head;
            state.since = now;
            drop(state);
            self.changed.notify_one();
        }
    }

    fn bytes_written(&self) {
        locked(&self.state).progress = Instant::now();
    }

    pub fn phase(&self) -> Phase {
        locked(&self.state).phase
    }

    /// When the connection must be closed if nothing changes; `None` while a handler
    /// runs.
    pub fn deadline(&self) -> Option<Instant> {
        let state = locked(&self.state);
        match state.phase {
            // Writes may still drain the end of the last answer from hyper's buffer.
            Phase::Idle => Some(state.since.max(state.progress) + self.idle_timeout),
            Phase::Head => Some(state.since + self.header_timeout),
            Phase::Handling => None,
            Phase::Responding => Some(state.progress + self.idle_timeout),
        }
    }

    /// Resolves when the phase changed (the deadline must be looked at again).
    pub async fn changed(&self) {
        self.changed.notified().await;
    }
}

/// Marks the end of an answer when hyper drops the response body.
#[derive(Debug)]
pub struct ResponseGuard(pub std::sync::Arc<Watch>);

impl ResponseGuard {
    /// Does nothing; called from the body's frame mapper so the guard lives as long as
    /// the body.
    pub fn hold(&self) {}
}

impl Drop for ResponseGuard {
    fn drop(&mut self) {
        self.0.response_done();
    }
}

/// A connection's byte stream, reporting reads and writes to its [`Watch`].
#[derive(Debug)]
pub struct Watched<IO> {
    inner: IO,
    watch: std::sync::Arc<Watch>,
}

impl<IO> Watched<IO> {
    pub fn new(inner: IO, watch: std::sync::Arc<Watch>) -> Self {
        Self { inner, watch }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Watched<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.watch.bytes_read();
        }
        polled
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Watched<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.watch.bytes_written();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.watch.bytes_written();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn deadlines_follow_the_phases() {
        let watch = Watch::new(Duration::from_secs(10), Duration::from_secs(30));
        let start = Instant::now();
        assert_eq!(watch.deadline(), Some(start + Duration::from_secs(30)));
        tokio::time::advance(Duration::from_secs(5)).await;
        // The first byte of a head: the header timeout counts from here, and trickling
        // more bytes does not move it.
        watch.bytes_read();
        assert_eq!(watch.phase(), Phase::Head);
        let head_deadline = Some(start + Duration::from_secs(15));
        assert_eq!(watch.deadline(), head_deadline);
        tokio::time::advance(Duration::from_secs(5)).await;
        watch.bytes_read();
        assert_eq!(watch.deadline(), head_deadline);
        watch.request_started();
        assert_eq!(watch.deadline(), None);
        watch.response_ready();
        tokio::time::advance(Duration::from_secs(1)).await;
        watch.bytes_written();
        assert_eq!(watch.deadline(), Some(start + Duration::from_secs(11 + 30)));
        drop(ResponseGuard(std::sync::Arc::new(Watch::new(
            Duration::ZERO,
            Duration::ZERO,
        ))));
        watch.response_done();
        assert_eq!(watch.phase(), Phase::Idle);
        assert_eq!(watch.deadline(), Some(start + Duration::from_secs(11 + 30)));
    }
}
