//! Running the media examples of the docs: the files they send, a publish example kept
//! running while its stream is live, a play example decoding frames (`ffplay` stands for
//! ffprobe here, as there is no display in a test).

use super::common::Server;
use super::common::media::Proc;
use super::common::wait_for;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// What `ffplay` means while the examples run: ffprobe decodes the first packets of the
/// same URL with the same input options and prints one line per decoded frame (there is
/// no display in a test, and ffplay would play until closed).
const FFPLAY_SHIM: &str = "ffplay() { timeout 60 ffprobe -v error -show_entries frame=media_type \
     -of csv=p=0 -read_intervals '%+#60' \"$@\"; }";
/// Frames a play example must decode.
const MIN_FRAMES: usize = 5;
/// Seconds of the media files the examples send (`input.mp4`, `show.mp3`): long enough
/// that a publisher is still sending while the examples after it play.
const MEDIA_SECS: &str = "90";
const STEP: Duration = Duration::from_secs(60);

/// Writes the files the examples name: `input.mp4` (H.264 + AAC) and `show.mp3`.
pub fn write_example_media(dir: &Path) {
    for (file, args) in [
        (
            "input.mp4",
            "-f lavfi -i testsrc=size=320x240:rate=25 -f lavfi -i sine -c:v libx264 \
             -preset ultrafast -g 25 -c:a aac",
        ),
        ("show.mp3", "-f lavfi -i sine -c:a libmp3lame -b:a 128k"),
    ] {
        let output = Command::new("ffmpeg")
            .current_dir(dir)
            .args(["-hide_banner", "-loglevel", "error", "-y"])
            .args(args.split_whitespace())
            .args(["-t", MEDIA_SECS, file])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "making {file}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// Whether `app/stream` is listed in `rtmp_status` (every protocol's live streams are).
pub fn listed(server: &Server, stream: &str) -> bool {
    let Some((app, name)) = stream.split_once('/') else {
        return false;
    };
    server
        .try_get("/manage/rtmp_status")
        .and_then(|(_, groups)| groups.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|g| g["app"] == app)
        .flat_map(|g| g["streams"].as_array().cloned().unwrap_or_default())
        .any(|s| s["strm"] == name)
}

/// A publish example that is running, and the stream it made live.
pub struct Publisher {
    process: Proc,
    stream: String,
    shown: String,
}

impl Publisher {
    /// Stops it and waits until its stream is gone, so the next example may publish it.
    pub fn stop(mut self, server: &Server) {
        let _ = self.process.0.kill();
        let _ = self.process.0.wait();
        wait_for(STEP, "stream ended", || {
            (!listed(server, &self.stream)).then_some(())
        })
        .unwrap_or_else(|| {
            panic!(
                "{}: {} still live after it stopped",
                self.shown, self.stream
            )
        });
    }
}

/// Runs a publish example (`ffmpeg -re ...`) in `dir` until `server` lists the stream it
/// names; it keeps sending until stopped.
pub fn start_publisher(
    server: &Server,
    dir: &Path,
    command: &str,
    stream: String,
    shown: String,
) -> Publisher {
    let log = std::fs::File::create(dir.join("publisher.log")).unwrap();
    let process = super::common::media::spawn(
        Command::new("bash")
            .arg("-c")
            .arg(format!("exec {command}"))
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(log),
    );
    let mut publisher = Publisher {
        process,
        stream,
        shown,
    };
    let live = wait_for(STEP, "published stream live", || {
        if !publisher.process.running() {
            return Some(false);
        }
        listed(server, &publisher.stream).then_some(true)
    });
    let stderr = std::fs::read_to_string(dir.join("publisher.log")).unwrap_or_default();
    assert_eq!(
        live,
        Some(true),
        "{}: {} did not go live (publisher {}): {stderr}\nlog:\n{}",
        publisher.shown,
        publisher.stream,
        if publisher.process.running() {
            "running"
        } else {
            "exited"
        },
        server.log()
    );
    publisher
}

/// Runs a play example (`ffplay URL`, see [`FFPLAY_SHIM`]); the frames it decoded.
pub fn play(dir: &Path, command: &str, shown: &str, server: &Server) -> usize {
    let output = Command::new("bash")
        .arg("-c")
        .arg(format!("{FFPLAY_SHIM}\n{command}"))
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let frames = stdout
        .lines()
        .filter(|l| matches!(l.trim().trim_end_matches(','), "video" | "audio"))
        .count();
    assert!(
        output.status.success() && frames >= MIN_FRAMES,
        "{shown}: decoded {frames} frames ({}): {}\nlog:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr),
        server.log()
    );
    frames
}
