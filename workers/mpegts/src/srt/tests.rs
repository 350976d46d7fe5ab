//! Tests of the libsrt wrapper: the C layout check (sizes, offsets and constants of
//! `ffi.rs` against `<srt/srt.h>`), options parsing, the stats JSON shapes, and real
//! SRT connections on 127.0.0.1 (listener on a lent UDP socket, stream id, passphrase,
//! messages, stats, timeouts, closing, rendezvous) plus interop with Debian's
//! `srt-live-transmit` (package `srt-tools`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::ffi::{self, SRT_EPOLL_EVENT, SRT_TRACEBSTATS};
use super::*;
use serde_json::Value;
use std::collections::HashMap;
use std::mem::{offset_of, size_of};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::layout_table::LayoutEntry;

unsafe extern "C" {
    /// csrc/srt_layout.c: a static table of (name, value) and its length.
    fn strom_srt_layout(count: *mut usize) -> *const LayoutEntry;
}

fn c_layout() -> HashMap<String, i64> {
    crate::layout_table::read(strom_srt_layout)
}

macro_rules! stats_offsets {
    ($($field:ident),* $(,)?) => {
        vec![$((
            concat!("SRT_TRACEBSTATS.", stringify!($field)),
            offset_of!(SRT_TRACEBSTATS, $field) as i64,
        )),*]
    };
}

macro_rules! constants {
    ($($name:ident),* $(,)?) => {
        vec![$((stringify!($name), i64::from(ffi::$name))),*]
    };
}

