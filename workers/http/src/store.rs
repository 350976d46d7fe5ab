//! The segments of every packaged stream: a sliding window in memory, mirrored to
//! `run_dir/hls/<app>/<stream>/` so that a restarted packager serves the same playlist
//! and segments at once and continues the media sequence with a discontinuity.
//!
//! What is held is bounded:
//! - a stream whose producer is gone (unpublished, not back) keeps being served for the
//!   grace time (`hls_stream_grace`), then is freed in memory and on disk, and its
//!   playlist and segments answer 404 ([`Store::expire_ended`]);
//! - the segments of all streams together stay within `max_ram_cache_size`
//!   ([`Store::enforce_ram_limit`]); the disk mirror holds the same segments.
//!
//! Every filesystem path is built from a checked name: [`stream_dir`] and [`app_dir`]
//! refuse what `strom_ipc::names` refuses, so no announced or requested name can reach
//! outside `run_dir/hls`.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use strom_ipc::names::{self, NameError};
use strom_media::hls::playlist::{SegmentEntry, Variant, master_playlist, media_playlist};
use strom_worker_runtime::sync::locked;

mod exercise;
mod low_latency;

pub use exercise::exercise_restore;
pub use low_latency::LlPosition;

/// Segments listed in a live playlist.
pub const PLAYLIST_WINDOW: usize = 6;
/// Segments listed in a Low-Latency HLS playlist: more than 6 target durations, so that
/// delta updates (`CAN-SKIP-UNTIL`, 6 target durations) have segments to skip.
pub const LL_PLAYLIST_WINDOW: usize = 10;
/// Segments kept beyond the window, so a player that read an older playlist still gets
/// every segment it lists.
const GRACE_SEGMENTS: usize = 4;
/// Under memory pressure live playlists are shrunk to this many segments before any is
/// shrunk further (players want about three target durations of live edge).
const MIN_LIVE_SEGMENTS: usize = 3;
/// The playlist index in a stream's directory.
const INDEX: &str = "index.json";
/// Directories of freed streams are renamed to `<root>/.gone-<n>` (a name no stream can
/// have) and deleted from there; a restart deletes leftovers.
const TRASH_PREFIX: &str = ".gone-";
/// "Over max_ram_cache_size and nothing left to evict" is logged at most this often.
const OVER_LIMIT_WARNING: Duration = Duration::from_secs(60);

/// The directory of `app/stream` under `root`: the only way a stream's path is built.
/// Names that `strom_ipc::names` refuses (`..`, `/`, empty, hidden, too long, ...) get
/// no path at all.
pub fn stream_dir(root: &Path, app: &str, stream: &str) -> Result<PathBuf, NameError> {
    names::check_pair(app, stream)?;
    Ok(root.join(app).join(stream))
}

/// The directory of an application under `root`, for a checked name only.
pub fn app_dir(root: &Path, app: &str) -> Result<PathBuf, NameError> {
    names::check_app(app)?;
    Ok(root.join(app))
}

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
    /// Playlist tags before the segment (SCTE-35 breaks); absent in older indexes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The segment starts with a keyframe; absent (true) in older indexes.
    #[serde(default = "independent_by_default")]
    pub independent: bool,
    /// Where its tracks' fragments lie (DASH); absent in older indexes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dash: Option<DashParts>,
    /// The SCTE-35 splice_info_sections the segment starts with (base64), for DASH
    /// `EventStream`s; absent in older indexes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scte35: Vec<String>,
}

/// A segment's tracks as DASH serves them: each track's fragment is a byte range of the
/// fMP4 segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DashParts {
    pub video: Option<DashTrack>,
    pub audio: Option<DashTrack>,
    /// The DASH period the segment belongs to (a run of segments with one timeline and
    /// init segment) starts at this wall-clock time (Unix ms) and media time (90 kHz).
    pub period_ms: i64,
    pub period_time: i64,
}

/// One track's fragment in a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DashTrack {
    /// `tfdt` and duration, in `timescale`.
    pub start: u64,
    pub duration: u64,
    pub timescale: u32,
    /// Byte range in the fMP4 segment.
    pub offset: u32,
    pub len: u32,
}

/// What a DASH manifest lists of a stream.
#[derive(Debug, Clone, Default)]
pub struct DashListing {
    /// Sequence number, init segment id and parts of each segment in the live window.
    pub segments: Vec<(u64, u64, DashParts)>,
    pub codecs: String,
    pub width: u32,
    pub height: u32,
    pub frame_rate: Option<f64>,
    pub target_duration: u32,
    /// The stream is gone for good (its HLS playlists have `#EXT-X-ENDLIST`).
    pub ended: bool,
    /// Its `availabilityStartTime` (Unix ms), once it has had DASH parts.
    pub epoch_ms: Option<i64>,
    /// SCTE-35 sections (base64) of the listed segments, by sequence number, in order.
    pub scte35: Vec<(u64, String)>,
}

fn independent_by_default() -> bool {
    true
}

/// What the packager knows of a segment besides its bytes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SegmentFacts {
    /// RFC 6381 codec strings of the stream, comma-separated.
    pub codecs: String,
    pub width: u32,
    pub height: u32,
    /// Video frames per second over the segment.
    pub frame_rate: Option<f64>,
    /// The segment starts with a keyframe (or has no video).
    pub independent: bool,
    pub dash: Option<DashParts>,
    /// The SCTE-35 sections the segment starts with (base64).
    pub scte35: Vec<String>,
}

