//! Changing a running server end to end: TLS certificates swapped under open
//! connections, rules synced from a control panel, DRM settings, re-publishing rules
//! created and dropped through the API, and worker restart accounting.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Server, free_port, require_tool, rules_json, wait_for};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

/// Longest any single client step may take before the test gives up on it.
const STEP: Duration = Duration::from_secs(15);

// ---------------------------------------------------------------------------------------
// TLS helpers (the openssl command-line tool)

/// Writes a self-signed certificate for `CN=<cn>` as `<cn>-cert.pem` and `<cn>-key.pem`
/// in `dir`.
fn make_certificate(dir: &Path, cn: &str) {
    common::self_signed_certificate(dir, cn, &format!("{cn}-cert.pem"), &format!("{cn}-key.pem"));
}

/// Makes the `<cn>` certificate the one in cert.pem/key.pem.
fn install_certificate(server: &Server, cn: &str) {
    for (from, to) in [("cert", "cert.pem"), ("key", "key.pem")] {
        let bytes = std::fs::read(server.path(&format!("{cn}-{from}.pem"))).unwrap();
        std::fs::write(server.path(to), bytes).unwrap();
    }
}

/// The subject CN of the first PEM certificate in `text` (s_client prints the server's).
fn certificate_cn(text: &str) -> Option<String> {
    let begin = text.find("-----BEGIN CERTIFICATE-----")?;
    let end_marker = "-----END CERTIFICATE-----";
    let end = begin + text[begin..].find(end_marker)? + end_marker.len();
    let mut x509 = Command::new("openssl")
        .args(["x509", "-noout", "-subject", "-nameopt", "RFC2253"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    x509.stdin
        .take()
        .unwrap()
        .write_all(&text.as_bytes()[begin..end])
        .unwrap();
    let output = x509.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "openssl x509 failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    // "subject=CN=first"
    let subject = String::from_utf8(output.stdout).unwrap();
    subject
        .trim()
        .split(',')
        .find_map(|part| {
            part.trim()
                .strip_prefix("subject=")
                .unwrap_or(part)
                .strip_prefix("CN=")
        })
        .map(str::to_owned)
}

/// Runs `command`, killing it if it takes longer than [`STEP`]; returns stdout.
fn stdout_within_limit(command: &mut Command) -> String {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let exited = wait_for(STEP, "the client to finish", || child.try_wait().unwrap());
    if exited.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{command:?} did not finish within {STEP:?}");
    }
    reader.join().unwrap()
}

/// The CN of the certificate a fresh TLS connection to `port` is served.
fn served_cn(port: u16) -> String {
    require_tool("openssl", "openssl");
    let output = stdout_within_limit(Command::new("openssl").args([
        "s_client",
        "-connect",
        &format!("127.0.0.1:{port}"),
        "-servername",
        "localhost",
    ]));
    certificate_cn(&output).unwrap_or_else(|| panic!("no server certificate in:\n{output}"))
}

/// A TLS connection kept open by an `openssl s_client` process, used for HTTP/1.1
/// keep-alive requests.
struct TlsSession {
    child: Child,
    stdin: ChildStdin,
    output: mpsc::Receiver<Vec<u8>>,
    /// Everything s_client printed so far (certificate, session info, responses).
    seen: String,
}

impl TlsSession {
    fn open(port: u16) -> Self {
        require_tool("openssl", "openssl");
        let mut child = Command::new("openssl")
            .args(["s_client", "-connect", &format!("127.0.0.1:{port}")])
            .args(["-servername", "localhost", "-ign_eof"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (tx, output) = mpsc::channel();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut chunk) {
                if n == 0 || tx.send(chunk[..n].to_vec()).is_err() {
                    return;
                }
            }
        });
        Self {
            child,
            stdin,
            output,
            seen: String::new(),
        }
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Sends a GET over the open connection and returns what came back for it.
    fn get(&mut self, path: &str) -> String {
        let start = self.seen.len();
        write!(
            self.stdin,
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: strom-e2e\r\n\r\n"
        )
        .unwrap();
        self.stdin.flush().unwrap();
        let body = r#"{"status":"NotFound","error":"no such stream"}"#;
        let deadline = std::time::Instant::now() + STEP;
        while !self.seen[start..].contains(body) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.output.recv_timeout(left) {
                Ok(chunk) => self.seen.push_str(&String::from_utf8_lossy(&chunk)),
                Err(e) => panic!(
                    "no answer to GET {path} on the open TLS connection ({e}); got:\n{}",
                    &self.seen[start..]
                ),
            }
        }
        self.seen[start..].to_owned()
    }
}

