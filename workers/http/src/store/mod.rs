//! The segments of every packaged stream: a sliding window in memory, mirrored to
//! `run_dir/hls/<app>/<stream>/` so that a restarted worker serves the same playlist
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
//!
//! What lives where: [`Store`] and its [`Limits`] here; one stream in `stream`
//! ([`HlsStream`]) with its locked state in `state` and its LL-HLS side in
//! `low_latency`; segments and their metadata in `segment`; the DASH listing types in
//! `dash_listing`; media playlist rendering in `playlist`; the disk mirror (paths, files,
//! the index) in `disk`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use strom_ipc::names;
use strom_worker_runtime::sync::locked;

mod dash_fragment;
mod dash_listing;
mod disk;
mod exercise;
mod low_latency;
mod playlist;
mod segment;
mod state;
mod stream;
#[cfg(test)]
mod tests;

pub use dash_listing::{DashListing, DashParts, DashTrack};
pub use disk::{app_dir, parse_index, stream_dir};
pub use exercise::exercise_restore;
pub use low_latency::LlPosition;
pub use segment::SegmentFacts;
pub use state::InitSegments;
pub use stream::HlsStream;

use disk::TRASH_PREFIX;

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
/// "Over max_ram_cache_size and nothing left to evict" is logged at most this often.
const OVER_LIMIT_WARNING: Duration = Duration::from_secs(60);

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
