//! Edge rules on real sockets: an edge worker whose rule lists a dead origin first and a
//! live one second pulls the stream a player asks for from the live one, lists it with
//! its `source_url`, and drops the pull once the player left.

use crate::component_tests::{Media, TestClient, TestServer, WAIT, within};
use bytes::Bytes;
use std::time::Duration;
use strom_ipc::rules::{EdgeRule, Rules};

fn avc(keyframe: bool, packet_type: u8, body: &[u8]) -> Bytes {
    let mut out = vec![if keyframe { 0x17 } else { 0x27 }, packet_type, 0, 0, 0];
    out.extend_from_slice(body);
    Bytes::from(out)
}

/// An avcC record (High profile, level 3.1) with one SPS and one PPS.
const AVCC: [u8; 19] = [
    0x01, 0x64, 0x00, 0x1f, 0xff, 0xe1, 0x00, 0x04, 0x67, 0x64, 0x00, 0x1f, 0x01, 0x00, 0x04, 0x68,
    0xee, 0x3c, 0x80,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edge_pulls_on_demand_with_failover_and_lets_go() {
    let origin = TestServer::start().await;
    let dead = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap()
    };
    let edge = TestServer::with_rules(Rules {
        edges: vec![EdgeRule {
            apps: vec!["live".into()],
            origins: vec![format!("rtmp://{dead}"), format!("rtmp://{}", origin.addr)],
            idle_grace_secs: 0,
        }],
        ..Rules::default()
    })
    .await;
    let mut publisher = TestClient::publisher(origin.addr, "cam").await;
    let publishing = tokio_util::sync::CancellationToken::new();
    let stop = publishing.clone();
    tokio::spawn(async move {
        publisher
            .send_media(&Media::Video(0, avc(true, 0, &AVCC)))
            .await;
        let mut timestamp = 0;
        let mut tick = tokio::time::interval(Duration::from_millis(40));
        while !stop.is_cancelled() {
            tick.tick().await;
            timestamp += 40;
            let frame = avc(true, 1, &[0, 0, 0, 2, 0x65, 0x88]);
            publisher.send_media(&Media::Video(timestamp, frame)).await;
        }
    });

    // A player on the edge asks for a stream the edge has never heard of.
    let mut player = TestClient::player(edge.addr, "cam").await;
    let got = player.next_media().await;
    assert!(matches!(got, Media::Video(..)), "{got:?}");
    let live = edge.live_streams().await;
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(
        live[0].source_url.as_deref(),
        Some(format!("rtmp://{}/live/cam", origin.addr).as_str()),
        "pulled from the live origin after the dead one failed"
    );

    // The player leaves: with no grace the pull ends and the stream with it.
    drop(player);
    within("the edge letting go", WAIT, async {
        while !edge.live_streams().await.is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    within("the origin losing its puller", WAIT, async {
        while origin.shared.streams.reader_count(&TestServer::key("cam")) > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    publishing.cancel();
}
