//! Descriptor exhaustion: with strom's descriptor limit lowered (prlimit), a flood of
//! connections past it to the RTMP and HTTP ports leaves the RTMP player and the HLS
//! viewer that were already there playing, and the rtmp and packager workers are not
//! restarted (their pids stay the same): the extra connections are closed at accept, as
//! the workers' descriptor budgets say.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::http::keep_alive_get;
use common::media::{play, publish, rtmp_url, wait_live};
use common::{Server, require_tool, strom_bin, wait_for};
use std::io::BufReader;
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);
/// strom's descriptor limit: a connection budget of 192 per worker.
const NOFILE: u32 = 256;
/// Connections the flood opens to each port: well past the budget.
const FLOOD: usize = 400;

/// One GET on the viewer's kept-alive connection; the status and the body.
fn get(stream: &mut TcpStream, reader: &mut BufReader<TcpStream>, path: &str) -> (u16, String) {
    keep_alive_get(stream, reader, path, "viewer")
}

fn media_sequence(playlist: &str) -> Option<u64> {
    playlist
        .lines()
        .find_map(|l| l.strip_prefix("#EXT-X-MEDIA-SEQUENCE:"))
        .and_then(|n| n.trim().parse().ok())
}

#[test]
fn a_connection_flood_past_the_descriptor_limit_leaves_viewers_playing() {
    require_tool("prlimit", "util-linux");
    // The flood's own sockets must fit this test process.
    let (_, hard) =
        nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    let mut server = Server::prepare("");
    let rules = format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS"], "segment_duration_secs": 1}}}}"#,
        server.ports.rtmp
    );
    std::fs::write(server.path("rules.conf"), rules).unwrap();
    let log = std::fs::File::create(server.log_path()).unwrap();
    let child = Command::new("prlimit")
        .arg(format!("--nofile={NOFILE}:{NOFILE}"))
        .arg("--")
        .arg(strom_bin())
        .arg("run")
        .arg("--config")
        .arg(server.path("strom.conf"))
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    server.child = Some(child);
    server.wait_ready();

    let _publisher = publish(&rtmp_url(&server, "live/tv"));
    wait_live(&server, "live", "tv", LIVE).unwrap_or_else(|| panic!("{}", server.log()));
    let mut player = play(&rtmp_url(&server, "live/tv"));
    let mut viewer = TcpStream::connect(("127.0.0.1", server.ports.http)).unwrap();
    viewer
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut reader = BufReader::new(viewer.try_clone().unwrap());
    let path = "/live/tv/chunks.m3u8";
    let first = wait_for(LIVE, "the HLS viewer's playlist", || {
        let (status, body) = get(&mut viewer, &mut reader, path);
        (status == 200).then(|| media_sequence(&body)).flatten()
    })
    .unwrap_or_else(|| panic!("no playlist; log:\n{}", server.log()));
    // The flood must not race the player's own connect (a busy machine starts ffmpeg
    // slowly): it begins once the player is a listed RTMP session of the stream.
    wait_for(LIVE, "the RTMP player's session", || {
        let (_, sessions) = server.get("/manage/sessions");
        sessions
            .as_array()?
            .iter()
            .any(|s| s["type"] == "RTMP" && s["stream"] == "tv")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("the RTMP player never played; log:\n{}", server.log()));
    let (rtmp_pid, packager_pid) = (server.worker_pid("rtmp"), server.worker_pid("packager"));
    assert!(
        server
            .log()
            .contains("connections capped to fit the descriptor limit"),
        "{}",
        server.log()
    );

    let mut flood = Vec::new();
    for port in [server.ports.rtmp, server.ports.http] {
        for _ in 0..FLOOD {
            if let Ok(stream) = TcpStream::connect(("127.0.0.1", port)) {
                flood.push(stream);
            }
        }
    }
    wait_for(LIVE, "the budget refusing the flood", || {
        let log = server.log();
        let refusals = log
            .lines()
            .filter(|l| l.contains("the descriptor budget for connections is used up"))
            .count();
        (refusals > 0).then_some(())
    })
    .unwrap_or_else(|| panic!("the flood was not refused; log:\n{}", server.log()));

    // Longer than the heartbeat needs to call a worker unhealthy (5 s).
    std::thread::sleep(Duration::from_secs(8));
    let (status, body) = get(&mut viewer, &mut reader, path);
    assert_eq!(status, 200, "the HLS viewer lost its playlist");
    let later = media_sequence(&body).unwrap();
    assert!(
        later > first,
        "the HLS playlist stopped: {first} -> {later}"
    );
    assert!(
        player.running(),
        "the RTMP player was dropped; log:\n{}",
        server.log()
    );
    assert_eq!(
        server.worker_pid("rtmp"),
        rtmp_pid,
        "the rtmp worker was restarted"
    );
    assert_eq!(
        server.worker_pid("packager"),
        packager_pid,
        "the packager was restarted"
    );
    assert!(common::media::is_live(&server, "live", "tv"));
    drop(flood);
}
