//! Cursor readers over a stream's ring: the same start and frames as a queue reader,
//! whole-GOP drops for a cursor left behind, and a ring that holds only what its slowest
//! open cursor still needs.

use crate::tests::{publisher, video, video_config};
use crate::*;
use std::sync::Arc;

fn key() -> StreamKey {
    StreamKey::new("live", "ring")
}

/// Everything `cursor` has now, as (config, keyframe, ms).
fn drain(cursor: &mut Cursor) -> Vec<(bool, bool, i64)> {
    let mut frames = Vec::new();
    while cursor.take(7, |f: &Arc<SharedFrame>| {
        frames.push((f.frame.config, f.frame.keyframe, f.frame.dts / 90));
    }) > 0
    {}
    frames
}

#[test]
fn a_cursor_starts_at_the_last_keyframe_and_then_reads_every_frame_in_order() {
    let hub = Hub::default();
    let publishing = hub.claim(&key(), publisher(1)).unwrap();
    publishing.publish(video_config());
    publishing.publish(video(0, true));
    publishing.publish(video(33, false));
    publishing.publish(video(66, true));
    publishing.publish(video(99, false));
    let (mut cursor, dropped) = hub.subscribe_cursor(&key(), 7);
    assert_eq!(hub.reader_count(&key()), 1);
    assert_eq!(
        drain(&mut cursor),
        [(true, true, 0), (false, true, 66), (false, false, 99)]
    );
    for ms in (132..132 + 33 * 20).step_by(33) {
        publishing.publish(video(ms, ms % 330 == 0));
    }
    let read = drain(&mut cursor);
    let times: Vec<i64> = read.iter().map(|&(_, _, ms)| ms).collect();
    let expected: Vec<i64> = (132..132 + 33 * 20).step_by(33).collect();
    assert_eq!(times, expected, "every frame once, in order");
    assert!(drain(&mut cursor).is_empty(), "nothing twice");
    assert_eq!(dropped.load(std::sync::atomic::Ordering::Relaxed), 0);
}

#[test]
fn a_cursor_left_behind_loses_whole_gops_counts_them_and_resumes_with_configuration() {
    let hub = Hub::default();
    let publishing = hub.claim(&key(), publisher(1)).unwrap();
    publishing.publish(video_config());
    let (mut slow, dropped) = hub.subscribe_cursor(&key(), 1);
    let (mut fast, _) = hub.subscribe_cursor(&key(), 2);
    assert_eq!(drain(&mut slow), [(true, true, 0)]);
    let total = READER_QUEUE_FRAMES as i64 + 150;
    let mut fast_read = drain(&mut fast);
    for ms in 1..=total {
        publishing.publish(video(ms, ms % 100 == 0));
        fast_read.extend(drain(&mut fast));
    }
    assert_eq!(
        fast_read.len() as i64,
        total + 1,
        "a cursor that keeps up loses nothing"
    );
    let lost_before_reading = dropped.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        lost_before_reading >= 150,
        "a stalled cursor's drops show while it stalls: {lost_before_reading}"
    );
    let read = drain(&mut slow);
    let lost = cursor_drops(&slow, &dropped);
    assert!(lost >= 150, "{lost} frames counted as lost");
    assert_eq!(
        publishing.stream().reader_drops(),
        [(1, lost), (2, 0)],
        "the stream reports each reader's drops"
    );
    assert_eq!(
        read[0],
        (true, true, 0),
        "configuration again where it resumes"
    );
    assert!(
        read[1].1 && read[1].2 % 100 == 0,
        "resumes at a keyframe: {:?}",
        read[1]
    );
    let times: Vec<i64> = read[1..].iter().map(|&(_, _, ms)| ms).collect();
    let expected: Vec<i64> = (read[1].2..=total).collect();
    assert_eq!(times, expected, "then every frame, in order");
    assert_eq!(
        lost as i64 + times.len() as i64,
        total,
        "each frame read or counted"
    );
}

fn cursor_drops(cursor: &Cursor, counter: &DropCounter) -> u64 {
    let lost = counter.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(cursor.dropped(), lost);
    lost
}

#[test]
fn the_ring_holds_what_the_slowest_open_cursor_needs_and_nothing_once_it_left() {
    let hub = Hub::default();
    let publishing = hub.claim(&key(), publisher(1)).unwrap();
    let (mut reader, _) = hub.subscribe_cursor(&key(), 1);
    let (idle, _) = hub.subscribe_cursor(&key(), 2);
    let stream = Arc::clone(publishing.stream());
    for ms in 0..300 {
        publishing.publish(video(ms, ms % 30 == 0));
        drain(&mut reader);
    }
    assert!(
        stream.ring_len() >= 300,
        "kept for the cursor that read nothing: {}",
        stream.ring_len()
    );
    drop(idle);
    for ms in 300..400 {
        publishing.publish(video(ms, false));
        drain(&mut reader);
    }
    assert!(
        stream.ring_len() <= 64,
        "a closed cursor holds nothing back: {}",
        stream.ring_len()
    );
    for ms in 400..(400 + 2 * READER_QUEUE_FRAMES as i64) {
        publishing.publish(video(ms, false));
    }
    assert!(
        stream.ring_len() <= READER_QUEUE_FRAMES,
        "bounded whoever is behind: {}",
        stream.ring_len()
    );
    hub.leave(&key(), 1);
    hub.leave(&key(), 2);
    assert_eq!(hub.reader_count(&key()), 0);
    assert_eq!(stream.ring_len(), 0, "no cursor, no frames kept");
    publishing.publish(video(5000, true));
    assert_eq!(stream.ring_len(), 0);
}
