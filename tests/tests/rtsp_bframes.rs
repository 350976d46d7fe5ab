//! RTSP publishers with B-frames (ffmpeg's default libx264 settings, and libx265):
//! RTP carries presentation times only, so strom derives decode times from the
//! stream's reorder depth. Played over RTMP (H.264; ffmpeg 5 reads no H.265 over RTMP)
//! and HLS (H.265), every video packet has `dts <= pts`, decode times only increase,
//! frames really are reordered (some `pts > dts`), and neither ffprobe nor an ffmpeg
//! remux complains about the timestamps.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{
    Proc, TEST_SOURCE, ffmpeg, remux_complaints, rtmp_url, video_packet_times, wait_live,
};
use common::{Server, free_port, wait_for};
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(30);

/// ffmpeg publishing the live test source over RTSP (TCP) with `video_codec` at its
/// default settings: B-frames in a pyramid.
fn publish_b_frames(url: &str, video_codec: &str) -> Proc {
    ffmpeg(&format!(
        "-hide_banner -nostats -loglevel error -re {TEST_SOURCE} -c:v {video_codec} -g 50 \
         -pix_fmt yuv420p -c:a aac -b:a 64k -t 120 -f rtsp -rtsp_transport tcp {url}"
    ))
}

/// Timestamp complaints of a player, as ffprobe and ffmpeg word them.
fn complaints(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| {
            let l = l.to_lowercase();
            l.contains("out of order") || l.contains("monoton") || l.contains("pts < dts")
        })
        .collect()
}

#[test]
fn b_frame_rtsp_publishers_play_over_rtmp_in_decode_order() {
    let rtsp_port = free_port();
    let mut server = Server::prepare("");
    let rules = format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": 2}},
            "RtspSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {rtsp_port}}}]}}}}"#,
        server.ports.rtmp
    );
    std::fs::write(server.path("rules.conf"), rules).unwrap();
    server.spawn();
    server.wait_ready();
    let hls = |stream: &str| {
        format!(
            "http://127.0.0.1:{}/live/{stream}/playlist.m3u8",
            server.ports.http
        )
    };
    for (stream, codec, url) in [
        ("avc", "libx264", rtmp_url(&server, "live/avc")),
        ("hevc", "libx265", hls("hevc")),
    ] {
        let mut publisher = publish_b_frames(
            &format!("rtsp://127.0.0.1:{rtsp_port}/live/{stream}"),
            codec,
        );
        wait_live(&server, "live", stream, LIVE).unwrap_or_else(|| {
            panic!(
                "{stream} not live: {}\n{}",
                publisher.stop_and_stderr(),
                server.log()
            )
        });
        let (times, warnings) = wait_for(LIVE, "6 s of video", || {
            let (times, warnings) = video_packet_times(&url, 6);
            (times.len() > 50).then_some((times, warnings))
        })
        .unwrap_or_else(|| panic!("{stream}: no video at {url}\n{}", server.log()));
        assert!(
            times.iter().all(|(dts, pts)| dts <= pts),
            "{stream}: dts > pts in {times:?}"
        );
        // FLV's clock is in milliseconds: equal decode times would be out of order too.
        assert!(
            times.windows(2).all(|w| w[0].0 < w[1].0),
            "{stream}: decode times not increasing: {times:?}"
        );
        assert!(
            times.iter().any(|(dts, pts)| pts > dts),
            "{stream}: no reordered frame (B-frames expected): {times:?}"
        );
        assert_eq!(
            complaints(&warnings),
            Vec::<&str>::new(),
            "{stream}: ffprobe"
        );
        let remuxed = remux_complaints(&url, 6);
        assert_eq!(
            complaints(&remuxed),
            Vec::<&str>::new(),
            "{stream}: ffmpeg remux"
        );
    }
}
