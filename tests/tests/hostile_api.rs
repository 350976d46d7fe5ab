//! The management API against hostile or unlucky clients, end to end with the real
//! binary: slowloris heads and idle connections are closed, a connection flood is capped
//! and the API answers again once it ends, HTTPS with its own certificate, oversized
//! re-publishing rules and deny lists are refused with the reason, a list whose worker
//! does not answer is a 503 naming it instead of a silently partial 200, a head over
//! 64 KiB is 431, a refused reload names the field but neither a pull URL's password nor
//! where rules.conf lives, and `stream_urls` refuses bad names and notes signed playback.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Server, run_curl, try_curl, wait_for};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Short timeouts so that the test sees them fire quickly.
const LIMITS: &str = "management_header_timeout = 1\nmanagement_idle_timeout = 2\nmanagement_body_timeout = 1\nmanagement_max_connections = 8\nmanagement_worker_timeout = 1";

fn connect(server: &Server) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", server.ports.management)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

/// Reads until the server closes the connection (EOF or reset); how long it took.
/// Panics when the server keeps it open for 10 s.
fn wait_closed(stream: &mut TcpStream) -> Duration {
    let started = Instant::now();
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return started.elapsed(),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                panic!(
                    "the server kept the connection open for {:?}",
                    started.elapsed()
                )
            }
            Err(_) => return started.elapsed(),
        }
    }
}

#[test]
fn slow_heads_and_idle_connections_are_closed() {
    let server = Server::start(LIMITS);
    server.wait_ready();

    // Slowloris: a head that never ends, one byte every 200 ms.
    let mut slow = connect(&server);
    slow.write_all(b"GET /manage/workers HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let mut trickle = slow.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        while trickle.write_all(b"X").is_ok() {
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let took = wait_closed(&mut slow);
    assert!(
        took >= Duration::from_millis(800) && took < Duration::from_secs(2),
        "a trickled head is closed by the 1 s header timeout, took {took:?}"
    );
    drop(slow);
    writer.join().unwrap();

    // A connection that says nothing is closed by the 2 s idle timeout.
    let mut silent = connect(&server);
    let took = wait_closed(&mut silent);
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(4),
        "an idle connection is closed by the 2 s idle timeout, took {took:?}"
    );

    // The API itself is unaffected.
    let (code, _) = server.get("/manage/workers");
    assert_eq!(code, 200);
}

#[test]
fn a_connection_flood_is_capped_and_the_api_answers_once_it_ends() {
    let server = Server::start(LIMITS);
    server.wait_ready();

    let mut flood: Vec<TcpStream> = (0..40).map(|_| connect(&server)).collect();
    // Connections over the cap (8) are accepted and closed at once: well before any
    // timeout could have closed them.
    let mut closed_at_once = 0;
    for stream in &mut flood {
        stream
            .set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut byte = [0u8; 1];
        match stream.read(&mut byte) {
            Ok(0) => closed_at_once += 1,
            Err(e) if !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                closed_at_once += 1
            }
            _ => {}
        }
    }
    assert!(
        closed_at_once >= 32,
        "at most 8 connections stay open, {closed_at_once} of 40 were closed at once"
    );
    wait_for(Duration::from_secs(10), "refusals logged", || {
        server
            .log()
            .contains("management connection refused: too many open connections")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("no refusal in the log:\n{}", server.log()));

    // The flood ends: the API answers a normal client again.
    drop(flood);
    wait_for(
        Duration::from_secs(10),
        "API answers after the flood",
        || try_curl(&[&server.url("/manage/workers")]).filter(|(code, _)| *code == 200),
    )
    .expect("the API answers once the flood ends");
    // The supervisor never ran out of descriptors: all four workers still run.
    server.wait_ready();
}

/// Writes a self-signed certificate for `localhost` and 127.0.0.1 into `dir`.
fn make_certificate(dir: &Path) {
    common::self_signed_certificate(dir, "localhost", "api-cert.pem", "api-key.pem");
}

