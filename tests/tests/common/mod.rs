//! Boots the real `strom` binary from a temporary configuration and talks to it with
//! real clients (curl, TCP sockets). Every wait polls for readiness with a deadline;
//! nothing sleeps for a fixed time and hopes.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `strom` binary cargo built beside this test (or `STROM_BIN`).
pub fn strom_bin() -> PathBuf {
    if let Ok(path) = std::env::var("STROM_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/<test> -> target/<profile>/strom
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target profile directory");
    let bin = profile_dir.join("strom");
    assert!(
        bin.exists(),
        "{} not found: build it first with `cargo build -p strom` (cargo test --workspace does)",
        bin.display()
    );
    bin
}

/// Fails the test, naming the Debian package, when a client tool is missing.
pub fn require_tool(tool: &str, package: &str) {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        found,
        "`{tool}` is missing: install the Debian package `{package}` (apt-get install -y {package})"
    );
}

/// A port nobody listens on right now (TCP and UDP), below the kernel's ephemeral range
/// (32768+) so that client connections of parallel tests cannot take it before the
/// server binds it. Test processes run in parallel (one per test under nextest) and
/// would otherwise draw the same ports: each port is claimed with a marker file created
/// exclusively in a shared directory; markers older than ten minutes are stale.
/// A TCP connection to `port` on 127.0.0.1 from `source` (a loopback address: every
/// 127.x.y.z is local on Linux), with a 10 s read timeout.
pub fn connect_from(source: &str, port: u16) -> TcpStream {
    use socket2::{Domain, SockAddr, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    let local: SocketAddr = format!("{source}:0").parse().unwrap();
    socket.bind(&SockAddr::from(local)).unwrap();
    let remote: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    socket.connect(&SockAddr::from(remote)).unwrap();
    let stream: TcpStream = socket.into();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

/// Resident memory of a process (`VmRSS`), in bytes.
pub fn rss(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const FIRST: u32 = 10_000;
    const COUNT: u32 = 22_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let claims = std::env::temp_dir().join("strom-test-ports");
    let _ = std::fs::create_dir_all(&claims);
    let start = std::process::id().wrapping_mul(7919);
    loop {
        let port =
            (FIRST + start.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed)) % COUNT) as u16;
        let marker = claims.join(port.to_string());
        let stale = std::fs::metadata(&marker)
            .and_then(|m| m.modified())
            .is_ok_and(|at| at.elapsed().is_ok_and(|age| age > Duration::from_secs(600)));
        if stale {
            let _ = std::fs::remove_file(&marker);
        }
        let claimed = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&marker)
            .is_ok();
        if claimed
            && TcpListener::bind(("127.0.0.1", port)).is_ok()
            && std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok()
        {
            return port;
        }
    }
}

/// `text` with every whole-number occurrence of port `old` replaced by `new` (a port
/// inside a longer number is left alone).
fn replace_port(text: &str, old: u16, new: u16) -> String {
    let old = old.to_string();
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(&old) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + old.len()..].chars().next();
        let whole = !before.is_some_and(|c| c.is_ascii_digit())
            && !after.is_some_and(|c| c.is_ascii_digit());
        out.push_str(&rest[..at]);
        if whole {
            out.push_str(&new.to_string());
        } else {
            out.push_str(&old);
        }
        rest = &rest[at + old.len()..];
    }
    out.push_str(rest);
    out
}

/// Runs `openssl` with `args` in `dir`; fails the test with its error output.
pub fn openssl(dir: &Path, args: &[&str]) {
    require_tool("openssl", "openssl");
    let output = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Writes a self-signed certificate for `CN=<cn>` (valid for `localhost` and 127.0.0.1)
/// into `dir` as `cert` and its key as `key`.
pub fn self_signed_certificate(dir: &Path, cn: &str, cert: &str, key: &str) {
    let subject = format!("/CN={cn}");
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &subject,
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout",
            key,
            "-out",
            cert,
        ],
    );
}

pub struct Ports {
    pub http: u16,
    pub management: u16,
    pub rtmp: u16,
}

