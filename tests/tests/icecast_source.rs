//! Icecast sources on the delivery port, sent by ffmpeg: MP3 with `icecast://` (PUT)
//! and with `-legacy_icecast 1` (SOURCE), AAC as ADTS. A source plays as
//! `icecast.stream` (its `ice-*` headers as ICY headers), over RTMP and over HLS; it is
//! listed in `rtmp_status` and as an ICECAST session that `sessions/delete` ends; the
//! encoder's `/admin/metadata` sets the title (ICY, `icecast_stream_info`, RTMP). Wrong credentials get 401, a second
//! source on a mount 403 `Mountpoint in use`, other audio 403 `Content-type not
//! supported`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, ffprobe, icecast_source, probe_streams, rtmp_url};
use common::{Server, wait_for};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);
const PASSWORD: &str = "hackme";

fn server() -> Server {
    let server = Server::start("");
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS", "ICECAST"], "segment_duration_secs": 1}},
 "IcecastSources": [{{"app": "radio", "password": "{PASSWORD}"}}]}}"#,
        server.ports.rtmp
    ));
    server
}

/// ffmpeg sending a live sine as an Icecast source at 128 kbit/s.
fn source(url: &str, codec: &str, legacy: bool) -> Proc {
    icecast_source(url, codec, "128k", legacy)
}

fn source_url(server: &Server, password: &str, mount: &str) -> String {
    format!(
        "icecast://source:{password}@127.0.0.1:{}{mount}",
        server.ports.http
    )
}

fn icecast_url(server: &Server, path: &str) -> String {
    format!(
        "http://127.0.0.1:{}/{path}/icecast.stream",
        server.ports.http
    )
}

/// Sends a source request by hand; returns the answer's status line.
fn raw_source(server: &Server, head: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", server.ports.http)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

fn wait_for_audio(server: &Server, path: &str, codec: &str) -> String {
    let url = icecast_url(server, path);
    wait_for(LIVE, "icecast.stream plays the source", || {
        let out = ffprobe(&[
            "-show_entries",
            "stream=codec_name:format_tags",
            "-of",
            "default",
            &url,
        ]);
        out.contains(&format!("codec_name={codec}")).then_some(out)
    })
    .unwrap_or_else(|| panic!("no {codec} from {url}; log:\n{}", server.log()))
}

#[test]
fn an_mp3_source_plays_as_icecast_and_rtmp_and_takes_titles() {
    let server = server();
    let mut encoder = source(&source_url(&server, PASSWORD, "/radio/one"), "mp3", false);
    let probed = wait_for_audio(&server, "radio/one", "mp3");
    assert!(probed.contains("TAG:icy-name=Strom Radio"), "{probed}");
    assert!(probed.contains("TAG:icy-genre=Test Tones"), "{probed}");
    assert!(encoder.running(), "{}", encoder.stop_and_stderr());

    // Over RTMP (relayed from the packager over the media bus).
    let rtmp = probe_streams(&rtmp_url(&server, "radio/one"));
    assert!(rtmp.iter().any(|s| s == "mp3,audio"), "{rtmp:?}");

    // Listed as a live stream and as an ICECAST session.
    let (_, status) = server.get("/manage/rtmp_status");
    let listed = status.as_array().unwrap().iter().any(|g| {
        g["app"] == "radio"
            && g["streams"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["strm"] == "one" && s["protocol"] == "ICECAST")
    });
    assert!(listed, "{status}");
    let (_, sessions) = server.get("/manage/sessions");
    let session = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["type"] == "ICECAST" && s["stream"] == "one" && s["bytes_recv"].as_u64() > Some(0)
        })
        .unwrap_or_else(|| panic!("no ICECAST source session: {sessions}"))
        .clone();

    // The encoder's title update, with its credentials; wrong ones get 401.
    let admin = |auth: &str| {
        Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-u", auth])
            .arg(format!(
                "http://127.0.0.1:{}/admin/metadata?mount=/radio/one&mode=updinfo&song=Track%201",
                server.ports.http
            ))
            .output()
            .unwrap()
            .stdout
    };
    assert_eq!(admin("source:wrong"), b"401");
    assert_eq!(admin(&format!("source:{PASSWORD}")), b"200");
    let (_, info) = server.get("/manage/icecast_stream_info/radio/one");
    assert_eq!(info["streamtitle"], "Track 1", "{info}");
    assert_eq!(info["icy-name"], "Strom Radio", "{info}");
    assert_eq!(info["icy-genre"], "Test Tones", "{info}");
    // The title went into the stream: an RTMP player hears it in onMetaData.
    let tags = wait_for(LIVE, "the title over RTMP", || {
        let out = ffprobe(&[
            "-show_entries",
            "format_tags",
            "-of",
            "default",
            &rtmp_url(&server, "radio/one"),
        ]);
        out.contains("StreamTitle=Track 1").then_some(out)
    });
    assert!(
        tags.is_some(),
        "no StreamTitle over RTMP; log:\n{}",
        server.log()
    );
    // ffmpeg sends no ice-bitrate: the measured rate of the 128 kbit/s MP3.
    let rate = info["icy-br"].as_u64().unwrap();
    assert!((100..200).contains(&rate), "{info}");

    // A second source on the mount, by hand: 403 Mountpoint in use.
    let second = raw_source(
        &server,
        "PUT /radio/one HTTP/1.1\r\nAuthorization: Basic c291cmNlOmhhY2ttZQ==\r\nContent-Type: audio/mpeg\r\n\r\n",
    );
    assert_eq!(second, "HTTP/1.0 403 Mountpoint in use");

    // sessions/delete ends the source: ffmpeg sees its connection end.
    let id = session["id"].as_u64().unwrap();
    let (status, body) = server.post("/manage/sessions/delete", &format!("[{id}]"));
    assert_eq!(status, 200, "{body}");
    assert!(
        encoder.wait_exit(Duration::from_secs(20)).is_some(),
        "the encoder kept sending after its session was deleted"
    );
    assert!(
        server.log().contains("icecast source ended"),
        "{}",
        server.log()
    );
}

