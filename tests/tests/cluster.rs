//! The cluster registry on etcd (issue 46 item 2), end to end: a real 3-member etcd
//! cluster on loopback ports ([`EtcdCluster`]), real strom origins and edges, each with a
//! `Cluster` block (its own `server_id`, the same etcd endpoints, a 3 s lease), and ffmpeg
//! encoders and viewers.
//!
//! - An edge finds the stream's holder in the registry and pulls from it directly, even
//!   when the holder is the last of the rule's four origins: no origin is asked in vain.
//!   While etcd is up, no server loses its etcd session.
//! - Two encoders publishing one name on two origins leave exactly one live: the other
//!   publish is refused at once (`publish refused: <id> holds live/x in the cluster`) or,
//!   when both were admitted in a race, its claim is lost and its publisher kicked. The
//!   race may go either way, so the test also makes sure both are admitted (etcd down
//!   while both publish) and checks the kick once etcd is back.
//! - When the holder dies (`kill -9`, supervisor and workers), its lease expires, its
//!   keys vanish, the encoder's retries on the second origin are admitted and the edge
//!   finds the new holder through the registry (its rule lists only the dead origin);
//!   the edge's viewer from before the kill decodes again without reconnecting.
//! - With every etcd member stopped, media keeps flowing (a running edge viewer keeps
//!   decoding frames), new publishes are admitted, `/manage/cluster` says
//!   `connected: false`; once etcd is back the origin claims its live streams again,
//!   under its current lease.
//!
//! Bounds on times are generous (a loaded two-core machine runs these beside builds);
//! the tests assert what happened, not how fast.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::browser::{require_browser, run_script};
use common::etcd::EtcdCluster;
use common::media::{Proc, play, probe_streams, publish, rtmp_url, wait_live};
use common::{Server, curl_text, free_port, require_tool, wait_for};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LIVE: Duration = Duration::from_secs(40);
/// The servers' etcd lease (`lease_ttl_secs`): short, to keep the tests short.
const TTL_SECS: u64 = 3;
/// How long a claim may take to reach etcd, or a change in etcd to reach a server.
const REGISTRY: Duration = Duration::from_secs(30);
const FAILED_OVER: &str = "edge: pull failed";
const UNREACHABLE: &str = "cluster: etcd unreachable";

/// The `Cluster` block of server `id`, advertising `advertise`.
fn cluster_block(
    etcd: &EtcdCluster,
    id: &str,
    advertise: &[String],
    prefix: Option<&str>,
) -> Value {
    let mut block = json!({
        "server_id": id,
        "etcd_endpoints": etcd.endpoints(),
        "advertise": advertise,
        "lease_ttl_secs": TTL_SECS,
    });
    if let Some(prefix) = prefix {
        block["key_prefix"] = prefix.into();
    }
    block
}

/// `rules` as rules.conf text for [`Server::with_rules`]: the string `"{rtmp}"` (the RTMP
/// port) becomes a number; `{rtmp}` inside other strings stays for `with_rules` to fill.
fn rules_text(rules: &Value) -> String {
    rules.to_string().replace("\"{rtmp}\"", "{rtmp}")
}

/// An origin `id` serving RTMP (and SRT callers on `srt_port`), advertising both.
fn origin(
    etcd: &EtcdCluster,
    id: &str,
    srt_port: Option<u16>,
    extra_conf: &str,
    prefix: Option<&str>,
) -> Server {
    let mut advertise = vec!["rtmp://127.0.0.1:{rtmp}".to_owned()];
    let mut rules = json!({
        "RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": "{rtmp}"}]},
        "Delivery": {"outputs": []},
    });
    if let Some(port) = srt_port {
        advertise.push(format!("srt://127.0.0.1:{port}?latency=200"));
        rules["TsOutputs"] = json!([{"id": "edges", "protocol": "srt", "mode": "listen",
                                     "ip": "127.0.0.1", "port": port}]);
    }
    rules["Cluster"] = cluster_block(etcd, id, &advertise, prefix);
    Server::with_rules(extra_conf, &rules_text(&rules))
}

/// An edge `id` of `live` (a pure edge: it advertises nothing) whose rule lists `origins`.
fn edge(etcd: &EtcdCluster, id: &str, origins: &[String], prefix: Option<&str>) -> Server {
    let rules = json!({
        "RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": "{rtmp}"}]},
        "Delivery": {"outputs": []},
        "Edge": [{"apps": ["live"], "idle_grace_secs": 5, "origins": origins}],
        "Cluster": cluster_block(etcd, id, &[], prefix),
    });
    Server::with_rules("", &rules_text(&rules))
}

fn rtmp_base(server: &Server) -> String {
    format!("rtmp://127.0.0.1:{}", server.ports.rtmp)
}