impl Ports {
    pub fn new() -> Self {
        Self {
            http: free_port(),
            management: free_port(),
            rtmp: free_port(),
        }
    }
}

/// A running supervisor with its own directory, config and log file.
pub struct Server {
    pub dir: tempfile::TempDir,
    pub ports: Ports,
    pub child: Option<Child>,
    pub token: Option<String>,
}

pub fn rules_json(rtmp_port: u16, duration: u32) -> String {
    format!(
        r#"{{
  "RtmpSettings": {{
    "interfaces": [{{"ip": "127.0.0.1", "port": {rtmp_port}}}],
    "duration": {duration},
    "protocols": ["HLS"]
  }}
}}"#
    )
}

/// Every worker kind, in the order `/manage/workers` lists them.
pub const WORKER_KINDS: [&str; 7] = [
    "rtmp",
    "ingest",
    "packager",
    "dvr",
    "rtsp",
    "webrtc",
    "transcoder",
];

/// rules.conf with RTMP on `rtmp_port` and the delivery `outputs` (`"HLS"`, `"DASH"`,
/// ...) in segments of `segment_secs`, as JSON a test may add keys to.
pub fn delivery_rules(rtmp_port: u16, outputs: &[&str], segment_secs: u32) -> serde_json::Value {
    serde_json::json!({
        "RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": rtmp_port}]},
        "Delivery": {"outputs": outputs, "segment_duration_secs": segment_secs},
    })
}

impl Server {
    /// Writes a config (plus `extra` strom.conf lines) and starts `strom run`.
    pub fn start(extra: &str) -> Self {
        let mut server = Self::prepare(extra);
        server.spawn();
        server
    }

    /// A started server whose rules.conf is `rules` (its own RTMP port filled in for
    /// `{rtmp}`), with `extra` strom.conf lines; returns once every worker is ready.
    pub fn with_rules(extra: &str, rules: &str) -> Self {
        let mut server = Self::prepare(extra);
        let rules = rules.replace("{rtmp}", &server.ports.rtmp.to_string());
        std::fs::write(server.path("rules.conf"), rules).unwrap();
        server.spawn();
        server.wait_ready();
        server
    }

    /// Writes the config (plus `extra` strom.conf lines) and a default rules.conf without
    /// starting anything, so that a test can add files (certificates, rules) first.
    pub fn prepare(extra: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ports = Ports::new();
        let conf = format!(
            "listen_interfaces = 127.0.0.1\nport = {}\nmanagement_listen_interfaces = 127.0.0.1\nmanagement_port = {}\nrules_path = rules.conf\ndata_dir = data\nrun_dir = run\nlogging = info\n{extra}\n",
            ports.http, ports.management
        );
        std::fs::write(dir.path().join("strom.conf"), conf).unwrap();
        std::fs::write(dir.path().join("rules.conf"), rules_json(ports.rtmp, 6)).unwrap();
        let token = extra
            .lines()
            .find_map(|line| line.strip_prefix("management_token = ").map(str::to_owned));
        Server {
            dir,
            ports,
            child: None,
            token,
        }
    }

    pub fn spawn(&mut self) {
        self.spawn_with_env(&[]);
    }

    /// [`Self::spawn`] with extra environment variables (`TZ`, say) for the server.
    ///
    /// `free_port` only knows that a port was free when it looked: a client of another
    /// test (ffmpeg's RTSP client picks UDP ports anywhere in 5000-65000) may take it
    /// before the supervisor binds it. A supervisor that exits at start because one of its
    /// ports is in use is therefore started again on fresh ports, rewritten in strom.conf
    /// and rules.conf; any other exit is left for the test to see.
    pub fn spawn_with_env(&mut self, env: &[(&str, &str)]) {
        for _ in 0..3 {
            self.spawn_once(env);
            if !self.exited_on_a_taken_port() {
                return;
            }
            eprintln!(
                "a port of this test's server was taken; starting it on fresh ports. log:\n{}",
                self.log()
            );
            self.move_to_fresh_ports();
        }
        self.spawn_once(env);
    }