#[test]
fn srt_layout_matches_the_c_header() {
    let mut rust: Vec<(&str, i64)> = vec![
        (
            "sizeof SRT_TRACEBSTATS",
            size_of::<SRT_TRACEBSTATS>() as i64,
        ),
        (
            "sizeof SRT_EPOLL_EVENT",
            size_of::<SRT_EPOLL_EVENT>() as i64,
        ),
        ("sizeof SRTSOCKET", size_of::<ffi::SRTSOCKET>() as i64),
        ("sizeof SRT_SOCKSTATUS", size_of::<libc::c_int>() as i64),
        ("sizeof SRT_SOCKOPT", size_of::<libc::c_int>() as i64),
        ("SRT_EPOLL_EVENT.fd", offset_of!(SRT_EPOLL_EVENT, fd) as i64),
        (
            "SRT_EPOLL_EVENT.events",
            offset_of!(SRT_EPOLL_EVENT, events) as i64,
        ),
    ];
    rust.extend(stats_offsets!(
        msTimeStamp,
        pktSentTotal,
        pktRecvTotal,
        pktSndLossTotal,
        pktRcvLossTotal,
        pktRetransTotal,
        pktSentACKTotal,
        pktRecvACKTotal,
        pktSentNAKTotal,
        pktRecvNAKTotal,
        usSndDurationTotal,
        pktSndDropTotal,
        pktRcvDropTotal,
        pktRcvUndecryptTotal,
        byteSentTotal,
        byteRecvTotal,
        byteRcvLossTotal,
        byteRetransTotal,
        byteSndDropTotal,
        byteRcvDropTotal,
        byteRcvUndecryptTotal,
        pktSent,
        pktRecv,
        pktSndLoss,
        pktRcvLoss,
        pktRetrans,
        pktRcvRetrans,
        pktSentACK,
        pktRecvACK,
        pktSentNAK,
        pktRecvNAK,
        mbpsSendRate,
        mbpsRecvRate,
        usSndDuration,
        pktReorderDistance,
        pktRcvAvgBelatedTime,
        pktRcvBelated,
        pktSndDrop,
        pktRcvDrop,
        pktRcvUndecrypt,
        byteSent,
        byteRecv,
        byteRcvLoss,
        byteRetrans,
        byteSndDrop,
        byteRcvDrop,
        byteRcvUndecrypt,
        usPktSndPeriod,
        pktFlowWindow,
        pktCongestionWindow,
        pktFlightSize,
        msRTT,
        mbpsBandwidth,
        byteAvailSndBuf,
        byteAvailRcvBuf,
        mbpsMaxBW,
        byteMSS,
        pktSndBuf,
        byteSndBuf,
        msSndBuf,
        msSndTsbPdDelay,
        pktRcvBuf,
        byteRcvBuf,
        msRcvBuf,
        msRcvTsbPdDelay,
        pktSndFilterExtraTotal,
        pktRcvFilterExtraTotal,
        pktRcvFilterSupplyTotal,
        pktRcvFilterLossTotal,
        pktSndFilterExtra,
        pktRcvFilterExtra,
        pktRcvFilterSupply,
        pktRcvFilterLoss,
        pktReorderTolerance,
        pktSentUniqueTotal,
        pktRecvUniqueTotal,
        byteSentUniqueTotal,
        byteRecvUniqueTotal,
        pktSentUnique,
        pktRecvUnique,
        byteSentUnique,
        byteRecvUnique,
    ));
    rust.extend(constants!(
        SRT_INVALID_SOCK,
        SRT_ERROR,
        SRTO_SNDSYN,
        SRTO_RCVSYN,
        SRTO_RENDEZVOUS,
        SRTO_SNDTIMEO,
        SRTO_RCVTIMEO,
        SRTO_MAXBW,
        SRTO_LATENCY,
        SRTO_PASSPHRASE,
        SRTO_PBKEYLEN,
        SRTO_CONNTIMEO,
        SRTO_STREAMID,
        SRTO_TRANSTYPE,
        SRTT_LIVE,
        SRTS_INIT,
        SRTS_OPENED,
        SRTS_LISTENING,
        SRTS_CONNECTING,
        SRTS_CONNECTED,
        SRTS_BROKEN,
        SRTS_CLOSING,
        SRTS_CLOSED,
        SRTS_NONEXIST,
        SRT_EPOLL_IN,
        SRT_EPOLL_ERR,
        SRT_ECONNLOST,
        SRT_ENOCONN,
        SRT_EINVSOCK,
        SRT_EASYNCRCV,
        SRT_ETIMEOUT,
    ));
    let c = c_layout();
    let mut mismatches = Vec::new();
    for (name, value) in &rust {
        match c.get(*name) {
            Some(c_value) if c_value == value => {}
            other => mismatches.push(format!("{name}: rust {value}, C {other:?}")),
        }
    }
    assert!(mismatches.is_empty(), "layout mismatches: {mismatches:#?}");
    assert_eq!(c.len(), rust.len(), "entries checked on one side only");
    // Every field of the struct is transcribed: the last field ends the struct.
    assert_eq!(
        offset_of!(SRT_TRACEBSTATS, byteRecvUnique) + 8,
        size_of::<SRT_TRACEBSTATS>()
    );
}

#[test]
fn srt_sockets_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SrtSocket>();
    assert_send_sync::<SrtListener>();
}

