//! Recording one stream: frames from the worker's hub go to a writer thread that cuts
//! them into archive segments (at the first keyframe after the segment length, at a
//! codec change, at the end of a publish) and commits each through the archive's
//! crash-safe protocol.
//!
//! File IO runs on the thread, never on the async runtime; between the two is a bounded
//! queue, so a slow disk backs up into the hub reader, which drops whole GOPs (counted
//! and logged) rather than blocking the publisher.
//!
//! The archive is opened (its directory created, its index descriptor taken) at the
//! stream's first frame it can record, not when the stream is listed: a name published
//! without media, or with only codecs the archive cannot hold ([`crate::unrecorded`],
//! warned about), leaves nothing on disk and holds no descriptor. SCTE-35 markers go to
//! the cutter, which keeps them with the segment they start.

use crate::archives::{Archives, SharedArchive};
use crate::cutter::{Cut, Cutter};
use crate::unrecorded::Unrecorded;
use std::sync::Arc;
use std::thread::JoinHandle;
use strom_media::dvr::{OpenSegment, SegmentEntry};
use strom_media::frame::Codec;
use strom_stream::{FrameReceiver, SharedFrame, StreamKey};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Frames queued between the hub reader and the writer thread.
const WRITER_QUEUE: usize = 256;

/// What a commit tells the worker (retention runs after each).
pub type Committed = Arc<dyn Fn(&StreamKey, &SegmentEntry) + Send + Sync>;

/// Reads `frames` until `stop` or the reader is removed, recording into `key`'s archive
/// of `archives` (opened at the first frame).
pub async fn record(
    key: StreamKey,
    mut frames: FrameReceiver,
    archives: Arc<Archives>,
    segment_secs: u32,
    committed: Committed,
    stop: CancellationToken,
) {
    let (queue, receiver) = mpsc::channel(WRITER_QUEUE);
    let thread_key = key.clone();
    let writer = std::thread::Builder::new()
        .name(format!("dvr {key}"))
        .spawn(move || write_loop(thread_key, receiver, &archives, segment_secs, committed));
    let writer: JoinHandle<()> = match writer {
        Ok(handle) => handle,
        Err(e) => {
            tracing::error!(stream = %key, error = %e, "DVR writer thread did not start");
            return;
        }
    };
    tracing::info!(stream = %key, "DVR recording");
    loop {
        let frame = tokio::select! {
            () = stop.cancelled() => break,
            frame = frames.recv() => frame,
        };
        let Some(frame) = frame else { break };
        if queue.send(frame).await.is_err() {
            break;
        }
    }
    drop(queue);
    // The thread closes the open segment; wait for it without blocking the runtime.
    let joined = tokio::task::spawn_blocking(move || writer.join()).await;
    if !matches!(joined, Ok(Ok(()))) {
        tracing::error!(stream = %key, "DVR writer thread failed");
    }
    tracing::info!(stream = %key, "DVR recording stopped");
}

fn write_loop(
    key: StreamKey,
    mut frames: mpsc::Receiver<Arc<SharedFrame>>,
    archives: &Archives,
    segment_secs: u32,
    committed: Committed,
) {
    // Nothing on disk until the stream sends its first frame the archive can hold.
    let mut unrecorded = Unrecorded::default();
    let first = loop {
        let Some(frame) = frames.blocking_recv() else {
            return;
        };
        if unrecorded.recordable(&key, &frame.frame) {
            break frame;
        }
    };
    let archive = match archives.open(&key) {
        Ok(archive) => archive,
        Err(e) => {
            tracing::error!(stream = %key, error = %e, "DVR archive cannot be opened: not recording");
            // Keep taking the frames, so the hub reader does not count them as drops.
            while frames.blocking_recv().is_some() {}
            return;
        }
    };
    let mut pending = Some(first);
    let mut cutter = Cutter::new(segment_secs, archive.next_period());
    let mut open: Option<OpenSegment> = None;
    let mut failed = false;
    // Reused for every frame: what the cutter decided, applied in order.
    let mut cuts = Vec::with_capacity(4);
    while let Some(frame) = pending.take().or_else(|| frames.blocking_recv()) {
        if frame.frame.codec == Codec::Scte35 {
            cutter.marker(&frame.frame.payload);
            continue;
        }
        if !unrecorded.recordable(&key, &frame.frame) {
            continue;
        }
        let now_ms = strom_worker_runtime::clock::unix_now_ms();
        cutter.push(&frame.frame, frame.generation, now_ms, &mut |cut| {
            cuts.push(cut)
        });
        for cut in cuts.drain(..) {
            match cut {
                Cut::Close(facts, configs) => {
                    if let Some(mut segment) = open.take() {
                        segment.set_configs(&configs);
                        commit(&key, &archive, segment, facts, &committed);
                    }
                }
                Cut::Begin => {
                    if let Some(segment) = open.take() {
                        let _ = segment.discard();
                    }
                    match archive.begin(cutter.configs()) {
                        Ok(segment) => {
                            open = Some(segment);
                            failed = false;
                        }
                        Err(e) => {
                            if !failed {
                                tracing::error!(stream = %key, error = %e, "DVR segment not started; retrying at the next keyframe");
                            }
                            failed = true;
                            cutter.abandon();
                        }
                    }
                }
                Cut::Sample(sample) => {
                    if let Some(segment) = open.as_mut()
                        && let Err(e) = segment.push(&sample)
                    {
                        tracing::error!(stream = %key, error = %e, "DVR write failed; segment dropped");
                        if let Some(segment) = open.take() {
                            let _ = segment.discard();
                        }
                        cutter.abandon();
                    }
                }
            }
        }
    }
    if let (Some(mut segment), Some((facts, configs))) = (open.take(), cutter.finish()) {
        segment.set_configs(&configs);
        commit(&key, &archive, segment, facts, &committed);
    } else if let Some(segment) = open.take() {
        let _ = segment.discard();
    }
}

fn commit(
    key: &StreamKey,
    archive: &SharedArchive,
    segment: OpenSegment,
    facts: SegmentEntry,
    committed: &Committed,
) {
    if segment.records().is_empty() {
        let _ = segment.discard();
        return;
    }
    match archive.commit(segment, facts) {
        Ok(entry) => {
            tracing::debug!(stream = %key, seq = entry.seq, bytes = entry.bytes, "DVR segment recorded");
            committed(key, &entry);
        }
        Err(e) => tracing::error!(stream = %key, error = %e, "DVR segment lost: commit failed"),
    }
}
