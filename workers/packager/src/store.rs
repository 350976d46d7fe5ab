//! The segments of every packaged stream: a sliding window in memory, mirrored to
//! `run_dir/hls/<app>/<stream>/` so that a restarted packager serves the same playlist
//! and segments at once and continues the media sequence with a discontinuity.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use strom_media::hls::playlist::{SegmentEntry, Variant, master_playlist, media_playlist};
use strom_worker_runtime::sync::locked;

/// Segments listed in a live playlist.
pub const PLAYLIST_WINDOW: usize = 6;
/// Segments kept beyond the window, so a player that read an older playlist still gets
/// every segment it lists.
const GRACE_SEGMENTS: usize = 4;

/// One finished segment in both formats.
#[derive(Debug, Clone)]
pub struct Segment {
    pub entry: SegmentMeta,
    pub ts: Bytes,
    pub m4s: Bytes,
}

/// What the playlists need to know about a segment (persisted as JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentMeta {
    pub sequence: u64,
    pub duration_secs: f64,
    pub program_date_time_ms: i64,
    pub discontinuity: bool,
    pub init_id: u64,
}

/// Playlist-level facts (persisted).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamMeta {
    pub codecs: String,
    pub width: u32,
    pub height: u32,
    pub bandwidth: u64,
    pub target_duration: u32,
    pub discontinuity_sequence: u64,
    pub next_sequence: u64,
    pub segments: Vec<SegmentMeta>,
}

#[derive(Debug, Default)]
struct StreamState {
    meta: StreamMeta,
    segments: VecDeque<Segment>,
    inits: HashMap<u64, Bytes>,
    /// The next segment follows a break in the timeline.
    pending_discontinuity: bool,
    /// Media playlists (TS, fMP4) rendered once per segment change, with a session
    /// placeholder: a chunklist request only fills in its session id.
    rendered: [Option<String>; 2],
}

/// One packaged stream.
#[derive(Debug)]
pub struct HlsStream {
    dir: PathBuf,
    state: Mutex<StreamState>,
}

