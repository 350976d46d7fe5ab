//! Hostile RTMP clients against the real binary: names that try to leave `run_dir`, two
//! publishes on one connection, silent players, connection floods, descriptor leaks per
//! stream name, and a worker out of descriptors (issue: security and resource defects).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::raw_rtmp::{RawRtmp, raw_publisher};
use common::{Server, require_tool, wait_for};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::Duration;

const SHORT: Duration = Duration::from_secs(10);

fn start_with_limits(limits: &str) -> Server {
    let server = Server::start("");
    let rules = format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": 1, "protocols": ["HLS"], "limits": {{{limits}}}}}}}"#,
        server.ports.rtmp
    );
    std::fs::write(server.path("rules.conf"), rules).unwrap();
    server.wait_ready();
    assert_eq!(server.post("/manage/reload_config", "").0, 200);
    server
}

fn rtmp_addr(server: &Server) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], server.ports.rtmp))
}

fn open_fds(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

#[test]
fn names_that_leave_run_dir_are_refused_and_nothing_is_written() {
    let server = Server::start("");
    server.wait_ready();
    let outside = server.path("escaped");
    let absolute = server.path("absolute-target");
    let hostile = [
        "../../escaped".to_owned(),
        "..".to_owned(),
        ".hidden".to_owned(),
        absolute.display().to_string(),
        "a/b".to_owned(),
        "x".repeat(200),
    ];
    for name in &hostile {
        let mut client = RawRtmp::handshake(rtmp_addr(&server)).unwrap();
        client.connect("live", true);
        client.publish(name);
        assert!(
            client.wait_for_text("NetStream.Publish.BadName", SHORT),
            "{name:?} accepted: {:?}; log:\n{}",
            String::from_utf8_lossy(&client.received).replace(char::from(0), "."),
            server.log()
        );
        assert!(client.wait_closed(SHORT), "{name:?}: connection kept");
    }
    // An application name is checked at connect.
    let mut client = RawRtmp::handshake(rtmp_addr(&server)).unwrap();
    client.connect("../live", true);
    assert!(client.wait_for_text("NetConnection.Connect.Rejected", SHORT));
    // A valid name next to them still publishes, and is packaged inside run_dir.
    let _good = raw_publisher(rtmp_addr(&server), "live", "fine");
    wait_for(SHORT, "fine is live", || {
        common::media::is_live(&server, "live", "fine").then_some(())
    })
    .unwrap();
    assert!(!outside.exists(), "a directory was created outside run_dir");
    assert!(!absolute.exists(), "an absolute stream name was followed");
    assert!(
        server.log().contains("stream name contains 0x2f"),
        "the refusal says why; log:\n{}",
        server.log()
    );
}

#[test]
fn one_connection_publishes_one_stream_and_its_claims_end_with_it() {
    let server = Server::start("");
    server.wait_ready();
    let mut client = raw_publisher(rtmp_addr(&server), "live", "first");
    client.publish("second");
    assert!(
        client.wait_for_text("already publishes live/first", SHORT),
        "second publish not refused: {:?}",
        String::from_utf8_lossy(&client.received)
    );
    assert!(client.wait_closed(SHORT));
    // Neither name stays claimed by the closed connection.
    let first = wait_for(SHORT, "first free again", || {
        let mut again = RawRtmp::handshake(rtmp_addr(&server)).ok()?;
        again.connect("live", true);
        again.publish("first");
        again
            .wait_for_text("NetStream.Publish.Start", SHORT)
            .then_some(again)
    });
    assert!(first.is_some(), "live/first stayed claimed");
    let _second = raw_publisher(rtmp_addr(&server), "live", "second");
}

#[test]
fn players_without_a_publisher_are_told_and_closed() {
    let server = start_with_limits(
        r#""player_wait_timeout_secs": 2, "unpublish_grace_secs": 1, "max_players": 3"#,
    );
    // A player of a stream that never appears is closed.
    let mut waiting = RawRtmp::handshake(rtmp_addr(&server)).unwrap();
    waiting.connect("live", false);
    waiting.play("never");
    assert!(waiting.wait_for_text("NetStream.Play.Start", SHORT));
    assert!(waiting.wait_closed(SHORT * 2), "silent player kept");

    // A player whose publisher leaves hears UnpublishNotify, then is closed.
    let publisher = raw_publisher(rtmp_addr(&server), "live", "real");
    let mut player = RawRtmp::handshake(rtmp_addr(&server)).unwrap();
    player.connect("live", false);
    player.play("real");
    assert!(player.wait_for_text("NetStream.Play.Start", SHORT));
    drop(publisher);
    assert!(
        player.wait_for_text("NetStream.Play.UnpublishNotify", SHORT),
        "no unpublish notice: {:?}; log:\n{}",
        String::from_utf8_lossy(&player.received),
        server.log()
    );
    assert!(player.wait_closed(SHORT), "player kept after the grace");

    // Players of made-up streams fill only the players' places: a publisher still gets in.
    let squatters: Vec<RawRtmp> = (0..3)
        .map(|i| {
            let mut squatter = RawRtmp::handshake(rtmp_addr(&server)).unwrap();
            squatter.connect("live", false);
            squatter.play(&format!("made-up-{i}"));
            assert!(squatter.wait_for_text("NetStream.Play.Start", SHORT));
            squatter
        })
        .collect();
    let mut refused = RawRtmp::handshake(rtmp_addr(&server)).unwrap();
    refused.connect("live", false);
    refused.play("one-too-many");
    assert!(refused.wait_for_text("player limit is reached", SHORT));
    let _publisher = raw_publisher(rtmp_addr(&server), "live", "still-possible");
    drop(squatters);
}

#[test]
fn connections_per_address_are_capped() {
    let server = start_with_limits(r#""max_connections_per_ip": 4, "handshake_timeout_secs": 30"#);
    let held: Vec<RawRtmp> = (0..4)
        .map(|_| RawRtmp::handshake(rtmp_addr(&server)).unwrap())
        .collect();
    // The fifth from the same address gets no handshake answer: closed at once.
    assert!(
        RawRtmp::handshake(rtmp_addr(&server)).is_err(),
        "a fifth connection from one address was served"
    );
    drop(held);
    let again = wait_for(SHORT, "places given back", || {
        RawRtmp::handshake(rtmp_addr(&server)).ok()
    });
    assert!(again.is_some(), "closed connections kept their places");
}

#[test]
fn dropped_connections_do_not_flood_the_log() {
    let server = Server::start("");
    server.wait_ready();
    for _ in 0..300 {
        let mut stream = TcpStream::connect(rtmp_addr(&server)).unwrap();
        let _ = stream.write_all(&[0x06; 64]);
    }
    let _publisher = raw_publisher(rtmp_addr(&server), "live", "after-the-flood");
    let log = server.log();
    let dropped = log.matches("rtmp connection dropped").count();
    assert!(
        (1..=30).contains(&dropped),
        "{dropped} log lines for 300 dropped connections"
    );
}

#[test]
fn bus_links_close_with_their_streams_and_descriptors_stay_flat() {
    let server = Server::start("");
    server.wait_ready();
    let rtmp = server.worker_pid("rtmp");
    let addr = rtmp_addr(&server);
    let cycle = |names: std::ops::Range<usize>| {
        let publishers: Vec<_> = names
            .map(|i| raw_publisher(addr, "live", &format!("n{i}")))
            .collect();
        // Let the packager subscribe to the new streams over the bus.
        std::thread::sleep(Duration::from_millis(300));
        drop(publishers);
    };
    cycle(0..10);
    let settled = |limit: usize| {
        wait_for(Duration::from_secs(30), "descriptors back down", || {
            (open_fds(rtmp) <= limit).then_some(())
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    let baseline = open_fds(rtmp);
    for batch in 0..20 {
        cycle(10 + batch * 25..10 + (batch + 1) * 25);
    }
    let attached = server.log().matches("bus subscriber attached").count();
    assert!(
        attached >= 100,
        "only {attached} bus links were made; log:\n{}",
        server.log()
    );
    assert!(
        settled(baseline + 10).is_some(),
        "rtmp worker holds {} descriptors after 500 streams came and went (baseline {baseline})",
        open_fds(rtmp)
    );
    assert_eq!(server.worker_pid("rtmp"), rtmp, "no restart hid the leak");
}

#[test]
fn a_worker_out_of_descriptors_reports_unhealthy_and_is_restarted() {
    require_tool("prlimit", "util-linux");
    let server = start_with_limits(r#""handshake_timeout_secs": 120"#);
    let rtmp = server.worker_pid("rtmp");
    let status = Command::new("prlimit")
        .args(["--pid", &rtmp.to_string(), "--nofile=48:48"])
        .status()
        .unwrap();
    assert!(status.success());
    // Accepted connections wait in their handshake; the rest find the worker out of
    // descriptors.
    let flood: Vec<TcpStream> = (0..80)
        .map(|_| {
            let mut stream = TcpStream::connect(rtmp_addr(&server)).unwrap();
            let _ = stream.write_all(&[3u8; 1537]);
            stream
        })
        .collect();
    let restarted = wait_for(Duration::from_secs(40), "rtmp worker restarted", || {
        let pid = server.worker_pid("rtmp");
        (pid != rtmp && pid > 0).then_some(pid)
    });
    assert!(
        restarted.is_some(),
        "worker out of descriptors kept; log:\n{}",
        server.log()
    );
    assert!(server.log().contains("reports itself unhealthy"));
    drop(flood);
    let _publisher = wait_for(SHORT, "publishing works again", || {
        let mut client = RawRtmp::handshake(rtmp_addr(&server)).ok()?;
        client.connect("live", true);
        client.publish("back");
        client
            .wait_for_text("NetStream.Publish.Start", SHORT)
            .then_some(client)
    })
    .expect("publishing after the restart");
}
