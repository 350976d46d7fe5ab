//! Hostile SRT clients (issue 31): callers of an SRT output asking for made-up names and
//! then killed leave no session behind and free their place under `max_callers` for a real
//! viewer; a caller that stays waits at most `player_wait_timeout_secs` for a stream that
//! is not live. Silent callers of an SRT input are dropped after its no-data timeout and
//! leave room for a real publisher.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, play, publish, publish_as, rtmp_url, wait_live};
use common::{Server, free_port, require_tool, wait_for};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Generous bound for anything the server should do "soon" (libsrt notices a vanished
/// caller after its 5 s peer idle timeout).
const SOON: Duration = Duration::from_secs(30);
const LIVE: Duration = Duration::from_secs(40);

fn srt_request(port: u16, stream: &str) -> String {
    format!("srt://127.0.0.1:{port}?mode=caller&streamid=#!::r=live/{stream},m=request")
}

/// The ids of the SRT sessions of `stream`.
fn srt_sessions_of(server: &Server, stream: &str) -> Vec<u64> {
    let (_, sessions) = server.get("/manage/sessions");
    sessions
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["type"] == "SRT" && s["stream"] == stream)
        .filter_map(|s| s["id"].as_u64())
        .collect()
}

#[test]
fn srt_output_callers_of_made_up_names_are_released() {
    let (held_port, short_port) = (free_port(), free_port());
    let server = Server::start("");
    // `held` waits the longest a stream may be waited for (300 s): only noticing that
    // the caller is gone can release its callers within the test's bounds.
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": []}},
 "TsOutputs": [
   {{"id": "held", "protocol": "srt", "mode": "listen", "ip": "127.0.0.1", "port": {held_port},
     "parameters": [{{"name": "max_callers", "value": "2"}}, {{"name": "player_wait_timeout_secs", "value": "300"}}]}},
   {{"id": "short", "protocol": "srt", "mode": "listen", "ip": "127.0.0.1", "port": {short_port},
     "parameters": [{{"name": "player_wait_timeout_secs", "value": "2"}}]}}]}}"#,
        server.ports.rtmp
    ));

    // Two callers of made-up names fill `held`, then vanish without a word (SIGKILL).
    let squatters: Vec<Proc> = ["nope1", "nope2"]
        .iter()
        .map(|name| play(&srt_request(held_port, name)))
        .collect();
    wait_for(SOON, "both squatters connected", || {
        (srt_sessions_of(&server, "nope1").len() == 1
            && srt_sessions_of(&server, "nope2").len() == 1)
            .then_some(())
    })
    .unwrap_or_else(|| panic!("squatters not listed; log:\n{}", server.log()));
    drop(squatters);
    wait_for(SOON, "the squatters' sessions gone", || {
        (srt_sessions_of(&server, "nope1").is_empty()
            && srt_sessions_of(&server, "nope2").is_empty())
        .then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "sessions of killed callers stay: {:?} {:?}; log:\n{}",
            srt_sessions_of(&server, "nope1"),
            srt_sessions_of(&server, "nope2"),
            server.log()
        )
    });

    // Their places are free again: a real viewer of a live stream is served.
    let _publisher = publish(&rtmp_url(&server, "live/tv"));
    wait_live(&server, "live", "tv", LIVE)
        .unwrap_or_else(|| panic!("not live; log:\n{}", server.log()));
    let output = Command::new("timeout")
        .args([
            "60",
            "ffmpeg",
            "-hide_banner",
            "-nostdin",
            "-v",
            "error",
            "-i",
        ])
        .arg(srt_request(held_port, "tv"))
        .args(["-t", "3", "-f", "null", "-"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the real viewer was not served: {}\nlog:\n{}",
        String::from_utf8_lossy(&output.stderr),
        server.log()
    );

    // A caller that stays connected waits for a made-up name at most the output's
    // `player_wait_timeout_secs` (2 s here).
    let _waiter = play(&srt_request(short_port, "never"));
    let first = wait_for(SOON, "the waiter connected", || {
        srt_sessions_of(&server, "never").first().copied()
    })
    .unwrap_or_else(|| panic!("waiter not listed; log:\n{}", server.log()));
    wait_for(SOON, "the waiter's session closed", || {
        (!srt_sessions_of(&server, "never").contains(&first)).then_some(())
    })
    .unwrap_or_else(|| panic!("the waiting caller stays; log:\n{}", server.log()));
}

/// An SRT caller that connects to `url` and never sends a byte: `srt-live-transmit`
/// relaying a UDP port nobody sends to, without reconnecting once it is closed.
fn silent_caller(url: &str) -> Proc {
    require_tool("srt-live-transmit", "srt-tools");
    let input = format!("udp://127.0.0.1:{}", free_port());
    Proc(
        Command::new("srt-live-transmit")
            .args(["-a:no", &input, url])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

#[test]
fn silent_srt_input_callers_are_dropped() {
    let port = free_port();
    let server = Server::start("");
    // No `idle_timeout_secs`: the default (10 s) must bound them.
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": []}},
 "Cameras": [{{"id": "in", "ip": "127.0.0.1", "port": {port}, "protocol": "srt", "receive_mode": "listen",
   "app": "live", "stream": "default", "parameters": [{{"name": "max_callers", "value": "2"}}]}}]}}"#,
        server.ports.rtmp
    ));
    let caller =
        |stream: &str| format!("srt://127.0.0.1:{port}?streamid=#!::r=live/{stream},m=publish");
    let _squatters = [
        silent_caller(&caller("quiet1")),
        silent_caller(&caller("quiet2")),
    ];
    wait_for(SOON, "both silent callers connected", || {
        (srt_sessions_of(&server, "quiet1").len() == 1
            && srt_sessions_of(&server, "quiet2").len() == 1)
            .then_some(())
    })
    .unwrap_or_else(|| panic!("silent callers not listed; log:\n{}", server.log()));
    wait_for(SOON, "the silent callers dropped", || {
        (srt_sessions_of(&server, "quiet1").is_empty()
            && srt_sessions_of(&server, "quiet2").is_empty())
        .then_some(())
    })
    .unwrap_or_else(|| panic!("silent callers stay; log:\n{}", server.log()));

    // A real publisher gets in.
    let _publisher = publish_as(&caller("real"), "mpegts");
    wait_live(&server, "live", "real", LIVE)
        .unwrap_or_else(|| panic!("the real publisher is not live; log:\n{}", server.log()));
}