#[test]
fn the_management_api_speaks_https_with_its_own_certificate() {
    let mut server = Server::prepare(&format!(
        "{LIMITS}\nmanagement_token = s3cret\nmanagement_ssl_certificate = api-cert.pem\nmanagement_ssl_certificate_key = api-key.pem"
    ));
    make_certificate(server.dir.path());
    server.spawn();
    let cacert = server.path("api-cert.pem");
    let cacert = cacert.to_str().unwrap();
    // `strom sign --config` knows the API speaks HTTPS.
    let signed = |path: &str| {
        let output = Command::new(common::strom_bin())
            .arg("sign")
            .arg("--config")
            .arg(server.path("strom.conf"))
            .arg(path)
            .output()
            .unwrap();
        assert!(output.status.success());
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    };
    let url = signed("/manage/workers");
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let workers = wait_for(Duration::from_secs(30), "HTTPS API ready", || {
        let (code, body) = try_curl(&["--cacert", cacert, &signed("/manage/workers")])?;
        let ready = code == 200
            && body
                .as_array()
                .is_some_and(|w| w.len() == 7 && w.iter().all(|w| w["state"] == "ready"));
        ready.then_some(body)
    })
    .unwrap_or_else(|| panic!("HTTPS API not ready; log:\n{}", server.log()));
    assert_eq!(workers.as_array().unwrap().len(), 7);

    // The certificate is checked (by name and by CA), and plain HTTP gets nothing.
    let (code, _) = try_curl(&[
        "--cacert",
        cacert,
        &signed("/manage/workers").replace("127.0.0.1", "localhost"),
    ])
    .expect("the certificate also names localhost");
    assert_eq!(code, 200);
    assert!(
        run_curl(&[&signed("/manage/workers")]).is_err(),
        "without --cacert the self-signed certificate is refused"
    );
    let plain = signed("/manage/workers").replace("https://", "http://");
    assert!(
        !matches!(try_curl(&[&plain]), Some((200, _))),
        "plain HTTP is not served on the HTTPS port"
    );
    // Auth still applies over HTTPS.
    let unsigned = format!(
        "https://127.0.0.1:{}/manage/workers",
        server.ports.management
    );
    let (code, body) = try_curl(&["--cacert", cacert, &unsigned]).unwrap();
    assert_eq!(code, 403, "{body}");

    // The management certificate is re-read by reload_ssl_certificates (no delivery
    // HTTPS is configured, so it is the only one).
    let (code, body) = try_curl(&[
        "--cacert",
        cacert,
        "-X",
        "POST",
        &signed("/manage/reload_ssl_certificates"),
    ])
    .unwrap();
    assert_eq!(code, 200, "{body}");
    assert!(server.log().contains("management API certificate reloaded"));
}

/// POSTs a body too large for a command-line argument (through a file).
fn post_file(server: &Server, path: &str, body: &str) -> (u16, Value) {
    let file = server.path("body.json");
    std::fs::write(&file, body).unwrap();
    common::curl(&[
        "-X",
        "POST",
        "-H",
        "Content-Type: application/json",
        "--data-binary",
        &format!("@{}", file.display()),
        &server.url(path),
    ])
}

