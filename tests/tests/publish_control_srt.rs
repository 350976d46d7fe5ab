//! Publish control for SRT contributors, the same as for RTMP publishers: with
//! `publish_control` on the app, an SRT caller needs a valid `publishsign` in its
//! streamid, is listed by `publish_control/status` with its id, and
//! `publish_control/deny` of that id disconnects it; an unsigned caller is refused.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use base64::Engine;
use common::media::{publish_coded, wait_live};
use common::{Server, free_port, wait_for};
use md5::{Digest, Md5};
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);
const PASSWORD: &str = "s3cret";

/// `publishsign` for `id` publishing `live/<stream>` from any address.
fn publishsign(id: &str, stream: &str) -> String {
    let sign = base64::engine::general_purpose::STANDARD.encode(Md5::digest(
        format!("{id}/live/{stream}{PASSWORD}").as_bytes(),
    ));
    base64::engine::general_purpose::STANDARD.encode(format!("id={id}&sign={sign}"))
}

fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn caller_url(port: u16, stream: &str, sign: Option<&str>) -> String {
    let mut stream_id = format!("#!::r=live/{stream},m=publish");
    if let Some(sign) = sign {
        stream_id.push_str(&format!(",publishsign={sign}"));
    }
    format!(
        "srt://127.0.0.1:{port}?pkt_size=1316&streamid={}",
        percent_encoded(&stream_id)
    )
}

#[test]
fn signed_srt_publishers_are_listed_and_denied() {
    let port = free_port();
    let server = Server::start("");
    server.apply_rules(&format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}],
   "apps": [{{"app": "live", "publish_control": {{"password": "{PASSWORD}"}}}}]}},
 "Cameras": [{{"id": "srt-in", "ip": "127.0.0.1", "port": {port}, "protocol": "srt", "receive_mode": "listen",
   "app": "live", "stream": "default"}}]}}"#,
            server.ports.rtmp
        ));

    // Unsigned: refused, the stream never goes live.
    let mut unsigned = publish_coded(&caller_url(port, "nosign", None), "mpegts", "libx264");
    assert!(
        unsigned.wait_exit(Duration::from_secs(30)).is_some(),
        "an unsigned SRT publisher is refused"
    );
    assert!(
        server.log().contains("SRT publisher refused"),
        "{}",
        server.log()
    );

    let mut signed = publish_coded(
        &caller_url(port, "cam", Some(&publishsign("pub1", "cam"))),
        "mpegts",
        "libx264",
    );
    wait_live(&server, "live", "cam", LIVE)
        .unwrap_or_else(|| panic!("signed SRT publisher not live; log:\n{}", server.log()));
    let (_, status) = server.get("/manage/publish_control/status");
    let entry = status["PublishControlStatus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["stream"] == "live/cam")
        .unwrap_or_else(|| panic!("{status}"))
        .clone();
    assert_eq!(
        (entry["id"].as_str(), entry["ip"].as_str()),
        (Some("pub1"), Some("127.0.0.1"))
    );

    let (code, body) = server.post(
        "/manage/publish_control/deny",
        r#"{"PublishControlDenyRequest": ["pub1"]}"#,
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["PublishControlDenyResponse"]["status"], "success");
    wait_for(LIVE, "the denied SRT publisher gone", || {
        let (_, body) = server.get("/manage/srt_receiver_stats");
        body["SrtReceivers"].as_array()?.is_empty().then_some(())
    })
    .unwrap_or_else(|| panic!("still connected; log:\n{}", server.log()));
    assert!(
        signed.wait_exit(Duration::from_secs(30)).is_some(),
        "the caller was disconnected"
    );
    assert!(server.log().contains("SRT publisher denied: disconnected"));
}