impl Drop for TlsSession {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server with HTTPS on a free port, certificates `first` and `second` generated and
/// `first` installed.
fn start_https_server() -> (Server, u16) {
    let ssl_port = free_port();
    let mut server = Server::prepare(&format!(
        "ssl_port = {ssl_port}\nssl_certificate = cert.pem\nssl_certificate_key = key.pem"
    ));
    make_certificate(server.dir.path(), "first");
    make_certificate(server.dir.path(), "second");
    install_certificate(&server, "first");
    server.spawn();
    server.wait_ready();
    (server, ssl_port)
}

#[test]
fn tls_certificates_swap_without_dropping_open_connections() {
    let (server, ssl_port) = start_https_server();

    // (a) HTTPS reaches the packager, which answers its JSON 404.
    let url = format!("https://127.0.0.1:{ssl_port}/x");
    let answer = common::run_curl(&["-k", &url])
        .unwrap_or_else(|e| panic!("no HTTPS answer from {url} ({e}); log:\n{}", server.log()));
    assert_eq!(
        answer,
        (
            404,
            json!({"status": "NotFound", "error": "no such stream"})
        )
    );

    // (b) The configured certificate is the one served.
    assert_eq!(served_cn(ssl_port), "first");

    // (c) A connection opened now survives the swap.
    let mut open = TlsSession::open(ssl_port);
    let first_answer = open.get("/before");
    assert!(first_answer.contains("HTTP/1.1 404"), "{first_answer}");
    assert_eq!(
        certificate_cn(&open.seen).as_deref(),
        Some("first"),
        "the open connection negotiated the first certificate"
    );

    install_certificate(&server, "second");
    assert_eq!(
        server.post("/manage/reload_ssl_certificates", ""),
        (200, json!({"status": "Ok"})),
        "log:\n{}",
        server.log()
    );
    assert_eq!(
        served_cn(ssl_port),
        "second",
        "new connections get the new one"
    );
    assert!(
        open.alive(),
        "the open TLS connection was dropped by the swap"
    );
    let second_answer = open.get("/after");
    assert!(second_answer.contains("HTTP/1.1 404"), "{second_answer}");
    assert!(open.alive());

    // (d) A broken certificate is refused and the current one stays.
    std::fs::write(server.path("cert.pem"), "this is not a certificate\n").unwrap();
    let (code, body) = server.post("/manage/reload_ssl_certificates", "");
    assert_eq!(code, 422, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("certificate") && error.contains("PEM"),
        "the error says why: {error}"
    );
    assert_eq!(served_cn(ssl_port), "second");

    // A valid certificate with somebody else's key is refused too.
    let first_cert = std::fs::read(server.path("first-cert.pem")).unwrap();
    std::fs::write(server.path("cert.pem"), first_cert).unwrap();
    let (code, body) = server.post("/manage/reload_ssl_certificates", "");
    assert_eq!(code, 422, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("do not belong together"),
        "{body}"
    );
    assert_eq!(served_cn(ssl_port), "second");
    assert!(open.alive());
    open.get("/still-open");
}

// ---------------------------------------------------------------------------------------
// A tiny control panel

/// An HTTP server on 127.0.0.1 answering every request with one configurable response.
struct Panel {
    port: u16,
    answer: Arc<Mutex<(u16, String)>>,
    paths: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Panel {
    fn start(status: u16, body: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let answer = Arc::new(Mutex::new((status, body.to_owned())));
        let paths = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (answer, paths, stop) = (answer.clone(), paths.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    if let Ok(stream) = stream {
                        let (status, body) = answer.lock().unwrap().clone();
                        if let Some(path) = answer_one(stream, status, &body) {
                            paths.lock().unwrap().push(path);
                        }
                    }
                }
            })
        };
        Self {
            port,
            answer,
            paths,
            stop,
            thread: Some(thread),
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/rules", self.port)
    }

    fn answer(&self, status: u16, body: &str) {
        *self.answer.lock().unwrap() = (status, body.to_owned());
    }