fn params(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[test]
fn srt_options_from_parameters() {
    let options = SrtOptions::from_parameters(&params(&[
        ("latency", "200"),
        ("passphrase", "0123456789abcdef"),
        ("pbkeylen", "32"),
        ("maxbw", "-1"),
        ("streamid", "#!::r=live/cam"),
        ("whatever", "x"),
    ]))
    .unwrap();
    assert_eq!(options.latency_ms, Some(200));
    assert_eq!(options.passphrase.as_deref(), Some("0123456789abcdef"));
    assert_eq!(options.pbkeylen, Some(32));
    assert_eq!(options.maxbw, Some(-1));
    assert_eq!(options.stream_id.as_deref(), Some("#!::r=live/cam"));

    let empty = SrtOptions::from_parameters(&params(&[("passphrase", "")])).unwrap();
    assert_eq!(empty.passphrase, None);

    for (name, value) in [
        ("latency", "abc"),
        ("latency", "-5"),
        ("pbkeylen", "20"),
        ("maxbw", "1e9"),
        ("passphrase", "short"),
    ] {
        let error = SrtOptions::from_parameters(&params(&[(name, value)])).unwrap_err();
        assert!(
            matches!(&error, SrtError::Config(m) if m.contains(name)),
            "{error}"
        );
    }
    let long_id = "x".repeat(513);
    assert!(SrtOptions::from_parameters(&params(&[("streamid", &long_id)])).is_err());
    // Invalid options set directly are refused before any socket is made.
    let bad = SrtOptions {
        passphrase: Some("x".repeat(80)),
        ..SrtOptions::default()
    };
    assert!(matches!(
        SrtListener::bind("127.0.0.1:0".parse().unwrap(), &bad, 1),
        Err(SrtError::Config(_))
    ));
}

fn assert_json_shape(value: &Value, shape: &Value, path: &str) {
    match shape {
        Value::Object(fields) => {
            let object = value
                .as_object()
                .unwrap_or_else(|| panic!("{path}: not an object"));
            let mut got: Vec<&String> = object.keys().collect();
            let mut want: Vec<&String> = fields.keys().collect();
            got.sort();
            want.sort();
            assert_eq!(got, want, "{path}: field names");
            for (name, kind) in fields {
                assert_json_shape(&object[name], kind, &format!("{path}.{name}"));
            }
        }
        Value::String(kind) => match kind.as_str() {
            "i64" => assert!(value.is_i64(), "{path}: {value} is not an integer"),
            "f64" => assert!(value.is_f64(), "{path}: {value} is not a float"),
            "str" => assert!(value.is_string(), "{path}: {value} is not a string"),
            _ => unreachable!(),
        },
        _ => unreachable!(),
    }
}

fn receiver_shape() -> Value {
    serde_json::json!({
        "id": "str", "state": "str",
        "stats": {
            "time": "i64",
            "window": {"flow": "i64", "congestion": "i64", "flight": "i64"},
            "link": {"rtt": "f64", "mbpsBandwidth": "f64", "mbpsMaxBandwidth": "i64"},
            "recv": {
                "packetsReceived": "i64", "packetsReceivedRetransmitted": "i64",
                "packetsLost": "i64", "packetsDropped": "i64", "packetsBelated": "i64",
                "NAKsSent": "i64", "bytesReceived": "i64", "bytesLost": "i64",
                "bytesDropped": "i64", "mbpsRate": "f64"
            }
        }
    })
}

#[test]
fn srt_stats_json_types_are_strict() {
    let stats = SrtStats {
        ms_rtt: f64::NAN,
        mbps_bandwidth: f64::INFINITY,
        mbps_max_bw: 1000.7,
        mbps_recv_rate: 0.0,
        byte_recv_total: u64::MAX,
        ..SrtStats::default()
    };
    let receiver = stats.receiver_json("cam", "connected");
    assert_json_shape(&receiver, &receiver_shape(), "receiver");
    assert_eq!(receiver["stats"]["link"]["mbpsMaxBandwidth"], 1000);
    assert_eq!(receiver["id"], "cam");
    assert_eq!(receiver["state"], "connected");
    let sender = stats.sender_json("out", "broken");
    let sender_shape = serde_json::json!({
        "id": "str", "state": "str",
        "stats": {
            "time": "i64",
            "window": {"flow": "i64", "congestion": "i64", "flight": "i64"},
            "link": {"rtt": "f64", "mbpsBandwidth": "f64", "mbpsMaxBandwidth": "i64"},
            "send": {
                "bytesSent": "i64", "bytesRetransmitted": "i64", "bytesDropped": "i64",
                "packetsSent": "i64",
                "mbpsRate": "f64", "NAKsReceived": "i64"
            }
        }
    });
    assert_json_shape(&sender, &sender_shape, "sender");
}

const LOCALHOST: &str = "127.0.0.1:0";
const STREAM_ID: &str = "#!::r=live/cam,m=publish";
const PASSPHRASE: &str = "0123456789abcdef";

fn message(index: u32) -> Vec<u8> {
    let mut data = vec![(index % 251) as u8; 1316];
    data[..4].copy_from_slice(&index.to_be_bytes());
    data
}

/// A listener on 127.0.0.1 (own bind), a caller connected to it and the accepted side.
fn connected_pair(options: &SrtOptions) -> (SrtListener, SrtSocket, SrtSocket) {
    let listener = SrtListener::bind(LOCALHOST.parse().unwrap(), options, 4).unwrap();
    let addr = listener.local_addr().unwrap();
    let caller = SrtSocket::connect(addr, options, Duration::from_secs(3)).unwrap();
    let (accepted, _) = listener.accept(Duration::from_secs(3)).unwrap().unwrap();
    (listener, caller, accepted)
}

#[test]
fn srt_listener_on_a_lent_udp_socket_receives_messages_in_order() {
    let udp = UdpSocket::bind(LOCALHOST).unwrap();
    // Lent sockets arrive non-blocking (the worker runtime adopts them for tokio).
    udp.set_nonblocking(true).unwrap();
    let udp_addr = udp.local_addr().unwrap();
    let listener_options = SrtOptions {
        passphrase: Some(PASSPHRASE.into()),
        latency_ms: Some(80),
        ..SrtOptions::default()
    };
    let listener = SrtListener::bind_acquire(udp.as_fd(), &listener_options, 4).unwrap();
    // libsrt's receive thread gets a blocking socket (on a non-blocking one it spins).
    assert!(!socket2::SockRef::from(&udp).nonblocking().unwrap());
    // The caller's socket is still open and its own.
    assert_eq!(udp.local_addr().unwrap(), udp_addr);
    assert_eq!(listener.local_addr().unwrap(), udp_addr);

    let caller_options = SrtOptions {
        passphrase: Some(PASSPHRASE.into()),
        stream_id: Some(STREAM_ID.into()),
        ..SrtOptions::default()
    };
    let caller = SrtSocket::connect(udp_addr, &caller_options, Duration::from_secs(3)).unwrap();
    assert_eq!(caller.state(), "connected");
    let (accepted, peer) = listener.accept(Duration::from_secs(3)).unwrap().unwrap();
    assert_eq!(peer, caller_local_addr(&accepted));
    assert_eq!(accepted.stream_id(), STREAM_ID);
    assert_eq!(accepted.state(), "connected");
    assert_eq!(caller.stream_id(), STREAM_ID);

    let sender = std::thread::spawn(move || {
        for index in 0..200u32 {
            caller.send(&message(index)).unwrap();
            if index % 50 == 49 {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        caller
    });
    let mut buf = [0u8; 1500];
    for index in 0..200u32 {
        let n = accepted
            .recv(&mut buf, Duration::from_secs(3))
            .unwrap()
            .unwrap_or_else(|| panic!("timed out waiting for message {index}"));
        assert_eq!(&buf[..n], message(index).as_slice(), "message {index}");
    }
    let caller = sender.join().unwrap();

    let stats = accepted.stats().unwrap();
    assert!(stats.pkt_recv_total >= 200, "{stats:?}");
    assert!(stats.byte_recv_total >= 200 * 1316, "{stats:?}");
    assert!(stats.ms_rtt >= 0.0 && stats.ms_rtt < 1000.0, "{stats:?}");
    assert!(stats.ms_time_stamp > 0, "{stats:?}");
    let json = stats.receiver_json("live/cam", accepted.state());
    assert_json_shape(&json, &receiver_shape(), "receiver");
    assert_eq!(
        json["stats"]["recv"]["packetsReceived"],
        stats.pkt_recv_total
    );

    let sent = caller.stats().unwrap();
    assert!(sent.byte_sent_total >= 200 * 1316, "{sent:?}");

    // The peer going away shows as Closed on the receiver.
    drop(caller);
    let started = Instant::now();
    loop {
        match accepted.recv(&mut buf, Duration::from_millis(200)) {
            Err(SrtError::Closed) => break,
            Ok(None) => assert!(started.elapsed() < Duration::from_secs(10), "never closed"),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_ne!(accepted.state(), "connected");
    drop(listener);
    // Still our socket after the listener (and libsrt's duplicate) is gone.
    assert_eq!(udp.local_addr().unwrap(), udp_addr);
}

fn caller_local_addr(accepted: &SrtSocket) -> SocketAddr {
    accepted.peer_addr().unwrap()
}

#[test]
fn srt_wrong_passphrase_is_refused() {
    let listener_options = SrtOptions {
        passphrase: Some(PASSPHRASE.into()),
        ..SrtOptions::default()
    };
    let listener = SrtListener::bind(LOCALHOST.parse().unwrap(), &listener_options, 4).unwrap();
    let addr = listener.local_addr().unwrap();
    let wrong = SrtOptions {
        passphrase: Some("fedcba9876543210".into()),
        stream_id: Some(STREAM_ID.into()),
        ..SrtOptions::default()
    };
    let timeout = Duration::from_secs(2);
    let started = Instant::now();
    let result = SrtSocket::connect(addr, &wrong, timeout);
    assert!(result.is_err(), "connected with a wrong passphrase");
    assert!(started.elapsed() < timeout + Duration::from_secs(1));
    assert!(matches!(
        result,
        Err(SrtError::Call {
            call: "connect",
            ..
        })
    ));
    // No caller without a passphrase either.
    let none = SrtOptions::default();
    assert!(SrtSocket::connect(addr, &none, timeout).is_err());
    match listener.accept(Duration::from_millis(300)).unwrap() {
        None => {}
        Some((socket, _)) => {
            let mut buf = [0u8; 1500];
            assert!(matches!(
                socket.recv(&mut buf, Duration::from_millis(500)),
                Err(SrtError::Closed) | Ok(None)
            ));
            assert_ne!(socket.state(), "connected");
        }
    }
}

#[test]
fn srt_close_from_another_thread_unblocks_recv() {
    let (_listener, _caller, accepted) = connected_pair(&SrtOptions::default());
    let accepted = Arc::new(accepted);
    let receiver = {
        let accepted = Arc::clone(&accepted);
        std::thread::spawn(move || {
            let mut buf = [0u8; 1500];
            let started = Instant::now();
            let result = accepted.recv(&mut buf, Duration::from_secs(20));
            (result, started.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    accepted.close();
    let (result, elapsed) = receiver.join().unwrap();
    assert!(matches!(result, Err(SrtError::Closed)), "{result:?}");
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    // Idempotent, and everything after it reports closed.
    accepted.close();
    assert_eq!(accepted.state(), "closed");
    let mut buf = [0u8; 1500];
    assert!(matches!(
        accepted.recv(&mut buf, Duration::from_millis(10)),
        Err(SrtError::Closed)
    ));
    assert!(matches!(accepted.send(b"x"), Err(SrtError::Closed)));
    assert!(matches!(accepted.stats(), Err(SrtError::Closed)));
    assert!(accepted.peer_addr().is_err());
    assert_eq!(accepted.stream_id(), "");
}

#[test]
fn srt_recv_times_out_with_nothing_sent() {
    let (listener, caller, accepted) = connected_pair(&SrtOptions::default());
    let mut buf = [0u8; 1500];
    let started = Instant::now();
    assert!(matches!(
        accepted.recv(&mut buf, Duration::from_millis(300)),
        Ok(None)
    ));
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(250), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    // And the listener times out with no caller.
    let started = Instant::now();
    assert!(
        listener
            .accept(Duration::from_millis(200))
            .unwrap()
            .is_none()
    );
    assert!(started.elapsed() >= Duration::from_millis(150));
    // The connection still works after a timeout.
    caller.send(b"hello").unwrap();
    let n = accepted
        .recv(&mut buf, Duration::from_secs(3))
        .unwrap()
        .unwrap();
    assert_eq!(&buf[..n], b"hello");
}

/// Rendezvous against `srt-live-transmit` in rendezvous mode. Two rendezvous sockets
/// inside one process reported "connected" but passed no data with libsrt 1.5.1 (not
/// investigated), so the peer is a separate process. `srt_getpeername` gives no IP
/// address on rendezvous sockets in 1.5.1, so `peer_addr` is not asserted here.
#[test]
fn srt_rendezvous_with_srt_live_transmit() {
    let our_port = free_udp_port();
    let tool_port = free_udp_port();
    let udp_port = free_udp_port();
    let child = Command::new(TOOL)
        .arg(format!("udp://:{udp_port}"))
        .arg(format!(
            "srt://127.0.0.1:{our_port}?mode=rendezvous&port={tool_port}"
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run {TOOL} ({e}): install the Debian package srt-tools")
        });
    let _child = KillOnDrop(child);
    let local: SocketAddr = format!("127.0.0.1:{our_port}").parse().unwrap();
    let remote: SocketAddr = format!("127.0.0.1:{tool_port}").parse().unwrap();
    let ours = SrtSocket::rendezvous(
        local,
        remote,
        &SrtOptions::default(),
        Duration::from_secs(5),
    )
    .unwrap();
    assert_eq!(ours.state(), "connected");
    receive_through_tool(&ours, udp_port);
}

const TOOL: &str = "srt-live-transmit";

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_udp_port() -> u16 {
    UdpSocket::bind(LOCALHOST)
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn srt_interop_with_srt_live_transmit() {
    let udp_port = free_udp_port();
    let srt_port = free_udp_port();
    let child = Command::new(TOOL)
        .arg(format!("udp://:{udp_port}"))
        .arg(format!("srt://:{srt_port}?mode=listener"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run {TOOL} ({e}): install the Debian package srt-tools")
        });
    let _child = KillOnDrop(child);

    let srt_addr: SocketAddr = format!("127.0.0.1:{srt_port}").parse().unwrap();
    let started = Instant::now();
    let caller = loop {
        match SrtSocket::connect(srt_addr, &SrtOptions::default(), Duration::from_millis(500)) {
            Ok(caller) => break caller,
            Err(e) if started.elapsed() > Duration::from_secs(10) => {
                panic!("cannot connect to {TOOL}: {e}")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    };

    receive_through_tool(&caller, udp_port);
    assert!(caller.stats().unwrap().pkt_recv_total >= 50);
}

/// Sends numbered datagrams to the tool's UDP input and checks 50 of them come out of
/// `socket` intact and in order.
fn receive_through_tool(socket: &SrtSocket, udp_port: u16) {
    // srt-live-transmit drops what arrives before its SRT side is up: keep sending
    // numbered datagrams until enough came through.
    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let udp = UdpSocket::bind(LOCALHOST).unwrap();
            let mut index = 0u32;
            while !stop.load(Ordering::Relaxed) && index < 100_000 {
                udp.send_to(&message(index), ("127.0.0.1", udp_port))
                    .unwrap();
                index += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let mut buf = [0u8; 1500];
    let mut last = None;
    let mut received = 0;
    let deadline = Instant::now() + Duration::from_secs(15);
    while received < 50 {
        assert!(
            Instant::now() < deadline,
            "only {received} messages through {TOOL}"
        );
        let Some(n) = socket.recv(&mut buf, Duration::from_millis(500)).unwrap() else {
            continue;
        };
        assert_eq!(n, 1316);
        let index = u32::from_be_bytes(buf[..4].try_into().unwrap());
        assert_eq!(&buf[..n], message(index).as_slice());
        if let Some(last) = last {
            assert!(index > last, "out of order: {index} after {last}");
        }
        last = Some(index);
        received += 1;
    }
    stop.store(true, Ordering::Relaxed);
    sender.join().unwrap();
}