/// Playlist-level facts (persisted).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamMeta {
    pub codecs: String,
    pub width: u32,
    pub height: u32,
    pub bandwidth: u64,
    /// `#EXT-X-TARGETDURATION`: fixed when the playlist starts (RFC 8216 forbids a
    /// change), kept across publishers and packager restarts.
    pub target_duration: u32,
    /// Video frames per second, from the latest segment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_rate: Option<f64>,
    pub discontinuity_sequence: u64,
    pub next_sequence: u64,
    pub segments: Vec<SegmentMeta>,
    /// The DASH `availabilityStartTime` (Unix ms): where the stream's first DASH period
    /// started, kept for its life (across publishers and packager restarts), as a
    /// manifest's must not change from one update to the next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dash_epoch_ms: Option<i64>,
}

#[derive(Debug, Default)]
struct StreamState {
    meta: StreamMeta,
    segments: VecDeque<Segment>,
    inits: HashMap<u64, InitSegments>,
    /// The next segment follows a break in the timeline.
    pending_discontinuity: bool,
    /// Media playlists (TS, fMP4, LL-HLS, LL-HLS delta update) rendered once per
    /// segment (or part) change, with a session placeholder: a chunklist request only
    /// fills in its session id.
    rendered: [Option<String>; 4],
    /// Low-Latency HLS parts (none unless the stream is delivered as LL-HLS).
    parts: crate::parts::PartLists,
    /// Since when the stream has no producer (`None` while it is packaged).
    ended: Option<Instant>,
}

impl StreamState {
    /// Drops the oldest segment, keeping the playlist's discontinuity count right.
    fn pop_front(&mut self) -> Option<Segment> {
        let old = self.segments.pop_front()?;
        if old.entry.discontinuity {
            self.meta.discontinuity_sequence = self.meta.discontinuity_sequence.saturating_add(1);
        }
        self.rendered = Default::default();
        Some(old)
    }

    fn ram_bytes(&self) -> u64 {
        self.segments
            .iter()
            .map(|s| (s.ts.len() + s.m4s.len()) as u64)
            .sum::<u64>()
            + self.inits.values().map(InitSegments::len).sum::<u64>()
            + self.parts.bytes()
    }

    /// Segments the media playlists list.
    fn window(&self) -> usize {
        match self.parts.part_target_secs() {
            Some(_) => LL_PLAYLIST_WINDOW,
            None => PLAYLIST_WINDOW,
        }
    }

    fn sync_meta(&mut self) -> StreamMeta {
        self.meta.segments = self.segments.iter().map(|s| s.entry.clone()).collect();
        self.meta.clone()
    }
}

/// The files a stream has in its directory, by name, with their sizes.
#[derive(Debug, Default)]
struct Disk {
    /// The stream was freed: nothing is written any more.
    removed: bool,
    files: HashMap<String, u64>,
}

/// One packaged stream.
#[derive(Debug)]
pub struct HlsStream {
    app: String,
    stream: String,
    dir: PathBuf,
    /// Held across a change and its mirroring, so the disk sees changes in order.
    /// Lock order: the store's map, then `disk`, then `state`.
    disk: Mutex<Disk>,
    state: Mutex<StreamState>,
    /// Bytes of segments and init segments held in memory.
    ram: AtomicU64,
    /// Bytes of this stream's files in the disk mirror.
    disk_bytes: AtomicU64,
    /// How long after its producer left the playlist gets `#EXT-X-ENDLIST`: the stream
    /// is gone for good, and a later publisher starts a new playlist.
    endlist_after: Duration,
    /// Bumped at every new segment or part: blocking playlist reloads wait on it.
    version: tokio::sync::watch::Sender<u64>,
}

impl HlsStream {
    fn new(app: &str, stream: &str, dir: PathBuf, endlist_after: Duration) -> Self {
        Self {
            app: app.to_owned(),
            stream: stream.to_owned(),
            dir,
            disk: Mutex::new(Disk::default()),
            state: Mutex::new(StreamState::default()),
            ram: AtomicU64::new(0),
            disk_bytes: AtomicU64::new(0),
            endlist_after,
            version: tokio::sync::watch::Sender::new(0),
        }
    }

    /// The playlist's target duration once fixed (by its first segment).
    pub fn fixed_target_duration(&self) -> Option<u32> {
        Some(locked(&self.state).meta.target_duration).filter(|t| *t > 0)
    }

    /// The playlist's `#EXT-X-TARGETDURATION`: the one it has, or `configured` (the
    /// segmenter's decision) for a playlist that starts now.
    pub fn target_duration(&self, configured: u32) -> u32 {
        let mut state = locked(&self.state);
        if state.meta.target_duration == 0 {
            state.meta.target_duration = configured.max(1);
        }
        state.meta.target_duration
    }

    /// Whether the playlist has ended (`#EXT-X-ENDLIST`): its producer has been gone
    /// for `endlist_after`.
    fn closed(&self, state: &StreamState) -> bool {
        state
            .ended
            .is_some_and(|since| since.elapsed() >= self.endlist_after)
    }

