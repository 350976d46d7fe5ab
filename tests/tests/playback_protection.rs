//! Signed playback (`wmsAuthSign`) end to end, on a stream published over RTMP with
//! `PlaybackProtection` on its app: HLS, RTMP and SRT play with a valid signature
//! (ffprobe) and are refused without one, or with an expired, tampered or other-address
//! one; a pay-per-view signature puts its id in `sessions`, the per-id limit refuses the
//! next viewer, and denying the id ends its playback.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use base64::Engine;
use common::media::{ffprobe, probe_streams, publish, rtmp_url, wait_live};
use common::signing::{now, server_time, url_encoded};
use common::{Server, free_port, wait_for};
use md5::{Digest, Md5};
use std::process::Command;
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);
const KEY: &str = "defaultpassword";

/// A `wmsAuthSign` for `subject` (address or id), optionally with an `id` field.
fn signature(
    subject: &str,
    signed_at: i64,
    minutes: u32,
    id: Option<&str>,
    tamper: bool,
) -> String {
    let time = server_time(signed_at);
    let mut md5 = Md5::new();
    md5.update(format!("{subject}{KEY}{time}{minutes}"));
    let hash = base64::engine::general_purpose::STANDARD.encode(md5.finalize());
    let minutes = if tamper { minutes * 100 } else { minutes };
    let mut text = format!("server_time={time}&hash_value={hash}&validminutes={minutes}");
    if let Some(id) = id {
        text.push_str(&format!("&id={id}"));
    }
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn status_of(url: &str) -> u16 {
    let output = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "10",
            url,
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).parse().unwrap_or(0)
}

