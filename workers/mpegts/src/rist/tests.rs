//! Tests of the librist wrapper: the C layout check (sizes, offsets and constants of
//! `ffi.rs` against `<librist/librist.h>`), options and URLs, and real RIST flows on
//! 127.0.0.1: a [`RistSender`] into a listening [`RistReceiver`] (bytes back intact,
//! stats JSON, peer callback, log callback), with an encryption secret, a calling
//! receiver against a listening sender, and a port that is already taken.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::ffi::{self, rist_data_block, rist_logging_settings, rist_stats};
use super::*;
use std::collections::HashMap;
use std::ffi::CString;
use std::mem::{offset_of, size_of};
use std::net::UdpSocket;
use std::time::{Duration, Instant};

use crate::layout_table::LayoutEntry;

unsafe extern "C" {
    /// csrc/rist_layout.c: a static table of (name, value) and its length.
    fn strom_rist_layout(count: *mut usize) -> *const LayoutEntry;
}

fn c_layout() -> HashMap<String, i64> {
    crate::layout_table::read(strom_rist_layout)
}

macro_rules! offsets {
    ($t:ident: $($field:ident),* $(,)?) => {
        vec![$((
            concat!(stringify!($t), ".", stringify!($field)),
            offset_of!($t, $field) as i64,
        )),*]
    };
}

