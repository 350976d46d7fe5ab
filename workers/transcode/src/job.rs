//! One transcode: the source stream, read from this worker's hub, goes to an ffmpeg
//! process as MPEG-TS on its stdin; each rendition comes back as MPEG-TS on its own Unix
//! socket, is demuxed into frames and published as `app/<stream>_<name>`, an operator's
//! own producer like a pull.
//!
//! The ffmpeg process is the unit of containment: when it crashes, hangs up or is
//! killed, only this stream's renditions stop; the transcode restarts after a backoff
//! while the source is live. A source without video, or whose video codec ffmpeg is not
//! given (strom carries H.264 and H.265 into it), is refused once with a log line, not
//! retried.

use crate::ffmpeg_args;
use crate::status::JobStatus;
use bytes::BytesMut;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strom_ipc::transcode_rules::{RenditionSpec, rendition_stream};
use strom_media::frame::{Codec, Frame, Track};
use strom_media::ts_demux::TsDemuxer;
use strom_stream::ts_feed::TsFeed;
use strom_stream::{Hub, PublisherInfo, Publishing, Queue, StreamKey};
use strom_worker_runtime::SessionIds;
use strom_worker_runtime::clock::unix_now;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;
use tokio::process::{Child, ChildStdin, Command};
use tokio_util::sync::CancellationToken;

const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A transcode that ran this long before it failed starts again at the first backoff.
const HEALTHY_RUN: Duration = Duration::from_secs(30);
/// ffmpeg's stderr lines kept for the log line of a failure.
const STDERR_TAIL: usize = 8;
/// The longest ffmpeg stderr line kept: ffmpeg may quote the source's metadata.
const MAX_STDERR_LINE: usize = 1024;
/// How long a failed run waits for ffmpeg's exit status.
const EXIT_WAIT: Duration = Duration::from_secs(2);
/// What one read of a rendition's socket takes at most.
const READ_CHUNK: usize = 64 * 1024;

/// What one transcode needs.
pub struct Job {
    pub hub: Hub,
    pub ids: Arc<SessionIds>,
    pub key: StreamKey,
    pub renditions: Vec<RenditionSpec>,
    /// Where the renditions' sockets are made.
    pub socket_dir: PathBuf,
    /// The ffmpeg binary.
    pub ffmpeg: PathBuf,
    pub status: Arc<JobStatus>,
}

/// How one run of ffmpeg ended.
enum Ended {
    /// The job was stopped (the source left, the rules changed, shutdown).
    Stopped,
    /// The source cannot be transcoded; waiting for another publisher will not help.
    Refused(String),
    Failed(String),
}

impl Job {
    /// Transcodes until `stop`, restarting a failed ffmpeg with a growing backoff.
    pub async fn run(self, stop: CancellationToken) {
        let mut backoff = FIRST_BACKOFF;
        tracing::info!(stream = %self.key, renditions = self.renditions.len(), "transcode starting");
        loop {
            let started = Instant::now();
            match self.run_once(&stop).await {
                Ended::Stopped => break,
                Ended::Refused(reason) => {
                    tracing::warn!(stream = %self.key, %reason, "transcode refused");
                    self.status.refused(&reason);
                    stop.cancelled().await;
                    break;
                }
                Ended::Failed(reason) => {
                    if started.elapsed() >= HEALTHY_RUN {
                        backoff = FIRST_BACKOFF;
                    }
                    self.status.failed(&reason);
                    tracing::warn!(stream = %self.key, %reason, retry_in_ms = backoff.as_millis() as u64, "transcode failed; restarting");
                }
            }
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        tracing::info!(stream = %self.key, "transcode stopped");
    }

    async fn run_once(&self, stop: &CancellationToken) -> Ended {
        let id = self.ids.next_id();
        let paths: Vec<PathBuf> = (0..self.renditions.len())
            .map(|i| self.socket_dir.join(format!("{id}-{i}.sock")))
            .collect();
        let mut listeners = Vec::with_capacity(paths.len());
        for path in &paths {
            let _ = tokio::fs::remove_file(path).await;
            match UnixListener::bind(path) {
                Ok(listener) => listeners.push(listener),
                Err(e) => return Ended::Failed(format!("socket {}: {e}", path.display())),
            }
        }
        let outputs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
        let spawned = Command::new(&self.ffmpeg)
            .args(ffmpeg_args::arguments(&self.renditions, &outputs))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                remove_all(&paths).await;
                return Ended::Failed(format!("{} did not start: {e}", self.ffmpeg.display()));
            }
        };
        let pid = child.id().unwrap_or(0);
        self.status.started(pid);
        tracing::info!(stream = %self.key, pid, "transcoder ffmpeg running");
        let tail = spawn_stderr_log(&mut child, self.key.clone());
        let done = stop.child_token();
        for (index, (listener, rendition)) in
            listeners.into_iter().zip(&self.renditions).enumerate()
        {
            let output = Output {
                key: StreamKey::new(
                    self.key.app.clone(),
                    rendition_stream(&self.key.stream, &rendition.name),
                ),
                index,
                status: Arc::clone(&self.status),
            };
            tokio::spawn(publish_rendition(
                listener,
                self.hub.clone(),
                Arc::clone(&self.ids),
                output,
                done.clone(),
            ));
        }
        let ended = match child.stdin.take() {
            Some(stdin) => {
                tokio::select! {
                    () = stop.cancelled() => Ended::Stopped,
                    status = child.wait() => Ended::Failed(exited(status, tail).await),
                    ended = self.feed(stdin) => match ended {
                        // ffmpeg gone: its stdin breaks first, but its exit status says
                        // what happened.
                        Ended::Failed(reason) => match tokio::time::timeout(EXIT_WAIT, child.wait()).await {
                            Ok(status) => Ended::Failed(exited(status, tail).await),
                            Err(_) => Ended::Failed(reason),
                        },
                        other => other,
                    },
                }
            }
            None => Ended::Failed("ffmpeg has no stdin".to_owned()),
        };
        done.cancel();
        let _ = child.start_kill();
        let _ = child.wait().await;
        remove_all(&paths).await;
        ended
    }

    /// Writes the source to ffmpeg until it ends, ffmpeg stops reading, or its video
    /// is in a codec not carried to ffmpeg.
    async fn feed(&self, mut stdin: ChildStdin) -> Ended {
        let reader = self.hub.own_reader(&self.key, Queue, self.ids.next_id());
        let mut frames = reader.frames;
        let mut ts = TsFeed::new();
        let mut out = BytesMut::with_capacity(READ_CHUNK);
        let mut checked = false;
        let mut first_audio_dts = None;
        while let Some(frame) = frames.recv().await {
            if !checked {
                if let Some(refusal) = refusal(&frame.frame, &mut first_audio_dts) {
                    return Ended::Refused(refusal);
                }
                checked = frame.frame.track == Track::Video;
            }
            out.clear();
            if ts.push(&frame, &mut out) == 0 {
                continue;
            }
            if frame.frame.track == Track::Video {
                self.status.input_frame();
            }
            if let Err(e) = stdin.write_all(&out).await {
                return Ended::Failed(format!("ffmpeg stopped reading: {e}"));
            }
        }
        drop(reader.place);
        Ended::Stopped
    }
}

