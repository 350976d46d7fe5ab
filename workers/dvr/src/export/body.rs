//! Copying a byte range of a planned MP4 to the socket: a blocking thread reads the
//! pieces from the source files with `pread` in [`READ_CHUNK`]-byte chunks and hands
//! them over a [`QUEUED_CHUNKS`]-deep channel, so a slow client holds at most a few MB
//! and stops the reads (backpressure) instead of filling memory.

use bytes::{Bytes, BytesMut};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;
use strom_media::mp4::{Mp4Plan, Read};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// Bytes per file read.
pub(super) const READ_CHUNK: usize = 512 * 1024;
/// Chunks read ahead of the socket.
const QUEUED_CHUNKS: usize = 4;

/// Writes bytes `first..=last` of `plan`'s file to `out`. An error (a source file
/// gone or shorter than the plan says, the client gone) ends the body early.
pub(super) async fn send<W: AsyncWrite + Unpin>(
    out: &mut W,
    plan: Arc<Mp4Plan>,
    files: Arc<Vec<PathBuf>>,
    first: u64,
    last: u64,
) -> io::Result<()> {
    let (chunks, mut received) = mpsc::channel::<io::Result<Bytes>>(QUEUED_CHUNKS);
    let reader =
        tokio::task::spawn_blocking(move || read_range(&plan, &files, first, last, &chunks));
    while let Some(chunk) = received.recv().await {
        out.write_all(&chunk?).await?;
    }
    // The reader ended (its sender dropped): every chunk was written.
    reader.await.map_err(io::Error::other)?;
    out.flush().await
}

/// Reads the range and sends it in chunks; stops at the first error (sent on) or when
/// the receiver is gone.
fn read_range(
    plan: &Mp4Plan,
    files: &[PathBuf],
    first: u64,
    last: u64,
    chunks: &mpsc::Sender<io::Result<Bytes>>,
) {
    let mut open: Option<(u32, File)> = None;
    for read in plan.reads(first, last) {
        let (file, mut offset, mut remaining) = match read {
            Read::Header(bytes) => {
                if chunks.blocking_send(Ok(bytes)).is_err() {
                    return;
                }
                continue;
            }
            Read::File { file, offset, len } => (file, offset, len),
        };
        if open.as_ref().is_none_or(|(index, _)| *index != file) {
            match open_source(files, file) {
                Ok(handle) => open = Some((file, handle)),
                Err(e) => {
                    let _ = chunks.blocking_send(Err(e));
                    return;
                }
            }
        }
        let Some((_, handle)) = &open else { return };
        while remaining > 0 {
            let len = usize::try_from(remaining)
                .unwrap_or(READ_CHUNK)
                .min(READ_CHUNK);
            let mut buffer = BytesMut::zeroed(len);
            if let Err(e) = handle.read_exact_at(&mut buffer, offset) {
                let _ = chunks.blocking_send(Err(io::Error::new(
                    e.kind(),
                    format!("{}: {e}", files[file as usize].display()),
                )));
                return;
            }
            if chunks.blocking_send(Ok(buffer.freeze())).is_err() {
                return;
            }
            offset += len as u64;
            remaining -= len as u64;
        }
    }
}

fn open_source(files: &[PathBuf], file: u32) -> io::Result<File> {
    let path = files.get(file as usize).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("sample in file {file} of {}", files.len()),
        )
    })?;
    File::open(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}