fn metrics_conf(port: u16) -> String {
    format!("metrics_listen_interfaces = 127.0.0.1\nmetrics_port = {port}")
}

/// `GET /manage/cluster`, when it answers 200.
fn try_cluster(server: &Server) -> Option<Value> {
    let (code, body) = server.try_get("/manage/cluster")?;
    (code == 200).then_some(body)
}

fn cluster_status(server: &Server) -> Value {
    let (code, body) = server.get("/manage/cluster");
    assert_eq!(code, 200, "/manage/cluster: {body}; log:\n{}", server.log());
    body
}

/// The lease in a `/manage/cluster` answer: a number, or a string of hex digits (as
/// etcdctl shows leases; a JSON number would lose digits in JavaScript). `None`: none yet.
fn lease_in(status: &Value) -> Option<i64> {
    let lease = match &status["lease_id"] {
        Value::Number(n) => n.as_i64().or_else(|| n.as_u64().map(|u| u as i64)),
        Value::String(hex) if !hex.is_empty() => {
            u64::from_str_radix(hex.trim_start_matches("0x"), 16)
                .ok()
                .map(|u| u as i64)
        }
        _ => None,
    };
    lease.filter(|id| *id != 0)
}

/// The holder of `app/stream` in a `/manage/cluster` answer.
fn holder_in(status: &Value, app: &str, stream: &str) -> Option<String> {
    status["streams"]
        .as_array()?
        .iter()
        .find(|s| s["app"] == app && s["stream"] == stream)
        .and_then(|s| s["server"].as_str())
        .map(str::to_owned)
}

/// Waits until `/manage/cluster` on `server` says `connected` is `connected`.
fn wait_connected(server: &Server, connected: bool, limit: Duration) -> Option<Value> {
    wait_for(limit, "cluster connection state", || {
        try_cluster(server).filter(|s| s["connected"] == connected)
    })
}

/// The value of metric `name` (no labels) on the metrics listener at `port`.
fn metric(port: u16, name: &str) -> Option<f64> {
    let (code, text) = curl_text(&format!("http://127.0.0.1:{port}/metrics"));
    if code != 200 {
        return None;
    }
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (metric, value) = line.rsplit_once(' ')?;
            let bare = metric.split('{').next()?;
            (bare == name).then(|| value.parse().ok())?
        })
}

/// `app/stream` as `server`'s `rtmp_status` lists it right now, if it does.
fn status_of(server: &Server, app: &str, stream: &str) -> Option<Value> {
    let (_, groups) = server.try_get("/manage/rtmp_status")?;
    groups
        .as_array()?
        .iter()
        .filter(|g| g["app"] == app)
        .flat_map(|g| g["streams"].as_array().cloned().unwrap_or_default())
        .find(|s| s["strm"] == stream)
}

/// Whether `app/stream` is live on `server` right now (video size known), as
/// [`wait_live`] checks, without waiting.
fn live_now(server: &Server, app: &str, stream: &str) -> bool {
    status_of(server, app, stream)
        .is_some_and(|s| s["resolution"].is_string() && s["resolution"] != "0x0")
}

/// Whether `app/stream` is listed at all on `server` (published, maybe not yet sized).
fn listed(server: &Server, app: &str, stream: &str) -> bool {
    status_of(server, app, stream).is_some()
}

/// Lines of `log` holding `pattern`.
fn count(log: &str, pattern: &str) -> usize {
    log.lines().filter(|line| line.contains(pattern)).count()
}

/// Whether an RTMP probe of `url` sees the test source's video.
fn has_video(streams: &[String]) -> bool {
    streams.iter().any(|s| s.starts_with("h264,video,320,240"))
}

/// ffmpeg decoding `url` to nothing until dropped, writing its progress (`frame=N`)
/// twice a second to a file, so that a test can see the frames keep coming.
struct Viewer {
    proc: Proc,
    progress: PathBuf,
    _dir: tempfile::TempDir,
}

impl Viewer {
    fn start(url: &str) -> Self {
        require_tool("ffmpeg", "ffmpeg");
        let dir = tempfile::tempdir().unwrap();
        let progress = dir.path().join("progress");
        let child = Command::new("ffmpeg")
            .args(["-hide_banner", "-nostats", "-loglevel", "error", "-i", url])
            .args(["-f", "null", "-", "-stats_period", "0.5", "-progress"])
            .arg(&progress)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Self {
            proc: Proc(child),
            progress,
            _dir: dir,
        }
    }

    /// Video frames decoded so far (the last progress report).
    fn frames(&self) -> u64 {
        std::fs::read_to_string(&self.progress)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.strip_prefix("frame="))
            .filter_map(|n| n.trim().parse().ok())
            .next_back()
            .unwrap_or(0)
    }

    /// Waits until more than `frames` frames were decoded.
    fn wait_frames(&self, frames: u64, limit: Duration) -> Option<u64> {
        wait_for(limit, "frames decoded", || {
            let now = self.frames();
            (now > frames).then_some(now)
        })
    }
}

