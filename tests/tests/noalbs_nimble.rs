//! NOALBS's Nimble stream-server lookup against a live strom: two SRT feeds (ffmpeg
//! callers) on one listener input bound to `0.0.0.0`, found as NOALBS finds a feed.
//!
//! The lookup is written here from NOALBS's public documentation and its `nimble.rs`
//! configuration (`id`: "UDP listener ID (usually IP:Port)", `application`, `key`):
//! it reads `/manage/srt_receiver_stats` into strictly typed structs, takes the first
//! `SrtReceivers` entry whose `id` contains the configured listener id and whose state
//! is not `disconnected`, then the bitrate of `application`/`key` from
//! `/manage/rtmp_status` (`bandwidth`, a string of digits in bits/s). A feed it does not
//! find is Offline to NOALBS.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, publish_coded, wait_live};
use common::{Server, free_port, wait_for};
use serde::Deserialize;
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);

#[derive(Deserialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct NimbleSrtStats {
    srt_receivers: Vec<SrtReceiver>,
}

/// NOALBS's receiver entry; `stream` is strom's addition (what the feed carries).
#[derive(Deserialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
struct SrtReceiver {
    id: String,
    state: String,
    stream: String,
    stats: Stats,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
struct Stats {
    #[allow(dead_code)]
    time: u64,
    #[allow(dead_code)]
    window: Window,
    link: Link,
    recv: Recv,
}

#[derive(Deserialize, Debug, Clone)]
#[allow(dead_code)]
struct Window {
    flow: u64,
    congestion: u64,
    flight: u64,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct Link {
    rtt: f64,
    mbps_bandwidth: f64,
    mbps_max_bandwidth: u64,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct Recv {
    packets_received: u64,
    packets_lost: u64,
    packets_dropped: u64,
    packets_belated: u64,
    #[serde(rename = "NAKsSent")]
    naks_sent: u64,
    bytes_received: u64,
    bytes_lost: u64,
    bytes_dropped: u64,
    mbps_rate: f64,
}

#[derive(Deserialize, Debug)]
struct NimbleRtmpStats {
    app: String,
    streams: Vec<RtmpStream>,
}

#[derive(Deserialize, Debug, Clone)]
#[allow(dead_code)]
struct RtmpStream {
    vcodec: String,
    publish_time: String,
    bandwidth: String,
    protocol: String,
    resolution: String,
    strm: String,
}

/// NOALBS's configuration of one Nimble feed.
struct NoalbsNimble<'a> {
    id: &'a str,
    application: &'a str,
    key: &'a str,
}

/// What NOALBS shows for a feed it found: its SRT entry and the bitrate in kbit/s.
struct Online {
    srt: SrtReceiver,
    kbps: u32,
}

impl NoalbsNimble<'_> {
    /// NOALBS's `get_stats`: `None` is a feed shown Offline.
    fn lookup(&self, server: &Server) -> Option<Online> {
        let (status, body) = server.try_get("/manage/srt_receiver_stats")?;
        if status != 200 {
            return None;
        }
        let stats: NimbleSrtStats = serde_json::from_value(body).ok()?;
        let srt = stats
            .srt_receivers
            .into_iter()
            .find(|entry| entry.id.contains(self.id))?;
        if srt.state == "disconnected" {
            return None;
        }
        let (status, body) = server.try_get("/manage/rtmp_status")?;
        if status != 200 {
            return None;
        }
        let apps: Vec<NimbleRtmpStats> = serde_json::from_value(body).ok()?;
        let app = apps.into_iter().find(|a| a.app == self.application)?;
        let stream = app.streams.into_iter().find(|s| s.strm == self.key)?;
        let kbps = stream.bandwidth.parse::<u32>().ok()? / 1024;
        Some(Online { srt, kbps })
    }
}

fn caller(port: u16, stream: &str) -> Proc {
    let url = format!(
        "srt://127.0.0.1:{port}?pkt_size=1316&streamid=%23%21%3A%3Ar%3Dlive%2F{stream}%2Cm%3Dpublish"
    );
    publish_coded(&url, "mpegts", "libx264")
}

#[test]
fn noalbs_finds_each_srt_feed_online_by_listener_id_with_its_stream() {
    let port = free_port();
    let server = Server::start("");
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": 1, "protocols": ["HLS"]}},
 "Cameras": [{{"id": "feeds", "ip": "0.0.0.0", "port": {port}, "protocol": "srt", "receive_mode": "listen",
   "app": "live", "stream": "default", "parameters": [{{"name": "latency", "value": "120"}}]}}]}}"#,
        server.ports.rtmp
    ));
    let mut first = caller(port, "feed1");
    let mut second = caller(port, "feed2");
    for stream in ["feed1", "feed2"] {
        wait_live(&server, "live", stream, LIVE)
            .unwrap_or_else(|| panic!("{stream} not live; log:\n{}", server.log()));
    }

    // Both configured forms of the listener id: the full address and the bare port.
    let listener_id = format!("0.0.0.0:{port}");
    let bare_port = format!(":{port}");
    for id in [listener_id.as_str(), bare_port.as_str()] {
        let noalbs = NoalbsNimble {
            id,
            application: "live",
            key: "feed1",
        };
        let online = wait_for(LIVE, "NOALBS sees the feed online", || {
            noalbs.lookup(&server).filter(|online| online.kbps > 0)
        })
        .unwrap_or_else(|| {
            let (_, stats) = server.get("/manage/srt_receiver_stats");
            panic!("NOALBS shows the feed Offline; stats: {stats}")
        });
        assert_eq!(online.srt.id, listener_id);
        // NOALBS takes the first entry of the listener; it names its stream.
        assert!(
            ["live/feed1", "live/feed2"].contains(&online.srt.stream.as_str()),
            "{}",
            online.srt.stream
        );
        assert_eq!(online.srt.state, "connected");
        assert!(online.srt.stats.recv.packets_received > 0);
        assert!(online.srt.stats.link.rtt >= 0.0);
        assert!(online.srt.stats.recv.mbps_rate >= 0.0);
    }

    // Every entry says which stream it carries, so two callers of one listener are told
    // apart; each carries its caller's address too.
    let (_, body) = server.get("/manage/srt_receiver_stats");
    let entries = body["SrtReceivers"].as_array().unwrap();
    let mut streams: Vec<&str> = entries
        .iter()
        .map(|e| {
            assert_eq!(e["id"], listener_id, "{e}");
            assert!(e["peer"].as_str().unwrap().starts_with("127.0.0.1:"), "{e}");
            e["stream"].as_str().unwrap()
        })
        .collect();
    streams.sort_unstable();
    assert_eq!(streams, ["live/feed1", "live/feed2"], "{body}");

    // A feed that stops is Offline to NOALBS once its connection is gone.
    let _ = first.stop_and_stderr();
    wait_for(LIVE, "the stopped feed gone from the stats", || {
        let (_, body) = server.get("/manage/srt_receiver_stats");
        let entries = body["SrtReceivers"].as_array()?.clone();
        entries
            .iter()
            .all(|e| e["stream"] != "live/feed1")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("feed1 still listed; log:\n{}", server.log()));
    let _ = second.stop_and_stderr();
}
