//! The server playlist file (JSON): its raw shape, its validation into [`Playlist`], and
//! what a task plays at a given time ([`Task::plan`]). Pure: no IO, no clock.
//!
//! A file that does not parse or validate is rejected whole (the caller keeps the
//! previous playlist). Blocks of one task that overlap make only that task invalid: its
//! default stream plays and its status says why ([`Task::problem`]).

use super::{local_time, utc};
use serde::Deserialize;
use std::path::{Component, Path, PathBuf};
use strom_stream::StreamKey;

/// Limits that keep a playlist file from sizing anything without bound.
pub const MAX_TASKS: usize = 256;
pub const MAX_BLOCKS: usize = 10_000;
pub const MAX_ENTRIES: usize = 1_000;
pub const MAX_MARKERS: usize = 10_000;
/// One entry plays at most 31 days.
pub const MAX_DURATION_MS: u64 = 31 * 86_400_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
struct RawPlaylist {
    tasks: Vec<RawTask>,
    /// The commercial server's files carry their re-read interval here; strom re-reads
    /// every `ServerPlaylists.SyncInterval` of rules.conf, so it is accepted and unused.
    #[serde(default)]
    #[allow(dead_code)]
    sync_interval: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
struct RawTask {
    stream: String,
    #[serde(default)]
    default_stream: Option<RawSource>,
    #[serde(default)]
    r#loop: bool,
    #[serde(default)]
    blocks: Vec<RawBlock>,
    #[serde(default)]
    scte35_markers: Vec<RawMarker>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
struct RawBlock {
    id: String,
    start: String,
    streams: Vec<RawEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
struct RawEntry {
    r#type: String,
    source: String,
    duration: u64,
    #[serde(default)]
    r#loop: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
struct RawSource {
    r#type: String,
    source: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
struct RawMarker {
    r#type: String,
    start: String,
    #[serde(default)]
    duration: Option<u64>,
}

/// What plays: a live stream of the server or an MP4 file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Live(StreamKey),
    Vod(PathBuf),
}

impl Source {
    /// `live` or `vod`, as the status reports it.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Live(_) => "live",
            Source::Vod(_) => "vod",
        }
    }

    /// `app/stream` or the file path, as the status reports it.
    pub fn name(&self) -> String {
        match self {
            Source::Live(key) => key.to_string(),
            Source::Vod(path) => path.display().to_string(),
        }
    }
}

/// One entry of a block: a source for a duration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub source: Source,
    pub duration_ms: u64,
    /// A file shorter than its slot starts again (else the default stream fills).
    pub repeat: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub id: String,
    pub start_ms: i64,
    pub entries: Vec<Entry>,
}

impl Block {
    pub fn duration_ms(&self) -> u64 {
        self.entries.iter().map(|e| e.duration_ms).sum()
    }

    fn end_ms(&self) -> i64 {
        self.start_ms.saturating_add(self.duration_ms() as i64)
    }
}

/// An SCTE-35 marker put into the output at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    pub out: bool,
    pub at_ms: i64,
    pub duration_ms: Option<u64>,
}

/// One output stream's schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    pub stream: StreamKey,
    pub default: Option<Source>,
    /// After the last block the schedule starts again with the first.
    pub repeat: bool,
    /// Sorted by start.
    pub blocks: Vec<Block>,
    /// Sorted by time.
    pub markers: Vec<Marker>,
    /// Why the blocks are not played (they overlap); the default stream plays.
    pub problem: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Playlist {
    pub tasks: Vec<Task>,
}

/// The entry of a block that plays now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    pub block_id: String,
    pub block_duration_ms: u64,
    pub entry: Entry,
    /// When this entry started and ends (Unix ms; a looping schedule's current round).
    pub start_ms: i64,
    pub end_ms: i64,
}

/// What a task plays at a time and until when that holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// `None`: no block is on (before, between or after the blocks): the default plays.
    pub slot: Option<Slot>,
    /// When the plan changes next (Unix ms); `None`: never.
    pub until_ms: Option<i64>,
}

