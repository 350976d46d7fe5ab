//! What one transcode is doing, for `GET /manage/transcodes` and `/metrics`: its state,
//! the frames in and out, the media time the renditions advanced against the wall clock
//! (speed), the ffmpeg process's CPU, its restarts and its last error.

use serde_json::{Value, json};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::time::Instant;
use strom_ipc::transcode_rules::{RenditionSpec, rendition_stream};
use strom_stream::StreamKey;
use strom_worker_runtime::sync::locked;

/// Where a transcode is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum State {
    /// ffmpeg is starting or waiting for the source's first frames.
    Starting,
    Running,
    /// ffmpeg failed; it starts again after the backoff.
    Restarting,
    /// The source cannot be transcoded (its codec); waiting for another publisher.
    Refused,
}

impl State {
    fn from_u8(value: u8) -> Self {
        [
            State::Starting,
            State::Running,
            State::Restarting,
            State::Refused,
        ]
        .into_iter()
        .find(|s| *s as u8 == value)
        .unwrap_or(State::Starting)
    }

    fn name(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Running => "running",
            State::Restarting => "restarting",
            State::Refused => "refused",
        }
    }
}

/// One run of ffmpeg: when it started and its process.
struct Run {
    started: Instant,
    pid: u32,
}

pub struct JobStatus {
    key: StreamKey,
    renditions: Vec<RenditionSpec>,
    /// A [`State`]: counted on every rendition frame, so lock-free.
    state: AtomicU8,
    run: Mutex<Option<Run>>,
    last_error: Mutex<Option<String>>,
    restarts: AtomicU32,
    /// Source frames given to the current ffmpeg.
    input_frames: AtomicU64,
    /// Per rendition, in the ladder's order, for the current run.
    outputs: Vec<OutputCount>,
}

/// The video frames one rendition published and the span of their presentation times
/// (90 kHz; `first` `i64::MAX` and `last` `i64::MIN` before the first frame).
struct OutputCount {
    frames: AtomicU64,
    first: AtomicI64,
    last: AtomicI64,
}

impl OutputCount {
    fn new() -> Self {
        Self {
            frames: AtomicU64::new(0),
            first: AtomicI64::new(i64::MAX),
            last: AtomicI64::new(i64::MIN),
        }
    }

    fn reset(&self) {
        self.frames.store(0, Ordering::Relaxed);
        self.first.store(i64::MAX, Ordering::Relaxed);
        self.last.store(i64::MIN, Ordering::Relaxed);
    }

    /// Seconds of media between the first and the last frame.
    fn media_secs(&self) -> f64 {
        let (first, last) = (
            self.first.load(Ordering::Relaxed),
            self.last.load(Ordering::Relaxed),
        );
        if last < first {
            return 0.0;
        }
        last.saturating_sub(first) as f64 / 90_000.0
    }
}

impl JobStatus {
    pub fn new(key: StreamKey, renditions: Vec<RenditionSpec>) -> Self {
        let outputs = renditions.iter().map(|_| OutputCount::new()).collect();
        Self {
            key,
            renditions,
            state: AtomicU8::new(State::Starting as u8),
            run: Mutex::new(None),
            last_error: Mutex::new(None),
            restarts: AtomicU32::new(0),
            input_frames: AtomicU64::new(0),
            outputs,
        }
    }

    /// A new ffmpeg, `pid`, started: the counters start again.
    pub fn started(&self, pid: u32) {
        *locked(&self.run) = Some(Run {
            started: Instant::now(),
            pid,
        });
        self.input_frames.store(0, Ordering::Relaxed);
        for output in &self.outputs {
            output.reset();
        }
        self.set_state(State::Starting);
    }

    fn set_state(&self, state: State) {
        self.state.store(state as u8, Ordering::Relaxed);
    }

    pub fn failed(&self, reason: &str) {
        *locked(&self.last_error) = Some(reason.to_owned());
        self.set_state(State::Restarting);
        *locked(&self.run) = None;
        self.restarts.fetch_add(1, Ordering::Relaxed);
    }

    pub fn refused(&self, reason: &str) {
        *locked(&self.last_error) = Some(reason.to_owned());
        self.set_state(State::Refused);
        *locked(&self.run) = None;
    }

    pub fn input_frame(&self) {
        self.input_frames.fetch_add(1, Ordering::Relaxed);
    }

