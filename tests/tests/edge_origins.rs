//! An edge with four origins, the stream on the last (issue 46 item 1, no registry):
//! each origin that lacks the stream tells the edge's pull "not found" at once, so the
//! edge reaches the fourth origin without a per-origin timeout (10 s per miss over RTMP
//! and 20 s over SRT before).
//! - RTMP origins answer the edge's play with `NetStream.Play.StreamNotFound`; an
//!   ordinary RTMP player of a stream that is not live is still held (it waits for its
//!   publisher, `player_wait_timeout_secs`).
//! - SRT origins refuse the edge's call (streamid `#!::r=live/x,m=request,strom=pull`)
//!   in the handshake with `SRT_REJX_NOTFOUND` (1404).
//!
//! The bound on the time to the first media through the edge is generous (the old
//! behaviour took 30 s or more, three misses); the logs show each miss was answered.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, probe_streams, publish, rtmp_url, wait_live};
use common::{Server, free_port, require_tool};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LIVE: Duration = Duration::from_secs(40);
/// Three misses took at least 30 s before; answered at once they take about nothing.
const THROUGH_THE_EDGE: Duration = Duration::from_secs(20);

/// An origin serving RTMP and, on `srt_port`, SRT callers that name their stream.
fn origin(srt_port: u16) -> Server {
    Server::with_rules(
        "",
        &r#"{"RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": {rtmp}}]},
            "Delivery": {"outputs": []},
            "TsOutputs": [{"id": "edges", "protocol": "srt", "mode": "listen",
                           "ip": "127.0.0.1", "port": SRT}]}"#
            .replace("SRT", &srt_port.to_string()),
    )
}

/// An edge of `live` pulling from `origins` in that order.
fn edge(origins: &[String]) -> Server {
    let origins = serde_json::to_string(origins).unwrap();
    Server::with_rules(
        "",
        &r#"{"RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": {rtmp}}]},
            "Delivery": {"outputs": []},
            "Edge": [{"apps": ["live"], "idle_grace_secs": 5, "origins": ORIGINS}]}"#
            .replace("ORIGINS", &origins),
    )
}

/// How long an RTMP probe through `edge` takes to see the stream's video.
fn time_to_video(edge: &Server) -> Duration {
    let started = Instant::now();
    let streams = probe_streams(&rtmp_url(edge, "live/x"));
    assert!(
        streams.iter().any(|s| s.starts_with("h264,video,320,240")),
        "no video through the edge after {:?}: {streams:?}; edge log:\n{}",
        started.elapsed(),
        edge.log()
    );
    started.elapsed()
}

/// Lines of `log` holding every one of `patterns`.
fn count(log: &str, patterns: &[&str]) -> usize {
    log.lines()
        .filter(|line| patterns.iter().all(|p| line.contains(p)))
        .count()
}

const FAILED_OVER: &str = "edge: pull failed; trying the next origin";

#[test]
fn an_edge_reaches_the_fourth_origin_without_waiting_on_the_first_three() {
    require_tool("ffmpeg", "ffmpeg");
    require_tool("ffprobe", "ffmpeg");
    let srt_ports: Vec<u16> = (0..4).map(|_| free_port()).collect();
    let origins: Vec<Server> = srt_ports.iter().map(|port| origin(*port)).collect();
    let holder = &origins[3];
    let _publisher = publish(&rtmp_url(holder, "live/x"));
    wait_live(holder, "live", "x", LIVE)
        .unwrap_or_else(|| panic!("not live on the fourth origin; log:\n{}", holder.log()));

    // An ordinary player of a stream that is not live is held, as before.
    let mut held = Proc(
        Command::new("ffprobe")
            .args(["-v", "error", "-rw_timeout", "30000000"])
            .arg(rtmp_url(&origins[0], "live/x"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );

    let rtmp_edge = edge(
        &origins
            .iter()
            .map(|o| format!("rtmp://127.0.0.1:{}", o.ports.rtmp))
            .collect::<Vec<_>>(),
    );
    let over_rtmp = time_to_video(&rtmp_edge);
    let log = rtmp_edge.log();
    assert_eq!(
        count(&log, &[FAILED_OVER, "StreamNotFound"]),
        3,
        "the edge's pull heard not found from each of the first three origins; log:\n{log}"
    );
    for refusing in &origins[..3] {
        let log = refusing.log();
        assert!(
            log.contains("NetStream.Play.StreamNotFound") && log.contains("nothing here starts it"),
            "origin {} did not answer not found; log:\n{log}",
            refusing.ports.rtmp
        );
    }
    assert!(
        over_rtmp < THROUGH_THE_EDGE,
        "{over_rtmp:?} to the fourth origin's stream over RTMP; edge log:\n{log}"
    );
    assert!(
        held.0.try_wait().unwrap().is_none(),
        "an ordinary RTMP player of a stream that is not live was not held; log:\n{}",
        origins[0].log()
    );
    held.0.kill().ok();

    let srt_edge = edge(
        &srt_ports
            .iter()
            .map(|port| format!("srt://127.0.0.1:{port}?latency=200"))
            .collect::<Vec<_>>(),
    );
    let over_srt = time_to_video(&srt_edge);
    let log = srt_edge.log();
    assert_eq!(
        count(&log, &[FAILED_OVER]),
        3,
        "one failed pull per origin without the stream; log:\n{log}"
    );
    for refusing in &origins[..3] {
        let log = refusing.log();
        assert!(
            log.contains("SRT caller refused: not found"),
            "origin {} did not refuse the SRT edge's call; log:\n{log}",
            refusing.ports.rtmp
        );
    }
    assert!(
        over_srt < THROUGH_THE_EDGE,
        "{over_srt:?} to the fourth origin's stream over SRT; edge log:\n{log}"
    );
}
