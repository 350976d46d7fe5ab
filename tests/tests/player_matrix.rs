//! The player matrix: the players people use play every HTTP output of strom.
//!
//! Each test starts one strom with three live inputs and has one player play each output
//! it supports:
//! - `live/obs`: an OBS-like publisher over RTMP (x264 with OBS's default keyframe
//!   interval "auto", 250 frames at 30 fps, and 2 B-frames), delivered as HLS (MPEG-TS and
//!   fMP4), DASH and DVR;
//! - `live/obsll`: the same encoding (one encoder, published twice) as LL-HLS;
//! - `live/cam`: MPEG-TS over UDP whose sender runs before strom starts, so the input is
//!   joined in the middle of a GOP, delivered as HLS and DASH;
//! - `live/std`: the README's quick start at the shipped defaults: x264 with a 2 s
//!   keyframe interval over RTMP, HLS (MPEG-TS and fMP4) and DASH in 6 s segments
//!   (`segment_duration_secs` 6), where the others use 2 s.
//!
//! Players: hls.js, dash.js and Shaka Player (with mux.js for MPEG-TS) in headless
//! Chromium, VLC (`cvlc`, frames written by its `yuv` video output, which shows them in
//! time), GStreamer (`gst-launch-1.0` with `hlsdemux`/`dashdemux`, and `playbin`, which
//! picks `hlsdemux2`/`dashdemux2`), ffmpeg. Every cell asserts that frames were decoded
//! and that playback advanced, with generous bounds (no latency bound: the figures are
//! `bench/player_latency`'s). A cell a player cannot support at all is left out, with
//! the player's reason at its list.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::browser::{
    DASH_JS, MUX_JS, SHAKA_JS, playback_problems, require_browser, run_script, serve_player,
};
use common::media::{Proc, ffmpeg};
use common::vlc::cvlc;
use common::{Server, curl_text, free_port, require_tool, wait_for};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long strom may take to list the first segments of an input.
const LIVE: Duration = Duration::from_secs(90);
/// How long a command-line player plays each cell (all its cells at once).
const PLAY: Duration = Duration::from_secs(20);
/// At least this much media must have played in a cell: a few seconds, far less than
/// the time given, so that a busy machine passes and a player that stops does not.
const MIN_PLAYED_SECS: f64 = 3.0;
/// At least this many video frames decoded (30 fps: 3 s).
const MIN_FRAMES: usize = 90;

/// One output of the matrix's inputs.
#[derive(Clone, Copy, Debug)]
enum Output {
    HlsTs,
    HlsFmp4,
    LlHls,
    Dash,
    DvrTs,
    DvrFmp4,
    UdpHlsTs,
    UdpDash,
    StdHlsTs,
    StdHlsFmp4,
    StdDash,
}

impl Output {
    fn path(self) -> &'static str {
        match self {
            Output::HlsTs => "live/obs/playlist.m3u8",
            Output::HlsFmp4 => "live/obs/playlist_fmp4.m3u8",
            Output::LlHls => "live/obsll/playlist_fmp4.m3u8",
            Output::Dash => "live/obs/manifest.mpd",
            Output::DvrTs => "live/obs/playlist_dvr.m3u8",
            Output::DvrFmp4 => "live/obs/playlist_fmp4_dvr.m3u8",
            Output::UdpHlsTs => "live/cam/playlist.m3u8",
            Output::UdpDash => "live/cam/manifest.mpd",
            Output::StdHlsTs => "live/std/playlist.m3u8",
            Output::StdHlsFmp4 => "live/std/playlist_fmp4.m3u8",
            Output::StdDash => "live/std/manifest.mpd",
        }
    }
}

/// A strom with the three inputs live and every output listing segments, and the
/// player pages served on another origin.
struct Matrix {
    server: Server,
    page_origin: String,
    _publisher: Proc,
    _camera: Proc,
    _default_publisher: Proc,
}

