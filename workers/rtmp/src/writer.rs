//! The only task that writes to a client socket: session packets first, then media.
//!
//! Media frames are written as shared pre-chunked `Bytes`, several per system call.

use crate::frame::MediaFrame;
use crate::hub::FrameReceiver;
use crate::sessions::SessionEntry;
use bytes::Bytes;
use std::io::IoSlice;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use strom_worker_runtime::WorkerCounters;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Session packets waiting to be written (commands and acknowledgements: few and small).
pub const CONTROL_QUEUE: usize = 256;
/// Buffers written per system call at most.
const BATCH: usize = 64;

pub enum Outgoing {
    Packet(Bytes),
    /// Start sending a stream's frames on message stream `stream_id`, accounted to `session`.
    StartMedia {
        frames: FrameReceiver,
        stream_id: u32,
        session: Arc<SessionEntry>,
    },
    StopMedia,
}

pub async fn write_loop(
    mut socket: OwnedWriteHalf,
    mut control: mpsc::Receiver<Outgoing>,
    counters: Arc<WorkerCounters>,
    kill: CancellationToken,
) {
    let mut media: Option<(FrameReceiver, u32)> = None;
    let mut session: Option<Arc<SessionEntry>> = None;
    let mut batch: Vec<Bytes> = Vec::with_capacity(BATCH);
    loop {
        tokio::select! {
            biased;
            () = kill.cancelled() => break,
            item = control.recv() => match item {
                None => break,
                Some(Outgoing::Packet(bytes)) => batch.push(bytes),
                Some(Outgoing::StartMedia { frames, stream_id, session: entry }) => {
                    media = Some((frames, stream_id));
                    session = Some(entry);
                }
                Some(Outgoing::StopMedia) => media = None,
            },
            frame = next_frame(&mut media) => match (frame, media.as_mut()) {
                (Some(frame), Some((frames, stream_id))) => {
                    batch.push(frame.chunked_for(*stream_id));
                    while batch.len() < BATCH {
                        match frames.try_recv() {
                            Ok(frame) => batch.push(frame.chunked_for(*stream_id)),
                            Err(_) => break,
                        }
                    }
                }
                _ => media = None,
            },
        }
        if batch.is_empty() {
            continue;
        }
        match write_all(&mut socket, &mut batch).await {
            Ok(written) => {
                counters.add_sent(written as u64);
                if let Some(session) = &session {
                    session
                        .bytes_sent
                        .fetch_add(written as u64, Ordering::Relaxed);
                    session.touch();
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, "client write failed");
                kill.cancel();
                break;
            }
        }
    }
    let _ = socket.shutdown().await;
}

async fn next_frame(media: &mut Option<(FrameReceiver, u32)>) -> Option<Arc<MediaFrame>> {
    match media {
        Some((frames, _)) => frames.recv().await,
        None => std::future::pending().await,
    }
}

/// Writes every buffer with vectored writes and empties the batch; returns bytes written.
async fn write_all(socket: &mut OwnedWriteHalf, batch: &mut Vec<Bytes>) -> std::io::Result<usize> {
    let mut total = 0;
    let mut index = 0;
    let mut offset = 0;
    while index < batch.len() {
        let mut slices = [IoSlice::new(&[]); BATCH];
        let mut count = 0;
        for (i, buffer) in batch[index..].iter().take(BATCH).enumerate() {
            slices[i] = IoSlice::new(if i == 0 {
                &buffer[offset..]
            } else {
                &buffer[..]
            });
            count += 1;
        }
        let written = socket.write_vectored(&slices[..count]).await?;
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        total += written;
        let mut left = written;
        while left > 0 && index < batch.len() {
            let remaining = batch[index].len() - offset;
            if left >= remaining {
                left -= remaining;
                index += 1;
                offset = 0;
            } else {
                offset += left;
                left = 0;
            }
        }
    }
    batch.clear();
    Ok(total)
}