    /// The next segment starts a new timeline (a new publisher, or a restart).
    pub fn mark_discontinuity(&self) {
        locked(&self.state).pending_discontinuity = true;
    }

    pub fn add_init(&self, id: u64, bytes: Bytes) {
        self.add_inits(
            id,
            InitSegments {
                muxed: bytes,
                ..InitSegments::default()
            },
        );
    }

    /// Adds the init segments of `id`: the HLS one and those of each track alone.
    pub fn add_inits(&self, id: u64, inits: InitSegments) {
        let mut disk = locked(&self.disk);
        let [muxed, video, audio] = init_names(id);
        self.persist(&mut disk, muxed, &inits.muxed);
        for (name, bytes) in [(video, &inits.video), (audio, &inits.audio)] {
            if let Some(bytes) = bytes {
                self.persist(&mut disk, name, bytes);
            }
        }
        self.disk_bytes
            .store(disk.files.values().sum(), Ordering::Relaxed);
        let mut state = locked(&self.state);
        state.inits.insert(id, inits);
        self.ram.store(state.ram_bytes(), Ordering::Relaxed);
    }

    /// Adds a finished segment (with the playlist `tags` that go before it); returns its
    /// sequence number.
    #[allow(clippy::too_many_arguments)]
    pub fn add_segment(
        &self,
        duration_secs: f64,
        program_date_time_ms: i64,
        init_id: u64,
        ts: Bytes,
        m4s: Bytes,
        facts: SegmentFacts,
        tags: Vec<String>,
    ) -> u64 {
        let mut disk = locked(&self.disk);
        let mut state = locked(&self.state);
        let sequence = state.meta.next_sequence;
        state.meta.next_sequence = sequence.saturating_add(1);
        let discontinuity =
            std::mem::take(&mut state.pending_discontinuity) && !state.segments.is_empty();
        if state.meta.dash_epoch_ms.is_none() {
            state.meta.dash_epoch_ms = facts.dash.map(|d| d.period_ms);
        }
        let entry = SegmentMeta {
            sequence,
            duration_secs,
            program_date_time_ms,
            discontinuity,
            init_id,
            tags,
            independent: facts.independent,
            dash: facts.dash,
            scte35: facts.scte35,
        };
        let bits = (ts.len() as f64 * 8.0 / duration_secs.max(0.1)) as u64;
        state.meta.bandwidth = state.meta.bandwidth.max(bits);
        state.meta.codecs = facts.codecs;
        state.meta.width = facts.width;
        state.meta.height = facts.height;
        state.meta.frame_rate = facts.frame_rate.or(state.meta.frame_rate);
        if state.meta.target_duration == 0 {
            state.meta.target_duration = duration_secs.round().max(1.0) as u32;
        }
        state.segments.push_back(Segment {
            entry,
            ts: ts.clone(),
            m4s: m4s.clone(),
        });
        state.rendered = Default::default();
        let mut expired = Vec::new();
        while state.segments.len() > state.window() + GRACE_SEGMENTS {
            if let Some(old) = state.pop_front() {
                expired.push(old.entry.sequence);
            }
        }
        let used: Vec<u64> = state.segments.iter().map(|s| s.entry.init_id).collect();
        let mut dropped_inits = Vec::new();
        state.inits.retain(|id, _| {
            let keep = used.contains(id) || *id == init_id;
            if !keep {
                dropped_inits.push(*id);
            }
            keep
        });
        let next = state.meta.next_sequence;
        state.parts.prune(next);
        let meta = state.sync_meta();
        self.ram.store(state.ram_bytes(), Ordering::Relaxed);
        drop(state);
        self.version.send_modify(|v| *v = v.wrapping_add(1));
        // Mirrored to disk after the state lock is released: requests for the stream
        // never wait on the disk. Segment files first, then the index that lists them.
        for (extension, bytes) in [("ts", &ts), ("m4s", &m4s)] {
            self.persist(&mut disk, format!("{sequence}.{extension}"), bytes);
        }
        self.persist_index(&mut disk, &meta);
        for old in expired {
            for extension in ["ts", "m4s"] {
                self.unpersist(&mut disk, &format!("{old}.{extension}"));
            }
        }
        for id in dropped_inits {
            for name in init_names(id) {
                self.unpersist(&mut disk, &name);
            }
        }
        self.disk_bytes
            .store(disk.files.values().sum(), Ordering::Relaxed);
        sequence
    }

    /// Drops the oldest segment if more than `keep` are held, in memory and on disk;
    /// returns the bytes freed in memory.
    fn evict_front(&self, keep: usize) -> u64 {
        let mut disk = locked(&self.disk);
        let mut state = locked(&self.state);
        if state.segments.len() <= keep {
            return 0;
        }
        let Some(old) = state.pop_front() else {
            return 0;
        };
        let meta = state.sync_meta();
        self.ram.store(state.ram_bytes(), Ordering::Relaxed);
        drop(state);
        let sequence = old.entry.sequence;
        self.unpersist(&mut disk, &format!("{sequence}.ts"));
        self.unpersist(&mut disk, &format!("{sequence}.m4s"));
        self.persist_index(&mut disk, &meta);
        self.disk_bytes
            .store(disk.files.values().sum(), Ordering::Relaxed);
        (old.ts.len() + old.m4s.len()) as u64
    }

