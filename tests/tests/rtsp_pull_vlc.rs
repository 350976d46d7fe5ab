//! VLC's own RTSP server (`--sout '#rtp{sdp=rtsp://...}'`, UDP only) as a pulled source.
//! A pull that joins mid-frame gets an FU-A fragment without its start, which retina
//! reports and goes on from: the pull skips the packet (a rate-limited warning) instead
//! of ending, so the stream stays published for the whole run with no reconnect. The
//! source has B-frames, so the pull's derived decode times are checked over RTMP too.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, TEST_SOURCE, ffmpeg, is_live, rtmp_url, video_packet_times, wait_live};
use common::vlc::run_cvlc;
use common::{Server, free_port, wait_for};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

const LIVE: Duration = Duration::from_secs(30);
/// How long the pull must stay up.
const WATCHED: Duration = Duration::from_secs(25);

/// A 90 s H.264 (B-frames, 2 Mb/s so that frames span many FU-A fragments) + AAC file.
fn source_file(dir: &Path) -> std::path::PathBuf {
    let file = dir.join("source.ts");
    let mut encoder = ffmpeg(&format!(
        "-hide_banner -nostats -loglevel error {TEST_SOURCE} -t 90 -c:v libx264 \
         -preset ultrafast -bf 2 -b:v 2M -g 50 -pix_fmt yuv420p -c:a aac -b:a 64k -y {}",
        file.display()
    ));
    let code = encoder.wait_exit(Duration::from_secs(120));
    assert_eq!(code, Some(0), "ffmpeg: {}", encoder.stop_and_stderr());
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    file
}

/// VLC serving `file` once, in real time, at `rtsp://127.0.0.1:<port>/vlc`.
fn vlc_serve(file: &Path, port: u16, home: &Path) -> Proc {
    let sout = format!("#rtp{{sdp=rtsp://127.0.0.1:{port}/vlc}}");
    let file = file.display().to_string();
    run_cvlc(home, &["--play-and-exit", &file, "--sout", &sout])
}

#[test]
fn a_vlc_rtsp_source_stays_pulled_through_bad_packets() {
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let file = source_file(home.path());
    let vlc_port = free_port();
    let mut vlc = vlc_serve(&file, vlc_port, home.path());

    let mut server = Server::prepare("");
    let rules = format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": 2}},
            "RtmpPullSources": [{{"app": "live", "stream": "vlc",
                                  "url": "rtsp://127.0.0.1:{vlc_port}/vlc", "transport": "udp"}}]}}"#,
        server.ports.rtmp
    );
    std::fs::write(server.path("rules.conf"), rules).unwrap();
    server.spawn();
    server.wait_ready();
    wait_live(&server, "live", "vlc", LIVE).unwrap_or_else(|| {
        panic!(
            "VLC's stream not pulled: {}\n{}",
            vlc.stop_and_stderr(),
            server.log()
        )
    });

    // Live all along: never unpublished, never reconnected (VLC answers 500 until its
    // stream runs, so only what follows going live counts).
    let live_at = server.log().len();
    let since = Instant::now();
    while since.elapsed() < WATCHED {
        assert!(
            is_live(&server, "live", "vlc"),
            "the pull ended after {:?}\n{}",
            since.elapsed(),
            server.log()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let log = server.log();
    let after = log.get(live_at..).unwrap_or_default();
    assert!(
        !after.contains("RTSP pull failed") && !after.contains("stream unpublished"),
        "{log}"
    );

    // B-frames through the pull: decode times in order over RTMP.
    let url = rtmp_url(&server, "live/vlc");
    let (times, _) = wait_for(LIVE, "video over RTMP", || {
        let (times, warnings) = video_packet_times(&url, 4);
        (times.len() > 25).then_some((times, warnings))
    })
    .unwrap_or_else(|| panic!("no video over RTMP\n{}", server.log()));
    assert!(times.iter().all(|(dts, pts)| dts <= pts), "{times:?}");
    assert!(times.windows(2).all(|w| w[0].0 < w[1].0), "{times:?}");
    assert!(
        vlc.running(),
        "VLC still serving: {}",
        vlc.stop_and_stderr()
    );
}