    /// Rendition `index` published a frame presented at `pts` (90 kHz).
    pub fn output_frame(&self, index: usize, pts: i64) {
        if let Some(output) = self.outputs.get(index) {
            output.frames.fetch_add(1, Ordering::Relaxed);
            output.first.fetch_min(pts, Ordering::Relaxed);
            output.last.fetch_max(pts, Ordering::Relaxed);
        }
        let _ = self.state.compare_exchange(
            State::Starting as u8,
            State::Running as u8,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    /// ffmpeg's CPU over the current run, percent of one core (0 between runs).
    pub fn cpu_percent(&self) -> f64 {
        let run = locked(&self.run);
        let Some(run) = run.as_ref() else {
            return 0.0;
        };
        let elapsed = run.started.elapsed().as_secs_f64();
        process_cpu_secs(run.pid)
            .filter(|_| elapsed > 0.0)
            .map_or(0.0, |secs| round2(secs / elapsed * 100.0))
    }

    /// The transcode as the API shows it.
    pub fn to_json(&self) -> Value {
        let state = State::from_u8(self.state.load(Ordering::Relaxed));
        let run = locked(&self.run);
        let elapsed = run
            .as_ref()
            .map_or(0.0, |r| r.started.elapsed().as_secs_f64());
        let per_second = |count: u64| {
            if elapsed > 0.0 {
                round2(count as f64 / elapsed)
            } else {
                0.0
            }
        };
        let renditions: Vec<Value> = self
            .renditions
            .iter()
            .zip(&self.outputs)
            .map(|(spec, output)| {
                let frames = output.frames.load(Ordering::Relaxed);
                let media_secs = output.media_secs();
                json!({
                    "name": spec.name,
                    "stream": rendition_stream(&self.key.stream, &spec.name),
                    "width": spec.width,
                    "height": spec.height,
                    "video_bitrate": spec.video_bitrate_kbps,
                    "frames": frames,
                    "fps": per_second(frames),
                    "speed": if elapsed > 0.0 { round2(media_secs / elapsed) } else { 0.0 },
                })
            })
            .collect();
        let pid = run.as_ref().map(|r| r.pid);
        drop(run);
        let cpu_percent = self.cpu_percent();
        let input_frames = self.input_frames.load(Ordering::Relaxed);
        json!({
            "app": self.key.app,
            "stream": self.key.stream,
            "state": state.name(),
            "pid": pid,
            "uptime_secs": round2(elapsed),
            "input_frames": input_frames,
            "input_fps": per_second(input_frames),
            "cpu_percent": cpu_percent,
            "restarts": self.restarts.load(Ordering::Relaxed),
            "last_error": *locked(&self.last_error),
            "renditions": renditions,
        })
    }
}

/// The clock ticks `/proc` counts CPU time in: `USER_HZ`, 100 on Linux whatever the
/// kernel's own tick rate (it is part of the kernel's ABI).
const USER_HZ: f64 = 100.0;

fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

/// The CPU seconds (user and system) process `pid` used, from `/proc/<pid>/stat`.
fn process_cpu_secs(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces: fields count from its closing `)`.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After `)`: state is field 3, so utime (14) and stime (15) are at 11 and 12.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / USER_HZ)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strom_ipc::transcode_rules::RenditionAudio;

    #[test]
    fn counts_frames_speed_and_failures() {
        let spec = RenditionSpec {
            name: "low".into(),
            width: 320,
            height: 180,
            video_bitrate_kbps: 300,
            max_fps: None,
            profile: "main".into(),
            preset: "veryfast".into(),
            audio: RenditionAudio::Passthrough,
        };
        let status = JobStatus::new(StreamKey::new("live", "cam"), vec![spec]);
        assert_eq!(status.to_json()["state"], "starting");
        status.started(std::process::id());
        status.input_frame();
        status.output_frame(0, 90_000);
        status.output_frame(0, 93_000);
        let json = status.to_json();
        assert_eq!(json["state"], "running");
        assert_eq!(json["input_frames"], 1);
        assert_eq!(json["renditions"][0]["stream"], "cam_low");
        assert_eq!(json["renditions"][0]["frames"], 2);
        assert!(json["cpu_percent"].as_f64().is_some(), "{json}");
        status.failed("ffmpeg exited (signal: 9)");
        let json = status.to_json();
        assert_eq!(
            (json["state"].clone(), json["restarts"].clone()),
            ("restarting".into(), 1.into())
        );
        assert_eq!(json["last_error"], "ffmpeg exited (signal: 9)");
        assert!(json["pid"].is_null());
    }

    #[test]
    fn reads_its_own_cpu() {
        assert!(process_cpu_secs(std::process::id()).is_some());
        assert_eq!(process_cpu_secs(u32::MAX), None);
    }
}