    /// Age (program date-time) of the oldest segment and how many segments are held.
    fn front(&self) -> Option<(i64, usize)> {
        let state = locked(&self.state);
        let first = state.segments.front()?;
        Some((first.entry.program_date_time_ms, state.segments.len()))
    }

    fn persist(&self, disk: &mut Disk, name: String, bytes: &[u8]) {
        if disk.removed {
            return;
        }
        let path = self.dir.join(&name);
        match write_file(&path, bytes) {
            Ok(()) => {
                disk.files.insert(name, bytes.len() as u64);
            }
            Err(e) => tracing::warn!(path = %path.display(), error = %e, "hls file not persisted"),
        }
    }

    fn persist_index(&self, disk: &mut Disk, meta: &StreamMeta) {
        self.persist(
            disk,
            INDEX.to_owned(),
            &serde_json::to_vec(meta).unwrap_or_default(),
        );
    }

    fn unpersist(&self, disk: &mut Disk, name: &str) {
        if disk.files.remove(name).is_some() {
            let _ = std::fs::remove_file(self.dir.join(name));
        }
    }

    /// The stream has no producer any more (its grace time starts), or has one again: a
    /// producer back after the playlist ended starts a new one (RFC 8216: nothing changes
    /// after `#EXT-X-ENDLIST`). Its segment numbers go on from the old ones, so no
    /// segment URL (cached as immutable) ever names other media.
    fn set_ended(&self, ended: bool) {
        let mut disk = locked(&self.disk);
        let mut state = locked(&self.state);
        let restart = !ended && self.closed(&state);
        state.ended = match (ended, state.ended) {
            (true, Some(since)) => Some(since),
            (true, None) => Some(Instant::now()),
            (false, _) => None,
        };
        if !restart {
            return;
        }
        let mut gone = Vec::new();
        while let Some(old) = state.pop_front() {
            gone.push(old.entry.sequence);
        }
        let inits: Vec<u64> = state.inits.drain().map(|(id, _)| id).collect();
        state.meta.target_duration = 0;
        state.meta.bandwidth = 0;
        state.pending_discontinuity = false;
        let meta = state.sync_meta();
        self.ram.store(state.ram_bytes(), Ordering::Relaxed);
        drop(state);
        tracing::info!(app = %self.app, stream = %self.stream, "publisher back after the playlist ended: new playlist");
        for sequence in gone {
            self.unpersist(&mut disk, &format!("{sequence}.ts"));
            self.unpersist(&mut disk, &format!("{sequence}.m4s"));
        }
        for id in inits {
            for name in init_names(id) {
                self.unpersist(&mut disk, &name);
            }
        }
        self.persist_index(&mut disk, &meta);
        self.disk_bytes
            .store(disk.files.values().sum(), Ordering::Relaxed);
    }

    fn ended_for(&self) -> Option<Duration> {
        locked(&self.state).ended.map(|since| since.elapsed())
    }

    /// Segments its media playlists list.
    fn window(&self) -> usize {
        locked(&self.state).window()
    }

    pub fn has_segments(&self) -> bool {
        !locked(&self.state).segments.is_empty()
    }

    pub fn ram_bytes(&self) -> u64 {
        self.ram.load(Ordering::Relaxed)
    }

    pub fn disk_bytes(&self) -> u64 {
        self.disk_bytes.load(Ordering::Relaxed)
    }

    /// The master playlist for the TS (`fmp4 == false`) or fMP4 variant; `session`
    /// `None`: the viewer has no session and its URLs carry none.
    pub fn master(&self, fmp4: bool, session: Option<u128>) -> String {
        let variant = self.variant("", fmp4, session);
        master_playlist(&[variant], if fmp4 { 7 } else { 3 }, self.independent())
    }

    /// A variant entry pointing at this stream (from an ABR master elsewhere: with
    /// `uri_prefix`). Bandwidths are of the segments held, in the variant's format.
    pub fn variant(&self, uri_prefix: &str, fmp4: bool, session: Option<u128>) -> Variant {
        let state = locked(&self.state);
        let (peak, average) = bandwidths(&state, fmp4);
        Variant {
            bandwidth: if peak > 0 { peak } else { state.meta.bandwidth },
            average_bandwidth: Some(average).filter(|a| *a > 0),
            frame_rate: state.meta.frame_rate.filter(|_| state.meta.width > 0),
            resolution: Some((state.meta.width, state.meta.height)),
            codecs: state.meta.codecs.clone(),
            uri: format!("{uri_prefix}{}{}", chunklist(fmp4), session_query(session)),
        }
    }

    /// Whether every segment held starts with a keyframe (`#EXT-X-INDEPENDENT-SEGMENTS`).
    pub fn independent(&self) -> bool {
        locked(&self.state)
            .segments
            .iter()
            .all(|s| s.entry.independent)
    }