impl Matrix {
    fn start() -> Self {
        require_tool("ffmpeg", "ffmpeg");
        require_tool("curl", "curl");
        let page_port = free_port();
        let page_origin = format!("http://127.0.0.1:{page_port}");
        let mut server = Server::prepare(&format!("access_control_allow_origin = {page_origin}"));
        let udp_port = free_port();
        std::fs::write(
            server.path("rules.conf"),
            format!(
                r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {rtmp}}}]}},
 "Delivery": {{"outputs": ["HLS", "DASH"], "segment_duration_secs": 2,
   "streams": [{{"app": "live", "stream": "obs", "outputs": ["HLS", "DASH", "DVR"]}},
               {{"app": "live", "stream": "obsll", "outputs": ["HLS", "LLHLS"]}},
               {{"app": "live", "stream": "std", "segment_duration_secs": 6}}]}},
 "Dvr": {{"segment_duration_secs": 2, "min_free_space_mb": 0}},
 "Cameras": [{{"id": "cam", "ip": "127.0.0.1", "port": {udp_port}, "protocol": "udp", "app": "live", "stream": "cam"}}]}}"#,
                rtmp = server.ports.rtmp
            ),
        )
        .unwrap();
        // The camera sends before strom listens: strom joins its stream mid-GOP (3 s GOPs).
        let camera = ffmpeg(&format!(
            "-hide_banner -loglevel error -re -f lavfi -i testsrc2=size=320x240:rate=30 \
             -f lavfi -i sine=frequency=440:sample_rate=48000 -c:v libx264 -preset veryfast \
             -g 90 -bf 2 -pix_fmt yuv420p -c:a aac -b:a 96k -t 600 -f mpegts \
             udp://127.0.0.1:{udp_port}?pkt_size=1316"
        ));
        std::thread::sleep(Duration::from_millis(1500));
        server.spawn();
        server.wait_ready();
        let rtmp = |stream: &str| format!("rtmp://127.0.0.1:{}/live/{stream}", server.ports.rtmp);
        // OBS's defaults: x264, keyframe interval "auto" (250 frames), 2 B-frames, AAC
        // 48 kHz. One encoder, published to both streams.
        let publisher = ffmpeg(&format!(
            "-hide_banner -loglevel error -re -f lavfi -i testsrc2=size=320x240:rate=30 \
             -f lavfi -i sine=frequency=330:sample_rate=48000 -map 0:v -map 1:a \
             -c:v libx264 -preset veryfast -profile:v high -g 250 -bf 2 -pix_fmt yuv420p \
             -flags +global_header -c:a aac -b:a 128k -t 600 -f tee \
             [f=flv:onfail=ignore]{}|[f=flv:onfail=ignore]{}",
            rtmp("obs"),
            rtmp("obsll")
        ));
        // The README's quick start (smaller): a 2 s keyframe interval.
        let default_publisher = ffmpeg(&format!(
            "-hide_banner -loglevel error -re -f lavfi -i testsrc2=size=320x240:rate=30 \
             -f lavfi -i sine -c:v libx264 -preset veryfast -pix_fmt yuv420p -g 60 \
             -c:a aac -t 600 -f flv {}",
            rtmp("std")
        ));
        let matrix = Matrix {
            server,
            page_origin,
            _publisher: publisher,
            _camera: camera,
            _default_publisher: default_publisher,
        };
        for output in [
            Output::HlsTs,
            Output::LlHls,
            Output::DvrTs,
            Output::UdpHlsTs,
            Output::StdHlsTs,
        ] {
            matrix.wait_segments(output, 2);
        }
        for output in [Output::Dash, Output::UdpDash, Output::StdDash] {
            let url = matrix.url(output);
            wait_for(LIVE, "a manifest listing segments", || {
                let (status, body) = curl_text(&url);
                (status == 200 && body.contains("<S ")).then_some(())
            })
            .unwrap_or_else(|| panic!("{url}: no segments; log:\n{}", matrix.server.log()));
        }
        serve_player(page_port);
        matrix
    }

    fn url(&self, output: Output) -> String {
        format!(
            "http://127.0.0.1:{}/{}",
            self.server.ports.http,
            output.path()
        )
    }

    /// Waits until the media playlist of `output`'s master lists `min` segments.
    fn wait_segments(&self, output: Output, min: usize) {
        let master = self.url(output);
        let base = master.rsplit_once('/').unwrap().0.to_owned();
        wait_for(LIVE, "segments in the playlist", || {
            let (status, body) = curl_text(&master);
            if status != 200 {
                return None;
            }
            let media = body
                .lines()
                .find(|l| !l.starts_with('#') && !l.is_empty())?;
            let (status, media) = curl_text(&format!("{base}/{media}"));
            (status == 200 && media.matches("#EXTINF").count() >= min).then_some(())
        })
        .unwrap_or_else(|| panic!("{master}: not {min} segments; log:\n{}", self.server.log()));
    }

    /// Fails the test with every failed cell, if any.
    fn assert_all_played(&self, player: &str, failures: &[String]) {
        assert!(
            failures.is_empty(),
            "{player} failed {} cell(s):\n{}\nstrom log:\n{}",
            failures.len(),
            failures.join("\n"),
            self.server.log()
        );
    }
}

