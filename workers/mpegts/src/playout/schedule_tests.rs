//! Playlist files: validation errors name the field, and plans follow the schedule.
#![allow(clippy::unwrap_used)]

use super::*;

const T0: &str = "2026-11-23T08:00:00Z";
const T0_MS: i64 = 1_795_420_800_000;

fn playlist(text: &str) -> Result<Playlist, String> {
    parse(text, Path::new("/media"))
}

fn three_blocks(repeat: bool) -> Task {
    let text = format!(
        r#"{{"Tasks": [{{"Stream": "tv/one", "Loop": {repeat},
            "DefaultStream": {{"Type": "vod", "Source": "filler.mp4"}},
            "Blocks": [
              {{"Id": "b", "Start": "2026-11-23T08:00:20Z",
                "Streams": [{{"Type": "vod", "Source": "/media/sub/c.mp4", "Duration": 10000}}]}},
              {{"Id": "a", "Start": "{T0}", "Streams": [
                {{"Type": "vod", "Source": "a.mp4", "Duration": 10000}},
                {{"Type": "live", "Source": "live/cam", "Duration": 5000}}]}}
            ],
            "Scte35Markers": [{{"Type": "Out", "Start": "{T0}", "Duration": 30000}}]}}]}}"#
    );
    playlist(&text).unwrap().tasks.remove(0)
}

#[test]
fn plans_walk_blocks_entries_and_gaps() {
    let task = three_blocks(false);
    assert_eq!(task.default, Some(Source::Vod("/media/filler.mp4".into())));
    assert_eq!(task.blocks[0].id, "a", "sorted by start");
    assert_eq!(task.markers[0].duration_ms, Some(30_000));

    let before = task.plan(T0_MS - 1);
    assert_eq!(before.slot, None);
    assert_eq!(before.until_ms, Some(T0_MS));

    let first = task.plan(T0_MS + 9_999).slot.unwrap();
    assert_eq!(first.block_id, "a");
    assert_eq!(first.block_duration_ms, 15_000);
    assert_eq!(first.entry.source, Source::Vod("/media/a.mp4".into()));
    assert_eq!((first.start_ms, first.end_ms), (T0_MS, T0_MS + 10_000));

    let live = task.plan(T0_MS + 10_000).slot.unwrap();
    assert_eq!(
        live.entry.source,
        Source::Live(StreamKey::new("live", "cam"))
    );

    let gap = task.plan(T0_MS + 15_000);
    assert_eq!((gap.slot, gap.until_ms), (None, Some(T0_MS + 20_000)));

    let last = task.plan(T0_MS + 25_000).slot.unwrap();
    assert_eq!(last.entry.source, Source::Vod("/media/sub/c.mp4".into()));
    assert_eq!(
        task.plan(T0_MS + 30_000),
        Plan {
            slot: None,
            until_ms: None
        }
    );
}

#[test]
fn a_looping_schedule_starts_again_after_its_last_block() {
    let task = three_blocks(true);
    let again = task.plan(T0_MS + 30_000 + 1).slot.unwrap();
    assert_eq!(again.block_id, "a");
    assert_eq!(again.start_ms, T0_MS + 30_000);
    let later = task.plan(T0_MS + 3 * 30_000 + 12_000).slot.unwrap();
    assert_eq!(
        later.entry.source,
        Source::Live(StreamKey::new("live", "cam"))
    );
    assert_eq!(later.end_ms, T0_MS + 3 * 30_000 + 15_000);
}

#[test]
fn overlapping_blocks_make_the_task_play_its_default() {
    let text = format!(
        r#"{{"Tasks": [{{"Stream": "tv/one", "Blocks": [
            {{"Id": "a", "Start": "{T0}", "Streams": [{{"Type": "vod", "Source": "a.mp4", "Duration": 20000}}]}},
            {{"Id": "b", "Start": "2026-11-23T08:00:10Z", "Streams": [{{"Type": "vod", "Source": "b.mp4", "Duration": 1000}}]}}]}}]}}"#
    );
    let task = playlist(&text).unwrap().tasks.remove(0);
    assert!(task.problem.as_deref().unwrap().contains("overlap"));
    assert_eq!(task.plan(T0_MS + 1).slot, None);
}

