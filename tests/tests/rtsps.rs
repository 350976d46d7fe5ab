//! RTSP over TLS end to end: a strom with an rtsps listener (the delivery certificate,
//! signed by a test CA made with the openssl tool) plays an RTMP-published stream to
//! ffprobe over `rtsps://`, takes an ffmpeg publisher over `rtsps://`, refuses UDP transport on the TLS connection with 461, and
//! presents a new certificate to new handshakes after `reload_ssl_certificates`. A
//! second strom that trusts the test CA (`SSL_CERT_FILE`, read by the system trust store
//! verifier) pulls the first one's `rtsps://` output and serves it over HLS with
//! `source_url` shown without credentials; a third that does not trust the CA refuses
//! the certificate and says so in its log.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{ffprobe, publish, publish_as, rtmp_url, wait_live};
use common::{Server, free_port, openssl, require_tool, strom_bin, wait_for};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(30);

/// A CA (`ca.pem`) and a certificate for `localhost` and 127.0.0.1 signed by it
/// (`cert.pem`, `key.pem`), with `subject` as its common name; the same steps as the
/// RTMPS component test (workers/rtmp/src/client/tls_tests.rs).
fn make_certificates(dir: &Path, subject: &str) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    if !dir.join("ca.pem").exists() {
        let mut ca = vec!["req", "-x509", "-days", "2", "-subj", "/CN=strom test CA"];
        ca.extend(ec);
        ca.extend(["-keyout", "ca-key.pem", "-out", "ca.pem"]);
        openssl(dir, &ca);
    }
    let subject = format!("/CN={subject}");
    let mut request = vec!["req", "-subj", &subject];
    request.extend(ec);
    request.extend(["-keyout", "key.pem", "-out", "req.pem"]);
    openssl(dir, &request);
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "req.pem",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca-key.pem",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
            "-out",
            "cert.pem",
        ],
    );
}

/// Starts `server` like [`Server::spawn`], with `SSL_CERT_FILE` set to `ca` (trusted
/// roots of its TLS clients) or removed.
fn spawn_trusting(server: &mut Server, ca: Option<&Path>) {
    let log = std::fs::File::create(server.log_path()).unwrap();
    let mut command = Command::new(strom_bin());
    command
        .arg("run")
        .arg("--config")
        .arg(server.path("strom.conf"))
        .env_remove("SSL_CERT_DIR")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    match ca {
        Some(ca) => command.env("SSL_CERT_FILE", ca),
        None => command.env_remove("SSL_CERT_FILE"),
    };
    server.child = Some(command.spawn().unwrap());
}

/// An origin with RTMP, plain RTSP on `rtsp_port` and rtsps on `rtsps_port`, serving the
/// certificate made in its directory.
fn start_origin(rtsp_port: u16, rtsps_port: u16) -> Server {
    let mut server = Server::prepare("ssl_certificate = cert.pem\nssl_certificate_key = key.pem");
    make_certificates(server.dir.path(), "strom origin one");
    let rules = format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": 2}},
            "RtspSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {rtsp_port}}}],
                              "tls_interfaces": [{{"ip": "127.0.0.1", "port": {rtsps_port}}}]}}}}"#,
        server.ports.rtmp
    );
    std::fs::write(server.path("rules.conf"), rules).unwrap();
    server.spawn();
    server.wait_ready();
    server
}

/// A strom that pulls `url` as `live/cam`, trusting `ca` (or only the system's roots).
fn start_edge(url: &str, ca: Option<&Path>) -> Server {
    let mut edge = Server::prepare("");
    let rules = format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": 2}},
            "RtmpPullSources": [{{"app": "live", "stream": "cam", "url": "{url}"}}]}}"#,
        edge.ports.rtmp
    );
    std::fs::write(edge.path("rules.conf"), rules).unwrap();
    spawn_trusting(&mut edge, ca);
    edge.wait_ready();
    edge
}