// ---- players in Chromium -------------------------------------------------------------

/// Plays each cell with the player `page` (tests/browser) for play.mjs's 10 s window;
/// what went wrong, per cell.
fn play_in_chromium(matrix: &Matrix, page: &str, cells: &[(Output, &str)]) -> Vec<String> {
    let shots = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for (output, parameters) in cells {
        let page_url = format!(
            "{}/{page}?src={}{parameters}",
            matrix.page_origin,
            matrix.url(*output)
        );
        let shot = shots.path().join(format!("{output:?}.png"));
        let result = match run_script("play.mjs", &[&page_url, &shot.to_string_lossy()], 120) {
            Ok(result) => result,
            Err(e) => {
                failures.push(format!("{output:?}: {e}"));
                continue;
            }
        };
        // The page and the stream on different origins: strom's CORS answers let it in.
        let stream_origin = format!("http://127.0.0.1:{}", matrix.server.ports.http);
        let mut problems = playback_problems(
            &result,
            MIN_PLAYED_SECS,
            &stream_origin,
            &matrix.page_origin,
        );
        let frames = result["totalVideoFrames"].as_u64().unwrap_or(0);
        if frames < MIN_FRAMES as u64 {
            problems.push(format!("{frames} video frames decoded"));
        }
        // dash.js reports what it loaded per adaptation set: both must have come.
        if page == "dash.html" {
            for track in ["video", "audio"] {
                if result["fragLevels"][track].as_u64().unwrap_or(0) == 0 {
                    problems.push(format!("no {track} segment loaded"));
                }
            }
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{output:?} ({}): {}; page log {}",
                matrix.url(*output),
                problems.join("; "),
                result["log"]
            ));
        }
    }
    failures
}

/// hls.js plays HLS only (its own scope: "a JavaScript library that implements an HTTP
/// Live Streaming client"): every HLS output, LL-HLS in its `lowLatencyMode`.
#[test]
fn hls_js_plays_every_hls_output() {
    require_browser(&["hls.js/dist/hls.min.js"]);
    let matrix = Matrix::start();
    let failures = play_in_chromium(
        &matrix,
        "index.html",
        &[
            (Output::HlsTs, ""),
            (Output::HlsFmp4, ""),
            (Output::LlHls, "&lowLatency=1"),
            (Output::DvrTs, ""),
            (Output::UdpHlsTs, ""),
            (Output::StdHlsTs, ""),
            (Output::StdHlsFmp4, ""),
        ],
    );
    matrix.assert_all_played("hls.js", &failures);
}

/// dash.js plays MPEG-DASH only ("a reference client implementation for the playback of
/// MPEG DASH"): both inputs' manifests.
#[test]
fn dash_js_plays_the_dash_outputs() {
    require_browser(&[DASH_JS.trim_start_matches("node_modules/")]);
    let matrix = Matrix::start();
    let failures = play_in_chromium(
        &matrix,
        "dash.html",
        &[
            (Output::Dash, ""),
            (Output::UdpDash, ""),
            (Output::StdDash, ""),
        ],
    );
    matrix.assert_all_played("dash.js", &failures);
}

