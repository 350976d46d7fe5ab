//! Scale-out end to end: one origin, two edges (`Edge` rules: every stream of `live` pulled
//! on demand, the first origin listed being dead to exercise failover) and Debian's
//! HAProxy with the reference configuration `packaging/haproxy/haproxy.cfg` (addresses
//! from the environment), all on loopback.
//!
//! ffmpeg publishes to the origin; 20 RTMP players and 4 HLS players play through HAProxy
//! and both edges serve some of them. Then one edge's supervisor is killed (-9): HAProxy
//! still counts it up (its checks held): new RTMP and HLS players are redispatched to the
//! other edge at once (`option redispatch`); then HAProxy marks it down within its check
//! interval, new players play from the other edge and the
//! origin keeps serving. Last, the remaining edge drains: `/health` answers 503, its
//! players keep playing, new RTMP plays and HLS sessions are refused.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, probe_streams, publish, wait_live};
use common::{Server, curl, free_port, require_tool, wait_for};
use serde_json::Value;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const RTMP_PLAYERS: usize = 20;
const HLS_PLAYERS: usize = 4;
const LIVE: Duration = Duration::from_secs(30);
/// HAProxy checks every second and needs two failures: down within a few seconds.
const MARKED: Duration = Duration::from_secs(8);

fn haproxy_cfg() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/haproxy/haproxy.cfg")
}

/// A strom instance with `rules` (`{rtmp}` stands for its RTMP port); HLS viewers
/// time out after 5 s, so that an edge lets go of an unwatched stream quickly.
fn server(rules: &str) -> Server {
    let mut server = Server::prepare("hls_session_timeout = 5");
    let rules = rules.replace("{rtmp}", &server.ports.rtmp.to_string());
    std::fs::write(server.path("rules.conf"), rules).unwrap();
    server.spawn();
    server
}

fn origin() -> Server {
    server(
        r#"{"RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": {rtmp}}]},
            "Delivery": {"outputs": []}}"#,
    )
}

/// An edge of `origin`; the first origin it lists listens nowhere (failover).
fn edge(origin: &Server, dead: u16) -> Server {
    let rules = r#"{"RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": {rtmp}}]},
        "Delivery": {"outputs": ["HLS"], "segment_duration_secs": 1},
        "Edge": [{"apps": ["live"], "idle_grace_secs": 5,
                  "origins": ["rtmp://127.0.0.1:DEAD", "rtmp://127.0.0.1:ORIGIN"]}]}"#
        .replace("DEAD", &dead.to_string())
        .replace("ORIGIN", &origin.ports.rtmp.to_string());
    server(&rules)
}

/// HAProxy in the foreground on the reference configuration.
struct Haproxy {
    _process: Proc,
    dir: tempfile::TempDir,
    rtmp: u16,
    http: u16,
}

impl Haproxy {
    fn start(edges: [&Server; 2]) -> Self {
        require_tool("haproxy", "haproxy");
        let dir = tempfile::tempdir().unwrap();
        let (rtmp, http) = (free_port(), free_port());
        let mut command = Command::new("haproxy");
        command
            .args(["-db", "-f"])
            .arg(haproxy_cfg())
            .env("HAPROXY_STATS_SOCKET", dir.path().join("stats.sock"))
            .env("RTMP_BIND", format!("127.0.0.1:{rtmp}"))
            .env("HTTP_BIND", format!("127.0.0.1:{http}"));
        for (i, edge) in edges.iter().enumerate() {
            let n = i + 1;
            command
                .env(format!("EDGE{n}_ADDR"), "127.0.0.1")
                .env(format!("EDGE{n}_RTMP_PORT"), edge.ports.rtmp.to_string())
                .env(format!("EDGE{n}_HTTP_PORT"), edge.ports.http.to_string())
                .env(
                    format!("EDGE{n}_HEALTH_PORT"),
                    edge.ports.management.to_string(),
                );
        }
        let log = std::fs::File::create(dir.path().join("haproxy.log")).unwrap();
        let child = command
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        Self {
            _process: Proc(child),
            dir,
            rtmp,
            http,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("haproxy.log")).unwrap_or_default()
    }