impl Task {
    /// What plays at `now_ms`.
    pub fn plan(&self, now_ms: i64) -> Plan {
        let idle = |until_ms| Plan {
            slot: None,
            until_ms,
        };
        let (Some(first), Some(last)) = (self.blocks.first(), self.blocks.last()) else {
            return idle(None);
        };
        if self.problem.is_some() {
            return idle(None);
        }
        let period = last.end_ms() - first.start_ms;
        let shift = if self.repeat && period > 0 && now_ms >= first.start_ms {
            (now_ms - first.start_ms) / period * period
        } else {
            0
        };
        let local = now_ms - shift;
        for block in &self.blocks {
            if local < block.start_ms {
                return idle(Some(block.start_ms + shift));
            }
            let mut start = block.start_ms;
            for entry in &block.entries {
                let end = start.saturating_add(entry.duration_ms as i64);
                if local < end {
                    return Plan {
                        slot: Some(Slot {
                            block_id: block.id.clone(),
                            block_duration_ms: block.duration_ms(),
                            entry: entry.clone(),
                            start_ms: start + shift,
                            end_ms: end + shift,
                        }),
                        until_ms: Some(end + shift),
                    };
                }
                start = end;
            }
        }
        if self.repeat && period > 0 {
            idle(Some(first.start_ms + shift + period))
        } else {
            idle(None)
        }
    }
}

/// Reads a playlist file's text; `vod` files must lie in `base` (the media directory:
/// relative paths resolve under it; see [`confined`]).
pub fn parse(text: &str, base: &Path) -> Result<Playlist, String> {
    let raw: RawPlaylist = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if raw.tasks.len() > MAX_TASKS {
        return Err(format!("more than {MAX_TASKS} Tasks"));
    }
    let mut tasks: Vec<Task> = Vec::with_capacity(raw.tasks.len());
    for (i, task) in raw.tasks.into_iter().enumerate() {
        let task = task.validate(base).map_err(|e| format!("Tasks[{i}].{e}"))?;
        if tasks.iter().any(|t| t.stream == task.stream) {
            return Err(format!(
                "Tasks[{i}].Stream: {} is the output of an earlier task",
                task.stream
            ));
        }
        tasks.push(task);
    }
    Ok(Playlist { tasks })
}

fn stream_key(field: &str, text: &str) -> Result<StreamKey, String> {
    let (app, stream) = text
        .split_once('/')
        .ok_or_else(|| format!("{field}: expected app/stream, got {text:?}"))?;
    strom_ipc::names::check_pair(app, stream).map_err(|e| format!("{field}: {text:?}: {e}"))?;
    Ok(StreamKey::new(app, stream))
}

fn source(field: &str, kind: &str, text: &str, base: &Path) -> Result<Source, String> {
    match kind {
        "live" => Ok(Source::Live(stream_key(field, text)?)),
        "vod" if text.is_empty() => Err(format!("{field}: a file path is needed")),
        "vod" => confined(base, text)
            .map(Source::Vod)
            .map_err(|why| format!("{field}: {text:?} {why}")),
        other => Err(format!("Type: expected live or vod, got {other:?}")),
    }
}

/// `text` as a file of the media directory `base`: relative paths resolve under it, an
/// absolute one must lie in it, and no `..` may lead out of it. Without this whoever
/// writes the playlist file could have any file the worker can read opened (and, before
/// the errors stopped quoting them, shown). Symbolic links in the directory are the
/// operator's and are followed.
fn confined(base: &Path, text: &str) -> Result<PathBuf, String> {
    let path = Path::new(text);
    if path.components().any(|c| c == Component::ParentDir) {
        return Err("must not contain `..`".into());
    }
    let full = base.join(path);
    if !full.starts_with(base) {
        return Err(format!(
            "is outside the media directory {} (ServerPlaylists.MediaDirectory)",
            base.display()
        ));
    }
    Ok(full)
}

/// An RFC 3339 time (with its zone), or the commercial server's zone-less
/// `YYYY-MM-DD HH:MM:SS` in the server's local time.
fn time(field: &str, text: &str) -> Result<i64, String> {
    utc::parse_ms(text)
        .or_else(|| local_time::parse_ms(text))
        .ok_or_else(|| {
            format!(
                "{field}: expected an RFC 3339 time (2026-11-23T08:00:00Z) or a local time \
                 (2026-11-23 08:00:00), got {text:?}"
            )
        })
}