#[test]
fn a_legacy_source_is_taken_and_bad_sources_are_refused() {
    let server = server();
    let _legacy = source(&source_url(&server, PASSWORD, "/radio/legacy"), "mp3", true);
    wait_for_audio(&server, "radio/legacy", "mp3");

    // ffmpeg with a wrong password fails, naming the 401.
    let mut wrong = source(&source_url(&server, "nope", "/radio/wrong"), "mp3", false);
    assert!(
        wrong
            .wait_exit(Duration::from_secs(20))
            .is_some_and(|c| c != 0)
    );
    let stderr = wrong.stop_and_stderr();
    assert!(stderr.contains("401"), "{stderr}");

    let auth = "Authorization: Basic c291cmNlOmhhY2ttZQ==\r\n";
    let head = |request: &str, headers: &str| format!("{request}\r\n{headers}\r\n");
    assert_eq!(
        raw_source(
            &server,
            &head(
                "SOURCE /radio/ogg ICE/1.0",
                &format!("{auth}Content-Type: application/ogg\r\n")
            )
        ),
        "HTTP/1.0 403 Content-type not supported"
    );
    assert!(
        raw_source(
            &server,
            &head("PUT /radio/x HTTP/1.1", "Content-Type: audio/mpeg\r\n")
        )
        .starts_with("HTTP/1.0 401"),
        "no credentials"
    );
    assert!(
        raw_source(
            &server,
            &head(
                "PUT /live/x HTTP/1.1",
                &format!("{auth}Content-Type: audio/mpeg\r\n")
            )
        )
        .starts_with("HTTP/1.0 401"),
        "an app without IcecastSources"
    );
    assert!(
        raw_source(&server, &head("PUT /../etc HTTP/1.1", auth)).starts_with("HTTP/1.0 403"),
        "a mount that is no app/stream"
    );
    // Ordinary HTTP on the same port still works.
    let (code, _) = common::curl(&[&format!(
        "http://127.0.0.1:{}/radio/none/playlist.m3u8",
        server.ports.http
    )]);
    assert_eq!(code, 404);
}

#[test]
fn an_aac_source_plays_over_hls() {
    let server = server();
    let _encoder = source(&source_url(&server, PASSWORD, "/radio/aac"), "aac", false);
    wait_for_audio(&server, "radio/aac", "aac");
    let playlist = format!(
        "http://127.0.0.1:{}/radio/aac/playlist.m3u8",
        server.ports.http
    );
    let streams = wait_for(LIVE, "HLS of the Icecast source", || {
        let streams = probe_streams(&playlist);
        streams.iter().any(|s| s == "aac,audio").then_some(streams)
    })
    .unwrap_or_else(|| panic!("no HLS audio; log:\n{}", server.log()));
    assert!(!streams.iter().any(|s| s.contains("video")), "{streams:?}");
    // ffmpeg decodes 3 s of it without an error line.
    let output = Command::new("timeout")
        .args(["60", "ffmpeg", "-hide_banner", "-nostdin", "-v", "error"])
        .args(["-i", &playlist, "-t", "3", "-f", "null", "-"])
        .output()
        .unwrap();
    let errors = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && errors.trim().is_empty(),
        "{errors}"
    );
}