    /// Closes the listening socket: connections to the port are refused from now on.
    fn shut_down(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the blocking accept so the thread sees the flag and drops the listener.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        thread.join().unwrap();
    }
}

impl Drop for Panel {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// Reads one request head and answers it; returns the request path.
fn answer_one(mut stream: TcpStream, status: u16, body: &str) -> Option<String> {
    stream.set_read_timeout(Some(STEP)).ok()?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split_whitespace().nth(1)?.to_owned();
    let response = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).ok()?;
    Some(path)
}

#[test]
fn panel_settings_are_fetched_stored_and_applied() {
    // The panel knows the server's RTMP port only once the server's ports are chosen.
    let mut panel = Panel::start(503, "{}");
    let server = Server::start(&format!("panel_url = {}", panel.url()));
    server.wait_ready();
    let document = rules_json(server.ports.rtmp, 3);
    panel.answer(200, &document);

    assert_eq!(
        server.post("/manage/sync_panel_settings", ""),
        (200, json!({"status": "Ok"})),
        "log:\n{}",
        server.log()
    );
    assert_eq!(panel.paths.lock().unwrap().as_slice(), ["/rules"]);
    let (_, settings) = server.get("/manage/rtmp_settings");
    assert_eq!(settings["RtmpSettings"]["duration"], 3);
    assert_eq!(
        settings["RtmpSettings"]["interfaces"],
        json!([{"ip": "127.0.0.1", "port": server.ports.rtmp}])
    );
    assert_eq!(
        std::fs::read_to_string(server.path("rules.conf")).unwrap(),
        document,
        "the panel's document is stored as rules.conf"
    );

    // Invalid JSON from the panel: refused, nothing changes, the error says why.
    panel.answer(200, "{\"RtmpSettings\": {\"duration\": ");
    let (code, body) = server.post("/manage/sync_panel_settings", "");
    assert_ne!(code, 200, "{body}");
    assert!((400..600).contains(&code), "{code} {body}");
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("JSON"),
        "the error names the problem: {error}"
    );
    assert_eq!(
        server.get("/manage/rtmp_settings").1["RtmpSettings"]["duration"],
        3
    );
    assert_eq!(
        std::fs::read_to_string(server.path("rules.conf")).unwrap(),
        document,
        "a refused document is not stored"
    );

    // Valid JSON that is not a rules document: the error names the field.
    panel.answer(
        200,
        &rules_json(server.ports.rtmp, 3).replace("duration", "durations"),
    );
    let (code, body) = server.post("/manage/sync_panel_settings", "");
    assert_eq!(code, 422, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("durations"),
        "{body}"
    );

    // A document whose RTMP port cannot be bound: refused before anything changes, and
    // not stored (a restart would otherwise fail on it).
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_port = taken.local_addr().unwrap().port();
    panel.answer(200, &rules_json(taken_port, 5));
    let (code, body) = server.post("/manage/sync_panel_settings", "");
    assert_eq!(code, 422, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains(&taken_port.to_string()),
        "the error names the address: {body}"
    );
    assert_eq!(
        server.get("/manage/rtmp_settings").1["RtmpSettings"]["duration"],
        3
    );
    assert_eq!(
        std::fs::read_to_string(server.path("rules.conf")).unwrap(),
        document,
        "a document that could not be applied is not stored"
    );
    drop(taken);

    // The panel failing: 502 with its status.
    panel.answer(500, "{}");
    let (code, body) = server.post("/manage/sync_panel_settings", "");
    assert_eq!(code, 502, "{body}");
    assert!(body["error"].as_str().unwrap().contains("500"), "{body}");

    // The panel gone: 502.
    panel.shut_down();
    let (code, body) = server.post("/manage/sync_panel_settings", "");
    assert_eq!(code, 502, "{body}");
    assert!(body["error"].is_string(), "{body}");
    assert_eq!(
        server.get("/manage/rtmp_settings").1["RtmpSettings"]["duration"],
        3
    );
    assert_eq!(
        std::fs::read_to_string(server.path("rules.conf")).unwrap(),
        document
    );
}

// ---------------------------------------------------------------------------------------
// DRM

const DRM_KEY: &str = "00112233445566778899aabbccddeeff";

fn drm_document(key: &str) -> String {
    json!({"hls_aes128": [{
        "app": "live",
        "stream": "",
        "key": key,
        "key_uri": "https://keys.example/k"
    }]})
    .to_string()
}

