//! The store's tests: paths from checked names, the disk mirror and its restore,
//! grace times, the memory limit's eviction order and the rendered playlists.

#![allow(clippy::unwrap_used)]

use super::disk::{INDEX, parse_index};
use super::playlist::render_media;
use super::segment::{Segment, SegmentMeta, StreamMeta};
use super::state::StreamState;
use super::*;
use bytes::Bytes;

const BIG: Limits = Limits {
    max_ram_bytes: u64::MAX,
    grace: Duration::from_secs(3600),
};

fn facts() -> SegmentFacts {
    SegmentFacts {
        codecs: "avc1.42c01e".to_owned(),
        width: 320,
        height: 240,
        frame_rate: Some(25.0),
        independent: true,
        dash: None,
        scte35: Vec::new(),
    }
}

/// Adds a segment of `size` bytes in each format, `pdt` as its age.
fn add(hls: &HlsStream, pdt: i64, size: usize) -> u64 {
    if hls.init(1).is_none() {
        hls.add_init(1, Bytes::from_static(b"init"));
    }
    hls.add_segment(
        1.0,
        pdt,
        1,
        Bytes::from(vec![0x47; size]),
        Bytes::from(vec![1; size]),
        facts(),
        Vec::new(),
    )
}

fn sequences(hls: &HlsStream) -> Vec<u64> {
    locked(&hls.state)
        .segments
        .iter()
        .map(|s| s.entry.sequence)
        .collect()
}

fn listed(hls: &HlsStream) -> Vec<String> {
    hls.media(false, None)
        .lines()
        .filter(|l| l.starts_with("seg_"))
        .map(str::to_owned)
        .collect()
}