#[test]
fn oversized_republish_rules_and_deny_lists_are_refused_with_the_reason() {
    let server = Server::start(LIMITS);
    server.wait_ready();

    let rule = |params: usize| {
        json!({
            "src_app": "live", "src_stream": "", "dest_addr": "127.0.0.1", "dest_port": 1935,
            "dest_app": "live", "dest_app_params": "p".repeat(params),
        })
        .to_string()
    };
    let (code, body) = server.post("/manage/rtmp/republish", &rule(4097));
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["status"], "BadRequest");
    assert_eq!(
        body["error"],
        "dest_app_params: 4097 bytes long; the limit is 4096 bytes"
    );
    let (code, body) = server.post(
        "/manage/rtmp/republish",
        &json!({"src_app": "live", "dest_addr": "h".repeat(1025), "dest_port": 1935, "dest_app": "a"})
            .to_string(),
    );
    assert_eq!(code, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("dest_addr: 1025 bytes")
    );
    let (code, body) = server.post("/manage/rtmp/republish", &rule(4096));
    assert_eq!(code, 200, "a rule at the limits is fine: {body}");

    let deny = |ids: Vec<String>| json!({ "PublishControlDenyRequest": ids }).to_string();
    let (code, body) = post_file(
        &server,
        "/manage/publish_control/deny",
        &deny((0..10_001).map(|i| format!("id{i}")).collect()),
    );
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        body["error"],
        "PublishControlDenyRequest: 10001 ids; the limit is 10000 per request"
    );
    let (code, body) = server.post(
        "/manage/publish_control/deny",
        &deny(vec!["ok".into(), "x".repeat(257)]),
    );
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        body["error"],
        "PublishControlDenyRequest[1]: 257 bytes long; the limit is 256 bytes"
    );
    // Longest ids, as many as fit the API's 1 MiB body limit.
    let (code, body) = post_file(
        &server,
        "/manage/publish_control/deny",
        &deny((0..3_000).map(|i| format!("{i:0>256}")).collect()),
    );
    assert_eq!(code, 200, "a request at the limits is fine: {body}");

    // The rtmp worker restarts with all of it (hello larger than it used to allow is
    // no longer a question of size).
    let old = server.worker_pid("rtmp");
    kill(Pid::from_raw(old), Signal::SIGKILL).unwrap();
    wait_for(Duration::from_secs(20), "rtmp worker restarted", || {
        let (code, workers) = server.try_get("/manage/workers")?;
        let rtmp = workers
            .as_array()?
            .iter()
            .find(|w| w["kind"] == "rtmp")?
            .clone();
        (code == 200 && rtmp["state"] == "ready" && rtmp["pid"] != json!(old)).then_some(())
    })
    .unwrap_or_else(|| panic!("rtmp worker did not come back; log:\n{}", server.log()));
}

/// Sends SIGCONT when dropped, so a failing assertion never leaves a worker stopped.
struct Continue(i32);

impl Drop for Continue {
    fn drop(&mut self) {
        let _ = kill(Pid::from_raw(self.0), Signal::SIGCONT);
    }
}