impl HlsStream {
    fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            state: Mutex::new(StreamState::default()),
        }
    }

    /// The next segment starts a new timeline (a new publisher, or a restart).
    pub fn mark_discontinuity(&self) {
        locked(&self.state).pending_discontinuity = true;
    }

    pub fn add_init(&self, id: u64, bytes: Bytes) {
        let path = self.dir.join(format!("init_{id}.mp4"));
        if let Err(e) = write_file(&path, &bytes) {
            tracing::warn!(path = %path.display(), error = %e, "init segment not persisted");
        }
        locked(&self.state).inits.insert(id, bytes);
    }

    /// Adds a finished segment; returns its sequence number.
    pub fn add_segment(
        &self,
        duration_secs: f64,
        program_date_time_ms: i64,
        init_id: u64,
        ts: Bytes,
        m4s: Bytes,
        facts: (String, u32, u32, u32),
    ) -> u64 {
        let (codecs, width, height, target_duration) = facts;
        let mut state = locked(&self.state);
        let sequence = state.meta.next_sequence;
        state.meta.next_sequence += 1;
        let discontinuity =
            std::mem::take(&mut state.pending_discontinuity) && !state.segments.is_empty();
        let entry = SegmentMeta {
            sequence,
            duration_secs,
            program_date_time_ms,
            discontinuity,
            init_id,
        };
        let bits = (ts.len() as f64 * 8.0 / duration_secs.max(0.1)) as u64;
        state.meta.bandwidth = state.meta.bandwidth.max(bits);
        state.meta.codecs = codecs;
        state.meta.width = width;
        state.meta.height = height;
        state.meta.target_duration = target_duration;
        state.segments.push_back(Segment {
            entry,
            ts: ts.clone(),
            m4s: m4s.clone(),
        });
        state.rendered = [None, None];
        let mut expired = Vec::new();
        while state.segments.len() > PLAYLIST_WINDOW + GRACE_SEGMENTS {
            if let Some(old) = state.segments.pop_front() {
                if old.entry.discontinuity {
                    state.meta.discontinuity_sequence += 1;
                }
                expired.push(old.entry.sequence);
            }
        }
        let used: Vec<u64> = state.segments.iter().map(|s| s.entry.init_id).collect();
        state
            .inits
            .retain(|id, _| used.contains(id) || *id == init_id);
        state.meta.segments = state.segments.iter().map(|s| s.entry.clone()).collect();
        let meta = state.meta.clone();
        drop(state);
        // Mirrored to disk after the lock is released: requests for the stream never wait
        // on the disk. Segment files first, then the index that lists them.
        for (extension, bytes) in [("ts", &ts), ("m4s", &m4s)] {
            let path = self.dir.join(format!("{sequence}.{extension}"));
            if let Err(e) = write_file(&path, bytes) {
                tracing::warn!(path = %path.display(), error = %e, "segment not persisted");
            }
        }
        if let Err(e) = write_file(
            &self.dir.join("index.json"),
            &serde_json::to_vec(&meta).unwrap_or_default(),
        ) {
            tracing::warn!(error = %e, "playlist index not persisted");
        }
        for old in expired {
            for extension in ["ts", "m4s"] {
                let _ = std::fs::remove_file(self.dir.join(format!("{old}.{extension}")));
            }
        }
        sequence
    }

    pub fn has_segments(&self) -> bool {
        !locked(&self.state).segments.is_empty()
    }

    pub fn ram_bytes(&self) -> u64 {
        let state = locked(&self.state);
        state
            .segments
            .iter()
            .map(|s| (s.ts.len() + s.m4s.len()) as u64)
            .sum::<u64>()
            + state.inits.values().map(|b| b.len() as u64).sum::<u64>()
    }

    /// The master playlist for the TS (`fmp4 == false`) or fMP4 variant.
    pub fn master(&self, fmp4: bool, session: u64) -> String {
        let state = locked(&self.state);
        let meta = &state.meta;
        let chunklist = if fmp4 {
            "chunks_fmp4.m3u8"
        } else {
            "chunks.m3u8"
        };
        let variant = Variant {
            bandwidth: meta.bandwidth,
            resolution: Some((meta.width, meta.height)),
            codecs: meta.codecs.clone(),
            uri: format!("{chunklist}?sid={session}"),
        };
        master_playlist(&[variant], if fmp4 { 7 } else { 3 })
    }

    /// A variant entry pointing at this stream from an ABR master elsewhere.
    pub fn variant(&self, uri_prefix: &str, fmp4: bool, session: u64) -> Variant {
        let state = locked(&self.state);
        let chunklist = if fmp4 {
            "chunks_fmp4.m3u8"
        } else {
            "chunks.m3u8"
        };
        Variant {
            bandwidth: state.meta.bandwidth,
            resolution: Some((state.meta.width, state.meta.height)),
            codecs: state.meta.codecs.clone(),
            uri: format!("{uri_prefix}{chunklist}?sid={session}"),
        }
    }

    pub fn media(&self, fmp4: bool, session: u64) -> String {
        let mut state = locked(&self.state);
        let slot = usize::from(fmp4);
        let template = match &state.rendered[slot] {
            Some(template) => template,
            None => {
                let rendered = render_media(&state, fmp4);
                state.rendered[slot].insert(rendered)
            }
        };
        template.replace(SESSION_PLACEHOLDER, &session.to_string())
    }

    pub fn segment(&self, sequence: u64, fmp4: bool) -> Option<Bytes> {
        let state = locked(&self.state);
        let segment = state
            .segments
            .iter()
            .find(|s| s.entry.sequence == sequence)?;
        Some(if fmp4 {
            segment.m4s.clone()
        } else {
            segment.ts.clone()
        })
    }

    pub fn init(&self, id: u64) -> Option<Bytes> {
        locked(&self.state).inits.get(&id).cloned()
    }

    /// Reloads what a previous packager process left on disk.
    fn restore(&self) -> std::io::Result<()> {
        let meta: StreamMeta = serde_json::from_slice(&std::fs::read(self.dir.join("index.json"))?)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        let mut state = locked(&self.state);
        for entry in &meta.segments {
            let read = |ext: &str| {
                std::fs::read(self.dir.join(format!("{}.{ext}", entry.sequence))).map(Bytes::from)
            };
            let (Ok(ts), Ok(m4s)) = (read("ts"), read("m4s")) else {
                continue;
            };
            if let Ok(init) = std::fs::read(self.dir.join(format!("init_{}.mp4", entry.init_id))) {
                state.inits.insert(entry.init_id, Bytes::from(init));
            }
            state.segments.push_back(Segment {
                entry: entry.clone(),
                ts,
                m4s,
            });
        }
        state.meta = meta;
        state.rendered = [None, None];
        // Whatever comes next was produced by a different process: a new timeline.
        state.pending_discontinuity = true;
        Ok(())
    }
}

