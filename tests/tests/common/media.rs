//! Real media clients for the end-to-end tests: ffmpeg publishers and players, ffprobe.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use super::{Server, require_tool, wait_for};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A child process killed when dropped.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Proc {
    /// Waits up to `limit` for the process to exit; its exit code.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        wait_for(limit, "process exit", || self.0.try_wait().ok().flatten())
            .map(|s| s.code().unwrap_or(-1))
    }

    pub fn running(&mut self) -> bool {
        matches!(self.0.try_wait(), Ok(None))
    }

    /// Stops the process and returns what it wrote to stderr (for failure messages).
    pub fn stop_and_stderr(&mut self) -> String {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let mut text = String::new();
        if let Some(mut stderr) = self.0.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        }
        text
    }
}

/// ffmpeg publishing a live H.264 + AAC test source (320x240, 25 fps, 1 s GOP) to `url`.
pub fn publish(url: &str) -> Proc {
    publish_as(url, "flv")
}

/// [`publish`] in another container: `mpegts` for UDP, SRT and RIST inputs.
pub fn publish_as(url: &str, format: &str) -> Proc {
    publish_coded(url, format, "libx264")
}

/// ffmpeg reading the live test source ([`TEST_SOURCE`]) in real time; the caller adds
/// the encoding and the output.
pub fn test_source() -> Command {
    require_tool("ffmpeg", "ffmpeg");
    let mut command = Command::new("ffmpeg");
    command
        .args(["-hide_banner", "-loglevel", "error", "-re"])
        .args(TEST_SOURCE.split_whitespace())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// [`publish_as`] with another video encoder (`libx265`).
pub fn publish_coded(url: &str, format: &str, video_codec: &str) -> Proc {
    ffmpeg(&format!(
        "-hide_banner -loglevel error -re {TEST_SOURCE} -c:v {video_codec} -preset ultrafast \
         -tune zerolatency -g 25 -pix_fmt yuv420p -c:a aac -b:a 64k -t 120 -f {format} {url}"
    ))
}

/// ffmpeg's live test source: 320x240 test pattern at 25 fps and a 440 Hz tone.
pub const TEST_SOURCE: &str = "-f lavfi -i testsrc=size=320x240:rate=25 \
    -f lavfi -i sine=frequency=440:sample_rate=44100";

/// ffmpeg running with the whitespace-separated arguments of `line`, its stderr kept
/// for [`Proc::stop_and_stderr`].
pub fn ffmpeg(line: &str) -> Proc {
    require_tool("ffmpeg", "ffmpeg");
    spawn(Command::new("ffmpeg").args(line.split_whitespace()))
}

/// `command` started with no input and its output dropped, its stderr kept for
/// [`Proc::stop_and_stderr`].
pub fn spawn(command: &mut Command) -> Proc {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Proc(child)
}

/// ffmpeg reading `url` and throwing the frames away, until killed.
pub fn play(url: &str) -> Proc {
    require_tool("ffmpeg", "ffmpeg");
    let child = Command::new("ffmpeg")
        .args([
            "-hide_banner",
            "-loglevel",
            "error",
            "-i",
            url,
            "-f",
            "null",
            "-",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Proc(child)
}

/// Runs ffprobe with `args` and returns stdout.
pub fn ffprobe(args: &[&str]) -> String {
    require_tool("ffprobe", "ffmpeg");
    let output = Command::new("timeout")
        .arg("30")
        .arg("ffprobe")
        .args(["-hide_banner", "-v", "error"])
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `codec_type,codec_name,width,height` lines of the streams ffprobe sees at `url`.
pub fn probe_streams(url: &str) -> Vec<String> {
    ffprobe(&[
        "-show_entries",
        "stream=codec_type,codec_name,width,height",
        "-of",
        "csv=p=0",
        url,
    ])
    .lines()
    .map(|l| l.trim().trim_end_matches(',').to_owned())
    .filter(|l| !l.is_empty())
    .collect()
}

/// Waits until `app/stream` is listed in `rtmp_status`; returns the stream entry.
pub fn wait_live(
    server: &Server,
    app: &str,
    stream: &str,
    limit: Duration,
) -> Option<serde_json::Value> {
    wait_for(limit, "stream live", || {
        let (_, groups) = server.try_get("/manage/rtmp_status")?;
        groups
            .as_array()?
            .iter()
            .filter(|g| g["app"] == app)
            .flat_map(|g| g["streams"].as_array().cloned().unwrap_or_default())
            // Live once video reports a size: `resolution` is omitted until then (older
            // builds sent "0x0").
            .find(|s| {
                s["strm"] == stream && s["resolution"].is_string() && s["resolution"] != "0x0"
            })
    })
}

pub fn is_live(server: &Server, app: &str, stream: &str) -> bool {
    let (_, groups) = server.get("/manage/rtmp_status");
    groups.as_array().unwrap().iter().any(|g| {
        g["app"] == app
            && g["streams"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["strm"] == stream)
    })
}

pub fn rtmp_url(server: &Server, path: &str) -> String {
    format!("rtmp://127.0.0.1:{}/{path}", server.ports.rtmp)
}

/// ffmpeg sending a live sine as an Icecast source to `url` (`icecast://...`): `codec`
/// is `mp3` or `aac`, at `bitrate` (`128k`); `legacy` uses `SOURCE` instead of `PUT`.
pub fn icecast_source(url: &str, codec: &str, bitrate: &str, legacy: bool) -> Proc {
    require_tool("ffmpeg", "ffmpeg");
    let (encoder, format, content_type) = match codec {
        "mp3" => ("libmp3lame", "mp3", "audio/mpeg"),
        _ => ("aac", "adts", "audio/aac"),
    };
    let mut command = Command::new("ffmpeg");
    command
        .args(["-hide_banner", "-loglevel", "error", "-re"])
        .args(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100"])
        .args(["-c:a", encoder, "-b:a", bitrate, "-t", "120"])
        .args(["-ice_name", "Strom Radio", "-ice_genre", "Test Tones"])
        .args(["-ice_description", "A sine", "-content_type", content_type])
        .args(["-f", format]);
    if legacy {
        command.args(["-legacy_icecast", "1"]);
    }
    spawn(command.arg(url))
}

/// Decode and presentation times (90 kHz or the container's timebase) of the video
/// packets ffprobe reads in the first `seconds` of `url`, and its warnings (timestamp
/// complaints such as "DTS out of order" or "non monotonically increasing dts").
pub fn video_packet_times(url: &str, seconds: u32) -> (Vec<(i64, i64)>, String) {
    require_tool("ffprobe", "ffmpeg");
    let output = Command::new("timeout")
        .arg("60")
        .arg("ffprobe")
        .args(["-hide_banner", "-v", "warning", "-select_streams", "v:0"])
        .args(["-read_intervals", &format!("%+{seconds}")])
        // ffprobe writes a packet's fields in its own order: pts, then dts.
        .args(["-show_entries", "packet=pts,dts", "-of", "csv=p=0", url])
        .output()
        .unwrap();
    let times = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let (pts, dts) = line.trim().trim_end_matches(',').split_once(',')?;
            Some((dts.parse().ok()?, pts.parse().ok()?))
        })
        .collect();
    (times, String::from_utf8_lossy(&output.stderr).into_owned())
}

/// What ffmpeg says when it remuxes the first `seconds` of `url` (audio and video
/// copied into MPEG-TS): empty when every timestamp is in order.
pub fn remux_complaints(url: &str, seconds: u32) -> String {
    require_tool("ffmpeg", "ffmpeg");
    let output = Command::new("timeout")
        .arg("60")
        .arg("ffmpeg")
        .args(["-hide_banner", "-nostats", "-v", "warning", "-i", url])
        .args([
            "-t",
            &seconds.to_string(),
            "-c",
            "copy",
            "-f",
            "mpegts",
            "-y",
            "/dev/null",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stderr).into_owned()
}