/// `codec_name,codec_type` lines ffprobe reads at `url`, retried until both show.
fn probe_both(url: &str) -> Vec<String> {
    wait_for(LIVE, "ffprobe sees video and audio", || {
        let lines: Vec<String> = ffprobe(&[
            "-show_entries",
            "stream=codec_name,codec_type",
            "-of",
            "csv=p=0",
            url,
        ])
        .lines()
        .map(|l| l.trim().trim_end_matches(',').to_owned())
        .filter(|l| !l.is_empty())
        .collect();
        let both =
            lines.iter().any(|l| l == "h264,video") && lines.iter().any(|l| l == "aac,audio");
        both.then_some(lines)
    })
    .unwrap_or_default()
}

/// Speaks `requests` over TLS to `port` (openssl s_client, no verification) and returns
/// what came back, handshake report included (the peer certificate's subject).
fn tls_exchange(port: u16, requests: &str) -> String {
    require_tool("openssl", "openssl");
    let output = common::run_with_input(
        Command::new("openssl")
            .args(["s_client", "-quiet", "-connect"])
            .arg(format!("127.0.0.1:{port}")),
        requests.as_bytes(),
    );
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    )
}

/// A SETUP that asks for UDP only, then a TEARDOWN so the server closes the connection.
fn udp_setup(port: u16) -> String {
    format!(
        "SETUP rtsps://127.0.0.1:{port}/live/src/trackID=0 RTSP/1.0\r\nCSeq: 1\r\nTransport: RTP/AVP;unicast;client_port=5000-5001\r\n\r\nTEARDOWN rtsps://127.0.0.1:{port}/live/src RTSP/1.0\r\nCSeq: 2\r\n\r\n"
    )
}

fn live_streams(server: &Server) -> String {
    server
        .try_get("/manage/live_streams_status")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default()
}