impl RawTask {
    fn validate(self, base: &Path) -> Result<Task, String> {
        let stream = stream_key("Stream", &self.stream)?;
        let default = match self.default_stream {
            Some(raw) => Some(
                source("DefaultStream.Source", &raw.r#type, &raw.source, base)
                    .map_err(|e| e.replace("Type:", "DefaultStream.Type:"))?,
            ),
            None => None,
        };
        if default == Some(Source::Live(stream.clone())) {
            return Err("DefaultStream.Source: the task's own output".into());
        }
        if self.blocks.len() > MAX_BLOCKS {
            return Err(format!("Blocks: more than {MAX_BLOCKS}"));
        }
        let mut blocks = Vec::with_capacity(self.blocks.len());
        for (b, block) in self.blocks.into_iter().enumerate() {
            let block = block
                .validate(base, &stream)
                .map_err(|e| format!("Blocks[{b}].{e}"))?;
            if blocks.iter().any(|other: &Block| other.id == block.id) {
                return Err(format!("Blocks[{b}].Id: {:?} is used twice", block.id));
            }
            blocks.push(block);
        }
        blocks.sort_by_key(|b| b.start_ms);
        let problem = blocks.windows(2).find_map(|pair| {
            (pair[0].end_ms() > pair[1].start_ms).then(|| {
                format!(
                    "blocks {:?} and {:?} overlap: the first runs {} ms past the start of the second",
                    pair[0].id,
                    pair[1].id,
                    pair[0].end_ms() - pair[1].start_ms
                )
            })
        });
        if self.scte35_markers.len() > MAX_MARKERS {
            return Err(format!("Scte35Markers: more than {MAX_MARKERS}"));
        }
        let mut markers = Vec::with_capacity(self.scte35_markers.len());
        for (m, marker) in self.scte35_markers.into_iter().enumerate() {
            let field = |name: &str| format!("Scte35Markers[{m}].{name}");
            let out = match marker.r#type.as_str() {
                "Out" | "out" => true,
                "In" | "in" => false,
                other => {
                    return Err(format!(
                        "{}: expected In or Out, got {other:?}",
                        field("Type")
                    ));
                }
            };
            if marker
                .duration
                .is_some_and(|d| d == 0 || d > MAX_DURATION_MS)
            {
                return Err(format!("{}: 1..={MAX_DURATION_MS} ms", field("Duration")));
            }
            markers.push(Marker {
                out,
                at_ms: time(&field("Start"), &marker.start)?,
                duration_ms: marker.duration.filter(|_| out),
            });
        }
        markers.sort_by_key(|m| m.at_ms);
        Ok(Task {
            stream,
            default,
            repeat: self.r#loop,
            blocks,
            markers,
            problem,
        })
    }
}

impl RawBlock {
    fn validate(self, base: &Path, output: &StreamKey) -> Result<Block, String> {
        if self.id.is_empty() || self.id.len() > 256 {
            return Err("Id: 1 to 256 bytes".into());
        }
        let start_ms = time("Start", &self.start)?;
        if self.streams.is_empty() || self.streams.len() > MAX_ENTRIES {
            return Err(format!("Streams: 1..={MAX_ENTRIES} entries are needed"));
        }
        let mut entries = Vec::with_capacity(self.streams.len());
        for (s, raw) in self.streams.into_iter().enumerate() {
            let at = |e: String| format!("Streams[{s}].{e}");
            let source = source("Source", &raw.r#type, &raw.source, base).map_err(at)?;
            if source == Source::Live(output.clone()) {
                return Err(at("Source: the task's own output".into()));
            }
            if raw.duration == 0 || raw.duration > MAX_DURATION_MS {
                return Err(at(format!("Duration: 1..={MAX_DURATION_MS} ms")));
            }
            entries.push(Entry {
                source,
                duration_ms: raw.duration,
                repeat: raw.r#loop,
            });
        }
        Ok(Block {
            id: self.id,
            start_ms,
            entries,
        })
    }
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;
