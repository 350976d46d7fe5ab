//! A viewer on strom's own RTP path behind an ICE-TCP connection that stopped being read:
//! its bounded queue fills, the viewer skips to the next keyframe with the skipped frames
//! counted in its session, and it resumes at a keyframe once the queue drains.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::dtls_keys::Keys;
use crate::routing::ReplyPath;
use std::sync::atomic::AtomicU64;
use str0m::crypto::dtls::SrtpProfile;
use strom_stream::gate::sessions::SessionEntry;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const QUEUE: usize = 8;

fn frame(seq: u64, keyframe: bool) -> FeedFrame {
    FeedFrame {
        seq,
        video: true,
        keyframe,
        pts: seq as i64 * 3000,
        payloads: (0..3).map(|i| Arc::from(vec![i as u8; 100])).collect(),
    }
}

/// A connected viewer's core as its attach leaves it: tracks chosen, waiting for a
/// keyframe, sent by the own path over an ICE-TCP connection whose queue holds
/// [`QUEUE`] packets.
fn stalled_tcp_viewer() -> (Core, mpsc::Receiver<Bytes>, Arc<AtomicU64>) {
    let key = strom_stream::StreamKey::new("live", "cam");
    let entry = SessionEntry::new(1, "WebRTC", &key, "192.0.2.1", CancellationToken::new());
    let dropped = Arc::new(AtomicU64::new(0));
    let _ = entry.dropped.set(Arc::clone(&dropped));
    let mut core = Core::new(
        Rtc::builder().build(Instant::now()),
        None,
        Arc::new(entry),
        Arc::default(),
        Duration::from_secs(1),
        None,
    );
    let keys = Keys {
        material: (0..56).collect(),
        profile: SrtpProfile::AEAD_AES_128_GCM,
        active: false,
    };
    let mid = Mid::from("0");
    core.sending.video = Some(SendTrack::new(mid, Pt::from(96), 90_000));
    core.direct = Some(RtpSender::new(
        SrtpSession::new(&keys).unwrap(),
        Some(Track::new(7, 96, 90_000, Some((4, "0")), true)),
        None,
        Duration::from_secs(1),
    ));
    core.sending.waiting_keyframe = true;
    core.attached = true;
    let (queue, reader) = mpsc::channel(QUEUE);
    let peer: SocketAddr = "192.0.2.1:50000".parse().unwrap();
    core.paths.insert((true, peer), ReplyPath::Tcp(queue));
    core.media_path = Some((true, peer));
    (core, reader, dropped)
}

fn send(core: &mut Core, frame: &FeedFrame) {
    let mut batch = UdpBatch::default();
    core.send(frame);
    core.flush_own(&mut batch);
}

fn queued(reader: &mut mpsc::Receiver<Bytes>) -> Vec<Bytes> {
    std::iter::from_fn(|| reader.try_recv().ok()).collect()
}

#[test]
fn a_stalled_ice_tcp_viewer_skips_to_a_keyframe_and_counts_what_it_missed() {
    let (mut core, mut reader, dropped) = stalled_tcp_viewer();
    assert!(core.sends_itself());
    // A delta frame before the first keyframe is not sent (and not a drop: the viewer
    // has had no picture yet).
    send(&mut core, &frame(0, false));
    assert!(queued(&mut reader).is_empty());
    assert_eq!(dropped.load(Ordering::Relaxed), 0);
    // The keyframe and the next frame fill 6 of the 8 places; the third frame finds
    // room for 2 of its 3 packets: the viewer fell behind.
    send(&mut core, &frame(1, true));
    send(&mut core, &frame(2, false));
    send(&mut core, &frame(3, false));
    assert!(core.sending.waiting_keyframe);
    // The frames the stalled viewer is not sent count as dropped in its session.
    for seq in 4..10 {
        send(&mut core, &frame(seq, false));
    }
    assert_eq!(dropped.load(Ordering::Relaxed), 6);
    let sent = queued(&mut reader);
    assert_eq!(sent.len(), QUEUE);
    // SRTP: the RTP header in the clear (version 2, the MID extension, payload type
    // 96, the viewer's SSRC), then the sealed payload and its 16-byte tag.
    assert_eq!(sent[0][0], 0x90);
    assert_eq!(sent[0][1] & 0x7f, 96);
    assert_eq!(&sent[0][8..12], &7u32.to_be_bytes());
    assert_eq!(sent[0].len(), 20 + 100 + crate::srtp_send::TAG_LEN);
    // Its reader is back: delta frames still wait for the keyframe, which goes out
    // whole, and the frames after it.
    send(&mut core, &frame(10, false));
    assert!(queued(&mut reader).is_empty());
    assert_eq!(dropped.load(Ordering::Relaxed), 7);
    send(&mut core, &frame(11, true));
    send(&mut core, &frame(12, false));
    assert!(!core.sending.waiting_keyframe);
    assert_eq!(queued(&mut reader).len(), 6);
    assert_eq!(core.tally().video_frames, 5);
    assert_eq!(core.tally().rtp_path, "strom");
}