#[test]
fn signed_playback_over_hls_rtmp_and_srt_with_pay_per_view() {
    let srt_port = free_port();
    let server = Server::start("");
    server.apply_rules(&format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS", "MPEGTS"], "segment_duration_secs": 1}},
 "TsOutputs": [{{"id": "srt", "protocol": "srt", "mode": "listen", "ip": "127.0.0.1", "port": {srt_port}}}],
 "PlaybackProtection": [{{"app": "live", "keys": ["rotated-out", "{KEY}"], "ppv_max_sessions": 1}}]}}"#,
            server.ports.rtmp
        ));
    // Publishing is not playback: the publisher needs no signature.
    let _publisher = publish(&rtmp_url(&server, "live/tv"));
    wait_live(&server, "live", "tv", LIVE).unwrap_or_else(|| panic!("{}", server.log()));

    let good = url_encoded(&signature("127.0.0.1", now() - 5, 20, None, false));
    let hls = format!(
        "http://127.0.0.1:{}/live/tv/playlist.m3u8",
        server.ports.http
    );
    wait_for(LIVE, "signed HLS", || {
        (status_of(&format!("{hls}?wmsAuthSign={good}")) == 200).then_some(())
    })
    .unwrap_or_else(|| panic!("signed HLS never answered; log:\n{}", server.log()));
    let streams = probe_streams(&format!("{hls}?wmsAuthSign={good}"));
    assert!(
        streams.iter().any(|s| s.starts_with("h264,video")),
        "{streams:?}"
    );
    let refused = [
        ("none", String::new()),
        (
            "expired",
            url_encoded(&signature("127.0.0.1", now() - 3600, 1, None, false)),
        ),
        (
            "tampered",
            url_encoded(&signature("127.0.0.1", now() - 5, 20, None, true)),
        ),
        (
            "other address",
            url_encoded(&signature("10.9.9.9", now() - 5, 20, None, false)),
        ),
    ];
    for (what, sign) in &refused {
        assert_eq!(
            status_of(&format!("{hls}?wmsAuthSign={sign}")),
            403,
            "HLS, {what}"
        );
    }
    // Media without a signed session is refused too.
    assert_eq!(
        status_of(&format!(
            "http://127.0.0.1:{}/live/tv/chunks.m3u8",
            server.ports.http
        )),
        403
    );
    let ts = format!(
        "http://127.0.0.1:{}/live/tv/mpegts.stream",
        server.ports.http
    );
    assert_eq!(
        status_of(&format!("{ts}?wmsAuthSign={}", refused[2].1)),
        403
    );

    // RTMP: the signature in the stream's query.
    let rtmp = rtmp_url(&server, "live/tv");
    let played = probe_streams(&format!("{rtmp}?wmsAuthSign={good}"));
    assert!(
        played.iter().any(|s| s.starts_with("h264,video")),
        "{played:?}"
    );
    assert!(
        probe_streams(&rtmp).is_empty(),
        "RTMP without a signature is refused"
    );
    assert!(
        probe_streams(&format!("{rtmp}?wmsAuthSign={}", refused[1].1)).is_empty(),
        "RTMP with an expired signature is refused"
    );

    // SRT: the signature as `s` in the streamid.
    let srt = |sign: &str| {
        format!("srt://127.0.0.1:{srt_port}?streamid=%23!::r=live/tv,m=request,s={sign}")
    };
    let srt_streams = ffprobe(&[
        "-show_entries",
        "stream=codec_name",
        "-of",
        "csv=p=0",
        &srt(&good),
    ]);
    assert!(
        srt_streams.contains("h264"),
        "SRT signed: {srt_streams}; log:\n{}",
        server.log()
    );
    let unsigned = ffprobe(&[
        "-show_entries",
        "stream=codec_name",
        "-of",
        "csv=p=0",
        &srt(&refused[3].1),
    ]);
    assert!(
        unsigned.trim().is_empty(),
        "SRT with another address's signature: {unsigned}"
    );

    // Pay-per-view: the id is the session's ppv_id; one session per id.
    let ppv = url_encoded(&signature(
        "customer-7",
        now() - 5,
        20,
        Some("customer-7"),
        false,
    ));
    let master = Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "10",
            &format!("{hls}?wmsAuthSign={ppv}"),
        ])
        .output()
        .unwrap();
    let master = String::from_utf8_lossy(&master.stdout).into_owned();
    let ppv_chunklist = master
        .lines()
        .find(|l| l.starts_with("chunks"))
        .unwrap_or_else(|| panic!("no chunklist in {master:?}"))
        .to_owned();
    let (_, sessions) = server.get("/manage/sessions");
    let ppv_session = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["ppv_id"] == "customer-7")
        .unwrap_or_else(|| panic!("no ppv session: {sessions}"));
    assert_eq!(ppv_session["type"], "HLS");
    assert_eq!(
        status_of(&format!("{hls}?wmsAuthSign={ppv}")),
        403,
        "the per-id limit"
    );

    // A pay-per-view session works from any address (its token is the capability).
    let chunklist = format!(
        "http://127.0.0.1:{}/live/tv/{ppv_chunklist}",
        server.ports.http
    );
    assert_eq!(status_of(&chunklist), 200);

    // Denying the id ends its playback and refuses it from then on.
    let (code, _) = server.post(
        "/manage/publish_control/deny",
        r#"{"PublishControlDenyRequest": ["customer-7"]}"#,
    );
    assert_eq!(code, 200);
    assert_eq!(status_of(&chunklist), 403, "the denied id's session ended");
    let (_, sessions) = server.get("/manage/sessions");
    assert!(
        !sessions
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["ppv_id"] == "customer-7"),
        "{sessions}"
    );
    assert_eq!(
        status_of(&format!("{hls}?wmsAuthSign={ppv}")),
        403,
        "a denied id"
    );
}

