//! Icecast listeners as icecast2 serves them, checked with curl against an MP3 Icecast
//! source (ffmpeg) that has been live for a while: a new listener gets at least the
//! default burst (64 KiB) at once, so players start without waiting; a listener that
//! sends `Icy-MetaData: 1` gets an `HTTP/1.0` answer without chunked encoding whose
//! metadata blocks sit exactly every `icy-metaint` bytes of audio, and whose body ends
//! cleanly when the connection closes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::icecast_source;
use common::{Server, require_tool, wait_for};
use std::process::{Command, Stdio};
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(60);
const PASSWORD: &str = "hackme";
/// icecast2's default `burst-size`, strom's default `icecast_burst_size`.
const BURST: usize = 65_536;
const METAINT: usize = 16_000;

/// curl `url` for `seconds` with `extra` arguments: the response head and the body.
fn listen(url: &str, seconds: u32, extra: &[&str]) -> (String, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let head = dir.path().join("head");
    let output = Command::new("curl")
        .args(["-s", "--http1.1", "--max-time", &seconds.to_string(), "-D"])
        .arg(&head)
        .args(extra)
        .arg(url)
        .output()
        .unwrap();
    let head = std::fs::read_to_string(head).unwrap_or_default();
    (head, output.stdout)
}

/// The metadata blocks of an ICY body (`metaint` audio bytes, one length byte, the
/// block); the last, cut-off block is left out.
fn icy_blocks(body: &[u8], metaint: usize) -> Vec<&[u8]> {
    let mut blocks = Vec::new();
    let mut at = metaint;
    while at < body.len() {
        let len = usize::from(body[at]) * 16;
        let Some(block) = body.get(at + 1..at + 1 + len) else {
            break;
        };
        blocks.push(block);
        at += 1 + len + metaint;
    }
    blocks
}

#[test]
fn icecast_listeners_get_a_burst_and_icy_answers_as_icecast2_gives_them() {
    require_tool("curl", "curl");
    let server = Server::start("");
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["ICECAST"]}},
 "IcecastSources": [{{"app": "radio", "password": "{PASSWORD}"}}]}}"#,
        server.ports.rtmp
    ));
    // 64 kbit/s: 8 KB of audio a second, so a listener without a burst would get far
    // less than 64 KiB in the few seconds curl listens.
    let _source = icecast_source(
        &format!(
            "icecast://source:{PASSWORD}@127.0.0.1:{}/radio/one",
            server.ports.http
        ),
        "mp3",
        "64k",
        false,
    );
    // Live for a while: more than the burst has arrived from the source.
    wait_for(LIVE, "the source sent 100 KB", || {
        let (_, sessions) = server.get("/manage/sessions");
        sessions
            .as_array()?
            .iter()
            .any(|s| s["type"] == "ICECAST" && s["bytes_recv"].as_u64() > Some(100_000))
            .then_some(())
    })
    .unwrap_or_else(|| panic!("the source never sent 100 KB; log:\n{}", server.log()));
    let (status, body) = server.post(
        "/manage/icecast_metadata/radio/one",
        r#"{"streamtitle": "Burst Song", "streamurl": ""}"#,
    );
    assert_eq!(status, 200, "{body}");
    let url = format!(
        "http://127.0.0.1:{}/radio/one/icecast.stream",
        server.ports.http
    );

    // A new listener: the burst at once, from an MP3 frame boundary.
    let (head, audio) = listen(&url, 4, &[]);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        audio.len() >= BURST,
        "{} bytes in 4 s at 8 KB/s: no burst",
        audio.len()
    );
    assert_eq!(
        (audio[0], audio[1] & 0xe0),
        (0xff, 0xe0),
        "starts with an MPEG audio sync word"
    );

    // An ICY listener: HTTP/1.0, no chunked encoding, blocks every icy-metaint bytes.
    let (head, body) = listen(&url, 4, &["-H", "Icy-MetaData: 1"]);
    let lower = head.to_ascii_lowercase();
    assert!(head.starts_with("HTTP/1.0 200"), "{head}");
    assert!(!lower.contains("transfer-encoding"), "{head}");
    assert!(lower.contains("icy-metaint: 16000\r\n"), "{head}");
    assert_eq!(
        (body[0], body[1] & 0xe0),
        (0xff, 0xe0),
        "the body starts with audio, not a chunk size"
    );
    let blocks = icy_blocks(&body, METAINT);
    assert!(
        blocks.len() >= BURST / METAINT,
        "{} blocks in {} bytes",
        blocks.len(),
        body.len()
    );
    let title = String::from_utf8_lossy(blocks[0]);
    assert!(
        title.starts_with("StreamTitle='Burst Song';"),
        "first block: {title:?}"
    );
    for block in &blocks {
        let text_end = block.iter().position(|&b| b == 0).unwrap_or(block.len());
        assert!(
            text_end == 0 || block.starts_with(b"StreamTitle='"),
            "not a metadata block: {:?}",
            String::from_utf8_lossy(block)
        );
        assert!(
            block[text_end..].iter().all(|&b| b == 0),
            "padding is zeros"
        );
    }

    // The answer ends with the connection: ending the listener's session closes it and
    // curl sees a complete close-delimited body (exit 0).
    // Listeners seen so far (an earlier curl's session stays until its next write
    // fails): the new one is the session that was not there.
    let listeners = || -> Vec<u64> {
        let (_, sessions) = server.get("/manage/sessions");
        sessions
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["type"] == "ICECAST" && s["bytes_recv"].as_u64() == Some(0))
            .filter_map(|s| s["id"].as_u64())
            .collect()
    };
    let before = listeners();
    let mut listener = Command::new("curl")
        .args([
            "-s",
            "--http1.1",
            "-o",
            "/dev/null",
            "-H",
            "Icy-MetaData: 1",
        ])
        .arg(&url)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let session = wait_for(LIVE, "the listener's session", || {
        listeners().into_iter().find(|id| !before.contains(id))
    })
    .unwrap_or_else(|| panic!("no listener session; log:\n{}", server.log()));
    let (status, body) = server.post("/manage/sessions/delete", &format!("[{session}]"));
    assert_eq!(status, 200, "{body}");
    let exited = wait_for(Duration::from_secs(20), "curl ends", || {
        listener.try_wait().unwrap()
    });
    let _ = listener.kill();
    assert_eq!(
        exited.and_then(|status| status.code()),
        Some(0),
        "curl did not see the body end with the connection ({exited:?}); log:\n{}",
        server.log()
    );
}
