//! An MP4 file played at real time: its index is read off the async runtime, a thread
//! reads its samples one by one into a small bounded queue, and [`FileFeed::next`] hands
//! each out when its time has come (paced from the first frame handed out).

use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use strom_media::frame::Frame;
use strom_media::mp4_read::Mp4Index;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Samples read ahead of their time at most.
const READ_AHEAD: usize = 64;

/// What a feed has next.
pub enum FileItem {
    Frame(Frame),
    /// The file ended; with the reason when a read failed.
    End(Option<String>),
}

pub struct FileFeed {
    pub index: Arc<Mp4Index>,
    frames: mpsc::Receiver<Result<Frame, String>>,
    /// The frame waiting for its time (kept when a wait is cancelled).
    pending: Option<Frame>,
    /// The instant the first frame went out and its decode time.
    anchor: Option<(Instant, i64)>,
    ended: bool,
}

impl FileFeed {
    /// Opens and indexes `path` and starts reading it; the error says why it cannot play.
    pub async fn open(path: &Path) -> Result<Self, String> {
        let owned = path.to_path_buf();
        let opened = tokio::task::spawn_blocking(move || -> Result<_, String> {
            let mut file = File::open(&owned).map_err(|e| format!("{}: {e}", owned.display()))?;
            let index =
                Mp4Index::open(&mut file).map_err(|e| format!("{}: {e}", owned.display()))?;
            Ok((file, Arc::new(index)))
        })
        .await
        .map_err(|e| format!("{}: {e}", path.display()))??;
        let (file, index) = opened;
        let (tx, frames) = mpsc::channel(READ_AHEAD);
        let reading = Arc::clone(&index);
        std::thread::Builder::new()
            .name("playout-file".into())
            .spawn(move || read_samples(file, &reading, &tx))
            .map_err(|e| format!("cannot start a reader thread: {e}"))?;
        Ok(Self {
            index,
            frames,
            pending: None,
            anchor: None,
            ended: false,
        })
    }

    /// Whether the file played to its end (or failed).
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The configuration frames of the file.
    pub fn configs(&self) -> Vec<Frame> {
        self.index.config_frames(0)
    }

    /// The next frame when it is due. Cancel-safe: a frame waiting for its time stays.
    pub async fn next(&mut self) -> FileItem {
        if self.ended {
            return std::future::pending().await;
        }
        let frame = match self.pending.take() {
            Some(frame) => frame,
            None => match self.frames.recv().await {
                Some(Ok(frame)) => frame,
                Some(Err(error)) => {
                    self.ended = true;
                    return FileItem::End(Some(error));
                }
                None => {
                    self.ended = true;
                    return FileItem::End(None);
                }
            },
        };
        let (start, first_dts) = *self.anchor.get_or_insert((Instant::now(), frame.dts));
        let ahead = (frame.dts - first_dts).max(0) as u64;
        let due = start + std::time::Duration::from_micros(ahead * 100 / 9);
        if due > Instant::now() {
            self.pending = Some(frame);
            tokio::time::sleep_until(due).await;
            // Only reached when the wait was not cancelled.
            return match self.pending.take() {
                Some(frame) => FileItem::Frame(frame),
                None => FileItem::End(None),
            };
        }
        FileItem::Frame(frame)
    }
}

/// The reader thread: every sample in decode order until the feed is dropped.
fn read_samples(mut file: File, index: &Mp4Index, tx: &mpsc::Sender<Result<Frame, String>>) {
    for sample in &index.samples {
        let frame = index.read(&mut file, sample).map_err(|e| e.to_string());
        let failed = frame.is_err();
        if tx.blocking_send(frame).is_err() || failed {
            return;
        }
    }
}
