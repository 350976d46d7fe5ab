//! Two processes, two hubs, one bus link: frames published into a hub in a producer
//! process are read from the hub of this (subscriber) process with the same codec,
//! times, flags, payload bytes and source form.
//!
//! The test binary plays both parts: run normally it starts itself again as the
//! producer (selected by an environment variable) and subscribes to it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use strom_media::flv_adapter;
use strom_media::frame::{Codec, Frame, SourceForm, Track};
use strom_stream::bus::{producer, subscriber};
use strom_stream::{Hub, PublisherInfo, StreamKey};
use strom_worker_runtime::SessionIds;
use tokio_util::sync::CancellationToken;

const PRODUCER_SOCKET: &str = "STROM_TEST_BUS_PRODUCER_SOCKET";
const TEST_NAME: &str = "frames_cross_processes_over_the_bus";

fn key() -> StreamKey {
    StreamKey::new("live", "linked")
}

fn neutral(
    track: Track,
    codec: Codec,
    dts: i64,
    pts: i64,
    keyframe: bool,
    payload: Vec<u8>,
) -> Frame {
    Frame {
        track,
        codec,
        dts,
        pts,
        keyframe,
        config: false,
        control: false,
        payload: Bytes::from(payload),
        form: SourceForm::Neutral,
    }
}

/// What the producer publishes: configuration, video with reordering across a 2^33
/// boundary, AAC, an end-of-sequence control frame, SCTE-35, and FLV-parsed frames
/// whose source form must survive the trip.
fn published() -> Vec<Frame> {
    let base = (1i64 << 33) - 9000;
    let mut frames = vec![
        Frame {
            config: true,
            ..neutral(
                Track::Video,
                Codec::H264,
                base,
                base,
                true,
                vec![
                    1, 0x64, 0, 0x1f, 0xff, 0xe1, 0, 4, 0x67, 0x64, 0, 0x1f, 1, 0, 4, 0x68, 0xee,
                    0x3c, 0x80,
                ],
            )
        },
        Frame {
            config: true,
            ..neutral(
                Track::Audio,
                Codec::Aac,
                base,
                base,
                false,
                vec![0x12, 0x10],
            )
        },
    ];
    for i in 0..60i64 {
        let dts = base + i * 3000;
        let payload: Vec<u8> = (0..(200 + i as usize * 37))
            .map(|b| (b as i64 * 7 + i) as u8)
            .collect();
        frames.push(neutral(
            Track::Video,
            Codec::H264,
            dts,
            dts + 6000,
            i % 20 == 0,
            payload,
        ));
        frames.push(neutral(
            Track::Audio,
            Codec::Aac,
            dts + 100,
            dts + 100,
            false,
            vec![0x21, i as u8],
        ));
    }
    frames.push(neutral(
        Track::Data,
        Codec::Scte35,
        base + 200_000,
        base + 200_000,
        false,
        vec![0xfc, 0x30, 0x11],
    ));
    frames.push(Frame {
        control: true,
        ..neutral(
            Track::Video,
            Codec::H264,
            base + 200_001,
            base + 200_001,
            false,
            Vec::new(),
        )
    });
    let flv_key = Bytes::from_static(&[0x17, 0x01, 0x00, 0x00, 0x28, 0, 0, 0, 2, 0x65, 0x88]);
    let mut from_flv = flv_adapter::video_frame(&flv_key, base + 210_000).unwrap();
    from_flv.keyframe = true;
    frames.push(from_flv);
    let flv_audio = Bytes::from_static(&[0xaf, 0x01, 0xde, 0xad]);
    frames.push(flv_adapter::audio_frame(&flv_audio, base + 210_100).unwrap());
    frames
}

/// The producer process: serves its hub on the bus and publishes once subscribed.
async fn produce(socket: &str) {
    let hub = Hub::default();
    let listener = strom_worker_runtime::bus::bind(std::path::Path::new(socket)).unwrap();
    let shutdown = CancellationToken::new();
    tokio::spawn(producer::serve(
        listener,
        hub.clone(),
        Arc::new(SessionIds::new(1)),
        shutdown.clone(),
    ));
    while hub.reader_count(&key()) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let publishing = hub
        .own_publisher(
            &key(),
            PublisherInfo {
                session_id: 77,
                ip: "192.0.2.1".into(),
                publish_time: 0,
                query: String::new(),
                source_url: None,
                relayed_from: None,
                protocol: "RTMP",
                admitted_id: None,
            },
        )
        .unwrap();
    for frame in published() {
        publishing.publish(frame);
    }
    // Stay until the subscriber process has read everything and ends this one.
    tokio::time::sleep(Duration::from_secs(60)).await;
}

#[test]
fn frames_cross_processes_over_the_bus() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    if let Ok(socket) = std::env::var(PRODUCER_SOCKET) {
        runtime.block_on(produce(&socket));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("producer.sock");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST_NAME, "--nocapture"])
        .env(PRODUCER_SOCKET, &socket)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let received = runtime.block_on(async {
        let hub = Hub::default();
        let mut frames = hub.own_reader(&key(), strom_stream::Queue, 1);
        let stop = CancellationToken::new();
        let relay = subscriber::Relay {
            key: key(),
            bus_path: socket.clone(),
            producer: "test-producer".into(),
        };
        tokio::spawn(subscriber::feed(
            hub.clone(),
            relay,
            Arc::new(SessionIds::new(2)),
            stop.clone(),
        ));
        let mut received = Vec::new();
        let wanted = published().len();
        while received.len() < wanted {
            let frame = tokio::time::timeout(Duration::from_secs(20), frames.frames.recv())
                .await
                .expect("frames from the producer process")
                .expect("reader queue open");
            received.push(frame);
        }
        let relayed = hub.live();
        assert_eq!(relayed.len(), 1);
        assert_eq!(
            relayed[0].publisher().and_then(|p| p.relayed_from),
            Some("test-producer".to_owned())
        );
        assert_eq!(
            relayed[0].codecs().vcodec,
            "avc1.64001f",
            "learned from the relayed config"
        );
        stop.cancel();
        received
    });
    let _ = child.kill();
    let _ = child.wait();
    let generation = received[0].generation;
    for (got, sent) in received.iter().zip(published()) {
        assert_eq!(got.frame, sent, "frame differs after the bus");
        assert_eq!(got.generation, generation, "one publisher, one generation");
    }
    let last = &received[received.len() - 2].frame;
    assert!(matches!(last.form, SourceForm::Flv(_)));
    assert_eq!(
        flv_adapter::to_body(last).unwrap().as_ref(),
        &[0x17, 0x01, 0x00, 0x00, 0x28, 0, 0, 0, 2, 0x65, 0x88],
        "FLV bytes rebuilt exactly on the other side"
    );
}