/// Stands for the viewer's session id in a cached media playlist.
const SESSION_PLACEHOLDER: &str = "{sid}";

fn render_media(state: &StreamState, fmp4: bool) -> String {
    let start = state.segments.len().saturating_sub(PLAYLIST_WINDOW);
    // Timeline breaks before the first listed segment (its own included: a playlist
    // never opens with a discontinuity tag) are counted, not listed.
    let discontinuity_sequence = state.meta.discontinuity_sequence
        + state
            .segments
            .iter()
            .take(start + 1)
            .filter(|s| s.entry.discontinuity)
            .count() as u64;
    let entries: Vec<SegmentEntry> = state
        .segments
        .iter()
        .skip(start)
        .map(|s| SegmentEntry {
            sequence: s.entry.sequence,
            duration_secs: s.entry.duration_secs,
            program_date_time_ms: s.entry.program_date_time_ms,
            discontinuity: s.entry.discontinuity,
            map_uri: fmp4
                .then(|| format!("init_{}.mp4?sid={SESSION_PLACEHOLDER}", s.entry.init_id)),
            uri: format!(
                "seg_{}.{}?sid={SESSION_PLACEHOLDER}",
                s.entry.sequence,
                if fmp4 { "m4s" } else { "ts" }
            ),
        })
        .collect();
    media_playlist(
        &entries,
        state.meta.target_duration,
        discontinuity_sequence,
        if fmp4 { 7 } else { 3 },
    )
}

fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let temporary = path.with_extension("part");
    std::fs::write(&temporary, bytes)?;
    std::fs::rename(&temporary, path)
}

/// Every packaged stream of the worker.
#[derive(Debug)]
pub struct Store {
    root: PathBuf,
    streams: Mutex<HashMap<(String, String), Arc<HlsStream>>>,
}

impl Store {
    pub fn new(run_dir: &Path) -> Self {
        Self {
            root: run_dir.join("hls"),
            streams: Mutex::new(HashMap::new()),
        }
    }

    fn dir_for(&self, app: &str, stream: &str) -> PathBuf {
        self.root.join(app).join(stream)
    }

    pub fn get(&self, app: &str, stream: &str) -> Option<Arc<HlsStream>> {
        locked(&self.streams)
            .get(&(app.to_owned(), stream.to_owned()))
            .cloned()
    }

    pub fn get_or_create(&self, app: &str, stream: &str) -> Arc<HlsStream> {
        Arc::clone(
            locked(&self.streams)
                .entry((app.to_owned(), stream.to_owned()))
                .or_insert_with(|| Arc::new(HlsStream::new(self.dir_for(app, stream)))),
        )
    }

    /// Loads every stream a previous process left in `run_dir/hls`.
    pub fn restore_all(&self) {
        let Ok(apps) = std::fs::read_dir(&self.root) else {
            return;
        };
        for app in apps.flatten() {
            let Ok(streams) = std::fs::read_dir(app.path()) else {
                continue;
            };
            for stream in streams.flatten() {
                let (Some(app_name), Some(stream_name)) = (
                    app.file_name().to_str().map(str::to_owned),
                    stream.file_name().to_str().map(str::to_owned),
                ) else {
                    continue;
                };
                let restored = self.get_or_create(&app_name, &stream_name);
                match restored.restore() {
                    Ok(()) => {
                        tracing::info!(app = %app_name, stream = %stream_name, "restored HLS segments from disk")
                    }
                    Err(e) => {
                        tracing::debug!(app = %app_name, stream = %stream_name, error = %e, "nothing to restore")
                    }
                }
            }
        }
    }

    pub fn ram_bytes(&self) -> u64 {
        locked(&self.streams).values().map(|s| s.ram_bytes()).sum()
    }
}