    /// Sends one runtime API command (`disable health rtmp_edges/edge1`); its answer.
    fn command(&self, command: &str) -> String {
        let mut socket = UnixStream::connect(self.dir.path().join("stats.sock")).unwrap();
        socket.write_all(format!("{command}\n").as_bytes()).unwrap();
        let mut text = String::new();
        socket.read_to_string(&mut text).unwrap();
        text
    }

    /// `(backend, server) -> status` (`UP`, `DOWN`, ...) from the stats socket.
    fn statuses(&self) -> Option<HashMap<(String, String), String>> {
        let mut socket = UnixStream::connect(self.dir.path().join("stats.sock")).ok()?;
        socket.write_all(b"show stat\n").ok()?;
        let mut text = String::new();
        socket.read_to_string(&mut text).ok()?;
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next()?.trim_start_matches("# ").split(',').collect();
        let column = |name: &str| header.iter().position(|h| *h == name);
        let (px, sv, status) = (column("pxname")?, column("svname")?, column("status")?);
        Some(
            lines
                .map(|line| line.split(',').collect::<Vec<_>>())
                .filter(|fields| fields.len() > status)
                .map(|f| ((f[px].to_owned(), f[sv].to_owned()), f[status].to_owned()))
                .collect(),
        )
    }

    /// Waits until `server` (`edge1`, `edge2`) is `wanted` (`UP`, `DOWN`) in both backends.
    fn wait_status(&self, server: &str, wanted: &str, limit: Duration) -> bool {
        wait_for(limit, "haproxy server status", || {
            let statuses = self.statuses()?;
            ["rtmp_edges", "hls_edges"]
                .iter()
                .all(|backend| {
                    statuses
                        .get(&((*backend).to_owned(), server.to_owned()))
                        .is_some_and(|s| s.starts_with(wanted))
                })
                .then_some(())
        })
        .is_some()
    }
}

