//! Fan-out tests: real connections on loopback (see `component_tests`), several players
//! in several fan-out groups of one stream, with and without `play_coalesce_ms`.

use crate::component_tests::{Media, TestClient, TestServer, Track, WAIT, within};
use strom_ipc::rules::Rules;

const FRAMES: u32 = 150;

/// Publishes `FRAMES` numbered frames to `live/fan` with `players` players in groups of
/// two, and checks that every player gets the header and then every frame, in order.
async fn every_player_gets_every_frame(rules: Rules, players: usize) {
    let server = TestServer::with_rules(rules).await;
    server.shared.fanouts.set_group_members(2);
    let mut clients = Vec::new();
    for _ in 0..players {
        clients.push(TestClient::player(server.addr, "fan").await);
    }
    server.wait_for_players("fan", players).await;
    let key = TestServer::key("fan");
    assert_eq!(server.shared.fanouts.group_count(&key), players.div_ceil(2));

    let track = Track::Video;
    let mut publisher = TestClient::publisher(server.addr, "fan").await;
    publisher.send_media(&track.header()).await;
    let readers: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            tokio::spawn(async move {
                let mut received = Vec::new();
                while received.len() < FRAMES as usize + 1 {
                    received.push(client.next_media().await);
                }
                (client, received)
            })
        })
        .collect();
    for index in 0..FRAMES {
        publisher.send_media(&track.frame(index)).await;
        // A little pacing, as a live publisher's: the players never fall a queue behind.
        if index % 10 == 9 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }
    let mut kept = Vec::new();
    for reader in readers {
        let (client, received) = within("a player receiving every frame", WAIT, reader)
            .await
            .expect("player task");
        assert_eq!(received[0], track.header());
        let numbers: Vec<Option<u32>> = received[1..].iter().map(|m| track.number(m)).collect();
        let expected: Vec<Option<u32>> = (0..FRAMES).map(Some).collect();
        assert_eq!(
            numbers, expected,
            "frames missing, repeated or out of order"
        );
        kept.push(client);
    }
    assert!(
        server
            .player_drops("fan")
            .iter()
            .all(|(_, drops)| *drops == 0),
        "{:?}",
        server.player_drops("fan")
    );

    // Players leaving empty their groups; the last one leaving ends the stream's fan-out.
    drop(kept);
    within("the fan-out groups ending", WAIT, async {
        while server.shared.fanouts.group_count(&key) > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    drop(publisher);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_in_several_groups_get_every_frame_in_order() {
    every_player_gets_every_frame(Rules::default(), 5).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_play_coalesce_ms_every_frame_still_arrives_in_order() {
    let mut rules = Rules::default();
    rules.rtmp.limits.play_coalesce_ms = 40;
    every_player_gets_every_frame(rules, 3).await;
}

/// A player that joins a stream nobody publishes yet is in a group, and gets the
/// stream from its start once the publisher comes (no frame arrives to wake the group
/// for it before that).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_waiting_for_the_publisher_gets_the_first_frames() {
    let server = TestServer::start().await;
    let mut player = TestClient::player(server.addr, "early").await;
    server.wait_for_players("early", 1).await;
    let track = Track::Video;
    let mut publisher = TestClient::publisher(server.addr, "early").await;
    publisher.send_media(&track.header()).await;
    publisher.send_media(&track.frame(0)).await;
    let first: Vec<Media> = within("the first frames", WAIT, player.media_messages(2)).await;
    assert_eq!(first, vec![track.header(), track.frame(0)]);
}
