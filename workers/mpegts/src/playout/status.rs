//! What `server_playlist_status` shows for a task (spec §2.9): the block and the
//! scheduled source of now, durations in milliseconds, the `default_stream*` fields only
//! while the default stream stands in for the source, and strom's `error` when the
//! source cannot play or the task's blocks overlap.

use super::schedule::{Slot, Source, Task};
use strom_ipc::status::ServerPlaylistEntry;

/// The entry of `task` playing `slot` (`None`: outside any block).
pub fn entry(
    task: &Task,
    slot: Option<&Slot>,
    default_plays: bool,
    default_duration_ms: u64,
    error: Option<&str>,
) -> ServerPlaylistEntry {
    let default = task.default.as_ref().filter(|_| default_plays);
    ServerPlaylistEntry {
        stream: task.stream.to_string(),
        block_id: slot.map(|s| s.block_id.clone()).unwrap_or_default(),
        block_duration: slot.map_or(0, |s| s.block_duration_ms),
        main_stream: slot.map(|s| s.entry.source.name()).unwrap_or_default(),
        main_stream_type: slot
            .map(|s| s.entry.source.kind().to_owned())
            .unwrap_or_default(),
        main_stream_duration: slot.map_or(0, |s| s.entry.duration_ms),
        default_stream: default.map(Source::name),
        default_stream_type: default.map(|d| d.kind().to_owned()),
        default_stream_duration: default.map(|_| default_duration_ms),
        error: error.map(str::to_owned).or_else(|| task.problem.clone()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::super::schedule::parse;
    use super::*;
    use std::path::Path;

    #[test]
    fn default_fields_only_while_the_default_plays() {
        let text = r#"{"Tasks": [{"Stream": "tv/one",
            "DefaultStream": {"Type": "vod", "Source": "filler.mp4"},
            "Blocks": [{"Id": "news", "Start": "2026-11-23T08:00:00Z", "Streams": [
                {"Type": "live", "Source": "live/studio", "Duration": 60000},
                {"Type": "vod", "Source": "a.mp4", "Duration": 5000}]}]}]}"#;
        let task = parse(text, Path::new("/media")).unwrap().tasks.remove(0);
        let slot = task.plan(1_795_420_800_000).slot.unwrap();
        let playing = entry(&task, Some(&slot), false, 4_000, None);
        assert_eq!(playing.block_id, "news");
        assert_eq!(playing.block_duration, 65_000);
        assert_eq!(
            (
                playing.main_stream.as_str(),
                playing.main_stream_type.as_str()
            ),
            ("live/studio", "live")
        );
        assert_eq!(playing.main_stream_duration, 60_000);
        assert_eq!(playing.default_stream, None);
        assert_eq!(playing.default_stream_duration, None);

        let missing = entry(&task, Some(&slot), true, 4_000, None);
        assert_eq!(missing.default_stream.as_deref(), Some("/media/filler.mp4"));
        assert_eq!(missing.default_stream_type.as_deref(), Some("vod"));
        assert_eq!(missing.default_stream_duration, Some(4_000));

        let idle = entry(&task, None, true, 4_000, Some("gone"));
        assert_eq!(
            (idle.block_id.as_str(), idle.main_stream.as_str()),
            ("", "")
        );
        assert_eq!((idle.block_duration, idle.main_stream_duration), (0, 0));
        assert_eq!(idle.error.as_deref(), Some("gone"));
    }
}