/// Audio a source may send before its first video configuration; past it, the source
/// counts as audio-only (ffmpeg itself gives up on a video map after 5 s of probing, and
/// would be restarted in a loop).
const NO_VIDEO_AFTER_90KHZ: i64 = 3 * 90_000;

/// Why the source that sent `frame` (one of those before its first video frame) cannot
/// be transcoded, if it now shows it: its video is in a codec not carried to ffmpeg, or
/// it sent 3 s of audio without video.
/// `first_audio_dts` is the first audio frame's time, kept between calls.
fn refusal(frame: &Frame, first_audio_dts: &mut Option<i64>) -> Option<String> {
    match frame.track {
        Track::Video if !matches!(frame.codec, Codec::H264 | Codec::H265) => Some(format!(
            "video codec {:?} cannot be transcoded (H.264 and H.265 can)",
            frame.codec
        )),
        Track::Audio => {
            let first = *first_audio_dts.get_or_insert(frame.dts);
            (frame.dts.saturating_sub(first) >= NO_VIDEO_AFTER_90KHZ).then(|| {
                "the source has no video (3 s of audio came first): only video is transcoded"
                    .to_owned()
            })
        }
        _ => None,
    }
}

/// One rendition of a run: the name it is published as, its place in the ladder, and
/// the status it counts its frames in.
struct Output {
    key: StreamKey,
    index: usize,
    status: Arc<JobStatus>,
}

/// Publishes the rendition ffmpeg writes to `listener` as `output.key` until the
/// connection ends or `done`.
async fn publish_rendition(
    listener: UnixListener,
    hub: Hub,
    ids: Arc<SessionIds>,
    output: Output,
    done: CancellationToken,
) {
    let key = &output.key;
    let mut connection = tokio::select! {
        () = done.cancelled() => return,
        accepted = listener.accept() => match accepted {
            Ok((connection, _)) => connection,
            Err(e) => {
                tracing::warn!(stream = %key, error = %e, "rendition socket failed");
                return;
            }
        },
    };
    let mut demuxer = TsDemuxer::new(None);
    let mut claim: Option<Publishing> = None;
    let mut buffer = vec![0; READ_CHUNK];
    loop {
        let read = tokio::select! {
            () = done.cancelled() => break,
            read = connection.read(&mut buffer) => read,
        };
        let n = match read {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(stream = %key, error = %e, "rendition read failed");
                break;
            }
        };
        demuxer.push(buffer.get(..n).unwrap_or_default());
        while demuxer.next_event().is_some() {}
        while let Some(frame) = demuxer.next_frame() {
            if claim.is_none() {
                claim = claim_rendition(&hub, &ids, key);
                if claim.is_none() {
                    break;
                }
            }
            if frame.track == Track::Video && !frame.config {
                output.status.output_frame(output.index, frame.pts);
            }
            if let Some(claim) = &claim {
                claim.publish(frame);
            }
        }
    }
    if let Some(claim) = claim {
        claim.release();
        tracing::info!(stream = %key, "rendition ended");
    }
}

