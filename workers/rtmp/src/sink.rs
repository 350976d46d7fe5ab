//! A connection's outgoing side: every byte to the client goes through its [`Sink`].
//!
//! Writes are non-blocking and made by whoever has something to send: the connection
//! for its session packets, the stream's fan-out pass ([`crate::fanout`]) for media, at
//! the moment a frame arrives. Nothing waits on a writable socket except the
//! connection's [`flush_loop`], and only while the socket is full: then the pass skips
//! the player, its frames wait in the stream's ring (where a player left too far behind
//! loses whole GOPs, never blocking the publisher: [`strom_stream::Cursor`]), and the
//! flush loop writes them all at once when the client reads again. So a player that
//! keeps up costs no task wake-up, no timer and one system call per pass, and a pass
//! under load carries every frame that arrived while the previous one ran.

use crate::frame::RtmpFrame;
use bytes::Bytes;
use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use strom_stream::Cursor;
use strom_stream::gate::sessions::SessionEntry;
use strom_worker_runtime::WorkerCounters;
use strom_worker_runtime::sync::locked;
use tokio::io::Interest;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Buffers taken from the queue per pump round.
pub const BATCH: usize = 64;
/// Buffers per system call: a pass usually carries two or three; only a player's start
/// (the cached GOP) needs more calls.
const IOV: usize = 16;
/// Bytes a client may leave unread in the sink before it is disconnected: session
/// packets and a partly written batch; media beyond that waits in the stream's ring.
const MAX_PENDING_BYTES: usize = 4 * 1024 * 1024;

/// The stream a player reads: its cursor in the stream's ring, the message stream its
/// media goes out on, and the session the bytes are accounted to.
pub struct MediaFeed {
    pub frames: Cursor,
    pub stream_id: u32,
    pub session: Arc<SessionEntry>,
}

#[derive(Default)]
struct SinkState {
    /// Accepted but not yet written, in order; the first is written from `offset`.
    pending: VecDeque<Bytes>,
    offset: usize,
    pending_bytes: usize,
    media: Option<MediaFeed>,
    closing: bool,
}

/// What a [`Sink::pump`] left behind.
#[derive(Debug, PartialEq, Eq)]
pub enum Pumped {
    /// Everything queued was written.
    Done,
    /// The socket is full; the rest waits for the flush loop.
    Blocked,
}

pub struct Sink {
    socket: OwnedWriteHalf,
    state: Mutex<SinkState>,
    /// Set while the flush loop owns the writing (the socket was full): the fan-out
    /// pass leaves the sink alone until the loop emptied it.
    blocked: AtomicBool,
    wake: Notify,
    counters: Arc<WorkerCounters>,
    kill: CancellationToken,
}

impl Sink {
    pub fn new(
        socket: OwnedWriteHalf,
        counters: Arc<WorkerCounters>,
        kill: CancellationToken,
    ) -> Self {
        Self {
            socket,
            state: Mutex::default(),
            blocked: AtomicBool::new(false),
            wake: Notify::new(),
            counters,
            kill,
        }
    }

    /// Whether the fan-out pass should skip this sink (the flush loop has it).
    pub fn is_blocked(&self) -> bool {
        self.blocked.load(Ordering::Acquire)
    }

    /// Queues a session packet behind what is queued and writes what the socket takes.
    pub fn send(&self, bytes: Bytes) {
        let mut state = locked(&self.state);
        state.pending_bytes += bytes.len();
        state.pending.push_back(bytes);
        if state.pending_bytes > MAX_PENDING_BYTES {
            drop(state);
            tracing::info!(
                max = MAX_PENDING_BYTES,
                "client does not read what it is sent: disconnected"
            );
            self.kill.cancel();
            return;
        }
        if self.is_blocked() {
            return;
        }
        let mut scratch = Vec::new();
        if self.pump_locked(&mut state, &mut scratch, false, WritePath::Direct) == Pumped::Blocked {
            drop(state);
            self.block();
        }
    }

    /// Starts writing `feed`'s frames (after the packets already queued), with
    /// `TCP_NODELAY` as `limits.play_nodelay` says (session commands before this always
    /// go out at once).
    pub fn start_media(&self, feed: MediaFeed, nodelay: bool) {
        if let Err(e) = self.socket.as_ref().set_nodelay(nodelay) {
            tracing::debug!(error = %e, "TCP_NODELAY not changed");
        }
        locked(&self.state).media = Some(feed);
    }

    /// Stops the media; its cursor leaves the stream's ring.
    pub fn stop_media(&self) {
        locked(&self.state).media = None;
    }

    /// Writes what is queued and then the media frames its cursor has not had yet, as
    /// many per system call as there are (up to [`BATCH`] buffers), until everything is
    /// written or the socket is full. `scratch` is the caller's reusable batch.
    pub fn pump(&self, scratch: &mut Vec<Bytes>) -> Pumped {
        let mut state = locked(&self.state);
        self.pump_locked(&mut state, scratch, true, WritePath::Direct)
    }

