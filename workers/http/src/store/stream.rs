//! One packaged stream ([`HlsStream`]): segments and init segments added as the
//! packager cuts them and mirrored to its directory, evicted and freed for the store,
//! restored from disk after a restart, and served as HLS playlists and segments and as
//! DASH fragments and listings. Its LL-HLS side is in `low_latency`.

use super::GRACE_SEGMENTS;
use super::PLAYLIST_WINDOW;
use super::dash_listing::DashListing;
use super::disk::{Disk, INDEX, init_names, parse_index, write_file};
use super::playlist::{
    SESSION_PLACEHOLDER, SESSION_QUERY, bandwidths, chunklist, render_media, session_query,
};
use super::segment::{Segment, SegmentFacts, SegmentMeta, StreamMeta};
use super::state::{InitSegments, StreamState};
use bytes::Bytes;
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use strom_media::hls::playlist::{Variant, master_playlist};
use strom_worker_runtime::sync::locked;

/// One packaged stream.
#[derive(Debug)]
pub struct HlsStream {
    pub(super) app: String,
    pub(super) stream: String,
    pub(super) dir: PathBuf,
    /// Held across a change and its mirroring, so the disk sees changes in order.
    /// Lock order: the store's map, then `disk`, then `state`.
    pub(super) disk: Mutex<Disk>,
    pub(super) state: Mutex<StreamState>,
    /// Bytes of segments and init segments held in memory.
    pub(super) ram: AtomicU64,
    /// Bytes of this stream's files in the disk mirror.
    pub(super) disk_bytes: AtomicU64,
    /// How long after its producer left the playlist gets `#EXT-X-ENDLIST`: the stream
    /// is gone for good, and a later publisher starts a new playlist.
    pub(super) endlist_after: Duration,
    /// Bumped at every new segment or part: blocking playlist reloads wait on it.
    pub(super) version: tokio::sync::watch::Sender<u64>,
}

impl HlsStream {
    pub(super) fn new(app: &str, stream: &str, dir: PathBuf, endlist_after: Duration) -> Self {
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
    pub(super) fn closed(&self, state: &StreamState) -> bool {
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
            dash: Default::default(),
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
    pub(super) fn evict_front(&self, keep: usize) -> u64 {
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
    pub(super) fn front(&self) -> Option<(i64, usize)> {
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
    pub(super) fn set_ended(&self, ended: bool) {
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

    pub(super) fn ended_for(&self) -> Option<Duration> {
        locked(&self.state).ended.map(|since| since.elapsed())
    }

    /// Segments its media playlists list.
    pub(super) fn window(&self) -> usize {
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
        super::dash_fragment::dash_fragment(segment, audio)
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
    pub(super) fn restore(&self) -> std::io::Result<()> {
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
    pub(super) fn restore_from(
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
                dash: Default::default(),
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
    pub(super) fn detach(&self, trash: &Path) -> Option<PathBuf> {
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