/// The body and status of `url` fetched by curl from `source` (a local address).
fn fetch_from(source: &str, url: &str) -> (u16, String) {
    let output = Command::new("curl")
        .args(["-sS", "--max-time", "10", "--interface", source])
        .args(["-w", "\n%{http_code}", url])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

/// Issue 31 item 4: a signed viewer's session id can neither be guessed (it is no
/// counter: the ids beside the API's session ids open nothing) nor used from another
/// address when the signature was bound to the viewer's.
#[test]
fn hls_sessions_of_a_protected_stream_cannot_be_guessed_or_borrowed() {
    let server = Server::start("");
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS"], "segment_duration_secs": 1}},
 "PlaybackProtection": [{{"app": "live", "keys": ["{KEY}"]}}]}}"#,
        server.ports.rtmp
    ));
    let _publisher = publish(&rtmp_url(&server, "live/tv"));
    wait_live(&server, "live", "tv", LIVE).unwrap_or_else(|| panic!("{}", server.log()));
    let base = format!("http://127.0.0.1:{}/live/tv", server.ports.http);
    let signed = url_encoded(&signature("127.0.0.1", now() - 5, 20, None, false));
    let master = wait_for(LIVE, "the signed master playlist", || {
        let (status, body) = fetch_from(
            "127.0.0.1",
            &format!("{base}/playlist.m3u8?wmsAuthSign={signed}"),
        );
        (status == 200).then_some(body)
    })
    .unwrap_or_else(|| panic!("signed HLS never answered; log:\n{}", server.log()));
    let chunklist = master
        .lines()
        .find(|l| l.starts_with("chunks"))
        .unwrap_or_else(|| panic!("no chunklist in {master}"))
        .to_owned();
    // The signed viewer plays: its chunklist and a segment.
    let (status, media) = fetch_from("127.0.0.1", &format!("{base}/{chunklist}"));
    assert_eq!(status, 200, "{media}");
    let segment = media
        .lines()
        .find(|l| l.starts_with("seg_"))
        .unwrap_or_else(|| panic!("no segment in {media}"))
        .to_owned();
    assert_eq!(fetch_from("127.0.0.1", &format!("{base}/{segment}")).0, 200);

    // An unsigned client stepping through the ids around the listed sessions' ids.
    let (_, sessions) = server.get("/manage/sessions");
    let listed: Vec<u64> = sessions
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["type"] == "HLS")
        .filter_map(|s| s["id"].as_u64())
        .collect();
    assert!(!listed.is_empty(), "{sessions}");
    for id in &listed {
        for guess in id.saturating_sub(3)..=id + 3 {
            let (status, body) =
                fetch_from("127.0.0.1", &format!("{base}/chunks.m3u8?sid={guess}"));
            assert_eq!(
                status, 403,
                "sid={guess} (API id {id}) opened a chunklist: {body}"
            );
        }
    }
    // The real token, borrowed by another address: refused, chunklist and segment.
    assert_eq!(
        fetch_from("127.0.0.2", &format!("{base}/{chunklist}")).0,
        403
    );
    assert_eq!(fetch_from("127.0.0.2", &format!("{base}/{segment}")).0, 403);
    // And still good for its owner.
    assert_eq!(
        fetch_from("127.0.0.1", &format!("{base}/{chunklist}")).0,
        200
    );
}

/// Issue 31 item 9: a signature bound to one address, with `&id=<that address>`
/// appended (the hash input cannot tell an address from a pay-per-view id), is refused
/// from another address, over HLS and RTMP.
#[test]
fn an_address_bound_signature_cannot_be_borrowed_by_naming_the_address_as_id() {
    let server = Server::start("");
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS"], "segment_duration_secs": 1}},
 "PlaybackProtection": [{{"app": "live", "keys": ["{KEY}"]}}]}}"#,
        server.ports.rtmp
    ));
    let _publisher = publish(&rtmp_url(&server, "live/tv"));
    wait_live(&server, "live", "tv", LIVE).unwrap_or_else(|| panic!("{}", server.log()));
    let hls = format!(
        "http://127.0.0.1:{}/live/tv/playlist.m3u8",
        server.ports.http
    );
    let bound = url_encoded(&signature("127.0.0.1", now() - 5, 20, None, false));
    wait_for(LIVE, "the owner plays", || {
        (fetch_from("127.0.0.1", &format!("{hls}?wmsAuthSign={bound}")).0 == 200).then_some(())
    })
    .unwrap_or_else(|| panic!("signed HLS never answered; log:\n{}", server.log()));
    // The same hash with the owner's address as `id`, from another address.
    let borrowed = url_encoded(&signature(
        "127.0.0.1",
        now() - 5,
        20,
        Some("127.0.0.1"),
        false,
    ));
    let (status, body) = fetch_from("127.0.0.2", &format!("{hls}?wmsAuthSign={borrowed}"));
    assert_eq!(status, 403, "borrowed signature played: {body}");
    assert!(
        probe_streams(&format!(
            "{}?wmsAuthSign={borrowed}",
            rtmp_url(&server, "live/tv")
        ))
        .is_empty(),
        "RTMP with an address as id is refused"
    );
}