    pub fn media(&self, fmp4: bool, session: Option<u128>) -> String {
        let mut state = locked(&self.state);
        let slot = usize::from(fmp4);
        let template = match &state.rendered[slot] {
            Some(template) => template,
            None => {
                let rendered = render_media(&state, fmp4);
                state.rendered[slot].insert(rendered)
            }
        };
        let mut text = match session {
            Some(session) => template.replace(SESSION_PLACEHOLDER, &session.to_string()),
            None => template.replace(SESSION_QUERY, ""),
        };
        if self.closed(&state) {
            text.push_str("#EXT-X-ENDLIST\n");
        }
        text
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

    /// One track's fragment of a segment (DASH).
    pub fn dash_segment(&self, sequence: u64, audio: bool) -> Option<Bytes> {
        let state = locked(&self.state);
        let segment = state
            .segments
            .iter()
            .find(|s| s.entry.sequence == sequence)?;
        let parts = segment.entry.dash?;
        let track = if audio { parts.audio } else { parts.video }?;
        let start = track.offset as usize;
        let end = start.checked_add(track.len as usize)?;
        // An index read from disk may name any range.
        (end <= segment.m4s.len()).then(|| segment.m4s.slice(start..end))
    }

    /// One track's init segment (DASH).
    pub fn dash_init(&self, id: u64, audio: bool) -> Option<Bytes> {
        let state = locked(&self.state);
        let inits = state.inits.get(&id)?;
        if audio {
            inits.audio.clone()
        } else {
            inits.video.clone()
        }
    }

    /// Where the media of the newest segment ends on the DASH timeline (Unix ms), if it
    /// has DASH parts: where a period that follows it at once starts.
    pub fn dash_end_ms(&self) -> Option<i64> {
        let state = locked(&self.state);
        let parts = state.segments.back()?.entry.dash?;
        let track = parts.video.or(parts.audio)?;
        let timescale = i128::from(track.timescale.max(1));
        let anchor = i128::from(parts.period_time) * timescale / 90_000;
        let end = i128::from(track.start) + i128::from(track.duration) - anchor;
        i64::try_from(i128::from(parts.period_ms) + end * 1000 / timescale).ok()
    }

    /// The live window as a DASH manifest lists it.
    pub fn dash_listing(&self) -> DashListing {
        let state = locked(&self.state);
        let start = state.segments.len().saturating_sub(PLAYLIST_WINDOW);
        DashListing {
            segments: state
                .segments
                .iter()
                .skip(start)
                .filter_map(|s| Some((s.entry.sequence, s.entry.init_id, s.entry.dash?)))
                .collect(),
            codecs: state.meta.codecs.clone(),
            width: state.meta.width,
            height: state.meta.height,
            frame_rate: state.meta.frame_rate,
            target_duration: state.meta.target_duration,
            ended: self.closed(&state),
            epoch_ms: state.meta.dash_epoch_ms,
            scte35: state
                .segments
                .iter()
                .skip(start)
                .flat_map(|s| s.entry.scte35.iter().map(|m| (s.entry.sequence, m.clone())))
                .collect(),
        }
    }

    pub fn init(&self, id: u64) -> Option<Bytes> {
        locked(&self.state)
            .inits
            .get(&id)
            .map(|inits| inits.muxed.clone())
    }

    /// Reloads what a previous packager process left on disk, and deletes what the index
    /// does not list (files of a crash between writing a segment and the index).
    fn restore(&self) -> std::io::Result<()> {
        let mut disk = locked(&self.disk);
        let index = std::fs::read(self.dir.join(INDEX))?;
        let mut kept = self.restore_from(&index, |name| {
            std::fs::read(self.dir.join(name)).map(Bytes::from)
        })?;
        kept.insert(INDEX.to_owned(), index.len() as u64);
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                let listed = entry
                    .file_name()
                    .to_str()
                    .is_some_and(|n| kept.contains_key(n));
                if !listed && entry.file_type().is_ok_and(|t| t.is_file()) {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        disk.files = kept;
        self.disk_bytes
            .store(disk.files.values().sum(), Ordering::Relaxed);
        Ok(())
    }

    /// Loads the segments that `index` lists (their files as `read` finds them) into
    /// memory; returns the names and sizes of the files it used. Sans-io: the caller
    /// reads the index and keeps the disk in step.
    fn restore_from(
        &self,
        index: &[u8],
        read: impl Fn(&str) -> std::io::Result<Bytes>,
    ) -> std::io::Result<HashMap<String, u64>> {
        let meta = parse_index(index)?;
        let mut kept: HashMap<String, u64> = HashMap::new();
        let mut state = locked(&self.state);
        for entry in &meta.segments {
            let names = [
                format!("{}.ts", entry.sequence),
                format!("{}.m4s", entry.sequence),
            ];
            let (Ok(ts), Ok(m4s)) = (read(&names[0]), read(&names[1])) else {
                continue;
            };
            let [muxed, video, audio] = init_names(entry.init_id);
            if !state.inits.contains_key(&entry.init_id)
                && let Ok(init) = read(&muxed)
            {
                kept.insert(muxed, init.len() as u64);
                let mut track = |name: String| {
                    let bytes = read(&name).ok()?;
                    kept.insert(name, bytes.len() as u64);
                    Some(bytes)
                };
                let inits = InitSegments {
                    muxed: init,
                    video: track(video),
                    audio: track(audio),
                };
                state.inits.insert(entry.init_id, inits);
            }
            let [ts_name, m4s_name] = names;
            kept.insert(ts_name, ts.len() as u64);
            kept.insert(m4s_name, m4s.len() as u64);
            state.segments.push_back(Segment {
                entry: entry.clone(),
                ts,
                m4s,
            });
        }
        state.meta = meta;
        state.sync_meta();
        state.rendered = Default::default();
        // Whatever comes next was produced by a different process: a new timeline.
        state.pending_discontinuity = true;
        self.ram.store(state.ram_bytes(), Ordering::Relaxed);
        Ok(kept)
    }

    /// Frees the stream: nothing more is written, memory is released and its directory
    /// is moved to `trash` (deleted by the caller, outside the store's lock).
    fn detach(&self, trash: &Path) -> Option<PathBuf> {
        let mut disk = locked(&self.disk);
        disk.removed = true;
        let had_files = !disk.files.is_empty();
        disk.files = HashMap::new();
        self.disk_bytes.store(0, Ordering::Relaxed);
        {
            let mut state = locked(&self.state);
            state.segments = VecDeque::new();
            state.inits = HashMap::new();
            state.rendered = Default::default();
            self.ram.store(0, Ordering::Relaxed);
        }
        match std::fs::rename(&self.dir, trash) {
            Ok(()) => Some(trash.to_owned()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                if had_files {
                    tracing::warn!(dir = %self.dir.display(), error = %e, "hls directory not moved away; deleting it in place");
                }
                let _ = std::fs::remove_dir_all(&self.dir);
                None
            }
        }
    }
}

/// The init segments of one timeline and codec configuration.
#[derive(Debug, Clone, Default)]
pub struct InitSegments {
    /// Both tracks (HLS fMP4).
    pub muxed: Bytes,
    /// The video track alone (DASH).
    pub video: Option<Bytes>,
    /// The audio track alone (DASH).
    pub audio: Option<Bytes>,
}

impl InitSegments {
    fn len(&self) -> u64 {
        [Some(&self.muxed), self.video.as_ref(), self.audio.as_ref()]
            .into_iter()
            .flatten()
            .map(|b| b.len() as u64)
            .sum()
    }
}

/// The files of init segment `id`: both tracks, video alone, audio alone.
fn init_names(id: u64) -> [String; 3] {
    [
        format!("init_{id}.mp4"),
        format!("init_{id}_video.mp4"),
        format!("init_{id}_audio.mp4"),
    ]
}

/// Stands for the viewer's session id in a cached media playlist.
const SESSION_PLACEHOLDER: &str = "{sid}";
/// The query that carries it; removed for a viewer without a session.
const SESSION_QUERY: &str = "?sid={sid}";

fn chunklist(fmp4: bool) -> &'static str {
    if fmp4 {
        "chunks_fmp4.m3u8"
    } else {
        "chunks.m3u8"
    }
}

fn session_query(session: Option<u128>) -> String {
    session.map(|id| format!("?sid={id}")).unwrap_or_default()
}

fn render_media(state: &StreamState, fmp4: bool) -> String {
    let (entries, discontinuity_sequence) = listed_entries(state, fmp4, PLAYLIST_WINDOW);
    media_playlist(
        &entries,
        state.meta.target_duration,
        discontinuity_sequence,
        if fmp4 { 7 } else { 3 },
    )
}

/// The last `window` segments as a media playlist lists them, and the playlist's
/// discontinuity sequence.
fn listed_entries(state: &StreamState, fmp4: bool, window: usize) -> (Vec<SegmentEntry>, u64) {
    let start = state.segments.len().saturating_sub(window);
    // Timeline breaks before the first listed segment (its own included: a playlist
    // never opens with a discontinuity tag) are counted, not listed.
    let discontinuity_sequence = state.meta.discontinuity_sequence.saturating_add(
        state
            .segments
            .iter()
            .take(start + 1)
            .filter(|s| s.entry.discontinuity)
            .count() as u64,
    );
    let entries: Vec<SegmentEntry> = state
        .segments
        .iter()
        .skip(start)
        .map(|s| SegmentEntry {
            sequence: s.entry.sequence,
            duration_secs: s.entry.duration_secs,
            program_date_time_ms: s.entry.program_date_time_ms,
            discontinuity: s.entry.discontinuity,
            map_uri: fmp4.then(|| format!("init_{}.mp4{SESSION_QUERY}", s.entry.init_id)),
            tags: s.entry.tags.clone(),
            independent: s.entry.independent,
            uri: format!(
                "seg_{}.{}{SESSION_QUERY}",
                s.entry.sequence,
                if fmp4 { "m4s" } else { "ts" }
            ),
        })
        .collect();
    (entries, discontinuity_sequence)
}

/// Peak and average bits per second of the segments held, in one format.
fn bandwidths(state: &StreamState, fmp4: bool) -> (u64, u64) {
    let (mut peak, mut bits, mut seconds) = (0u64, 0f64, 0f64);
    for segment in &state.segments {
        let bytes = if fmp4 { &segment.m4s } else { &segment.ts };
        let duration = segment.entry.duration_secs.max(0.1);
        let segment_bits = bytes.len() as f64 * 8.0;
        peak = peak.max((segment_bits / duration) as u64);
        bits += segment_bits;
        seconds += duration;
    }
    let average = if seconds > 0.0 {
        (bits / seconds) as u64
    } else {
        0
    };
    (peak, average)
}

fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let temporary = path.with_extension("part");
    std::fs::write(&temporary, bytes)?;
    std::fs::rename(&temporary, path)
}