#[test]
fn the_stream_on_the_last_of_four_origins_plays_through_the_edge_at_once() {
    require_tool("ffmpeg", "ffmpeg");
    require_tool("ffprobe", "ffmpeg");
    const PREFIX: &str = "/strom-e2e/";
    let etcd = EtcdCluster::start(3);
    let metrics_port = free_port();
    let origins: Vec<Server> = (1..=4)
        .map(|i| {
            let extra = if i == 4 {
                metrics_conf(metrics_port)
            } else {
                String::new()
            };
            origin(
                &etcd,
                &format!("origin-{i}"),
                Some(free_port()),
                &extra,
                Some(PREFIX),
            )
        })
        .collect();
    let holder = &origins[3];
    let _publisher = publish(&rtmp_url(holder, "live/x"));
    wait_live(holder, "live", "x", LIVE)
        .unwrap_or_else(|| panic!("not live on the fourth origin; log:\n{}", holder.log()));

    // What is in etcd: the claim under the holder's lease, every origin's URLs.
    let key = format!("{PREFIX}streams/live/x");
    let claimed = wait_for(REGISTRY, "the claim in etcd", || {
        etcd.get(&key).filter(|id| id == "origin-4")
    });
    assert!(
        claimed.is_some(),
        "{key} in etcd is {:?}, not origin-4; holder log:\n{}",
        etcd.get(&key),
        holder.log()
    );
    for (i, server) in origins.iter().enumerate() {
        let servers_key = format!("{PREFIX}servers/origin-{}", i + 1);
        let urls = etcd
            .get(&servers_key)
            .unwrap_or_else(|| panic!("no {servers_key} in etcd; log:\n{}", server.log()));
        let urls: Vec<String> = serde_json::from_str(&urls)
            .unwrap_or_else(|e| panic!("{servers_key} is not a JSON array of URLs ({e}): {urls}"));
        assert!(
            urls.contains(&rtmp_base(server)),
            "{servers_key} = {urls:?} lacks {}",
            rtmp_base(server)
        );
        assert!(
            urls.iter().any(|u| u.starts_with("srt://127.0.0.1:")),
            "{servers_key} = {urls:?} lacks the SRT URL"
        );
    }
    let status = cluster_status(holder);
    assert_eq!(status["enabled"], true, "{status}");
    assert_eq!(status["server_id"], "origin-4", "{status}");
    assert_eq!(status["connected"], true, "{status}");
    assert_eq!(status["lease_ttl_secs"], TTL_SECS, "{status}");
    assert!(status["claims"].as_i64() >= Some(1), "{status}");
    let lease = lease_in(&status);
    assert!(lease.is_some(), "no lease: {status}");
    assert_eq!(
        etcd.lease_of(&key),
        lease,
        "the claim is not under the holder's lease; {status}"
    );
    let connected = wait_for(REGISTRY, "cluster metrics", || {
        (metric(metrics_port, "strom_cluster_registered_streams")? >= 1.0).then_some(())
    });
    assert!(
        connected.is_some(),
        "strom_cluster_registered_streams never reached 1"
    );
    assert_eq!(
        metric(metrics_port, "strom_cluster_connected"),
        Some(1.0),
        "strom_cluster_connected"
    );
    assert!(
        metric(metrics_port, "strom_cluster_claims") >= Some(1.0),
        "strom_cluster_claims"
    );
    assert!(
        metric(metrics_port, "strom_cluster_conflicts_total").is_some(),
        "no strom_cluster_conflicts_total"
    );

    // The edge lists the four origins in order; the registry sends it to the fourth.
    let origin_urls: Vec<String> = origins.iter().map(rtmp_base).collect();
    let edge = edge(&etcd, "edge-1", &origin_urls, Some(PREFIX));
    let seen = wait_for(REGISTRY, "the edge's view of the registry", || {
        try_cluster(&edge).filter(|s| {
            s["connected"] == true && holder_in(s, "live", "x").as_deref() == Some("origin-4")
        })
    });
    let seen = seen.unwrap_or_else(|| {
        panic!(
            "the edge's /manage/cluster never showed live/x held by origin-4: {:?}; log:\n{}",
            try_cluster(&edge),
            edge.log()
        )
    });
    assert_eq!(seen["server_id"], "edge-1", "{seen}");
    let listed_servers = seen["servers"].as_array().cloned().unwrap_or_default();
    assert!(
        listed_servers.iter().any(|s| s["id"] == "origin-4"
            && s["urls"]
                .as_array()
                .is_some_and(|u| u.contains(&Value::from(rtmp_base(holder))))),
        "the edge does not list origin-4 with its URL: {seen}"
    );

    // A long viewer keeps the pull up while the test looks at it.
    let _viewer = play(&rtmp_url(&edge, "live/x"));
    let started = Instant::now();
    let streams = probe_streams(&rtmp_url(&edge, "live/x"));
    let took = started.elapsed();
    assert!(
        has_video(&streams),
        "no video through the edge after {took:?}: {streams:?}; edge log:\n{}",
        edge.log()
    );
    eprintln!("== video through the edge after {took:?}");
    let source = format!("\"source_url\":\"{}/live/x\"", rtmp_base(holder));
    let pulled = wait_for(LIVE, "the edge's source_url", || {
        let (_, live) = edge.try_get("/manage/live_streams_status")?;
        live.to_string().contains(&source).then_some(())
    });
    assert!(
        pulled.is_some(),
        "the edge does not pull from origin-4 ({source}); log:\n{}",
        edge.log()
    );
    let log = edge.log();
    assert_eq!(
        count(&log, FAILED_OVER),
        0,
        "the edge tried origins without the stream; log:\n{log}"
    );
    for (i, other) in origins[..3].iter().enumerate() {
        let log = other.log();
        assert!(
            !log.contains("StreamNotFound") && !log.contains("nothing here starts it"),
            "origin-{} was asked for live/x; log:\n{log}",
            i + 1
        );
    }

    // The web console of the edge shows which server holds the stream, in its stream
    // list and in the registry's table.
    require_browser(&[]);
    let console = format!("http://127.0.0.1:{}/console/", edge.ports.management);
    let shots = tempfile::tempdir().unwrap();
    let shot = shots.path().join("console.png");
    let seen_in_console = run_script(
        "console.mjs",
        &[&console, "-", "live/x", &shot.to_string_lossy(), "--row"],
        120,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let row = seen_in_console["streamRow"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        row.last().and_then(Value::as_str),
        Some("origin-4"),
        "the console's stream row does not name the holder: {seen_in_console}"
    );
    let heading = seen_in_console["clusterRows"]["heading"]
        .as_str()
        .unwrap_or("");
    assert!(
        heading.contains("edge-1") && heading.contains("connected"),
        "{seen_in_console}"
    );
    let held = seen_in_console["clusterRows"]["rows"].to_string();
    assert!(held.contains("live/xorigin-4"), "{seen_in_console}");

    // etcd was up all along: no server lost its connection, also not after several
    // lease times (a session that etcd itself ends, e.g. for pinging too often, shows
    // here as `etcd unreachable` every few seconds).
    std::thread::sleep(Duration::from_secs(10));
    for (name, server) in origins
        .iter()
        .map(|o| ("origin", o))
        .chain([("edge", &edge)])
    {
        let log = server.log();
        assert_eq!(
            count(&log, UNREACHABLE),
            0,
            "an {name} lost etcd while etcd was up; log:\n{log}"
        );
        assert_eq!(cluster_status(server)["connected"], true);
    }
}

/// Waits until exactly one of `servers` has `live/<stream>` (the other does not list
/// it) and etcd names that one (`ids`), for 3 s in a row; returns its index.
fn settle(etcd: &EtcdCluster, servers: &[Server; 2], ids: &[&str; 2], stream: &str) -> usize {
    let key = format!("/strom/streams/live/{stream}");
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut steady: Option<(usize, Instant)> = None;
    loop {
        let listed: Vec<bool> = servers.iter().map(|s| listed(s, "live", stream)).collect();
        let held = etcd.get(&key);
        let one = match (listed[0], listed[1]) {
            (true, false) => Some(0),
            (false, true) => Some(1),
            _ => None,
        }
        .filter(|w| held.as_deref() == Some(ids[*w]) && live_now(&servers[*w], "live", stream));
        steady = match (one, steady) {
            (Some(w), Some((s, since))) if w == s => {
                if since.elapsed() >= Duration::from_secs(3) {
                    return w;
                }
                Some((s, since))
            }
            (Some(w), _) => Some((w, Instant::now())),
            (None, _) => None,
        };
        assert!(
            Instant::now() < deadline,
            "never exactly one holder of live/{stream}: listed {listed:?}, etcd {key} = \
             {held:?}\n{} log:\n{}\n{} log:\n{}",
            ids[0],
            servers[0].log(),
            ids[1],
            servers[1].log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn two_encoders_publishing_one_name_on_two_origins_leave_exactly_one_live() {
    require_tool("ffmpeg", "ffmpeg");
    let mut etcd = EtcdCluster::start(3);
    let servers = [
        origin(&etcd, "origin-a", None, "", None),
        origin(&etcd, "origin-b", None, "", None),
    ];
    let ids = ["origin-a", "origin-b"];
    let key = "/strom/streams/live/x";

    // The race: both encoders start together.
    let mut encoders = [
        publish(&rtmp_url(&servers[0], "live/x")),
        publish(&rtmp_url(&servers[1], "live/x")),
    ];

    let winner = settle(&etcd, &servers, &ids, "x");
    let loser = 1 - winner;
    let (winner_id, loser_id) = (ids[winner], ids[loser]);
    eprintln!("== {winner_id} holds live/x after the race");

    let code = encoders[loser].wait_exit(Duration::from_secs(30));
    assert!(
        code.is_some(),
        "the encoder on {loser_id} still runs; its log:\n{}",
        servers[loser].log()
    );
    assert!(
        encoders[winner].running(),
        "the winner's encoder stopped; {winner_id} log:\n{}",
        servers[winner].log()
    );
    let refused = format!("publish refused: {winner_id} holds live/x in the cluster");
    let kicked = format!("publisher kicked: {winner_id} holds live/x in the cluster");
    let lost = format!("cluster: claim of live/x lost to {winner_id}");
    let log = servers[loser].log();
    assert!(
        log.contains(&refused) || log.contains(&kicked),
        "{loser_id} neither refused nor kicked its publisher; log:\n{log}"
    );
    eprintln!(
        "== {loser_id}: refused {}, lost claim {}, kicked {}",
        count(&log, &refused),
        count(&log, &lost),
        count(&log, &kicked)
    );
    if log.contains(&lost) {
        let status = cluster_status(&servers[loser]);
        assert!(
            status["conflicts"].as_i64() >= Some(1),
            "{loser_id} lost a claim but counts no conflict: {status}"
        );
    }
    let status = cluster_status(&servers[winner]);
    assert_eq!(
        etcd.lease_of(key),
        lease_in(&status),
        "the claim is not under {winner_id}'s lease: {status}"
    );
    let seen = cluster_status(&servers[loser]);
    assert_eq!(
        holder_in(&seen, "live", "x").as_deref(),
        Some(winner_id),
        "{loser_id}'s view of the registry: {seen}"
    );

    // Later, a third encoder on the loser is refused at once.
    let before = count(&servers[loser].log(), &refused);
    let mut later = publish(&rtmp_url(&servers[loser], "live/x"));
    let code = later.wait_exit(Duration::from_secs(30));
    assert!(
        code.is_some_and(|c| c != 0),
        "the later publish on {loser_id} was not refused (exit {code:?}); log:\n{}",
        servers[loser].log()
    );
    let logged = wait_for(Duration::from_secs(10), "the refusal in the log", || {
        (count(&servers[loser].log(), &refused) > before).then_some(())
    });
    assert!(
        logged.is_some(),
        "no new `{refused}` line; log:\n{}",
        servers[loser].log()
    );
    assert!(
        live_now(&servers[winner], "live", "x") && !listed(&servers[loser], "live", "x"),
        "after the later publish: {winner_id} live {}, {loser_id} listed {}",
        live_now(&servers[winner], "live", "x"),
        listed(&servers[loser], "live", "x")
    );
    assert_eq!(etcd.get(key).as_deref(), Some(winner_id));
    assert!(encoders[winner].running(), "the winner's encoder stopped");

    // Both admitted for sure: with etcd down both origins admit live/z unclaimed; once
    // etcd is back the first to claim it keeps it and the other's claim is lost, which
    // ends its publisher.
    etcd.stop_all();
    for (id, server) in ids.iter().zip(&servers) {
        let noticed = wait_connected(server, false, Duration::from_secs(60));
        assert!(
            noticed.is_some(),
            "{id} still connected; log:\n{}",
            server.log()
        );
    }
    let mut both = [
        publish(&rtmp_url(&servers[0], "live/z")),
        publish(&rtmp_url(&servers[1], "live/z")),
    ];
    for (id, server) in ids.iter().zip(&servers) {
        wait_live(server, "live", "z", LIVE).unwrap_or_else(|| {
            panic!(
                "live/z not admitted on {id} with etcd down; log:\n{}",
                server.log()
            )
        });
    }
    etcd.restart_all();
    let winner = settle(&etcd, &servers, &ids, "z");
    let loser = 1 - winner;
    let (winner_id, loser_id) = (ids[winner], ids[loser]);
    eprintln!("== {winner_id} holds live/z after etcd came back");
    let lost = format!("cluster: claim of live/z lost to {winner_id}");
    let kicked = format!("publisher kicked: {winner_id} holds live/z in the cluster");
    let log = servers[loser].log();
    assert!(
        log.contains(&lost) && log.contains(&kicked),
        "{loser_id} lost live/z without `{lost}` and `{kicked}` in its log:\n{log}"
    );
    let status = cluster_status(&servers[loser]);
    assert!(
        status["conflicts"].as_i64() >= Some(1),
        "{loser_id} lost a claim but counts no conflict: {status}"
    );
    assert!(
        both[loser].wait_exit(Duration::from_secs(30)).is_some(),
        "the kicked encoder on {loser_id} still runs"
    );
    assert!(
        both[winner].running(),
        "the encoder on {winner_id} stopped; log:\n{}",
        servers[winner].log()
    );
}

#[test]
fn the_holders_death_moves_edge_viewers_to_the_new_holder() {
    require_tool("ffmpeg", "ffmpeg");
    require_tool("ffprobe", "ffmpeg");
    let etcd = EtcdCluster::start(3);
    let mut a = origin(&etcd, "origin-a", None, "", None);
    let b = origin(&etcd, "origin-b", None, "", None);
    let key = "/strom/streams/live/x";
    let _first = publish(&rtmp_url(&a, "live/x"));
    wait_live(&a, "live", "x", LIVE)
        .unwrap_or_else(|| panic!("not live on origin-a; log:\n{}", a.log()));
    let claimed = wait_for(REGISTRY, "origin-a's claim", || {
        etcd.get(key).filter(|id| id == "origin-a")
    });
    assert!(claimed.is_some(), "{key} = {:?}", etcd.get(key));

    // The edge's rule lists only origin-a: it can reach origin-b through the registry only.
    let edge = edge(&etcd, "edge-1", &[rtmp_base(&a)], None);
    let viewer = Viewer::start(&rtmp_url(&edge, "live/x"));
    let before = viewer.wait_frames(25, LIVE).unwrap_or_else(|| {
        panic!(
            "the edge's viewer decoded nothing; edge log:\n{}",
            edge.log()
        )
    });

    // kill -9 of origin-a: the supervisor and every worker.
    let (_, workers) = a.get("/manage/workers");
    let pids: Vec<i32> = workers
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["pid"].as_i64())
        .map(|p| p as i32)
        .collect();
    let killed = Instant::now();
    a.signal(Signal::SIGKILL);
    for pid in &pids {
        let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
    }
    let _ = a.wait_exit(Duration::from_secs(10));

    // The encoder moves to origin-b, trying again each second while origin-a's claim
    // lives; meanwhile origin-a's keys expire with its lease.
    let deadline = killed + Duration::from_secs(TTL_SECS + 60);
    let mut encoder: Option<Proc> = None;
    let mut attempts = 0;
    let mut claim_gone: Option<Duration> = None;
    while !live_now(&b, "live", "x") {
        if claim_gone.is_none() && etcd.get(key).as_deref() != Some("origin-a") {
            claim_gone = Some(killed.elapsed());
        }
        assert!(
            Instant::now() < deadline,
            "live/x never live on origin-b ({attempts} publishes); {key} = {:?}; log:\n{}",
            etcd.get(key),
            b.log()
        );
        if encoder.as_mut().is_none_or(|e| !e.running()) {
            encoder = Some(publish(&rtmp_url(&b, "live/x")));
            attempts += 1;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let claim_gone = claim_gone.or_else(|| {
        wait_for(
            Duration::from_secs(TTL_SECS + 10),
            "origin-a's claim gone",
            || (etcd.get(key).as_deref() != Some("origin-a")).then_some(()),
        )
        .map(|()| killed.elapsed())
    });
    let refusals = count(
        &b.log(),
        "publish refused: origin-a holds live/x in the cluster",
    );
    eprintln!(
        "== origin-a killed: its claim gone after {claim_gone:?}, live on origin-b after {:?} \
         ({attempts} publishes, {refusals} refused)",
        killed.elapsed()
    );
    // Nobody released it (origin-a was killed): its lease expired. How soon is
    // bench/cluster/failover.sh's figure; here only that it went within the generous waits.
    assert!(
        claim_gone.is_some(),
        "origin-a's claim outlived its lease: {key} = {:?}",
        etcd.get(key)
    );
    let servers_left = wait_for(Duration::from_secs(TTL_SECS + 10), "origin-a gone", || {
        etcd.get("/strom/servers/origin-a").is_none().then_some(())
    });
    assert!(
        servers_left.is_some(),
        "/strom/servers/origin-a outlived its lease: {:?}",
        etcd.get_prefix("/strom/")
    );
    let moved = wait_for(REGISTRY, "origin-b's claim", || {
        etcd.get(key).filter(|id| id == "origin-b")
    });
    assert!(
        moved.is_some(),
        "{key} = {:?} with live/x live on origin-b; log:\n{}",
        etcd.get(key),
        b.log()
    );

    // Through the edge, the stream plays again, pulled from origin-b.
    let _again = play(&rtmp_url(&edge, "live/x"));
    let started = Instant::now();
    let mut streams = Vec::new();
    while started.elapsed() < Duration::from_secs(90) {
        streams = probe_streams(&rtmp_url(&edge, "live/x"));
        if has_video(&streams) {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    assert!(
        has_video(&streams),
        "no video through the edge {:?} after origin-b took live/x: {streams:?}; edge log:\n{}",
        started.elapsed(),
        edge.log()
    );
    let source = format!("\"source_url\":\"{}/live/x\"", rtmp_base(&b));
    let pulled = wait_for(LIVE, "the edge's pull from origin-b", || {
        let (_, live) = edge.try_get("/manage/live_streams_status")?;
        live.to_string().contains(&source).then_some(())
    });
    assert!(
        pulled.is_some(),
        "the edge does not pull from origin-b ({source}); log:\n{}",
        edge.log()
    );
    // The viewer that watched through the kill was not dropped: it decodes again (the
    // edge's players wait in silence while its pull fails over).
    let mut viewer = viewer;
    let after = viewer.frames();
    let grows = viewer.wait_frames(after, LIVE).is_some();
    let still = viewer.proc.running();
    eprintln!(
        "== the long edge viewer: {before} frames before the kill, {after} after the move, \
         running {still}, still decoding {grows}"
    );
    assert!(
        grows && still,
        "the edge's viewer from before the kill stopped at {after} frames (running {still}); \
         edge log:\n{}",
        edge.log()
    );
}

#[test]
fn with_every_etcd_member_stopped_media_flows_and_claims_come_back() {
    require_tool("ffmpeg", "ffmpeg");
    require_tool("ffprobe", "ffmpeg");
    let mut etcd = EtcdCluster::start(3);
    let metrics_port = free_port();
    let origin = origin(&etcd, "origin-1", None, &metrics_conf(metrics_port), None);
    let edge = edge(&etcd, "edge-1", &[rtmp_base(&origin)], None);
    let (key_x, key_y) = ("/strom/streams/live/x", "/strom/streams/live/y");
    let _x = publish(&rtmp_url(&origin, "live/x"));
    wait_live(&origin, "live", "x", LIVE)
        .unwrap_or_else(|| panic!("live/x not live; log:\n{}", origin.log()));
    let claimed = wait_for(REGISTRY, "the claim of live/x", || {
        etcd.get(key_x).filter(|id| id == "origin-1")
    });
    assert!(claimed.is_some(), "{key_x} = {:?}", etcd.get(key_x));
    let mut viewer = Viewer::start(&rtmp_url(&edge, "live/x"));
    viewer
        .wait_frames(25, LIVE)
        .unwrap_or_else(|| panic!("the edge's viewer decoded nothing; log:\n{}", edge.log()));

    // etcd goes away, all of it.
    etcd.stop_all();
    let stopped = Instant::now();
    for (name, server) in [("origin", &origin), ("edge", &edge)] {
        let noticed = wait_connected(server, false, Duration::from_secs(60));
        assert!(
            noticed.is_some(),
            "the {name} still says connected: {:?}; log:\n{}",
            try_cluster(server),
            server.log()
        );
    }
    eprintln!(
        "== etcd stopped: both noticed after {:?}",
        stopped.elapsed()
    );
    assert_eq!(
        metric(metrics_port, "strom_cluster_connected"),
        Some(0.0),
        "strom_cluster_connected with etcd down"
    );

    // The running edge viewer keeps decoding (25 fps: 6 s are 150 frames; 50 is plenty).
    let edge_log_before = edge.log();
    let from = viewer.frames();
    std::thread::sleep(Duration::from_secs(6));
    let to = viewer.frames();
    assert!(
        viewer.proc.running() && to >= from + 50,
        "the edge viewer stalled with etcd down: {from} -> {to} frames; edge log:\n{}",
        edge.log()
    );
    let edge_log = edge.log();
    let new_lines = &edge_log[edge_log_before.len().min(edge_log.len())..];
    assert!(
        !new_lines.contains(FAILED_OVER) && !new_lines.contains("edge: pull ended"),
        "the edge's pull was dropped with etcd down; log:\n{edge_log}"
    );

    // A new publish is admitted.
    let _y = publish(&rtmp_url(&origin, "live/y"));
    wait_live(&origin, "live", "y", LIVE)
        .unwrap_or_else(|| panic!("live/y not admitted with etcd down; log:\n{}", origin.log()));
    let streams = probe_streams(&rtmp_url(&origin, "live/y"));
    assert!(
        has_video(&streams),
        "live/y: {streams:?}; log:\n{}",
        origin.log()
    );
    assert!(
        origin.log().contains(UNREACHABLE),
        "no `cluster: etcd unreachable` in the origin's log:\n{}",
        origin.log()
    );

    // etcd comes back: connected again, both streams claimed under the current lease.
    etcd.restart_all();
    let restarted = Instant::now();
    for (name, server) in [("origin", &origin), ("edge", &edge)] {
        let back = wait_connected(server, true, Duration::from_secs(90));
        assert!(
            back.is_some(),
            "the {name} did not reconnect: {:?}; log:\n{}",
            try_cluster(server),
            server.log()
        );
    }
    let claims = wait_for(Duration::from_secs(60), "both claims in etcd", || {
        let x = etcd.get(key_x)?;
        let y = etcd.get(key_y)?;
        (x == "origin-1" && y == "origin-1").then_some(())
    });
    assert!(
        claims.is_some(),
        "after etcd came back: {key_x} = {:?}, {key_y} = {:?}; origin log:\n{}",
        etcd.get(key_x),
        etcd.get(key_y),
        origin.log()
    );
    eprintln!(
        "== etcd back: reconnected and both claims in after {:?}",
        restarted.elapsed()
    );
    // The claims are not left on a lease that expires (one from before the outage): they
    // are under the server's current lease and still there after two lease times.
    std::thread::sleep(Duration::from_secs(2 * TTL_SECS + 2));
    let status = cluster_status(&origin);
    assert_eq!(status["connected"], true, "{status}");
    let lease = lease_in(&status);
    assert!(lease.is_some(), "no lease: {status}");
    for key in [key_x, key_y] {
        assert_eq!(
            etcd.get(key).as_deref(),
            Some("origin-1"),
            "{key} after two lease times; origin log:\n{}",
            origin.log()
        );
        assert_eq!(
            etcd.lease_of(key),
            lease,
            "{key} is not under the origin's current lease: {status}"
        );
    }
    for stream in ["x", "y"] {
        assert_eq!(
            holder_in(&status, "live", stream).as_deref(),
            Some("origin-1"),
            "{status}"
        );
    }
    assert_eq!(
        metric(metrics_port, "strom_cluster_connected"),
        Some(1.0),
        "strom_cluster_connected after etcd came back"
    );
    assert!(
        metric(metrics_port, "strom_cluster_registered_streams") >= Some(2.0),
        "strom_cluster_registered_streams after etcd came back"
    );
    // And the edge viewer never stopped.
    let now = viewer.frames();
    assert!(
        viewer.wait_frames(now, Duration::from_secs(10)).is_some() && viewer.proc.running(),
        "the edge viewer stopped after etcd came back ({now} frames); edge log:\n{}",
        edge.log()
    );
}

/// A reload that removes the `Cluster` block revokes the server's lease (its claims go
/// at once, not a TTL later) and its copy is dropped; one that adds a block with
/// another `server_id` joins again and claims the live stream under the new id.
#[test]
fn a_reload_leaves_and_joins_the_registry() {
    require_tool("ffmpeg", "ffmpeg");
    let etcd = EtcdCluster::start(1);
    let server = origin(&etcd, "before", None, "", None);
    let _publisher = publish(&rtmp_url(&server, "live/x"));
    wait_live(&server, "live", "x", LIVE)
        .unwrap_or_else(|| panic!("not live; log:\n{}", server.log()));
    let key = "/strom/streams/live/x";
    let claimed = wait_for(REGISTRY, "the claim", || {
        etcd.get(key).filter(|id| id == "before")
    });
    assert!(claimed.is_some(), "no claim; log:\n{}", server.log());

    let rtmp = server.ports.rtmp;
    let mut rules = json!({
        "RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": rtmp}]},
        "Delivery": {"outputs": []},
    });
    server.apply_rules(&rules.to_string());
    // Revoked, not left to expire: the server says so.
    let gone = wait_for(REGISTRY, "the claim revoked", || {
        etcd.get(key).is_none().then_some(())
    });
    assert!(
        gone.is_some(),
        "{key} is still {:?} after the Cluster block left; log:\n{}",
        etcd.get(key),
        server.log()
    );
    assert!(
        server.log().contains("cluster: lease revoked"),
        "{}",
        server.log()
    );
    let status = cluster_status(&server);
    assert_eq!(status["enabled"], false, "{status}");
    assert_eq!(status["streams"], json!([]), "{status}");

    rules["Cluster"] = cluster_block(&etcd, "after", &[format!("rtmp://127.0.0.1:{rtmp}")], None);
    server.apply_rules(&rules.to_string());
    let joined = wait_for(REGISTRY, "the claim under the new id", || {
        etcd.get(key).filter(|id| id == "after")
    });
    assert!(
        joined.is_some(),
        "{key} is {:?}, not \"after\"; log:\n{}",
        etcd.get(key),
        server.log()
    );
    let status = cluster_status(&server);
    assert_eq!(status["server_id"], "after", "{status}");
    assert_eq!(status["connected"], true, "{status}");
}