/// Shaka Player plays HLS (MPEG-TS through mux.js), LL-HLS in its `lowLatencyMode`,
/// DASH and the fMP4 DVR playlist.
#[test]
fn shaka_player_plays_hls_dash_and_dvr() {
    require_browser(&[
        SHAKA_JS.trim_start_matches("node_modules/"),
        MUX_JS.trim_start_matches("node_modules/"),
    ]);
    let matrix = Matrix::start();
    let failures = play_in_chromium(
        &matrix,
        "shaka.html",
        &[
            (Output::HlsTs, ""),
            (Output::HlsFmp4, ""),
            (Output::LlHls, "&lowLatency=1"),
            (Output::Dash, ""),
            (Output::DvrFmp4, ""),
            (Output::StdDash, ""),
        ],
    );
    matrix.assert_all_played("Shaka Player", &failures);
}

// ---- command-line players ------------------------------------------------------------

/// What a command-line player showed: video frames and the media time they span.
struct Played {
    frames: usize,
    span_secs: f64,
}

/// Reads what a stopped player played (from its output or the files it wrote).
type ReadPlayed = Box<dyn FnOnce(&mut Proc) -> Result<Played, String>>;

/// A command-line player running one cell, with how to read what it played.
struct Cell {
    label: String,
    process: Proc,
    read: ReadPlayed,
}

/// Runs every cell at once for [`PLAY`], then checks each; what went wrong, per cell.
fn play_cells(cells: Vec<Cell>) -> Vec<String> {
    let begin = Instant::now();
    let mut cells = cells;
    while begin.elapsed() < PLAY {
        std::thread::sleep(Duration::from_millis(250));
    }
    let mut failures = Vec::new();
    for cell in &mut cells {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(cell.process.0.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        );
    }
    std::thread::sleep(Duration::from_millis(500));
    for cell in cells {
        let Cell {
            label,
            mut process,
            read,
        } = cell;
        let _ = process.0.kill();
        let _ = process.0.wait();
        match read(&mut process) {
            Ok(played) if played.frames >= MIN_FRAMES && played.span_secs >= MIN_PLAYED_SECS => {
                eprintln!(
                    "{label}: {} frames over {:.1} s",
                    played.frames, played.span_secs
                );
            }
            Ok(played) => failures.push(format!(
                "{label}: {} frames over {:.2} s of media{}",
                played.frames,
                played.span_secs,
                stderr_tail(&mut process)
            )),
            Err(e) => failures.push(format!("{label}: {e}{}", stderr_tail(&mut process))),
        }
    }
    failures
}

/// The end of what a stopped process wrote to stderr, for a failure message.
fn stderr_tail(process: &mut Proc) -> String {
    let mut text = String::new();
    if let Some(mut stderr) = process.0.stderr.take() {
        let _ = stderr.read_to_string(&mut text);
    }
    if text.trim().is_empty() {
        return String::new();
    }
    let tail: Vec<&str> = text.lines().rev().take(25).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    format!("\n    stderr: {}", tail.join("\n    "))
}

