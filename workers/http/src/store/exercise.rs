//! A restored stream driven through every answer it can give, for the fuzz target
//! `hls_index`: a child of the store (it reads the store's private state) so that the
//! store itself never depends on the DASH manifest writer, which depends on the store.

use super::dash_listing::{DashParts, DashTrack};
use super::segment::SegmentFacts;
use super::stream::HlsStream;
use super::{GRACE_SEGMENTS, MIN_LIVE_SEGMENTS, PLAYLIST_WINDOW};
use bytes::Bytes;
use std::path::PathBuf;
use std::time::Duration;
use strom_worker_runtime::sync::locked;

/// Restores a stream from `index` (every file it names holding `file`), serves its
/// playlists and segments, and packages on past the playlist window as a live stream
/// does; nothing touches the disk. For the fuzz target `hls_index`.
#[doc(hidden)]
pub fn exercise_restore(index: &[u8], file: &[u8]) {
    let hls = HlsStream::new("app", "stream", PathBuf::new(), Duration::from_secs(15));
    locked(&hls.disk).removed = true;
    let bytes = Bytes::copy_from_slice(file);
    if hls.restore_from(index, |_| Ok(bytes.clone())).is_err() {
        return;
    }
    let serve = |hls: &HlsStream| {
        for fmp4 in [false, true] {
            let _ = (hls.master(fmp4, Some(1)), hls.variant("../", fmp4, None));
            let _ = (hls.media(fmp4, Some(u128::MAX)), hls.media(fmp4, None));
        }
        let listed: Vec<(u64, u64)> = locked(&hls.state)
            .segments
            .iter()
            .map(|s| (s.entry.sequence, s.entry.init_id))
            .collect();
        for (sequence, init_id) in listed {
            let _ = (hls.segment(sequence, false), hls.segment(sequence, true));
            let _ = hls.init(init_id);
            let _ = (hls.dash_init(init_id, false), hls.dash_init(init_id, true));
            let _ = (
                hls.dash_segment(sequence, false),
                hls.dash_segment(sequence, true),
            );
        }
    };
    serve(&hls);
    let rendition = crate::dash::Rendition {
        listing: hls.dash_listing(),
        prefix: String::new(),
    };
    let _ = crate::dash::manifest(&[rendition], Some(1), 0, None);
    for n in 0..=(PLAYLIST_WINDOW + GRACE_SEGMENTS) {
        let facts = SegmentFacts {
            codecs: String::from("avc1.64001f"),
            width: 1280,
            height: 720,
            frame_rate: Some(25.0),
            independent: n % 2 == 0,
            dash: Some(DashParts {
                video: Some(DashTrack {
                    start: 0,
                    duration: 540_000,
                    timescale: 90_000,
                    offset: 0,
                    len: u32::MAX,
                }),
                audio: None,
                period_ms: 0,
                period_time: 0,
            }),
            // A section that is not base64: the manifest leaves it out.
            scte35: vec![String::from("%not base64%")],
        };
        hls.add_segment(6.0, 0, 0, bytes.clone(), bytes.clone(), facts, Vec::new());
        if n == 0 {
            serve(&hls);
        }
    }
    hls.evict_front(MIN_LIVE_SEGMENTS);
    serve(&hls);
}