/// Every path under `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            out.push(path.strip_prefix(base).unwrap().display().to_string());
            if entry.file_type().unwrap().is_dir() {
                walk(base, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn paths_are_built_from_checked_names_only() {
    let root = Path::new("/run/strom/hls");
    assert_eq!(
        stream_dir(root, "live", "cam-1.hd").unwrap(),
        Path::new("/run/strom/hls/live/cam-1.hd")
    );
    assert_eq!(
        app_dir(root, "live").unwrap(),
        Path::new("/run/strom/hls/live")
    );
    for (app, stream) in [
        ("live", "../../x"),
        ("..", "x"),
        ("live", ".."),
        ("live", "."),
        ("live", "a/b"),
        ("live", "/etc"),
        ("/tmp", "x"),
        ("live", ""),
        ("", "x"),
        ("live", ".hidden"),
        ("live", "a\0b"),
        ("live", "a\\b"),
        ("live", "a%2f"),
        ("live", &"x".repeat(129)),
    ] {
        assert!(
            stream_dir(root, app, stream).is_err(),
            "{app:?}/{stream:?} must get no path"
        );
    }
    assert!(app_dir(root, "../x").is_err());
    assert!(
        app_dir(root, ".gone-1").is_err(),
        "trash names are not apps"
    );
}

#[test]
fn hostile_names_are_neither_created_nor_looked_up() {
    let run = tempfile::tempdir().unwrap();
    let run_dir = run.path().join("run");
    let store = Store::new(&run_dir, BIG);
    for (app, stream) in [("live", "../../x"), ("..", ".."), ("live", "a/b")] {
        assert!(store.get_or_create(app, stream).is_none());
        assert!(store.get(app, stream).is_none());
        store.mark_ended(app, stream);
    }
    assert!(store.streams.lock().unwrap().is_empty());
    assert_eq!(tree(run.path()), Vec::<String>::new(), "nothing written");
}

#[test]
fn segments_are_mirrored_and_restored_with_orphans_removed() {
    let run = tempfile::tempdir().unwrap();
    let store = Store::new(run.path(), BIG);
    let hls = store.get_or_create("live", "cam").unwrap();
    for i in 0..3 {
        add(&hls, i, 100);
    }
    let dir = run.path().join("hls/live/cam");
    assert!(dir.join("2.ts").exists() && dir.join(INDEX).exists());
    assert_eq!(
        hls.disk_bytes(),
        4 + 3 * 200 + std::fs::metadata(dir.join(INDEX)).unwrap().len()
    );
    assert_eq!(hls.ram_bytes(), 4 + 3 * 200);
    std::fs::write(dir.join("9.ts"), b"left over by a crash").unwrap();
    std::fs::write(dir.join("9.part"), b"half written").unwrap();

    let again = Store::new(run.path(), BIG);
    again.restore_all();
    let restored = again.get("live", "cam").unwrap();
    assert_eq!(sequences(&restored), vec![0, 1, 2]);
    assert_eq!(restored.ram_bytes(), hls.ram_bytes());
    assert!(!dir.join("9.ts").exists() && !dir.join("9.part").exists());
    assert!(
        restored.ended_for().is_some(),
        "ended until the registry names it"
    );
    assert!(
        again
            .get_or_create("live", "cam")
            .unwrap()
            .ended_for()
            .is_none()
    );
    // The media sequence goes on, after a discontinuity.
    assert_eq!(add(&restored, 3, 100), 3);
    assert!(
        restored
            .media(false, Some(7))
            .contains("#EXT-X-DISCONTINUITY\n")
    );
}

/// An index whose numbers the store could not count on from (found by the fuzz
/// target `hls_index`: the next segment's number, or the discontinuity count, past
/// `u64::MAX`) is not restored; its stream starts afresh.
#[test]
fn indexes_with_out_of_range_sequence_numbers_are_not_restored() {
    let run = tempfile::tempdir().unwrap();
    let store = Store::new(run.path(), BIG);
    let hls = store.get_or_create("live", "cam").unwrap();
    for i in 0..3 {
        add(&hls, i, 100);
    }
    let dir = run.path().join("hls/live/cam");
    let index = std::fs::read_to_string(dir.join(INDEX)).unwrap();
    assert!(parse_index(index.as_bytes()).is_ok());
    let hostile = [
        index.replace(
            "\"next_sequence\":3",
            "\"next_sequence\":18446744073709551615",
        ),
        index.replace(
            "\"discontinuity_sequence\":0",
            "\"discontinuity_sequence\":18446744073709551615",
        ),
        index.replace("\"next_sequence\":3", "\"next_sequence\":2"),
    ];
    for text in hostile {
        assert_ne!(text, index);
        assert!(parse_index(text.as_bytes()).is_err(), "{text}");
        exercise_restore(text.as_bytes(), b"x");
        std::fs::write(dir.join(INDEX), &text).unwrap();
        let again = Store::new(run.path(), BIG);
        again.restore_all();
        let restored = again.get("live", "cam").unwrap();
        assert!(!restored.has_segments());
        assert_eq!(add(&restored, 0, 100), 0);
    }
    // Counting at the end of the range saturates instead of overflowing.
    let mut state = StreamState::default();
    state.meta.discontinuity_sequence = u64::MAX;
    for discontinuity in [true, true] {
        state.segments.push_back(Segment {
            entry: SegmentMeta {
                sequence: 0,
                duration_secs: 1.0,
                program_date_time_ms: 0,
                discontinuity,
                init_id: 0,
                tags: Vec::new(),
                independent: true,
                dash: None,
                scte35: Vec::new(),
            },
            ts: Bytes::new(),
            m4s: Bytes::new(),
            dash: Default::default(),
        });
    }
    assert!(render_media(&state, false).contains("DISCONTINUITY-SEQUENCE:18446744073709551615"));
    state.pop_front();
    assert_eq!(state.meta.discontinuity_sequence, u64::MAX);
}

#[test]
fn restore_skips_hostile_directories_and_links() {
    let run = tempfile::tempdir().unwrap();
    let root = run.path().join("hls");
    let outside = run.path().join("outside");
    std::fs::create_dir_all(outside.join("s")).unwrap();
    std::fs::write(outside.join("s/index.json"), b"{}").unwrap();
    std::fs::create_dir_all(root.join("live/bad name")).unwrap();
    std::fs::create_dir_all(root.join(".hidden/s")).unwrap();
    std::fs::create_dir_all(root.join(".gone-1-0/s")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("linked")).unwrap();
    std::os::unix::fs::symlink(outside.join("s"), root.join("live/s")).unwrap();
    let store = Store::new(run.path(), BIG);
    store.restore_all();
    assert!(store.streams.lock().unwrap().is_empty());
    assert!(
        !root.join(".gone-1-0").exists(),
        "trash of a previous run deleted"
    );
    assert!(outside.join("s/index.json").exists());
}

#[test]
fn ended_streams_are_freed_after_the_grace_time_and_revived_before() {
    let run = tempfile::tempdir().unwrap();
    let store = Store::new(
        run.path(),
        Limits {
            max_ram_bytes: u64::MAX,
            grace: Duration::from_millis(50),
        },
    );
    let gone = store.get_or_create("live", "gone").unwrap();
    let back = store.get_or_create("live", "back").unwrap();
    let other = store.get_or_create("other", "x").unwrap();
    for hls in [&gone, &back, &other] {
        add(hls, 0, 100);
    }
    store.mark_ended("live", "gone");
    store.mark_ended("live", "back");
    store.mark_ended("other", "x");
    assert_eq!(store.expire_ended(), 0, "within the grace time");
    assert!(store.get("live", "gone").is_some_and(|s| s.has_segments()));
    let revived = store.get_or_create("live", "back").unwrap();
    assert!(Arc::ptr_eq(&revived, &back), "same stream, same sequence");
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(store.expire_ended(), 2);
    assert!(store.get("live", "gone").is_none());
    assert!(store.get("other", "x").is_none());
    assert!(store.get("live", "back").is_some());
    let root = run.path().join("hls");
    assert!(!root.join("live/gone").exists());
    assert!(!root.join("other").exists(), "empty app directory removed");
    assert!(root.join("live/back/0.ts").exists());
    assert_eq!(
        tree(&root)
            .iter()
            .filter(|p| p.starts_with(".gone"))
            .count(),
        0
    );
    assert_eq!(gone.ram_bytes(), 0, "memory released even while referenced");
    assert_eq!(store.ram_bytes(), back.ram_bytes());
    // A late segment of a freed stream writes nothing.
    add(&gone, 1, 100);
    assert!(!root.join("live/gone").exists());
    // The same name published again starts afresh.
    let fresh = store.get_or_create("live", "gone").unwrap();
    assert_eq!(add(&fresh, 2, 100), 0);
    assert!(root.join("live/gone/0.ts").exists());
}

#[test]
fn ram_limit_evicts_unlisted_tail_first_then_ended_streams_then_live_windows() {
    let run = tempfile::tempdir().unwrap();
    let size = 1000;
    let per_segment = 2 * size as u64;
    // Streams a (older) and b, 10 segments each (6 listed + 4 tail), and ended c.
    let store = Store::new(run.path(), BIG);
    let a = store.get_or_create("live", "a").unwrap();
    let b = store.get_or_create("live", "b").unwrap();
    let c = store.get_or_create("live", "c").unwrap();
    for i in 0..10 {
        add(&a, i, size);
        add(&b, 100 + i, size);
        add(&c, 50 + i, size);
    }
    store.mark_ended("live", "c");
    let inits = 3 * 4;
    assert_eq!(store.ram_bytes(), 30 * per_segment + inits);
    let listed_a = listed(&a);

    // 1. Only the unlisted tails go, oldest first across streams (a's, then c's).
    let mut limited = Store::new(
        run.path(),
        Limits {
            max_ram_bytes: 24 * per_segment + inits,
            grace: Duration::from_secs(3600),
        },
    );
    limited.streams = Mutex::new(std::mem::take(&mut *store.streams.lock().unwrap()));
    limited.enforce_ram_limit();
    assert_eq!(sequences(&a), (4..10).collect::<Vec<_>>());
    assert_eq!(sequences(&c), (2..10).collect::<Vec<_>>());
    assert_eq!(sequences(&b), (0..10).collect::<Vec<_>>());
    assert_eq!(
        listed(&a),
        listed_a,
        "what players were told is still there"
    );
    assert!(!run.path().join("hls/live/a/0.ts").exists());
    assert!(run.path().join("hls/live/a/4.ts").exists());
    assert!(limited.ram_bytes() <= 24 * per_segment + inits);

    // 2. Then the stream that ended goes whole (before any listed live segment).
    limited.limits.max_ram_bytes = 14 * per_segment + inits;
    limited.enforce_ram_limit();
    assert!(limited.get("live", "c").is_none());
    assert!(!run.path().join("hls/live/c").exists());
    assert_eq!(sequences(&a), (4..10).collect::<Vec<_>>());
    assert_eq!(
        sequences(&b),
        (4..10).collect::<Vec<_>>(),
        "b's tail went first"
    );
    assert_eq!(listed(&b).len(), PLAYLIST_WINDOW);

    // 3. Then live windows shrink, oldest segments first, to three each...
    limited.limits.max_ram_bytes = 8 * per_segment + 2 * 4;
    limited.enforce_ram_limit();
    assert_eq!(sequences(&a), vec![7, 8, 9]);
    assert_eq!(sequences(&b), vec![5, 6, 7, 8, 9]);
    assert_eq!(limited.ram_bytes(), 8 * per_segment + 2 * 4);
    assert_eq!(listed(&a).len(), 3);
    assert!(listed(&a)[0].starts_with("seg_7.ts"));

    // ...and never below the newest segment of a live stream.
    limited.limits.max_ram_bytes = 1;
    limited.enforce_ram_limit();
    assert_eq!(sequences(&a), vec![9]);
    assert_eq!(sequences(&b), vec![9]);
    assert_eq!(limited.ram_bytes(), 2 * per_segment + 2 * 4);
    let dir_a = run.path().join("hls/live/a");
    let files: Vec<String> = tree(&dir_a);
    assert_eq!(files, vec!["9.m4s", "9.ts", "index.json", "init_1.mp4"]);
    let index: StreamMeta =
        serde_json::from_slice(&std::fs::read(dir_a.join(INDEX)).unwrap()).unwrap();
    assert_eq!(index.segments.len(), 1);
    assert_eq!(
        limited.disk_bytes(),
        2 * (per_segment + 4)
            + std::fs::metadata(dir_a.join(INDEX)).unwrap().len()
            + std::fs::metadata(run.path().join("hls/live/b").join(INDEX))
                .unwrap()
                .len()
    );
}

#[test]
fn evicting_a_discontinuity_keeps_the_playlist_count_right() {
    let run = tempfile::tempdir().unwrap();
    let store = Store::new(run.path(), BIG);
    let hls = store.get_or_create("live", "d").unwrap();
    add(&hls, 0, 10);
    hls.mark_discontinuity();
    add(&hls, 1, 10);
    add(&hls, 2, 10);
    let before = hls.media(false, None);
    assert!(
        before.contains("#EXT-X-DISCONTINUITY-SEQUENCE:0"),
        "{before}"
    );
    hls.evict_front(1);
    hls.evict_front(1);
    let after = hls.media(false, None);
    assert!(after.contains("#EXT-X-DISCONTINUITY-SEQUENCE:1"), "{after}");
    assert!(!after.contains("#EXT-X-DISCONTINUITY\n"), "{after}");
}

#[test]
fn playlists_without_a_session_carry_no_session_query() {
    let run = tempfile::tempdir().unwrap();
    let store = Store::new(run.path(), BIG);
    let hls = store.get_or_create("live", "s").unwrap();
    add(&hls, 0, 10);
    assert!(hls.master(false, None).contains("\nchunks.m3u8\n"));
    assert!(
        hls.master(true, Some(5))
            .contains("\nchunks_fmp4.m3u8?sid=5\n")
    );
    let media = hls.media(true, None);
    assert!(!media.contains("sid"), "{media}");
    assert!(
        media.contains("seg_0.m4s\n") && media.contains("init_1.mp4\""),
        "{media}"
    );
    assert!(hls.media(false, Some(9)).contains("seg_0.ts?sid=9\n"));
}

/// A stream gone for half its grace time ends its playlist; its publisher back after
/// that starts a new playlist whose segment numbers go on, with a new target
/// duration. Back before that, the playlist goes on.
#[test]
fn a_playlist_ends_when_its_stream_is_gone_for_good() {
    let run = tempfile::tempdir().unwrap();
    let store = Store::new(
        run.path(),
        Limits {
            max_ram_bytes: u64::MAX,
            grace: Duration::from_millis(400),
        },
    );
    let hls = store.get_or_create("live", "end").unwrap();
    assert_eq!(hls.target_duration(4), 4);
    assert_eq!(
        hls.target_duration(9),
        4,
        "fixed for the life of the playlist"
    );
    add(&hls, 0, 10);
    add(&hls, 1, 10);
    store.mark_ended("live", "end");
    assert!(!hls.media(false, None).contains("ENDLIST"));
    store.get_or_create("live", "end").unwrap();
    assert_eq!(sequences(&hls), vec![0, 1], "back in time: same playlist");
    store.mark_ended("live", "end");
    std::thread::sleep(Duration::from_millis(250));
    let ended = hls.media(true, Some(3));
    assert!(ended.ends_with("#EXT-X-ENDLIST\n"), "{ended}");
    assert!(hls.segment(1, true).is_some(), "still fetchable");
    let back = store.get_or_create("live", "end").unwrap();
    assert!(Arc::ptr_eq(&back, &hls));
    assert!(!hls.has_segments(), "a new playlist");
    assert!(!run.path().join("hls/live/end/1.ts").exists());
    assert_eq!(hls.target_duration(9), 9);
    assert_eq!(add(&hls, 2, 10), 2);
    let media = hls.media(false, None);
    assert!(!media.contains("ENDLIST") && !media.contains("#EXT-X-DISCONTINUITY\n"));
    assert!(media.contains("#EXT-X-MEDIA-SEQUENCE:2\n"), "{media}");
}

#[test]
fn masters_carry_average_bandwidth_frame_rate_and_independence() {
    let run = tempfile::tempdir().unwrap();
    let store = Store::new(run.path(), BIG);
    let hls = store.get_or_create("live", "m").unwrap();
    add(&hls, 0, 1000);
    add(&hls, 1, 3000);
    let master = hls.master(false, None);
    assert!(master.contains("#EXT-X-INDEPENDENT-SEGMENTS\n"), "{master}");
    assert!(
        master.contains(
            "BANDWIDTH=24000,AVERAGE-BANDWIDTH=16000,RESOLUTION=320x240,FRAME-RATE=25.000,"
        ),
        "{master}"
    );
    let mut facts = facts();
    facts.independent = false;
    hls.add_segment(1.0, 2, 1, Bytes::new(), Bytes::new(), facts, Vec::new());
    assert!(!hls.master(true, None).contains("INDEPENDENT"));
    assert!(!hls.media(true, None).contains("INDEPENDENT"));
}

/// Where the newest segment's media ends on the DASH timeline: the start of a
/// period that follows at once.
#[test]
fn dash_end_is_the_newest_segments_end_on_the_wall_clock() {
    let run = tempfile::tempdir().unwrap();
    let store = Store::new(run.path(), BIG);
    let hls = store.get_or_create("live", "dash").unwrap();
    assert_eq!(hls.dash_end_ms(), None);
    let mut facts = facts();
    facts.dash = Some(DashParts {
        video: Some(DashTrack {
            start: 1_080_000,
            duration: 180_000,
            timescale: 90_000,
            offset: 0,
            len: 4,
        }),
        audio: None,
        period_ms: 1_000_000,
        period_time: 900_000,
    });
    hls.add_segment(
        2.0,
        0,
        1,
        Bytes::new(),
        Bytes::from_static(b"moof"),
        facts,
        Vec::new(),
    );
    assert_eq!(hls.dash_end_ms(), Some(1_004_000));
    assert_eq!(hls.dash_segment(0, false).as_deref(), Some(&b"moof"[..]));
    assert_eq!(hls.dash_segment(0, true), None);
    let listing = hls.dash_listing();
    assert_eq!(listing.segments.len(), 1);
    assert!(!listing.ended);
}