/// Sequence numbers no stream reaches (a segment a second for 285 million years); an
/// index with larger ones is corrupt, and counting on from them could overflow.
const MAX_SEQUENCE: u64 = 1 << 53;

/// A stream directory's `index.json` as a previous process left it. Whatever is on disk
/// is read as untrusted bytes (a crash, a full disk or an operator may have changed it):
/// besides the JSON, the sequence numbers must be ones the store can count on from.
pub fn parse_index(bytes: &[u8]) -> std::io::Result<StreamMeta> {
    let invalid = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidData, why);
    let meta: StreamMeta = serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
    if meta.next_sequence > MAX_SEQUENCE || meta.discontinuity_sequence > MAX_SEQUENCE {
        return Err(invalid(format!(
            "sequence numbers over {MAX_SEQUENCE} (next {}, discontinuities {})",
            meta.next_sequence, meta.discontinuity_sequence
        )));
    }
    if let Some(segment) = meta
        .segments
        .iter()
        .find(|s| s.sequence >= meta.next_sequence)
    {
        return Err(invalid(format!(
            "segment {} listed at or after the next sequence number {}",
            segment.sequence, meta.next_sequence
        )));
    }
    Ok(meta)
}

/// What the store may hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes of segments in memory across all streams (`max_ram_cache_size`).
    pub max_ram_bytes: u64,
    /// How long an unpublished stream stays served (`hls_stream_grace`).
    pub grace: Duration,
}