fn claim_rendition(hub: &Hub, ids: &SessionIds, key: &StreamKey) -> Option<Publishing> {
    let publisher = PublisherInfo {
        session_id: ids.next_id(),
        ip: String::new(),
        publish_time: unix_now(),
        query: String::new(),
        source_url: None,
        relayed_from: None,
        protocol: "TRANSCODE",
        admitted_id: None,
    };
    match hub.own_publisher(key, publisher) {
        Ok(claim) => {
            tracing::info!(stream = %key, "rendition live");
            Some(claim)
        }
        Err(_) => {
            strom_worker_runtime::limited_log!(warn, 3, Duration::from_secs(60); stream = %key, "a rendition's name is published by someone else; rendition dropped");
            None
        }
    }
}

/// Logs ffmpeg's stderr (ten lines per ten seconds at most), each line cut at
/// [`MAX_STDERR_LINE`] bytes, and returns its last lines when it closes.
fn spawn_stderr_log(child: &mut Child, key: StreamKey) -> tokio::task::JoinHandle<String> {
    let stderr = child.stderr.take();
    tokio::spawn(async move {
        let Some(stderr) = stderr else {
            return String::new();
        };
        let mut stderr = BufReader::new(stderr);
        let mut tail: std::collections::VecDeque<String> = std::collections::VecDeque::new();
        while let Some(line) = bounded_line(&mut stderr).await {
            strom_worker_runtime::limited_log!(info, 10, Duration::from_secs(10); stream = %key, ffmpeg = %line, "transcoder ffmpeg says");
            if tail.len() == STDERR_TAIL {
                tail.pop_front();
            }
            tail.push_back(line);
        }
        Vec::from(tail).join(" | ")
    })
}

/// The next line of `reader` without its end, cut at [`MAX_STDERR_LINE`] bytes (the rest
/// of a longer line is read and dropped); `None` at the end or on an error.
async fn bounded_line<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R) -> Option<String> {
    let mut line = Vec::new();
    let read = (&mut *reader)
        .take(MAX_STDERR_LINE as u64)
        .read_until(b'\n', &mut line)
        .await
        .ok()?;
    if read == 0 {
        return None;
    }
    if line.last() != Some(&b'\n') {
        // Cut: skip to the end of the line, a buffer at a time.
        loop {
            let buffer = reader.fill_buf().await.ok()?;
            if buffer.is_empty() {
                break;
            }
            match buffer.iter().position(|b| *b == b'\n') {
                Some(at) => {
                    reader.consume(at + 1);
                    break;
                }
                None => {
                    let all = buffer.len();
                    reader.consume(all);
                }
            }
        }
    }
    Some(String::from_utf8_lossy(&line).trim_end().to_owned())
}

/// "ffmpeg exited (<status>): <its last stderr lines>".
async fn exited(
    status: std::io::Result<std::process::ExitStatus>,
    tail: tokio::task::JoinHandle<String>,
) -> String {
    let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
    let tail = tokio::time::timeout(EXIT_WAIT, tail)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    format!("ffmpeg exited ({status}): {tail}")
}

async fn remove_all(paths: &[PathBuf]) {
    for path in paths {
        let _ = tokio::fs::remove_file(path).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_without_h26x_video_are_refused() {
        use bytes::Bytes;
        let frame = |track, codec, dts| Frame::neutral(track, codec, dts, Bytes::new());
        let mut first = None;
        assert!(refusal(&frame(Track::Video, Codec::H264, 0), &mut first).is_none());
        let av1 = refusal(&frame(Track::Video, Codec::Av1, 0), &mut first);
        assert!(av1.is_some_and(|r| r.contains("Av1")));
        assert!(refusal(&frame(Track::Audio, Codec::Aac, 1_000), &mut first).is_none());
        assert!(refusal(&frame(Track::Audio, Codec::Aac, 200_000), &mut first).is_none());
        let audio_only = refusal(&frame(Track::Audio, Codec::Aac, 271_000), &mut first);
        assert!(audio_only.is_some_and(|r| r.contains("no video")));
    }

    #[tokio::test]
    async fn stderr_lines_are_cut_and_the_rest_of_a_long_one_skipped() {
        let long = "x".repeat(MAX_STDERR_LINE * 3);
        let text = format!("first\n{long}\nlast");
        let mut reader = BufReader::with_capacity(64, text.as_bytes());
        assert_eq!(bounded_line(&mut reader).await.as_deref(), Some("first"));
        let cut = bounded_line(&mut reader).await.unwrap();
        assert_eq!(cut.len(), MAX_STDERR_LINE);
        assert_eq!(bounded_line(&mut reader).await.as_deref(), Some("last"));
        assert_eq!(bounded_line(&mut reader).await, None);
    }
}
