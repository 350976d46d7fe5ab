//! The hub's behaviour: one publisher, fast start at the last keyframe, whole-GOP drops
//! for slow readers, release on drop, and what it learns and announces.

use crate::*;
use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use strom_media::frame::{Codec, Frame, SourceForm, Track};

fn key(stream: &str) -> StreamKey {
    StreamKey::new("live", stream)
}

pub(crate) fn publisher(session_id: u64) -> PublisherInfo {
    PublisherInfo {
        session_id,
        ip: "127.0.0.1".into(),
        publish_time: 0,
        query: String::new(),
        source_url: None,
        relayed_from: None,
        protocol: "RTMP",
        admitted_id: None,
    }
}

pub(crate) fn video(ms: i64, keyframe: bool) -> Frame {
    Frame {
        track: Track::Video,
        codec: Codec::H264,
        dts: ms * 90,
        pts: ms * 90,
        keyframe,
        config: false,
        control: false,
        payload: Bytes::from_static(&[0, 0, 0, 1, 9]),
        form: SourceForm::Neutral,
    }
}

pub(crate) fn video_config() -> Frame {
    Frame {
        config: true,
        keyframe: true,
        ..video(0, true)
    }
}

fn ms(frame: &SharedFrame) -> i64 {
    frame.frame.dts / 90
}

#[test]
fn a_second_publisher_is_refused_until_the_first_releases() {
    let hub = Hub::default();
    let first = hub.claim(&key("a"), publisher(1)).unwrap();
    assert_eq!(
        hub.claim(&key("a"), publisher(2)).err(),
        Some(AlreadyPublishing)
    );
    assert!(first.release());
    assert!(!first.release(), "released once");
    assert!(hub.claim(&key("a"), publisher(2)).is_ok());
}

#[test]
fn a_dropped_publisher_releases_its_stream_and_is_announced() {
    let announced = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&announced);
    let hub = Hub::with_announcer(Arc::new(move |key: &StreamKey, live| {
        log.lock().unwrap().push((key.to_string(), live));
    }));
    let task = std::thread::spawn({
        let hub = hub.clone();
        move || {
            let _publishing = hub.claim(&key("crash"), publisher(1)).unwrap();
            panic!("publisher task dies while publishing");
        }
    });
    assert!(task.join().is_err());
    assert!(hub.live().is_empty(), "nothing left claimed by a dead task");
    assert_eq!(hub.count(), 0);
    assert!(hub.claim(&key("crash"), publisher(2)).is_ok());
    assert_eq!(
        announced.lock().unwrap()[..3],
        [
            ("live/crash".to_owned(), true),
            ("live/crash".to_owned(), false),
            ("live/crash".to_owned(), true)
        ]
    );
}

#[test]
fn streams_without_publisher_and_readers_leave_the_hub_and_readers_see_it() {
    let hub = Hub::default();
    for i in 0..100 {
        let key = key(&format!("s{i}"));
        let publishing = hub.claim(&key, publisher(1)).unwrap();
        let _ = hub.subscribe(&key, 7);
        let mut live = hub.watch_live(&key).unwrap();
        assert!(*live.borrow_and_update());
        drop(publishing);
        assert!(live.has_changed().unwrap());
        assert!(
            !*live.borrow_and_update(),
            "readers learn the publisher left"
        );
        assert_eq!(hub.count(), 1, "a reader keeps the stream");
        hub.leave(&key, 7);
        assert_eq!(hub.count(), 0, "nothing left behind for {key}");
    }
}

#[test]
fn a_new_reader_starts_at_the_last_keyframe() {
    let hub = Hub::default();
    let publishing = hub.claim(&key("a"), publisher(1)).unwrap();
    publishing.publish(video_config());
    publishing.publish(video(0, true));
    publishing.publish(video(33, false));
    publishing.publish(video(66, true));
    publishing.publish(video(99, false));
    let (mut rx, _) = hub.subscribe(&key("a"), 7);
    assert!(rx.try_recv().unwrap().frame.config);
    let second = rx.try_recv().unwrap();
    assert!(second.frame.keyframe);
    assert_eq!(ms(&second), 66);
    assert_eq!(ms(&rx.try_recv().unwrap()), 99);
    assert!(rx.try_recv().is_err());
}