#[test]
fn invalid_files_name_the_field() {
    let cases = [
        ("{", "EOF"),
        (r#"{"Tasks": [{"Stream": "nope"}]}"#, "Tasks[0].Stream"),
        (r#"{"Tasks": [{"Stream": "a/b", "Extra": 1}]}"#, "Extra"),
        (
            r#"{"Tasks": [{"Stream": "a/b"}, {"Stream": "a/b"}]}"#,
            "Tasks[1].Stream",
        ),
        (
            r#"{"Tasks": [{"Stream": "a/b", "Blocks": [{"Id": "x", "Start": "8:00", "Streams": []}]}]}"#,
            "Tasks[0].Blocks[0].Start",
        ),
        (
            r#"{"Tasks": [{"Stream": "a/b", "Blocks": [{"Id": "x", "Start": "2026-11-23T08:00:00Z", "Streams": [{"Type": "file", "Source": "x", "Duration": 1}]}]}]}"#,
            "Tasks[0].Blocks[0].Streams[0].Type",
        ),
        (
            r#"{"Tasks": [{"Stream": "a/b", "Blocks": [{"Id": "x", "Start": "2026-11-23T08:00:00Z", "Streams": [{"Type": "vod", "Source": "x", "Duration": 0}]}]}]}"#,
            "Streams[0].Duration",
        ),
        (
            r#"{"Tasks": [{"Stream": "a/b", "Blocks": [{"Id": "x", "Start": "2026-11-23T08:00:00Z", "Streams": [{"Type": "live", "Source": "a/b", "Duration": 5}]}]}]}"#,
            "own output",
        ),
        (
            r#"{"Tasks": [{"Stream": "a/b", "Scte35Markers": [{"Type": "Maybe", "Start": "2026-11-23T08:00:00Z"}]}]}"#,
            "Scte35Markers[0].Type",
        ),
    ];
    for (text, expected) in cases {
        let error = playlist(text).unwrap_err();
        assert!(error.contains(expected), "{text}: {error}");
    }
}

#[test]
fn files_outside_the_media_directory_are_refused() {
    let with = |source: &str| {
        playlist(&format!(
            r#"{{"Tasks": [{{"Stream": "a/b", "DefaultStream": {{"Type": "vod", "Source": "{source}"}}}}]}}"#
        ))
    };
    for source in [
        "/etc/shadow",
        "../etc/shadow",
        "sub/../../etc/shadow",
        "/media/../etc/shadow",
        "/mediax/a.mp4",
    ] {
        let error = with(source).unwrap_err();
        assert!(
            error.contains("DefaultStream.Source")
                && (error.contains("outside the media directory") || error.contains("..")),
            "{source}: {error}"
        );
    }
    for (source, path) in [
        ("a.mp4", "/media/a.mp4"),
        ("sub/b.mp4", "/media/sub/b.mp4"),
        ("/media/c.mp4", "/media/c.mp4"),
    ] {
        let task = with(source).unwrap().tasks.remove(0);
        assert_eq!(task.default, Some(Source::Vod(path.into())), "{source}");
    }
}

#[test]
fn the_documented_playlist_example_is_valid() {
    let doc = include_str!("../../../../docs/playout.md");
    let section = &doc[doc.find("\n## Server playlists").unwrap()..];
    let start = section.find("```json\n").unwrap() + "```json\n".len();
    let example = &section[start..start + section[start..].find("```").unwrap()];
    let task = playlist(example).unwrap().tasks.remove(0);
    assert_eq!(task.blocks.len(), 2);
    assert_eq!(task.markers.len(), 2);
    assert!(task.problem.is_none(), "{:?}", task.problem);
}

/// A file as the commercial server writes it: `SyncInterval` beside `Tasks`, block starts
/// without a zone (server local time), mixed with RFC 3339 starts.
#[test]
fn the_commercial_servers_own_file_format_is_accepted() {
    let text = r#"{"SyncInterval": 60, "Tasks": [{"Stream": "tv/one", "Blocks": [
        {"Id": "local", "Start": "2026-11-23 08:00:00",
         "Streams": [{"Type": "vod", "Source": "a.mp4", "Duration": 10000}]},
        {"Id": "utc", "Start": "2026-11-24T08:00:00Z",
         "Streams": [{"Type": "vod", "Source": "b.mp4", "Duration": 10000}]}]}]}"#;
    let task = playlist(text).unwrap().tasks.remove(0);
    let local = task.blocks.iter().find(|b| b.id == "local").unwrap();
    assert_eq!(
        Some(local.start_ms),
        super::local_time::parse_ms("2026-11-23 08:00:00")
    );
    let utc = task.blocks.iter().find(|b| b.id == "utc").unwrap();
    assert_eq!(utc.start_ms, T0_MS + 86_400_000);
    let error = playlist(r#"{"SyncInterval": 60, "Tasks": [], "Other": 1}"#).unwrap_err();
    assert!(error.contains("Other"), "{error}");
}