/// `command` started with its stdout read on a thread (players write all along: the pipe
/// must never fill) and its stderr kept.
fn spawn_reading_stdout(command: &mut Command) -> (Proc, std::thread::JoinHandle<String>) {
    let mut process = Proc(
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut stdout = process.0.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    (process, reader)
}

/// ffmpeg decodes the cell's video in real time (`-re`, as ffplay would show it) and
/// writes a CRC per frame.
fn ffmpeg_cell(matrix: &Matrix, output: Output) -> Cell {
    let url = matrix.url(output);
    let (process, reader) = spawn_reading_stdout(
        Command::new("ffmpeg")
            .args(["-hide_banner", "-nostdin", "-loglevel", "error"])
            .args(["-rw_timeout", "20000000", "-re", "-i", &url])
            .args(["-map", "0:v:0", "-f", "framecrc", "-"]),
    );
    Cell {
        label: format!("ffmpeg {output:?} ({url})"),
        process,
        read: Box::new(move |process| {
            let text = reader.join().unwrap_or_default();
            let stderr = stderr_tail(process);
            // A segment that starts without its parameter sets or keyframe: the decoder
            // complains (the defect of packaging mid-GOP cuts).
            if stderr.contains("non-existing PPS") || stderr.contains("no frame!") {
                return Err(format!("decoder errors{stderr}"));
            }
            parse_framecrc(&text)
        }),
    }
}

/// Frames and media span of ffmpeg's framecrc output (`#tb 0: 1/90000` and lines
/// `0, dts, pts, duration, size, crc`).
fn parse_framecrc(text: &str) -> Result<Played, String> {
    let mut timebase = None;
    let mut pts = Vec::new();
    for line in text.lines() {
        if let Some(tb) = line.strip_prefix("#tb 0: ") {
            let (num, den) = tb.trim().split_once('/').ok_or("bad #tb")?;
            timebase = Some(num.parse::<f64>().unwrap_or(0.0) / den.parse::<f64>().unwrap_or(1.0));
        } else if !line.starts_with('#') {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            if fields.len() >= 3 && fields[0] == "0" {
                pts.push(
                    fields[2]
                        .parse::<i64>()
                        .map_err(|e| format!("{line}: {e}"))?,
                );
            }
        }
    }
    let timebase = timebase.ok_or_else(|| format!("no frames; output {text:.300}"))?;
    let span = match (pts.iter().min(), pts.iter().max()) {
        (Some(first), Some(last)) => (last - first) as f64 * timebase,
        _ => 0.0,
    };
    Ok(Played {
        frames: pts.len(),
        span_secs: span,
    })
}

/// ffmpeg plays every output of both inputs.
#[test]
fn ffmpeg_plays_every_output() {
    let matrix = Matrix::start();
    let cells = [
        Output::HlsTs,
        Output::HlsFmp4,
        Output::LlHls,
        Output::Dash,
        Output::DvrTs,
        Output::DvrFmp4,
        Output::UdpHlsTs,
        Output::UdpDash,
        Output::StdHlsTs,
        Output::StdHlsFmp4,
        Output::StdDash,
    ]
    .into_iter()
    .map(|output| ffmpeg_cell(&matrix, output))
    .collect();
    let failures = play_cells(cells);
    matrix.assert_all_played("ffmpeg", &failures);
}

/// VLC plays the cell with its `yuv` video output, which writes each frame (raw I420)
/// when it is shown: frames written = frames played in time.
fn vlc_cell(matrix: &Matrix, home: &std::path::Path, output: Output) -> Cell {
    let url = matrix.url(output);
    let frames_file = home.join(format!("{output:?}.yuv"));
    let process = {
        let mut command = cvlc(home);
        command
            .arg(&url)
            .args(["--vout", "yuv", "--yuv-chroma", "I420", "--aout", "adummy"])
            .arg(format!("--yuv-file={}", frames_file.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        Proc(command.spawn().unwrap())
    };
    Cell {
        label: format!("VLC {output:?} ({url})"),
        process,
        read: Box::new(move |_| {
            let bytes = std::fs::metadata(&frames_file)
                .map(|m| m.len())
                .unwrap_or(0);
            let frames = (bytes / (320 * 240 * 3 / 2)) as usize;
            // Frames shown in time: the media span is the frame count at 30 fps.
            Ok(Played {
                frames,
                span_secs: frames as f64 / 30.0,
            })
        }),
    }
}

/// VLC plays every HLS and DASH output (LL-HLS as regular HLS: VLC 3 ignores parts).
#[test]
fn vlc_plays_every_output() {
    let matrix = Matrix::start();
    let home = tempfile::tempdir().unwrap();
    // VLC runs as nobody when the test runs as root (common::vlc): it writes here.
    std::fs::set_permissions(
        home.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let cells = [
        Output::HlsTs,
        Output::HlsFmp4,
        Output::LlHls,
        Output::Dash,
        Output::DvrTs,
        Output::UdpHlsTs,
        Output::StdHlsTs,
        Output::StdHlsFmp4,
        Output::StdDash,
    ]
    .into_iter()
    .map(|output| vlc_cell(&matrix, home.path(), output))
    .collect();
    let failures = play_cells(cells);
    matrix.assert_all_played("VLC", &failures);
}

/// GStreamer plays the cell in time (`sync=true`) into a fake sink that reports every
/// video buffer (`-v`, `silent=false`).
fn gstreamer_cell(matrix: &Matrix, output: Output, demuxer: &str) -> Cell {
    require_tool(
        "gst-launch-1.0",
        "gstreamer1.0-tools gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-libav",
    );
    let url = matrix.url(output);
    let video_sink = "fakesink name=video sync=true silent=false";
    let pipeline = match demuxer {
        "playbin" => format!(
            "playbin uri={url} video-sink=\"{video_sink}\" audio-sink=\"fakesink sync=true\""
        ),
        // dashdemux exposes one pad per adaptation set.
        "dashdemux" => format!(
            "souphttpsrc location={url} ! dashdemux name=demux \
             demux.video_00 ! queue ! decodebin ! videoconvert ! {video_sink} \
             demux.audio_00 ! queue ! decodebin ! audioconvert ! fakesink sync=true"
        ),
        _ => format!(
            "souphttpsrc location={url} ! {demuxer} ! decodebin name=decode \
             decode. ! queue ! video/x-raw ! videoconvert ! {video_sink} \
             decode. ! queue ! audio/x-raw ! audioconvert ! fakesink sync=true"
        ),
    };
    let (process, reader) = spawn_reading_stdout(
        Command::new("sh")
            .arg("-c")
            .arg(format!("exec gst-launch-1.0 -v {pipeline}")),
    );
    Cell {
        label: format!("GStreamer {demuxer} {output:?} ({url})"),
        process,
        read: Box::new(move |_| {
            let text = reader.join().unwrap_or_default();
            parse_fakesink(&text).ok_or_else(|| {
                let tail: Vec<&str> = text.lines().rev().take(15).collect();
                format!("no video buffers; stdout ends {tail:?}")
            })
        }),
    }
}

/// Frames and media span of the `video` fake sink's `last-message` lines
/// (`... (video:sink) (115200 bytes, dts: ..., pts: 0:00:05.033333333, ...`).
fn parse_fakesink(text: &str) -> Option<Played> {
    let pts: Vec<f64> = text
        .lines()
        .filter(|l| l.contains("GstFakeSink:video") && l.contains("chain"))
        .filter_map(|l| {
            let clock = l.split("pts: ").nth(1)?.split(',').next()?;
            let mut parts = clock.split(':');
            let hours: f64 = parts.next()?.parse().ok()?;
            let minutes: f64 = parts.next()?.parse().ok()?;
            let seconds: f64 = parts.next()?.parse().ok()?;
            Some(hours * 3600.0 + minutes * 60.0 + seconds)
        })
        .collect();
    let first = pts.iter().copied().reduce(f64::min)?;
    let last = pts.iter().copied().reduce(f64::max)?;
    Some(Played {
        frames: pts.len(),
        span_secs: last - first,
    })
}

/// GStreamer 1.22 plays every output with the demuxers the issue names (`hlsdemux`,
/// `dashdemux`) and with `playbin` (which picks the newer `hlsdemux2`/`dashdemux2`).
#[test]
fn gstreamer_plays_every_output() {
    let matrix = Matrix::start();
    let mut cells: Vec<Cell> = [
        Output::HlsTs,
        Output::HlsFmp4,
        Output::LlHls,
        Output::DvrTs,
        Output::UdpHlsTs,
        Output::StdHlsTs,
    ]
    .into_iter()
    .map(|output| gstreamer_cell(&matrix, output, "hlsdemux"))
    .collect();
    cells.push(gstreamer_cell(&matrix, Output::Dash, "dashdemux"));
    cells.push(gstreamer_cell(&matrix, Output::StdDash, "dashdemux"));
    for output in [Output::HlsFmp4, Output::Dash] {
        cells.push(gstreamer_cell(&matrix, output, "playbin"));
    }
    let failures = play_cells(cells);
    matrix.assert_all_played("GStreamer", &failures);
}