impl Limits {
    /// An unpublished stream's playlist gets `#EXT-X-ENDLIST` halfway through its grace
    /// time: players stop cleanly, with the rest of the grace to fetch the last segments,
    /// before its URLs answer 404.
    pub fn endlist_after(&self) -> Duration {
        self.grace / 2
    }
}

type StreamKey = (String, String);

/// Every packaged stream of the worker.
#[derive(Debug)]
pub struct Store {
    root: PathBuf,
    limits: Limits,
    streams: Mutex<HashMap<StreamKey, Arc<HlsStream>>>,
    /// One eviction pass at a time (passes run after every segment and periodically).
    enforcing: Mutex<()>,
    trash_counter: AtomicU64,
    over_limit_warned: Mutex<Option<Instant>>,
}

impl Store {
    pub fn new(run_dir: &Path, limits: Limits) -> Self {
        Self {
            root: run_dir.join("hls"),
            limits,
            streams: Mutex::new(HashMap::new()),
            enforcing: Mutex::new(()),
            trash_counter: AtomicU64::new(0),
            over_limit_warned: Mutex::new(None),
        }
    }

    /// The stream, for a request; a name that fails the check is not looked up.
    pub fn get(&self, app: &str, stream: &str) -> Option<Arc<HlsStream>> {
        names::check_pair(app, stream).ok()?;
        locked(&self.streams)
            .get(&(app.to_owned(), stream.to_owned()))
            .cloned()
    }

    /// The stream to package into (live again if it had ended); `None` for a name that
    /// fails the check (logged): such a stream is never packaged or written.
    pub fn get_or_create(&self, app: &str, stream: &str) -> Option<Arc<HlsStream>> {
        let dir = match stream_dir(&self.root, app, stream) {
            Ok(dir) => dir,
            Err(e) => {
                tracing::warn!(app = ?app, stream = ?stream, error = %e, "stream not packaged: bad name");
                return None;
            }
        };
        let created = Arc::clone(
            locked(&self.streams)
                .entry((app.to_owned(), stream.to_owned()))
                .or_insert_with(|| {
                    Arc::new(HlsStream::new(
                        app,
                        stream,
                        dir,
                        self.limits.endlist_after(),
                    ))
                }),
        );
        created.set_ended(false);
        Some(created)
    }

    /// The stream's producer is gone: its grace time starts.
    pub fn mark_ended(&self, app: &str, stream: &str) {
        if let Some(hls) = self.get(app, stream) {
            hls.set_ended(true);
        }
    }