    /// Waits until the management port accepts connections or the supervisor exits, and
    /// says whether it exited because one of its listen addresses was in use.
    fn exited_on_a_taken_port(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        let management = SocketAddr::from(([127, 0, 0, 1], self.ports.management));
        while Instant::now() < deadline {
            let exited = matches!(self.child.as_mut().map(Child::try_wait), Some(Ok(Some(_))));
            if exited {
                let log = self.log();
                return log.contains("cannot listen on") && log.contains("Address already in use");
            }
            if TcpStream::connect_timeout(&management, Duration::from_millis(200)).is_ok() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    fn move_to_fresh_ports(&mut self) {
        let fresh = Ports::new();
        let moves = [
            (self.ports.http, fresh.http),
            (self.ports.management, fresh.management),
            (self.ports.rtmp, fresh.rtmp),
        ];
        for file in ["strom.conf", "rules.conf"] {
            let path = self.path(file);
            let Ok(mut text) = std::fs::read_to_string(&path) else {
                continue;
            };
            for (old, new) in moves {
                text = replace_port(&text, old, new);
            }
            std::fs::write(&path, text).unwrap();
        }
        self.ports = fresh;
    }

    fn spawn_once(&mut self, env: &[(&str, &str)]) {
        let log = std::fs::File::create(self.log_path()).unwrap();
        let child = Command::new(strom_bin())
            .envs(env.iter().copied())
            .arg("run")
            .arg("--config")
            .arg(self.dir.path().join("strom.conf"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn log_path(&self) -> PathBuf {
        self.path("strom.log")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().unwrap().id() as i32
    }

    pub fn url(&self, path: &str) -> String {
        let base = format!("http://127.0.0.1:{}", self.ports.management);
        match &self.token {
            Some(token) => {
                let output = Command::new(strom_bin())
                    .args(["sign", "--token", token, "--base", &base, path])
                    .output()
                    .unwrap();
                assert!(output.status.success(), "strom sign failed");
                String::from_utf8(output.stdout).unwrap().trim().to_owned()
            }
            None => format!("{base}{path}"),
        }
    }

    /// GET through curl; returns the HTTP status and the parsed JSON body.
    pub fn get(&self, path: &str) -> (u16, serde_json::Value) {
        curl(&["-X", "GET", &self.url(path)])
    }

    pub fn post(&self, path: &str, body: &str) -> (u16, serde_json::Value) {
        curl(&[
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            body,
            &self.url(path),
        ])
    }

    pub fn delete(&self, path: &str) -> (u16, serde_json::Value) {
        curl(&["-X", "DELETE", &self.url(path)])
    }

    /// Replaces rules.conf with `rules` once the server is ready and applies it with a
    /// reload (which must succeed).
    pub fn apply_rules(&self, rules: &str) {
        std::fs::write(self.path("rules.conf"), rules).unwrap();
        self.wait_ready();
        let (status, body) = self.post("/manage/reload_config", "");
        assert_eq!(status, 200, "reload: {body}");
    }

    /// Waits until the API answers and all seven workers report ready.
    pub fn wait_ready(&self) -> serde_json::Value {
        let workers = wait_for(Duration::from_secs(30), "all workers ready", || {
            assert!(
                process_alive(self.pid()),
                "the supervisor exited during start; log:\n{}",
                self.log()
            );
            let (code, body) = self.try_get("/manage/workers")?;
            let ready = code == 200
                && body.as_array().map(|workers| {
                    workers.len() == WORKER_KINDS.len()
                        && workers.iter().all(|w| w["state"] == "ready")
                }) == Some(true);
            ready.then_some(body)
        })
        .unwrap_or_else(|| panic!("server not ready; log:\n{}", self.log()));
        // Ports come from `free_port`, so another test's server could in principle have
        // taken one first; make sure the workers that answered are this supervisor's.
        for worker in workers.as_array().unwrap() {
            let pid = worker["pid"].as_i64().unwrap() as i32;
            assert_eq!(
                parent_pid(pid),
                Some(self.pid()),
                "worker {worker} is not a child of this test's supervisor (port taken by another server?); log:\n{}",
                self.log()
            );
        }
        workers
    }

    pub fn try_get(&self, path: &str) -> Option<(u16, serde_json::Value)> {
        try_curl(&["-X", "GET", &self.url(path)])
    }

    pub fn worker_pid(&self, kind: &str) -> i32 {
        let (_, workers) = self.get("/manage/workers");
        workers
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["kind"] == kind)
            .and_then(|w| w["pid"].as_i64())
            .unwrap() as i32
    }

    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid()), signal).unwrap();
    }

    /// Waits for the supervisor to exit and returns its exit code.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        let child = self.child.as_mut()?;
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(status) = child.try_wait().unwrap() {
                self.child = None;
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Polls `probe` every 20 ms until it yields a value or `limit` passes.
/// Runs `command` with `input` on its stdin (closed after it) and returns what it printed.
pub fn run_with_input(command: &mut Command, input: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

pub fn wait_for<T>(limit: Duration, what: &str, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = probe() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            eprintln!("gave up waiting for {what} after {limit:?}");
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs curl; `None` when curl fails (no connection, empty reply, timeout).
pub fn try_curl(args: &[&str]) -> Option<(u16, serde_json::Value)> {
    run_curl(args).ok()
}

/// Runs curl; the error is curl's own message (and exit status) when it fails.
pub fn run_curl(args: &[&str]) -> Result<(u16, serde_json::Value), String> {
    require_tool("curl", "curl");
    let output = Command::new("curl")
        .args(["-sS", "--max-time", "10", "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .map_err(|e| format!("running curl: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let text = String::from_utf8(output.stdout).map_err(|e| e.to_string())?;
    let (body, code) = text
        .rsplit_once('\n')
        .ok_or_else(|| format!("no status code in {text:?}"))?;
    let code: u16 = code
        .trim()
        .parse()
        .map_err(|_| format!("bad status code in {text:?}"))?;
    let json = if body.is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::from_str(body).unwrap_or_else(|_| panic!("non-JSON body ({code}): {body}"))
    };
    Ok((code, json))
}

/// Runs curl (which must be installed) and parses the answer.
pub fn curl(args: &[&str]) -> (u16, serde_json::Value) {
    run_curl(args).unwrap_or_else(|e| panic!("curl {args:?} failed: {e}"))
}

/// GET `url` with curl (which must be installed): status (0 when nothing answered) and
/// body as text (playlists, manifests).
/// `curl -i` with `args`: the status and the whole answer, headers included.
pub fn curl_raw(args: &[&str]) -> (u16, String) {
    require_tool("curl", "curl");
    let output = Command::new("curl")
        .args(["-s", "-i", "--max-time", "20"])
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

pub fn curl_text(url: &str) -> (u16, String) {
    require_tool("curl", "curl");
    let output = Command::new("curl")
        .args(["-sS", "--max-time", "20", "-w", "\n%{http_code}", url])
        .output()
        .unwrap_or_else(|e| panic!("running curl: {e}"));
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

/// Whether a TCP connection to `addr` is refused right now.
pub fn refused(addr: SocketAddr) -> bool {
    matches!(
        TcpStream::connect_timeout(&addr, Duration::from_secs(2)),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused
    )
}

/// The parent of process `pid`, while it runs.
pub fn parent_pid(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "<pid> (<comm>) <state> <ppid> ..."; comm may contain spaces and parentheses.
    let (_, rest) = stat.rsplit_once(") ")?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Whether a process with this pid exists (and is not a zombie).
pub fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .split(") ")
            .nth(1)
            .is_some_and(|rest| rest.starts_with('Z')),
        Err(_) => false,
    }
}

pub mod browser;
pub mod etcd;
pub mod h2_raw;
pub mod http;
pub mod media;
pub mod raw_rtmp;
pub mod signing;
pub mod vlc;
