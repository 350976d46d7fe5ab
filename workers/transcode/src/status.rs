//! What one transcode is doing, for `GET /manage/transcodes` and `/metrics`: its state,
//! the frames in and out, the media time the renditions advanced against the wall clock
//! (speed), the ffmpeg process's CPU, its restarts and its last error.

use serde_json::{Value, json};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Instant;
use strom_ipc::transcode_rules::{RenditionSpec, rendition_stream};
use strom_stream::StreamKey;
use strom_worker_runtime::sync::locked;

/// Where a transcode is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    state: Mutex<State>,
    run: Mutex<Option<Run>>,
    last_error: Mutex<Option<String>>,
    restarts: AtomicU32,
    /// Source frames given to the current ffmpeg.
    input_frames: AtomicU64,
    /// Frames each rendition published in the current run, and the span of their
    /// presentation times (first, last; 90 kHz).
    output_frames: Vec<AtomicU64>,
    output_span: Vec<Mutex<Option<(i64, i64)>>>,
}

impl JobStatus {
    pub fn new(key: StreamKey, renditions: Vec<RenditionSpec>) -> Self {
        let count = renditions.len();
        Self {
            key,
            renditions,
            state: Mutex::new(State::Starting),
            run: Mutex::new(None),
            last_error: Mutex::new(None),
            restarts: AtomicU32::new(0),
            input_frames: AtomicU64::new(0),
            output_frames: (0..count).map(|_| AtomicU64::new(0)).collect(),
            output_span: (0..count).map(|_| Mutex::new(None)).collect(),
        }
    }

    /// A new ffmpeg, `pid`, started: the counters start again.
    pub fn started(&self, pid: u32) {
        *locked(&self.run) = Some(Run {
            started: Instant::now(),
            pid,
        });
        self.input_frames.store(0, Ordering::Relaxed);
        for (frames, span) in self.output_frames.iter().zip(&self.output_span) {
            frames.store(0, Ordering::Relaxed);
            *locked(span) = None;
        }
        *locked(&self.state) = State::Starting;
    }

    pub fn failed(&self, reason: &str) {
        *locked(&self.last_error) = Some(reason.to_owned());
        *locked(&self.state) = State::Restarting;
        *locked(&self.run) = None;
        self.restarts.fetch_add(1, Ordering::Relaxed);
    }

    pub fn refused(&self, reason: &str) {
        *locked(&self.last_error) = Some(reason.to_owned());
        *locked(&self.state) = State::Refused;
        *locked(&self.run) = None;
    }

    pub fn input_frame(&self) {
        self.input_frames.fetch_add(1, Ordering::Relaxed);
    }

    /// Rendition `index` published a frame presented at `pts` (90 kHz).
    pub fn output_frame(&self, index: usize, pts: i64) {
        if let Some(frames) = self.output_frames.get(index) {
            frames.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(span) = self.output_span.get(index) {
            let mut span = locked(span);
            *span = Some(match *span {
                Some((first, last)) => (first.min(pts), last.max(pts)),
                None => (pts, pts),
            });
        }
        let mut state = locked(&self.state);
        if *state == State::Starting {
            *state = State::Running;
        }
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
        let state = *locked(&self.state);
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
            .zip(self.output_frames.iter().zip(&self.output_span))
            .map(|(spec, (frames, span))| {
                let frames = frames.load(Ordering::Relaxed);
                let media_secs =
                    locked(span).map_or(0.0, |(first, last)| (last - first) as f64 / 90_000.0);
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