/// Log lines written while the test runs (this thread only).
#[derive(Clone, Default)]
struct CapturedLog(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for CapturedLog {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_slow_reader_drops_whole_gops_counts_them_and_resumes_at_a_keyframe() {
    let log = CapturedLog::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);
    let hub = Hub::default();
    let publishing = hub.claim(&key("a"), publisher(1)).unwrap();
    publishing.publish(video_config());
    let (mut rx, dropped) = hub.subscribe(&key("a"), 1);
    let mut at = 0;
    for i in 0..(READER_QUEUE_FRAMES + 50) {
        at += 1;
        publishing.publish(video(at, i % 100 == 0));
    }
    let lost = dropped.load(Ordering::Relaxed);
    assert!(lost > 0);
    assert_eq!(
        publishing.stream().reader_drops(),
        [(1, lost)],
        "the stream reports each reader's drops"
    );
    let mut last = 0;
    while let Ok(frame) = rx.try_recv() {
        assert!(ms(&frame) >= last, "whole frames in order");
        last = ms(&frame);
    }
    publishing.publish(video(at + 1, false));
    assert!(rx.try_recv().is_err(), "still dropping until a keyframe");
    publishing.publish(video(at + 2, true));
    assert!(rx.try_recv().unwrap().frame.config, "configuration again");
    let resumed = rx.try_recv().unwrap();
    assert!(resumed.frame.keyframe);
    assert_eq!(ms(&resumed), at + 2);
    let log = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    assert!(
        log.contains("reader too slow")
            && log.contains("stream=live/a")
            && log.contains("reader=1"),
        "{log}"
    );
    assert!(log.contains("reader caught up at a keyframe"), "{log}");
}

#[test]
fn codecs_are_learned_from_configuration_frames_and_announced_once() {
    let hub = Hub::default();
    let mut events = hub.events().listen();
    let publishing = hub.claim(&key("a"), publisher(1)).unwrap();
    let asc = Frame {
        track: Track::Audio,
        codec: Codec::Aac,
        config: true,
        keyframe: false,
        payload: Bytes::from_static(&[0x12, 0x10]),
        ..video(0, false)
    };
    publishing.publish(asc.clone());
    publishing.publish(asc);
    assert_eq!(publishing.stream().codecs().acodec, "mp4a.40.2");
    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        seen.push(event);
    }
    assert_eq!(
        seen,
        [
            HubEvent::Published(key("a")),
            HubEvent::TracksKnown(key("a"))
        ]
    );
}

#[test]
fn frames_carry_the_publishers_generation_and_a_new_publisher_starts_clean() {
    let hub = Hub::default();
    let first = hub.claim(&key("a"), publisher(1)).unwrap();
    first.publish(video_config());
    first.publish(video(0, true));
    drop(first);
    let (mut rx, _) = hub.subscribe(&key("a"), 9);
    assert!(rx.try_recv().is_err(), "no GOP of a publisher that left");
    let second = hub.claim(&key("a"), publisher(2)).unwrap();
    second.publish(video(40, true));
    let frame = rx.try_recv().unwrap();
    assert_eq!(frame.generation, 2);
    assert_eq!(ms(&frame), 40);
}

/// The delivered signal changes once per publish, after the frame is in every reader's
/// queue: a reader that writes for many others finds it there when it wakes.
#[test]
fn the_delivered_signal_follows_each_publish_after_the_readers_got_it() {
    let hub = Hub::default();
    assert!(hub.watch_delivered(&key("d")).is_none(), "no stream yet");
    let (mut frames, _) = hub.subscribe(&key("d"), 1);
    let mut delivered = hub.watch_delivered(&key("d")).unwrap();
    assert!(!delivered.has_changed().unwrap());
    let publishing = hub.claim(&key("d"), publisher(1)).unwrap();
    assert!(!delivered.has_changed().unwrap(), "a claim is not a frame");
    publishing.publish(video(0, true));
    assert!(delivered.has_changed().unwrap());
    delivered.borrow_and_update();
    assert_eq!(ms(&frames.try_recv().unwrap()), 0);
    publishing.publish(video(40, false));
    publishing.publish(video(80, false));
    assert!(delivered.has_changed().unwrap());
    assert_eq!(*delivered.borrow_and_update(), 3);
    assert_eq!(ms(&frames.try_recv().unwrap()), 40);
    assert_eq!(ms(&frames.try_recv().unwrap()), 80);
}

#[test]
fn a_reader_a_publish_dropped_still_ends_the_demand_when_it_leaves() {
    let hub = Hub::default();
    let key = key("closed");
    let mut events = hub.events().listen();
    let publishing = hub.claim(&key, publisher(1)).unwrap();
    let reader = hub.own_reader(&key, Queue, 7);
    let Reader { frames, place, .. } = reader;
    // The reader's queue closes first (its task ended); the next publish drops it from
    // the stream without a word.
    drop(frames);
    publishing.publish(video(0, true));
    assert_eq!(hub.reader_count(&key), 0);
    while events.try_recv().is_ok() {}
    drop(place);
    let mut ended = false;
    while let Ok(event) = events.try_recv() {
        ended |= event == HubEvent::NoDemand(key.clone());
    }
    assert!(ended, "its leave says the demand ended");
}

#[test]
fn a_stream_read_only_by_cursors_stays_in_the_hub_when_a_queue_reader_leaves() {
    let hub = Hub::default();
    let key = key("fanout");
    let cursor = hub.own_reader(&key, Fanout, 1);
    let queue = hub.own_reader(&key, Queue, 2);
    let before = hub.get(&key).unwrap();
    drop(queue);
    let after = hub.get(&key).expect("the cursor's stream stays");
    assert!(
        Arc::ptr_eq(&before, &after),
        "the same stream, not a new one"
    );
    drop(cursor);
    assert!(hub.get(&key).is_none());
}