#[test]
fn rtsps_plays_and_a_second_strom_pulls_it_over_tls() {
    let (rtsp_port, rtsps_port) = (free_port(), free_port());
    let origin = start_origin(rtsp_port, rtsps_port);
    let mut publisher = publish(&rtmp_url(&origin, "live/src"));
    wait_live(&origin, "live", "src", LIVE)
        .unwrap_or_else(|| panic!("origin not live: {}", publisher.stop_and_stderr()));

    // ffprobe over rtsps (ffmpeg's TLS does not verify unless asked).
    let rtsps = format!("rtsps://127.0.0.1:{rtsps_port}/live/src");
    let streams = probe_both(&rtsps);
    assert!(
        !streams.is_empty(),
        "ffprobe over rtsps sees no H.264 and AAC\n{}",
        origin.log()
    );

    // ffmpeg publishes over rtsps too (ANNOUNCE, SETUP interleaved, RECORD).
    let mut rtsps_publisher =
        publish_as(&format!("rtsps://127.0.0.1:{rtsps_port}/live/pub"), "rtsp");
    let entry = wait_live(&origin, "live", "pub", LIVE).unwrap_or_else(|| {
        panic!(
            "rtsps publisher not live: {}\n{}",
            rtsps_publisher.stop_and_stderr(),
            origin.log()
        )
    });
    assert_eq!(entry["protocol"], "RTSP", "{entry}");
    drop(rtsps_publisher);

    // UDP would leave the TLS connection: refused with 461 (only interleaved offered).
    let answer = tls_exchange(rtsps_port, &udp_setup(rtsps_port));
    assert!(answer.contains("RTSP/1.0 461"), "{answer}");
    assert!(answer.contains("strom origin one"), "certificate: {answer}");

    // A second strom trusting the test CA pulls the rtsps output (credentials given
    // when challenged, never shown).
    let ca = origin.path("ca.pem");
    let source = format!("rtsps://viewer:secret@127.0.0.1:{rtsps_port}/live/src");
    let edge = start_edge(&source, Some(&ca));
    let entry = wait_live(&edge, "live", "cam", LIVE)
        .unwrap_or_else(|| panic!("rtsps pull not live\n{}\n{}", edge.log(), origin.log()));
    assert_eq!(entry["protocol"], "RTSP", "{entry}");
    let shown = format!("\"source_url\":\"{rtsps}\"");
    let status = live_streams(&edge);
    assert!(status.contains(&shown), "{shown} in {status}");
    assert!(
        !status.contains("secret"),
        "credentials never shown: {status}"
    );
    assert!(
        !edge.log().contains("secret"),
        "credentials never logged\n{}",
        edge.log()
    );
    let hls = format!(
        "http://127.0.0.1:{}/live/cam/playlist.m3u8",
        edge.ports.http
    );
    assert!(
        !probe_both(&hls).is_empty(),
        "the rtsps pull over HLS\n{}",
        edge.log()
    );

    // A strom that does not trust the CA refuses the certificate, and says why.
    let untrusting = start_edge(&source, None);
    wait_for(LIVE, "the refused certificate logged", || {
        let log = untrusting.log();
        (log.contains("RTSP pull failed") && log.contains("certificate")).then_some(())
    })
    .unwrap_or_else(|| panic!("no refusal logged\n{}", untrusting.log()));
    assert!(
        !live_streams(&untrusting).contains("\"cam\""),
        "an untrusted source is never pulled: {}",
        live_streams(&untrusting)
    );

    // A new certificate is presented to new handshakes after a reload.
    make_certificates(origin.dir.path(), "strom origin two");
    let (code, body) = origin.post("/manage/reload_ssl_certificates", "");
    assert_eq!(code, 200, "{body}\n{}", origin.log());
    let answer = tls_exchange(rtsps_port, &udp_setup(rtsps_port));
    assert!(answer.contains("strom origin two"), "certificate: {answer}");
    // The pull in progress keeps its connection.
    assert!(
        wait_live(&edge, "live", "cam", Duration::from_secs(5)).is_some(),
        "{}",
        edge.log()
    );
}

#[test]
fn a_reload_opens_rtsps_only_with_a_certificate() {
    // No certificate: rules asking for rtsps are refused, the old ones stay.
    let rtsps_port = free_port();
    let mut server = Server::prepare("");
    let rules = |rtsps: &str| {
        format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
                "RtspSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]{rtsps}}}}}"#,
            server.ports.rtmp,
            free_port()
        )
    };
    let plain = rules("");
    let with_rtsps = rules(&format!(
        r#", "tls_interfaces": [{{"ip": "127.0.0.1", "port": {rtsps_port}}}]"#
    ));
    std::fs::write(server.path("rules.conf"), &plain).unwrap();
    server.spawn();
    server.wait_ready();
    std::fs::write(server.path("rules.conf"), &with_rtsps).unwrap();
    let (code, body) = server.post("/manage/reload_config", "");
    assert_eq!(code, 422, "{body}");
    assert!(body.to_string().contains("ssl_certificate"), "{body}");
    drop(server);

    // With one (and no HTTPS port), a reload opens the rtsps listener serving it.
    let mut server = Server::prepare("ssl_certificate = cert.pem\nssl_certificate_key = key.pem");
    make_certificates(server.dir.path(), "strom reloaded");
    std::fs::write(server.path("rules.conf"), &plain).unwrap();
    server.spawn();
    server.wait_ready();
    server.apply_rules(&with_rtsps);
    let answer = wait_for(LIVE, "the rtsps listener answers", || {
        let answer = tls_exchange(rtsps_port, &udp_setup(rtsps_port));
        answer.contains("RTSP/1.0 461").then_some(answer)
    })
    .unwrap_or_else(|| panic!("no rtsps after the reload\n{}", server.log()));
    assert!(answer.contains("strom reloaded"), "certificate: {answer}");
}