fn missing(body: &Value) -> Vec<String> {
    body["missing_workers"]
        .as_array()
        .map(|names| {
            names
                .iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_list_whose_worker_does_not_answer_is_503_naming_it() {
    let server = Server::start(LIMITS);
    server.wait_ready();
    let (code, _) = server.get("/manage/sessions");
    assert_eq!(code, 200);

    let rtmp = server.worker_pid("rtmp");
    kill(Pid::from_raw(rtmp), Signal::SIGSTOP).unwrap();
    let stopped = Continue(rtmp);
    // The worker is asked and does not answer within management_worker_timeout (1 s).
    // Both asks go out at once, so that both end well within the ~2.5 s after which a
    // silent worker is killed and restarted (a list without a running worker is complete).
    let (sessions, streams) = std::thread::scope(|scope| {
        let streams = scope.spawn(|| server.get("/manage/rtmp_status"));
        (server.get("/manage/sessions"), streams.join().unwrap())
    });
    let (code, body) = sessions;
    assert_eq!(code, 503, "{body}");
    assert_eq!(missing(&body), ["rtmp"]);
    assert_eq!(body["status"], "Unavailable");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("worker rtmp did not answer: the rtmp worker did not answer within 1s"),
        "{body}"
    );
    let (code, body) = streams;
    assert_eq!(code, 503, "{body}");
    assert_eq!(missing(&body), ["rtmp"]);
    drop(stopped);

    // Answering again (or restarted, if the machine was slow): complete lists, 200.
    for path in [
        "/manage/sessions",
        "/manage/rtmp_status",
        "/manage/live_streams_status",
    ] {
        wait_for(Duration::from_secs(20), path, || {
            server
                .try_get(path)
                .filter(|(code, body)| *code == 200 && body.is_array())
        })
        .unwrap_or_else(|| panic!("{path} did not recover; log:\n{}", server.log()));
    }
}

/// One request with an `X-Pad` header of `padding` bytes, sent at once; the answer.
fn padded_request(server: &Server, padding: usize) -> String {
    let mut stream = connect(server);
    let head = format!(
        "GET /manage/server_status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(padding)
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn a_request_head_over_64_kib_is_answered_431() {
    let server = Server::start("");
    server.wait_ready();
    let answer = padded_request(&server, 70 * 1024);
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer:.300}");
    let answer = padded_request(&server, 60 * 1024);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:.300}");
}

/// Lines of the log that mention `text`.
fn log_lines(server: &Server, text: &str) -> usize {
    server.log().lines().filter(|l| l.contains(text)).count()
}

#[test]
fn refused_reloads_name_the_field_but_neither_passwords_nor_paths() {
    let server = Server::start("");
    server.wait_ready();
    let directory = server.dir.path().display().to_string();
    let mut rules: Value = serde_json::from_str(&common::rules_json(server.ports.rtmp, 6)).unwrap();
    for (url, why) in [
        (
            "rtsp://admin:hunter2@192.0.2.1:99999/Streaming/101",
            "bad port \"99999\"",
        ),
        (
            "rtsp://admin:hunter2@192.0.2.1:5x4/Streaming/101",
            "bad port \"5x4\"",
        ),
        ("rtsp://admin:hunter2@192.0.2.1/a b", "no whitespace"),
    ] {
        rules["RtmpPullSources"] = json!([{"app": "live", "stream": "cam", "url": url}]);
        std::fs::write(server.path("rules.conf"), rules.to_string()).unwrap();
        let (code, body) = server.post("/manage/reload_config", "");
        assert_eq!(code, 422, "{url}: {body}");
        let error = body["error"].as_str().unwrap();
        assert!(
            error.starts_with("rules.conf: RtmpPullSources[0].url: "),
            "{error}"
        );
        assert!(error.contains(why), "{error}");
        assert!(error.contains("rtsp://admin:***@192.0.2.1"), "{error}");
        assert!(!error.contains("hunter2"), "{error}");
        assert!(!error.contains(&directory), "{error}");
    }
    // SIGHUP reports the refusal in the log only: without the password there too.
    let before = log_lines(&server, "RtmpPullSources[0].url");
    server.signal(Signal::SIGHUP);
    wait_for(Duration::from_secs(10), "the SIGHUP reload refused", || {
        (log_lines(&server, "RtmpPullSources[0].url") > before).then_some(())
    })
    .unwrap_or_else(|| panic!("no refusal logged:\n{}", server.log()));
    assert!(!server.log().contains("hunter2"), "{}", server.log());
    // The server kept its rules: no pull source.
    let (code, _) = server.get("/manage/workers");
    assert_eq!(code, 200);
}

#[test]
fn stream_urls_refuse_bad_names_and_note_signed_playback() {
    let server = Server::start("");
    server.wait_ready();
    for path in [
        "/manage/stream_urls/live/a*b",
        "/manage/stream_urls/..%2Fx/cam",
    ] {
        let (code, body) = server.get(path);
        assert_eq!(code, 400, "{path}: {body}");
        assert_eq!(body["status"], "BadRequest", "{body}");
        assert!(body["error"].is_string(), "{body}");
    }
    let (code, body) = server.get("/manage/stream_urls/live/cam");
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["notes"], json!([]), "{body}");

    let mut rules: Value = serde_json::from_str(&common::rules_json(server.ports.rtmp, 6)).unwrap();
    rules["PlaybackProtection"] =
        json!([{"app": "live", "keys": ["k1"], "protocols": ["HLS", "RTMP"]}]);
    server.apply_rules(&rules.to_string());
    let (code, body) = server.get("/manage/stream_urls/live/cam");
    assert_eq!(code, 200, "{body}");
    let notes = body["notes"].to_string();
    assert!(
        notes.contains("wmsAuthSign") && notes.contains("HLS, RTMP"),
        "{body}"
    );
    // The existing fields keep their shapes.
    assert!(
        body["publish"].is_array() && body["play"].is_array(),
        "{body}"
    );
    assert_eq!(body["app"], "live");
}
