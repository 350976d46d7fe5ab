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

/// An avcC record (High profile, level 3.1) with one SPS and one PPS.
const AVCC: [u8; 19] = [
    0x01, 0x64, 0x00, 0x1f, 0xff, 0xe1, 0x00, 0x04, 0x67, 0x64, 0x00, 0x1f, 0x01, 0x00, 0x04, 0x68,
    0xee, 0x3c, 0x80,
];

/// A hub served on a real bus socket in `dir`, as another worker process serves it.
fn another_worker(dir: &std::path::Path) -> (Hub, std::path::PathBuf, CancellationToken) {
    let bus_path = dir.join("ingest.sock");
    let hub = Hub::default();
    let stop = CancellationToken::new();
    tokio::spawn(producer::serve(
        strom_worker_runtime::bus::bind(&bus_path).unwrap(),
        hub.clone(),
        Arc::new(SessionIds::new(9)),
        stop.clone(),
    ));
    (hub, bus_path, stop)
}

/// The producer-side publisher of the relayed stream.
fn publisher(session_id: u64) -> PublisherInfo {
    PublisherInfo {
        session_id,
        ip: "192.0.2.7".into(),
        publish_time: 0,
        query: String::new(),
        source_url: None,
        relayed_from: None,
        protocol: "RTMP",
        admitted_id: None,
    }
}

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
    let (producer_hub, bus_path, stop) = another_worker(dir.path());
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

    let publishing = producer_hub.own_publisher(&key, publisher(5)).unwrap();
    let mut metadata = StreamMetadata::new();
    metadata.video_width = Some(320);
    metadata.video_height = Some(240);
    let sent = vec![
        Media::Metadata(metadata.clone()),
        Media::Video(0, avc(true, 0, 0, &AVCC)),
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

/// A re-publishing rule that matches a stream produced by another worker relays it in
/// without any player here, and pushes it to the destination (a second RTMP server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_produced_by_another_worker_is_republished() {
    use strom_ipc::rules::{AuthSchema, RepublishRule, RuleOwner, Rules};
    let destination = TestServer::start().await;
    let mut rules = Rules::default();
    rules.republish.push(RepublishRule {
        id: "out".into(),
        owner: RuleOwner::Api,
        src_app: "live".into(),
        src_stream: "remote".into(),
        dest_addr: destination.addr.ip().to_string(),
        dest_port: destination.addr.port(),
        dest_app: "edge".into(),
        dest_stream: "copy".into(),
        dest_app_params: String::new(),
        dest_stream_params: String::new(),
        auth_schema: AuthSchema::None,
        dest_login: String::new(),
        dest_password: String::new(),
        keep_src_stream_params: false,
        ssl: false,
    });
    let server = TestServer::with_rules(rules).await;
    let dir = tempfile::tempdir().unwrap();
    let (producer_hub, bus_path, stop) = another_worker(dir.path());
    let key = StreamKey::new("live", "remote");
    server
        .worker
        .handle(WorkerRequest::StreamRegistry(vec![StreamLocation {
            app: "live".into(),
            stream: "remote".into(),
            producer: WorkerKind::Ingest,
            bus_path,
        }]))
        .await;
    within("the relay subscribing without a player", WAIT, async {
        while producer_hub.reader_count(&key) == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
    let publishing = producer_hub.own_publisher(&key, publisher(6)).unwrap();
    let copy = StreamKey::new("edge", "copy");
    within("the push live at the destination", WAIT, async {
        let mut ms = 0u32;
        loop {
            for body in [
                avc(true, 0, 0, &AVCC),
                avc(true, 1, 0, &[0, 0, 0, 2, 0x65, 0x88]),
            ] {
                publishing.publish(flv_adapter::video_frame(&body, i64::from(ms) * 90).unwrap());
            }
            ms += 40;
            if destination
                .shared
                .streams
                .live()
                .iter()
                .any(|s| s.key == copy)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
    })
    .await;
    stop.cancel();
}
