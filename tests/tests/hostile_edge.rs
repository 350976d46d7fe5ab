//! Edge lockout: one client asking for hundreds of made-up HLS names on an edge holds
//! only its own share of the streams the edge will pull, names that did not come are
//! answered 404 at once for a while, and a real new stream asked for by another viewer
//! is still pulled from the origin and plays.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{probe_streams, publish, rtmp_url, wait_live};
use common::{Server, wait_for};
use std::process::{Command, Stdio};
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);

fn edge_of(origin: &Server) -> Server {
    let mut edge = Server::prepare("");
    let rules = r#"{"RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": RTMP}]},
            "Delivery": {"outputs": ["HLS"], "segment_duration_secs": 1},
            "Edge": [{"apps": ["live"], "idle_grace_secs": 5,
                      "origins": ["rtmp://127.0.0.1:ORIGIN"]}]}"#
        .replace("RTMP", &edge.ports.rtmp.to_string())
        .replace("ORIGIN", &origin.ports.rtmp.to_string());
    std::fs::write(edge.path("rules.conf"), rules).unwrap();
    edge.spawn();
    edge.wait_ready();
    edge
}

#[test]
fn made_up_names_from_one_client_do_not_lock_out_a_real_stream() {
    let origin = Server::start("");
    origin.wait_ready();
    let edge = edge_of(&origin);
    // 300 made-up names from 127.0.0.2 (loopback answers every 127/8 address), each
    // request given up after a second, as a flood does.
    let flood: Vec<_> = (0..300)
        .map(|i| {
            Command::new("curl")
                .args(["-s", "-o", "/dev/null", "--max-time", "1"])
                .args(["--interface", "127.0.0.2"])
                .arg(format!(
                    "http://127.0.0.1:{}/live/fake{i}/playlist.m3u8",
                    edge.ports.http
                ))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("curl (Debian package curl)")
        })
        .collect();
    for mut request in flood {
        let _ = request.wait();
    }
    let log = edge.log();
    assert!(
        log.contains("the client's share of streams not live is used up"),
        "the flood was not capped per client; log:\n{log}"
    );

    // A real stream appears on the origin; a viewer at another address asks the edge.
    let _publisher = publish(&rtmp_url(&origin, "live/real"));
    wait_live(&origin, "live", "real", LIVE).unwrap_or_else(|| panic!("{}", origin.log()));
    let url = format!(
        "http://127.0.0.1:{}/live/real/playlist.m3u8",
        edge.ports.http
    );
    let streams = wait_for(LIVE, "the real stream through the edge", || {
        Some(probe_streams(&url)).filter(|s| s.iter().any(|l| l.contains(",video")))
    })
    .unwrap_or_else(|| panic!("the real stream was locked out; edge log:\n{}", edge.log()));
    assert!(!streams.is_empty());

    // The made-up names the edge took did not come: within the wait (15 s) they are
    // given up, and asking again is answered 404 at once instead of holding a place.
    wait_for(LIVE, "the made-up names given up", || {
        edge.log()
            .contains("on-demand stream did not come")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("made-up names never given up; log:\n{}", edge.log()));
    let given_up = edge
        .log()
        .lines()
        .rev()
        .find(|l| l.contains("on-demand stream did not come"))
        .and_then(|l| l.split("stream=").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .map(str::to_owned)
        .unwrap();
    // Answered from the negative cache: 404, and the name is not demanded (pulled) again.
    let demands_of = |log: &str| {
        log.lines()
            .filter(|l| l.contains("edge: HLS viewer asks for the stream"))
            .filter(|l| l.contains(&format!("stream={given_up} ")))
            .count()
    };
    let demanded_before = demands_of(&edge.log());
    let status = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "30",
        ])
        .arg(format!(
            "http://127.0.0.1:{}/live/{given_up}/playlist.m3u8",
            edge.ports.http
        ))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&status.stdout), "404");
    assert_eq!(
        demands_of(&edge.log()),
        demanded_before,
        "a name that did not come was demanded again at once; log:\n{}",
        edge.log()
    );
}