#[test]
fn rist_layout_matches_the_c_header() {
    let mut rust: Vec<(&str, i64)> = vec![
        (
            "sizeof rist_data_block",
            size_of::<rist_data_block>() as i64,
        ),
        (
            "sizeof rist_logging_settings",
            size_of::<rist_logging_settings>() as i64,
        ),
        ("sizeof enum rist_profile", size_of::<libc::c_int>() as i64),
        (
            "sizeof enum rist_log_level",
            size_of::<libc::c_int>() as i64,
        ),
        (
            "sizeof enum rist_stats_type",
            size_of::<libc::c_int>() as i64,
        ),
        (
            "rist_data_block.ref",
            offset_of!(rist_data_block, r#ref) as i64,
        ),
    ];
    rust.extend(
        offsets!(rist_data_block: payload, payload_len, ts_ntp, virt_src_port,
        virt_dst_port, peer, flow_id, seq, flags),
    );
    rust.extend(offsets!(rist_stats: json_size, stats_json, version, stats_type));
    rust.extend(
        offsets!(rist_logging_settings: log_level, log_cb, log_cb_arg, log_socket,
        log_stream),
    );
    for (name, value) in [
        ("RIST_PROFILE_SIMPLE", ffi::RIST_PROFILE_SIMPLE),
        ("RIST_PROFILE_MAIN", ffi::RIST_PROFILE_MAIN),
        ("RIST_LOG_DISABLE", ffi::RIST_LOG_DISABLE),
        ("RIST_LOG_ERROR", ffi::RIST_LOG_ERROR),
        ("RIST_LOG_WARN", ffi::RIST_LOG_WARN),
        ("RIST_LOG_NOTICE", ffi::RIST_LOG_NOTICE),
        ("RIST_LOG_INFO", ffi::RIST_LOG_INFO),
        ("RIST_LOG_DEBUG", ffi::RIST_LOG_DEBUG),
        ("RIST_STATS_SENDER_PEER", ffi::RIST_STATS_SENDER_PEER),
        ("RIST_STATS_RECEIVER_FLOW", ffi::RIST_STATS_RECEIVER_FLOW),
    ] {
        rust.push((name, i64::from(value)));
    }
    let c = c_layout();
    assert_eq!(c.len(), rust.len(), "every C entry is compared: {c:?}");
    let mismatches: Vec<_> = rust
        .iter()
        .filter(|(name, value)| c.get(*name) != Some(value))
        .map(|(name, value)| (name, value, c.get(*name)))
        .collect();
    assert!(mismatches.is_empty(), "layout mismatches: {mismatches:#?}");
}

fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn options_come_from_parameters_and_make_urls() {
    let defaults = RistOptions::from_parameters(&[]).unwrap();
    assert_eq!(defaults.profile, RistProfile::Main);
    assert_eq!(defaults.log_level, ffi::RIST_LOG_WARN);
    assert_eq!(defaults.stats_interval, None);
    assert_eq!(defaults.url("0.0.0.0", 9000, true), "rist://@0.0.0.0:9000");
    assert_eq!(defaults.url("::", 9000, true), "rist://@[::]:9000");
    assert_eq!(
        defaults.url("src.example.com", 9000, false),
        "rist://src.example.com:9000"
    );

    let options = RistOptions::from_parameters(&params(&[
        ("Profile", "simple"),
        ("buffer", "300"),
        ("secret", "s3cret-pass"),
        ("aes-type", "256"),
        ("rist-stats-interval", "2"),
        ("rist-logging", "debug"),
        ("unknown", "ignored"),
    ]))
    .unwrap();
    assert_eq!(options.profile, RistProfile::Simple);
    assert_eq!(options.stats_interval, Some(Duration::from_secs(2)));
    assert_eq!(options.stats_interval_ms(), Some(2000));
    assert_eq!(options.log_level, ffi::RIST_LOG_DEBUG);
    assert_eq!(
        options.url("127.0.0.1", 9000, false),
        "rist://127.0.0.1:9000?buffer=300&secret=s3cret-pass&aes-type=256"
    );
    let secret_only = RistOptions::from_parameters(&params(&[("secret", "abc")])).unwrap();
    assert_eq!(
        secret_only.url("127.0.0.1", 1, true),
        "rist://@127.0.0.1:1?secret=abc&aes-type=128"
    );

    for bad in [
        ("profile", "advanced"),
        ("buffer", "-1"),
        ("buffer", "30001"),
        ("secret", "a&b"),
        ("secret", "has space"),
        ("aes-type", "192"),
        ("rist-stats-interval", "0"),
        ("rist-stats-interval", "x"),
        ("rist-logging", "loud"),
    ] {
        let err = RistOptions::from_parameters(&params(&[bad])).unwrap_err();
        assert!(err.to_string().contains(bad.0), "{bad:?}: {err}");
    }
    assert!(RistOptions::from_parameters(&params(&[("secret", &"x".repeat(128))])).is_err());
    assert!(RistOptions::from_parameters(&params(&[("aes-type", "128")])).is_err());
}

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn options(pairs: &[(&str, &str)]) -> RistOptions {
    RistOptions::from_parameters(&params(pairs)).unwrap()
}

/// A payload of 7 TS-sized packets numbered `n`.
fn payload(n: u32) -> Vec<u8> {
    let mut bytes = vec![0x47u8; 1316];
    bytes[1..5].copy_from_slice(&n.to_be_bytes());
    bytes
}

/// Sends numbered payloads through `sender` while reading `receiver`, until `wanted`
/// distinct payloads came back intact; returns the numbers received.
fn pump(sender: &RistSender, receiver: &RistReceiver, wanted: usize) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut received = Vec::new();
    let mut n = 0u32;
    while received.len() < wanted && Instant::now() < deadline {
        assert_eq!(sender.write(&payload(n)).unwrap(), 1316);
        n += 1;
        if let Some(block) = receiver.read(Duration::from_millis(5)).unwrap() {
            let bytes = block.payload();
            assert_eq!(bytes.len(), 1316);
            let number = u32::from_be_bytes(bytes[1..5].try_into().unwrap());
            assert_eq!(bytes, payload(number).as_slice(), "payload {number} intact");
            let _ = block.flow_id();
            received.push(number);
        }
    }
    while let Ok(Some(block)) = receiver.read(Duration::from_millis(50)) {
        received.push(u32::from_be_bytes(
            block.payload()[1..5].try_into().unwrap(),
        ));
    }
    received
}