    fn pump_locked(
        &self,
        state: &mut SinkState,
        scratch: &mut Vec<Bytes>,
        take_media: bool,
        path: WritePath,
    ) -> Pumped {
        loop {
            scratch.clear();
            let mut offset = std::mem::take(&mut state.offset);
            while scratch.len() < BATCH {
                match state.pending.pop_front() {
                    Some(bytes) => scratch.push(bytes),
                    None => break,
                }
            }
            state.pending_bytes = state.pending.iter().map(Bytes::len).sum();
            if take_media
                && let Some(feed) = state.media.as_mut()
                && scratch.len() < BATCH
            {
                let stream_id = feed.stream_id;
                feed.frames.take(BATCH - scratch.len(), |frame| {
                    scratch.extend(frame.chunked_for(stream_id));
                });
            }
            if scratch.is_empty() {
                return Pumped::Done;
            }
            let full = scratch.len() >= BATCH;
            match self.write_batch(scratch, &mut offset, path) {
                Ok(written) => {
                    self.account(state, &written);
                    if written.complete {
                        if full {
                            continue;
                        }
                        return Pumped::Done;
                    }
                    // Whatever the socket did not take goes back in front, in order.
                    for bytes in scratch.drain(written.index..).rev() {
                        state.pending_bytes += bytes.len();
                        state.pending.push_front(bytes);
                    }
                    state.offset = offset;
                    state.pending_bytes -= offset;
                    return Pumped::Blocked;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "client write failed");
                    self.kill.cancel();
                    state.pending.clear();
                    state.pending_bytes = 0;
                    // Nobody writes to a failed socket again.
                    return Pumped::Blocked;
                }
            }
        }
    }

    /// Writes `batch` (the first buffer from `offset`) until it is written or the socket
    /// is full; on return `offset` is where the first unwritten buffer resumes.
    fn write_batch(
        &self,
        batch: &[Bytes],
        offset: &mut usize,
        path: WritePath,
    ) -> io::Result<Written> {
        let mut index = 0;
        let mut bytes = 0;
        while index < batch.len() {
            let mut slices = [IoSlice::new(&[]); IOV];
            let mut count = 0;
            for (slot, buffer) in slices.iter_mut().zip(&batch[index..]) {
                let from = if count == 0 { *offset } else { 0 };
                *slot = IoSlice::new(buffer.get(from..).unwrap_or_default());
                count += 1;
            }
            let written = match self.send_vectored(&slices[..count], path) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(written) => written,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Ok(Written {
                        index,
                        bytes,
                        complete: false,
                    });
                }
                Err(e) => return Err(e),
            };
            bytes += written;
            let mut left = written;
            while left > 0 && index < batch.len() {
                let remaining = batch[index].len() - *offset;
                if left >= remaining {
                    left -= remaining;
                    index += 1;
                    *offset = 0;
                } else {
                    *offset += left;
                    left = 0;
                }
            }
        }
        Ok(Written {
            index,
            bytes,
            complete: true,
        })
    }

    /// `sendmsg` rather than tokio's `writev`: the socket call skips the file layer,
    /// which is a measurable part of a fan-out write. The fan-out pass calls the socket
    /// directly (tokio's readiness bookkeeping was a tenth of a pass); the flush loop,
    /// which waits for `writable()`, goes through tokio so that a full socket clears the
    /// readiness it waits on.
    fn send_vectored(&self, slices: &[IoSlice<'_>], path: WritePath) -> io::Result<usize> {
        let stream = self.socket.as_ref();
        let send = || socket2::SockRef::from(stream).send_vectored(slices);
        match path {
            WritePath::Direct => send(),
            WritePath::Runtime => stream.try_io(Interest::WRITABLE, send),
        }
    }

    fn account(&self, state: &SinkState, written: &Written) {
        if written.bytes == 0 {
            return;
        }
        self.counters.add_sent(written.bytes as u64);
        if let Some(feed) = &state.media {
            feed.session
                .bytes_sent
                .fetch_add(written.bytes as u64, Ordering::Relaxed);
            feed.session.touch();
        }
    }

    /// Hands the writing to the flush loop until the socket takes everything again.
    pub fn block(&self) {
        self.blocked.store(true, Ordering::Release);
        self.wake.notify_one();
    }

    /// Asks the flush loop to write what is queued and then end (the connection closes).
    pub fn close(&self) {
        locked(&self.state).closing = true;
        self.wake.notify_one();
    }

    fn is_closing(&self) -> bool {
        locked(&self.state).closing
    }
}

/// Who writes: the fan-out pass or a session packet (the socket directly), or the flush
/// loop (through tokio's readiness, which it waits on).
#[derive(Clone, Copy)]
enum WritePath {
    Direct,
    Runtime,
}

struct Written {
    /// The first buffer not completely written.
    index: usize,
    bytes: usize,
    complete: bool,
}

/// Writes for the connection while its socket is full, and what is left once it closes.
/// Ends when the connection is killed or closed and flushed.
pub async fn flush_loop(sink: Arc<Sink>) {
    let mut scratch = Vec::with_capacity(BATCH);
    loop {
        tokio::select! {
            () = sink.kill.cancelled() => return,
            () = sink.wake.notified() => {}
        }
        loop {
            // The pass may have queued frames since: take them too, then let it go on.
            let pumped = {
                let mut state = locked(&sink.state);
                let take_media = sink.is_blocked();
                sink.pump_locked(&mut state, &mut scratch, take_media, WritePath::Runtime)
            };
            if pumped == Pumped::Done {
                if sink.blocked.swap(false, Ordering::AcqRel) {
                    // A frame queued between the last pump and the release would wait for
                    // the next pass: write it now.
                    if sink.pump(&mut scratch) == Pumped::Blocked {
                        sink.blocked.store(true, Ordering::Release);
                        continue;
                    }
                }
                break;
            }
            tokio::select! {
                () = sink.kill.cancelled() => return,
                writable = sink.socket.writable() => if writable.is_err() {
                    sink.kill.cancel();
                    return;
                },
            }
        }
        if sink.is_closing() {
            return;
        }
    }
}
