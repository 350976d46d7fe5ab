//! A stream whose producer is another worker plays over RTMP here: a hub served on a
//! real bus socket (as another worker process serves it) is announced in the registry,
//! an RTMP player asks for the stream, and gets the producer's FLV bytes exactly.

use crate::component_tests::{Media, TestClient, TestServer, WAIT, within};
use crate::publish_frames::metadata_frame;
use bytes::Bytes;
use rml_rtmp::sessions::StreamMetadata;
use std::sync::Arc;
use std::time::Duration;
use strom_ipc::WorkerKind;
use strom_ipc::bus::StreamLocation;
use strom_ipc::messages::{WorkerEvent, WorkerRequest};
use strom_media::flv_adapter;
use strom_stream::bus::producer;
use strom_stream::{Hub, PublisherInfo, StreamKey};
use strom_worker_runtime::{SessionIds, WorkerService};
use tokio_util::sync::CancellationToken;

fn avc(keyframe: bool, packet_type: u8, composition: u8, body: &[u8]) -> Bytes {
    let mut out = vec![
        if keyframe { 0x17 } else { 0x27 },
        packet_type,
        0,
        0,
        composition,
    ];
    out.extend_from_slice(body);
    Bytes::from(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_produced_by_another_worker_plays_byte_identical() {
    let mut server = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let bus_path = dir.path().join("ingest.sock");
    let producer_hub = Hub::default();
    let stop = CancellationToken::new();
    tokio::spawn(producer::serve(
        strom_worker_runtime::bus::bind(&bus_path).unwrap(),
        producer_hub.clone(),
        Arc::new(SessionIds::new(9)),
        stop.clone(),
    ));
    let key = StreamKey::new("live", "remote");

    // The player asks first; the registry then says another worker produces the stream.
    let mut player = TestClient::player(server.addr, "remote").await;
    server.wait_for_players("remote", 1).await;
    let registry = vec![StreamLocation {
        app: "live".into(),
        stream: "remote".into(),
        producer: WorkerKind::Ingest,
        bus_path: bus_path.clone(),
    }];
    server
        .worker
        .handle(WorkerRequest::StreamRegistry(registry))
        .await;
    within("the relay subscribing to the producer", WAIT, async {
        while producer_hub.reader_count(&key) == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;

    let publishing = producer_hub
        .claim(
            &key,
            PublisherInfo {
                session_id: 5,
                ip: "192.0.2.7".into(),
                publish_time: 0,
                query: String::new(),
                source_url: None,
                relayed_from: None,
            },
        )
        .unwrap();
    let mut metadata = StreamMetadata::new();
    metadata.video_width = Some(320);
    metadata.video_height = Some(240);
    let avcc = [
        0x01, 0x64, 0x00, 0x1f, 0xff, 0xe1, 0x00, 0x04, 0x67, 0x64, 0x00, 0x1f, 0x01, 0x00, 0x04,
        0x68, 0xee, 0x3c, 0x80,
    ];
    let sent = vec![
        Media::Metadata(metadata.clone()),
        Media::Video(0, avc(true, 0, 0, &avcc)),
        Media::Audio(0, Bytes::from_static(&[0xaf, 0x00, 0x12, 0x10])),
        Media::Video(0, avc(true, 1, 40, &[0, 0, 0, 2, 0x65, 0x88])),
        Media::Audio(21, Bytes::from_static(&[0xaf, 0x01, 0x21, 0x10, 0x04])),
        Media::Video(40, avc(false, 1, 0, &[0, 0, 0, 2, 0x41, 0x9a])),
    ];
    for media in &sent {
        match media {
            Media::Metadata(metadata) => publishing.publish(metadata_frame(metadata)),
            Media::Video(ms, body) => {
                publishing.publish(flv_adapter::video_frame(body, i64::from(*ms) * 90).unwrap())
            }
            Media::Audio(ms, body) => {
                publishing.publish(flv_adapter::audio_frame(body, i64::from(*ms) * 90).unwrap())
            }
        }
    }
    assert_eq!(
        within("relayed media", WAIT, player.media_messages(sent.len())).await,
        sent,
        "the RTMP player gets the producer's bytes"
    );

    // The producer reports the stream; this worker neither lists nor announces it.
    assert!(server.live_streams().await.is_empty());
    let published_here = server
        .events()
        .into_iter()
        .any(|event| matches!(event, WorkerEvent::StreamPublished { .. }));
    assert!(!published_here, "a relayed stream is not announced again");

    // The last player leaving stops the relay: the producer loses its bus reader.
    drop(player);
    within("the relay stopping", WAIT, async {
        while producer_hub.reader_count(&key) > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    stop.cancel();
}