#[test]
fn sender_to_listening_receiver_on_loopback_delivers_the_bytes_and_stats() {
    let port = free_udp_port();
    let common = [
        ("buffer", "200"),
        ("rist-stats-interval", "1"),
        ("rist-logging", "info"),
    ];
    let rx_options = options(&common);
    let receiver = RistReceiver::start(
        "test-rx",
        &rx_options.url("127.0.0.1", port, true),
        &rx_options,
    )
    .unwrap();
    let tx_options = options(&common);
    let sender = RistSender::start(
        "test-tx",
        &tx_options.url("127.0.0.1", port, false),
        &tx_options,
    )
    .unwrap();
    let received = pump(&sender, &receiver, 200);
    assert!(received.len() >= 200, "received {}", received.len());
    assert!(received.windows(2).all(|w| w[0] < w[1]), "in order");
    let peer = receiver
        .last_peer()
        .expect("the auth handler saw the sender");
    assert_eq!(peer.ip().to_string(), "127.0.0.1");

    // Stats come every second once set: receiver-stats with packets counted.
    let deadline = Instant::now() + Duration::from_secs(5);
    let (rx_stats, tx_stats) = (receiver.stats().unwrap(), sender.stats().unwrap());
    let mut json = None;
    while Instant::now() < deadline {
        let _ = sender.write(&payload(0));
        if let (Some(rx), Some(tx)) = (rx_stats.latest(), tx_stats.latest()) {
            json = Some((rx, tx));
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let (rx, tx) = json.expect("stats reported");
    let rx: serde_json::Value = serde_json::from_str(&rx).unwrap();
    let tx: serde_json::Value = serde_json::from_str(&tx).unwrap();
    assert!(rx["receiver-stats"].is_object(), "{rx}");
    assert!(tx["sender-stats"].is_object(), "{tx}");
}

#[test]
fn receivers_without_stats_interval_report_none() {
    let port = free_udp_port();
    let receiver = RistReceiver::start(
        "no-stats",
        &format!("rist://@127.0.0.1:{port}"),
        &options(&[]),
    )
    .unwrap();
    assert!(receiver.stats().is_none());
    assert!(receiver.read(Duration::from_millis(10)).unwrap().is_none());
    assert!(receiver.last_peer().is_none());
}

#[test]
fn an_encrypted_flow_with_the_same_secret_arrives() {
    let port = free_udp_port();
    let secured = options(&[
        ("buffer", "200"),
        ("secret", "0123456789abcdef"),
        ("aes-type", "256"),
    ]);
    let receiver =
        RistReceiver::start("enc-rx", &secured.url("127.0.0.1", port, true), &secured).unwrap();
    let sender =
        RistSender::start("enc-tx", &secured.url("127.0.0.1", port, false), &secured).unwrap();
    assert!(pump(&sender, &receiver, 50).len() >= 50);
}

#[test]
fn a_calling_receiver_reaches_a_listening_sender() {
    let port = free_udp_port();
    let opts = options(&[("buffer", "200")]);
    let sender = RistSender::start("listen-tx", &opts.url("127.0.0.1", port, true), &opts).unwrap();
    let receiver =
        RistReceiver::start("call-rx", &opts.url("127.0.0.1", port, false), &opts).unwrap();
    assert!(pump(&sender, &receiver, 50).len() >= 50);
}

#[test]
fn bad_urls_taken_ports_and_bad_payloads_fail_cleanly() {
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let opts = options(&[]);
    let err = RistReceiver::start("taken", &format!("rist://@127.0.0.1:{port}"), &opts)
        .err()
        .expect("the port is taken");
    assert!(matches!(err, RistError::Call { .. }), "{err}");
    // librist resolves most malformed URLs lazily; an empty one fails at once.
    assert!(RistReceiver::start("bad", "", &opts).is_err());
    assert!(RistReceiver::start("nul", "rist://@127.0.0.1:1\0", &opts).is_err());
    let sender = RistSender::start(
        "tx",
        &format!("rist://127.0.0.1:{}", free_udp_port()),
        &opts,
    )
    .unwrap();
    assert!(sender.write(&[]).is_err());
    assert!(sender.write(&vec![0u8; context_max() + 1]).is_err());
}

fn context_max() -> usize {
    super::context::MAX_PAYLOAD
}

#[test]
fn log_lines_of_every_level_reach_tracing() {
    startup();
    for level in [
        ffi::RIST_LOG_ERROR,
        ffi::RIST_LOG_WARN,
        ffi::RIST_LOG_INFO,
        ffi::RIST_LOG_DEBUG,
    ] {
        let line = CString::new(format!("line at {level}\n")).unwrap();
        // SAFETY: the callback takes any argument (unused) and a NUL-terminated line.
        let rc = unsafe { context::log_line(std::ptr::null_mut(), level, line.as_ptr()) };
        assert_eq!(rc, 0);
    }
    // SAFETY: a null message is ignored.
    assert_eq!(
        unsafe { context::log_line(std::ptr::null_mut(), 3, std::ptr::null()) },
        0
    );
}