#[test]
fn drm_reload_needs_a_path_and_a_valid_file() {
    // Without a DRM file there is nothing to re-read: deployed clients take any error as
    // a failed reload, so the answer is the success shape with a note (issue 18).
    let server = Server::start("");
    server.wait_ready();
    let (code, body) = server.post("/manage/reload_config?drm=true", "");
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"], "Ok", "{body}");
    assert!(
        body["note"].as_str().unwrap().contains("drm_settings_path"),
        "{body}"
    );
    drop(server);

    let mut server = Server::prepare("drm_settings_path = drm.json");
    std::fs::write(server.path("drm.json"), "{}").unwrap();
    server.spawn();
    server.wait_ready();

    std::fs::write(server.path("drm.json"), drm_document(DRM_KEY)).unwrap();
    assert_eq!(
        server.post("/manage/reload_config?drm=true", ""),
        (200, json!({"status": "Ok"})),
        "log:\n{}",
        server.log()
    );
    wait_for(STEP, "the packager to take the keys", || {
        server
            .log()
            .contains("drm settings replaced keys=1")
            .then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "the packager never got the DRM keys; log:\n{}",
            server.log()
        )
    });

    std::fs::write(server.path("drm.json"), drm_document(&DRM_KEY[2..])).unwrap();
    let (code, body) = server.post("/manage/reload_config?drm=true", "");
    assert_eq!(code, 422, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("hls_aes128[0].key"),
        "names the field: {error}"
    );
    assert!(error.contains("drm.json"), "names the file: {error}");
    assert!(
        !error.contains(&DRM_KEY[4..]),
        "never prints the key: {error}"
    );

    // Without drm=true the DRM file is not read, so the broken one does not matter.
    assert_eq!(
        server.post("/manage/reload_config", ""),
        (200, json!({"status": "Ok"}))
    );
}

// ---------------------------------------------------------------------------------------
// Re-publishing rules (spec §2.5, endpoints 8-11)

const API_RULE: &str = r#"{"src_app":"live","src_stream":"cam","dest_addr":"127.0.0.1","dest_port":"1936","dest_app":"edge","dest_stream":"cam"}"#;