    /// Loads every stream a previous process left in `run_dir/hls`. They count as ended
    /// until the registry names them again.
    pub fn restore_all(&self) {
        let Ok(apps) = std::fs::read_dir(&self.root) else {
            return;
        };
        for app in apps.flatten() {
            let app_name = app.file_name();
            let Some(app_name) = app_name.to_str() else {
                tracing::warn!(dir = %app.path().display(), "not restored: not a UTF-8 name");
                continue;
            };
            if app_name.starts_with(TRASH_PREFIX) {
                let _ = std::fs::remove_dir_all(app.path());
                continue;
            }
            if let Err(e) = names::check_app(app_name) {
                tracing::warn!(dir = %app.path().display(), error = %e, "not restored: bad name");
                continue;
            }
            // Real directories only: a symbolic link could lead anywhere.
            if !app.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let Ok(streams) = std::fs::read_dir(app.path()) else {
                continue;
            };
            for stream in streams.flatten() {
                let stream_name = stream.file_name();
                let Some(stream_name) = stream_name.to_str() else {
                    tracing::warn!(dir = %stream.path().display(), "not restored: not a UTF-8 name");
                    continue;
                };
                if !stream.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                let Some(restored) = self.get_or_create(app_name, stream_name) else {
                    continue;
                };
                restored.set_ended(true);
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
        self.enforce_ram_limit();
    }

    /// Frees the streams whose grace time has passed, in memory and on disk; returns
    /// how many.
    pub fn expire_ended(&self) -> usize {
        let grace = self.limits.grace;
        self.remove_where(
            |hls| hls.ended_for().is_some_and(|d| d >= grace),
            usize::MAX,
        )
    }

    /// Removes up to `limit` streams that `doomed` picks (the oldest-ended first).
    fn remove_where(&self, doomed: impl Fn(&HlsStream) -> bool, limit: usize) -> usize {
        let mut trash = Vec::new();
        {
            let mut streams = locked(&self.streams);
            let mut picked: Vec<(Duration, StreamKey)> = streams
                .iter()
                .filter(|(_, hls)| doomed(hls))
                .map(|(key, hls)| (hls.ended_for().unwrap_or_default(), key.clone()))
                .collect();
            picked.sort_by_key(|(ended_for, _)| std::cmp::Reverse(*ended_for));
            for (_, key) in picked.into_iter().take(limit) {
                let Some(hls) = streams.remove(&key) else {
                    continue;
                };
                let n = self.trash_counter.fetch_add(1, Ordering::Relaxed);
                let to = self
                    .root
                    .join(format!("{TRASH_PREFIX}{}-{n}", std::process::id()));
                // Moved while the map is locked: a stream of the same name created right
                // after cannot have its new files swept away with the old ones.
                let moved = hls.detach(&to);
                tracing::info!(app = %hls.app, stream = %hls.stream, "hls stream freed");
                trash.push((hls, moved));
            }
            if streams.capacity() > 64 && streams.len() * 4 < streams.capacity() {
                streams.shrink_to_fit();
            }
        }
        let removed = trash.len();
        for (hls, moved) in trash {
            if let Some(moved) = moved
                && let Err(e) = std::fs::remove_dir_all(&moved)
            {
                tracing::warn!(dir = %moved.display(), error = %e, "freed hls directory not deleted");
            }
            // The application's directory goes when its last stream does.
            if let Ok(dir) = app_dir(&self.root, &hls.app) {
                let _ = std::fs::remove_dir(dir);
            }
        }
        removed
    }

    /// Keeps the segments held in memory within `max_ram_cache_size`, evicting (in
    /// memory and on disk) in the order that hurts players least:
    /// 1. segments no playlist lists any more (kept for players behind), oldest first;
    /// 2. streams that ended (within their grace time), the longest-ended first;
    /// 3. live playlists' oldest segments, oldest first across streams, down to
    ///    [`MIN_LIVE_SEGMENTS`] each, then down to the newest segment alone.
    ///
    /// The newest segment of a live stream is never evicted: if that is not enough, the
    /// limit is exceeded and a warning logged.
    pub fn enforce_ram_limit(&self) {
        let Ok(_pass) = self.enforcing.try_lock() else {
            return;
        };
        let limit = self.limits.max_ram_bytes;
        if self.ram_bytes() <= limit {
            return;
        }
        // Segments no playlist lists any more (LL-HLS playlists list more).
        self.evict_oldest(HlsStream::window, limit);
        while self.ram_bytes() > limit {
            if self.remove_where(|hls| hls.ended_for().is_some(), 1) == 0 {
                break;
            }
        }
        self.evict_oldest(|_| MIN_LIVE_SEGMENTS, limit);
        self.evict_oldest(|_| 1, limit);
        let held = self.ram_bytes();
        if held > limit {
            let mut warned = locked(&self.over_limit_warned);
            if warned.is_none_or(|at| at.elapsed() >= OVER_LIMIT_WARNING) {
                *warned = Some(Instant::now());
                tracing::warn!(
                    held,
                    limit,
                    "hls segments exceed max_ram_cache_size with only each live stream's newest segment left"
                );
            }
        }
    }

    /// Evicts the oldest segment across streams holding more than `keep`, until the
    /// total is within `limit` or no stream holds more than `keep`.
    fn evict_oldest(&self, keep: impl Fn(&HlsStream) -> usize, limit: u64) {
        let streams: Vec<Arc<HlsStream>> = locked(&self.streams).values().cloned().collect();
        let mut total: u64 = streams.iter().map(|s| s.ram_bytes()).sum();
        while total > limit {
            let oldest = streams
                .iter()
                .filter_map(|hls| {
                    let (age, held) = hls.front()?;
                    (held > keep(hls)).then_some((age, hls))
                })
                .min_by_key(|(age, _)| *age);
            let Some((_, hls)) = oldest else {
                return;
            };
            let freed = hls.evict_front(keep(hls));
            if freed == 0 {
                return;
            }
            total = total.saturating_sub(freed);
        }
    }

    /// Bytes of segments and init segments held in memory, all streams.
    pub fn ram_bytes(&self) -> u64 {
        locked(&self.streams).values().map(|s| s.ram_bytes()).sum()
    }

    /// Bytes of the disk mirror, all streams.
    pub fn disk_bytes(&self) -> u64 {
        locked(&self.streams).values().map(|s| s.disk_bytes()).sum()
    }

    /// The periodic part: frees ended streams, enforces the memory limit.
    pub fn maintain(&self) {
        self.expire_ended();
        self.enforce_ram_limit();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

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
            });
        }
        assert!(
            render_media(&state, false).contains("DISCONTINUITY-SEQUENCE:18446744073709551615")
        );
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
}