/// ffmpeg playing `url` without decoding (cheap), until killed.
fn player(url: &str) -> Proc {
    let child = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-i", url])
        .args(["-c", "copy", "-f", "null", "-"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Proc(child)
}

/// The sessions of `protocol` (`RTMP`, `HLS`) on `server` that have been sent media.
fn sessions(server: &Server, protocol: &str) -> Vec<Value> {
    let Some((200, sessions)) = server.try_get("/manage/sessions") else {
        return Vec::new();
    };
    sessions
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|s| s["type"] == protocol && s["bytes_sent"].as_u64().unwrap_or(0) > 0)
        .collect()
}

fn health(server: &Server) -> (u16, Value) {
    curl(&[&format!(
        "http://127.0.0.1:{}/health",
        server.ports.management
    )])
}

const EXPECTED: [&str; 2] = ["aac,audio", "h264,video,320,240"];

/// The distinct streams, sorted (ffprobe lists an HLS master's streams per variant).
fn sorted(mut streams: Vec<String>) -> Vec<String> {
    streams.sort();
    streams.dedup();
    streams
}

#[test]
fn origin_two_edges_and_haproxy() {
    require_tool("ffmpeg", "ffmpeg");
    require_tool("haproxy", "haproxy");
    let origin = origin();
    let dead = free_port();
    let mut edge1 = edge(&origin, dead);
    let edge2 = edge(&origin, dead);
    for server in [&origin, &edge1, &edge2] {
        server.wait_ready();
    }
    for edge in [&edge1, &edge2] {
        assert_eq!(health(edge), (200, serde_json::json!({"status": "ok"})));
    }
    let haproxy = Haproxy::start([&edge1, &edge2]);
    for name in ["edge1", "edge2"] {
        assert!(
            haproxy.wait_status(name, "UP", Duration::from_secs(10)),
            "{name} not UP; haproxy log:\n{}",
            haproxy.log()
        );
    }

    let mut publisher = publish(&format!("rtmp://127.0.0.1:{}/live/cam", origin.ports.rtmp));
    assert!(
        wait_live(&origin, "live", "cam", LIVE).is_some(),
        "not live on the origin: {}",
        publisher.stop_and_stderr()
    );

    // 4 HLS players through HAProxy first (an HLS viewer alone makes its edge pull),
    // then 20 RTMP players.
    let rtmp_url = format!("rtmp://127.0.0.1:{}/live/cam", haproxy.rtmp);
    let hls_url = format!("http://127.0.0.1:{}/live/cam/playlist.m3u8", haproxy.http);
    let mut hls_players: Vec<Proc> = (0..HLS_PLAYERS).map(|_| player(&hls_url)).collect();
    let hls_first = wait_for(LIVE, "HLS players playing", || {
        let hls = sessions(&edge1, "HLS").len() + sessions(&edge2, "HLS").len();
        (hls >= HLS_PLAYERS).then_some(())
    });
    assert!(
        hls_first.is_some(),
        "HLS players do not play; edge1 log:\n{}\nedge2 log:\n{}",
        edge1.log(),
        edge2.log()
    );
    let mut players: Vec<Proc> = (0..RTMP_PLAYERS).map(|_| player(&rtmp_url)).collect();
    let spread = wait_for(LIVE, "every player playing", || {
        let rtmp = [
            sessions(&edge1, "RTMP").len(),
            sessions(&edge2, "RTMP").len(),
        ];
        let hls = sessions(&edge1, "HLS").len() + sessions(&edge2, "HLS").len();
        (rtmp[0] + rtmp[1] == RTMP_PLAYERS && hls >= HLS_PLAYERS).then_some(rtmp)
    })
    .unwrap_or_else(|| {
        panic!(
            "not every player plays; edge1 log:\n{}\nedge2 log:\n{}",
            edge1.log(),
            edge2.log()
        )
    });
    assert!(
        spread[0] > 0 && spread[1] > 0,
        "leastconn left an edge without RTMP players: {spread:?}"
    );
    assert!(
        players
            .iter_mut()
            .chain(hls_players.iter_mut())
            .all(Proc::running),
        "a player exited"
    );
    drop(hls_players);
    let logs = edge1.log() + &edge2.log();
    for line in [
        "edge: HLS viewer asks for the stream",
        "edge: pulling on demand",
        "edge: pull failed; trying the next origin",
    ] {
        assert!(logs.contains(line), "no {line:?} in the edge logs:\n{logs}");
    }
    // The edges show where they pull from (the live origin, after the dead one failed).
    for edge in [&edge1, &edge2] {
        let (_, live) = edge.get("/manage/live_streams_status");
        let text = live.to_string();
        assert!(
            text.contains(&format!(
                "\"source_url\":\"rtmp://127.0.0.1:{}/live/cam\"",
                origin.ports.rtmp
            )),
            "no source_url in {text}"
        );
    }

    // kill -9 of edge1's supervisor. Its health checks are held first, so that HAProxy
    // still counts it UP, as it does for about 2 s after a real death (issue 31 item
    // 13): `leastconn` sends new players to it, the empty one, and `option redispatch`
    // must send them on to edge2 at once.
    for backend in ["rtmp_edges", "hls_edges"] {
        let answer = haproxy.command(&format!("disable health {backend}/edge1"));
        assert!(answer.trim().is_empty(), "disable health: {answer}");
    }
    let killed = edge1.pid();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(killed),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let _ = edge1.wait_exit(Duration::from_secs(5));
    let statuses = haproxy.statuses();
    assert!(
        statuses.as_ref().is_some_and(|all| all
            .iter()
            .filter(|((_, server), _)| server == "edge1")
            .all(|(_, status)| !status.starts_with("DOWN") && !status.starts_with("MAINT"))),
        "edge1 should still be in use: {statuses:?}"
    );
    for attempt in 0..3 {
        assert_eq!(
            sorted(probe_streams(&rtmp_url)),
            EXPECTED,
            "RTMP player {attempt} while the dead edge1 still counts as UP; haproxy log:\n{}",
            haproxy.log()
        );
    }
    assert_eq!(
        sorted(probe_streams(&hls_url)),
        EXPECTED,
        "HLS while the dead edge1 still counts as UP"
    );
    for backend in ["rtmp_edges", "hls_edges"] {
        haproxy.command(&format!("enable health {backend}/edge1"));
    }
    // Its checks fail now: HAProxy marks it down, new players play from edge2.
    assert!(
        haproxy.wait_status("edge1", "DOWN", MARKED),
        "edge1 not marked down; haproxy log:\n{}",
        haproxy.log()
    );
    assert!(haproxy.wait_status("edge2", "UP", Duration::from_secs(1)));
    assert_eq!(
        sorted(probe_streams(&rtmp_url)),
        EXPECTED,
        "RTMP after the kill"
    );
    assert_eq!(
        sorted(probe_streams(&hls_url)),
        EXPECTED,
        "HLS after the kill"
    );
    assert!(wait_live(&origin, "live", "cam", Duration::from_secs(5)).is_some());

    // Drain edge2: 503 on health, its players go on, new ones are refused.
    let before: Vec<u64> = sessions(&edge2, "RTMP")
        .iter()
        .map(|s| s["id"].as_u64().unwrap())
        .collect();
    assert!(!before.is_empty());
    let (status, body) = edge2.post("/manage/drain", "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        health(&edge2),
        (503, serde_json::json!({"status": "draining"}))
    );
    assert!(
        haproxy.wait_status("edge2", "DOWN", MARKED),
        "draining edge2 not marked down; haproxy log:\n{}",
        haproxy.log()
    );
    let direct = format!("rtmp://127.0.0.1:{}/live/cam", edge2.ports.rtmp);
    assert!(
        probe_streams(&direct).is_empty(),
        "a new play on a draining edge"
    );
    let (status, _) = curl(&[&format!(
        "http://127.0.0.1:{}/live/cam/playlist.m3u8",
        edge2.ports.http
    )]);
    assert_eq!(status, 503, "a new HLS session on a draining edge");
    let sent = |ids: &[u64]| -> u64 {
        sessions(&edge2, "RTMP")
            .iter()
            .filter(|s| ids.contains(&s["id"].as_u64().unwrap()))
            .map(|s| s["bytes_sent"].as_u64().unwrap())
            .sum()
    };
    let at_drain = sent(&before);
    let kept = wait_for(Duration::from_secs(10), "drained players still fed", || {
        let now = sessions(&edge2, "RTMP");
        let all_there = before
            .iter()
            .all(|id| now.iter().any(|s| s["id"].as_u64() == Some(*id)));
        (all_there && sent(&before) > at_drain).then_some(())
    });
    assert!(
        kept.is_some(),
        "the draining edge dropped or starved its players"
    );
    let (status, body) = edge2.delete("/manage/drain");
    assert_eq!(status, 200, "{body}");
    assert_eq!(health(&edge2).0, 200);

    // No viewers left: edge2 drops the pull after the HLS session timeout and the grace.
    drop(players);
    let released = wait_for(Duration::from_secs(30), "edge pull released", || {
        let (_, live) = edge2.try_get("/manage/rtmp_status")?;
        (!live.to_string().contains("\"cam\"")).then_some(())
    });
    assert!(
        released.is_some(),
        "edge2 still pulls; log:\n{}",
        edge2.log()
    );
    assert!(edge2.log().contains("edge: no viewers left: pull dropped"));
}