fn rule_ids(server: &Server) -> Vec<String> {
    let (code, body) = server.get("/manage/rtmp/republish");
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"], "Ok");
    body["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| rule["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn republish_rules_crud_and_reload_drops_api_rules() {
    let mut server = Server::prepare("");
    let rules = json!({
        "RtmpSettings": {
            "interfaces": [{"ip": "127.0.0.1", "port": server.ports.rtmp}],
            "duration": 6,
            "protocols": ["HLS"]
        },
        "RtmpRepublishRules": [{
            "id": "edge1", "src_app": "live", "src_stream": "", "dest_addr": "edge.example",
            "dest_port": 1935, "dest_app": "live", "dest_stream": "", "auth_schema": "NONE"
        }]
    });
    std::fs::write(server.path("rules.conf"), rules.to_string()).unwrap();
    server.spawn();
    server.wait_ready();
    assert_eq!(
        rule_ids(&server),
        ["edge1"],
        "the rules.conf rule is listed"
    );

    // Create.
    let (code, created) = server.post("/manage/rtmp/republish", API_RULE);
    assert_eq!(code, 200, "{created}");
    assert_eq!(created["status"], "Ok");
    let rule = &created["rule"];
    let id = rule["id"].as_str().expect("a string id").to_owned();
    assert!(!id.is_empty());
    assert_eq!(
        *rule,
        json!({
            "id": id,
            "src_app": "live",
            "src_stream": "cam",
            "dest_addr": "127.0.0.1",
            "dest_port": 1936,
            "dest_app": "edge",
            "dest_stream": "cam",
            "dest_app_params": "",
            "dest_stream_params": "",
            "auth_schema": "NONE",
            "dest_login": "",
            "dest_password": "",
            "keep_src_stream_params": false,
            "ssl": false
        })
    );
    assert!(rule["dest_port"].is_u64(), "dest_port is a JSON number");

    // List and get.
    let ids = rule_ids(&server);
    assert!(
        ids.contains(&id) && ids.contains(&"edge1".to_owned()),
        "{ids:?}"
    );
    assert_eq!(
        server.get(&format!("/manage/rtmp/republish/{id}")),
        (200, json!({"rules": [rule], "status": "Ok"}))
    );
    let (code, body) = server.get("/manage/rtmp/republish/no-such-rule");
    assert_eq!(code, 404, "{body}");

    // The server's own scheme under its alias.
    let mut native: Value = serde_json::from_str(API_RULE).unwrap();
    native["dest_stream"] = json!("cam2");
    native["auth_schema"] = json!("STROM");
    native["dest_login"] = json!("u");
    native["dest_password"] = json!("p");
    let (code, body) = server.post("/manage/rtmp/republish", &native.to_string());
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["rule"]["auth_schema"], "NIMBLE");
    assert_eq!(body["rule"]["dest_login"], "u");
    let strom_id = body["rule"]["id"].as_str().unwrap().to_owned();
    assert_ne!(strom_id, id, "every rule gets its own id");

    // Bad fields are named.
    for (field, value) in [("auth_schema", json!("BOGUS")), ("dest_port", json!("abc"))] {
        let mut bad: Value = serde_json::from_str(API_RULE).unwrap();
        bad[field] = value;
        let (code, body) = server.post("/manage/rtmp/republish", &bad.to_string());
        assert_eq!(code, 400, "{bad}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains(field),
            "{bad}: the error names {field}: {body}"
        );
    }
    assert_eq!(rule_ids(&server).len(), 3, "refused rules are not added");

    // Delete.
    assert_eq!(
        server.delete(&format!("/manage/rtmp/republish/{id}")),
        (200, json!({"status": "Ok"}))
    );
    assert_eq!(
        server.delete(&format!("/manage/rtmp/republish/{id}")),
        (200, json!({"status": "NotFound"}))
    );
    assert_eq!(
        server.get(&format!("/manage/rtmp/republish/{id}")).0,
        404,
        "a deleted rule is gone"
    );

    // A reload drops API rules and keeps the rules.conf ones.
    let (code, body) = server.post("/manage/rtmp/republish", API_RULE);
    assert_eq!(code, 200, "{body}");
    assert_eq!(rule_ids(&server).len(), 3);
    assert_eq!(
        server.post("/manage/reload_config", ""),
        (200, json!({"status": "Ok"}))
    );
    assert_eq!(rule_ids(&server), ["edge1"]);
}

// ---------------------------------------------------------------------------------------
// Worker restarts

#[test]
fn a_killed_ingest_worker_counts_one_restart_and_no_other() {
    let server = Server::start("");
    server.wait_ready();
    let old_pid = server.worker_pid("ingest");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(old_pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let workers = wait_for(STEP, "a new ingest worker ready", || {
        let (_, workers) = server.try_get("/manage/workers")?;
        let ingest = workers
            .as_array()?
            .iter()
            .find(|w| w["kind"] == "ingest")?
            .clone();
        (ingest["pid"] != old_pid && ingest["pid"] != 0 && ingest["state"] == "ready")
            .then_some(workers)
    })
    .unwrap_or_else(|| panic!("ingest worker not replaced; log:\n{}", server.log()));
    let restarts: Vec<(String, Value)> = workers
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["kind"].as_str().unwrap().to_owned(),
                w["restarts"].clone(),
            )
        })
        .collect();
    let expected: Vec<(String, Value)> = common::WORKER_KINDS
        .into_iter()
        .map(|kind| (kind.to_owned(), json!(u32::from(kind == "ingest"))))
        .collect();
    assert_eq!(restarts, expected);
    // The API still answers for every worker.
    assert_eq!(server.get("/manage/sessions"), (200, json!([])));
    assert_eq!(server.get("/manage/mpeg2ts_status").0, 200);
}

/// Certificates reloaded on a server that uses none: success with a note (deployed clients
/// treat an error as a failed reload); the plain reload answers no note.
#[test]
fn certificate_reload_without_certificates_is_a_success_with_a_note() {
    let server = Server::start("");
    server.wait_ready();
    let (code, body) = server.post("/manage/reload_ssl_certificates", "");
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"], "Ok", "{body}");
    assert!(
        body["note"].as_str().unwrap().contains("no certificates"),
        "{body}"
    );
    assert_eq!(
        server.post("/manage/reload_config", ""),
        (200, json!({"status": "Ok"}))
    );
}
