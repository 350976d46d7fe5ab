//! UDP inputs end to end: a listening `Cameras` entry is bound by the supervisor, lent
//! to the ingest worker (which counts what arrives), stays bound while the ingest worker
//! is killed and restarted, and follows `rules.conf` on reload.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Server, free_port, wait_for};
use serde_json::{Value, json};
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

/// One MPEG-TS-over-UDP datagram: seven 188-byte packets.
const DATAGRAM: usize = 188 * 7;

/// A port free for both TCP (`free_port`'s block keeps parallel tests apart) and UDP.
fn free_udp_port() -> u16 {
    loop {
        let port = free_port();
        if UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

fn rules(rtmp_port: u16, cameras: Value) -> String {
    json!({
        "RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": rtmp_port}]},
        "Cameras": cameras,
    })
    .to_string()
}

fn udp_camera(port: u16) -> Value {
    json!([{"id": "cam1", "ip": "127.0.0.1", "port": port, "protocol": "udp"}])
}

fn bound_by_someone(addr: SocketAddr) -> bool {
    UdpSocket::bind(addr).is_err()
}

fn ingest_bytes_received(server: &Server) -> u64 {
    let (_, workers) = server.get("/manage/workers");
    workers
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "ingest")
        .and_then(|w| w["bytes_received"].as_u64())
        .unwrap_or_default()
}

/// Sends datagrams until the ingest worker's heartbeat counters show at least `bytes`.
fn send_until_counted(server: &Server, addr: SocketAddr, bytes: u64) -> u64 {
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let payload = [0x47u8; DATAGRAM];
    wait_for(Duration::from_secs(15), "ingest counts datagrams", || {
        for _ in 0..10 {
            sender.send_to(&payload, addr).unwrap();
        }
        let counted = ingest_bytes_received(server);
        (counted >= bytes).then_some(counted)
    })
    .unwrap_or_else(|| {
        panic!(
            "ingest never counted {bytes} bytes (has {}); log:\n{}",
            ingest_bytes_received(server),
            server.log()
        )
    })
}

#[test]
fn a_udp_camera_port_is_bound_by_the_supervisor_and_survives_an_ingest_restart() {
    let mut server = Server::prepare("");
    let port = free_udp_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    std::fs::write(
        server.path("rules.conf"),
        rules(server.ports.rtmp, udp_camera(port)),
    )
    .unwrap();
    server.spawn();
    server.wait_ready();

    assert!(bound_by_someone(addr), "the camera port is bound");
    assert!(
        server.log().contains("udp socket adopted"),
        "the ingest worker adopted the socket; log:\n{}",
        server.log()
    );
    send_until_counted(&server, addr, 10 * DATAGRAM as u64);

    let old_pid = server.worker_pid("ingest");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(old_pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // Nobody in the ingest worker holds it now: the supervisor's copy keeps it bound.
    assert!(
        bound_by_someone(addr),
        "the port stays bound without the worker"
    );
    let new_pid = wait_for(Duration::from_secs(10), "a new ingest worker", || {
        let pid = server.worker_pid("ingest");
        (pid != 0 && pid != old_pid).then_some(pid)
    });
    assert!(
        new_pid.is_some(),
        "ingest not restarted; log:\n{}",
        server.log()
    );
    server.wait_ready();
    // The new process starts its counters from zero and counts again.
    send_until_counted(&server, addr, 10 * DATAGRAM as u64);
    assert_eq!(
        server.log().matches("udp socket adopted").count(),
        2,
        "adopted once per process; log:\n{}",
        server.log()
    );
}

#[test]
fn a_reload_binds_new_camera_ports_and_closes_removed_ones() {
    let mut server = Server::prepare("");
    let port = free_udp_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    server.spawn();
    server.wait_ready();
    assert!(!bound_by_someone(addr), "no camera, no socket");

    std::fs::write(
        server.path("rules.conf"),
        rules(server.ports.rtmp, udp_camera(port)),
    )
    .unwrap();
    assert_eq!(
        server.post("/manage/reload_config", ""),
        (200, json!({"status": "Ok"}))
    );
    assert!(bound_by_someone(addr), "bound after the reload");
    send_until_counted(&server, addr, 5 * DATAGRAM as u64);

    std::fs::write(
        server.path("rules.conf"),
        rules(server.ports.rtmp, json!([])),
    )
    .unwrap();
    assert_eq!(
        server.post("/manage/reload_config", ""),
        (200, json!({"status": "Ok"}))
    );
    // The worker lets go of its copy when it gets the new (empty) set.
    let freed = wait_for(Duration::from_secs(5), "the port freed", || {
        (!bound_by_someone(addr)).then_some(())
    });
    assert!(freed.is_some(), "port still bound; log:\n{}", server.log());
}
