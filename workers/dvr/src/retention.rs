//! Removing old content: the configured depth and size of each archive (after every
//! segment it records), cleanup requests from the API, and the free-space floor (the
//! oldest segments of all archives go first, with a warning).

use crate::archives::{Archives, SharedArchive, space_available};
use std::io;
use std::sync::Arc;
use std::time::Duration;
use strom_media::dvr::SegmentEntry;
use strom_stream::StreamKey;
use strom_worker_runtime::clock::unix_now_ms;
use tokio_util::sync::CancellationToken;

const FLOOR_CHECK_EVERY: Duration = Duration::from_secs(10);
/// Segments one floor check may remove: a bound on one round's work.
const FLOOR_ROUND_SEGMENTS: usize = 10_000;

/// Keeps `archive` within `depth_minutes` before `now_ms` and `max_bytes` (0: no limit).
pub fn enforce_limits(
    archive: &SharedArchive,
    depth_minutes: u32,
    max_bytes: u64,
    now_ms: i64,
) -> io::Result<(usize, u64)> {
    let mut removed = (0, 0);
    if depth_minutes > 0 {
        let horizon = now_ms - i64::from(depth_minutes) * 60_000;
        let gone = archive.remove(|e| e.end_ms() <= horizon)?;
        removed = (removed.0 + gone.0, removed.1 + gone.1);
    }
    if max_bytes > 0 {
        let entries = archive.entries();
        let mut total: u64 = entries.iter().map(|e| e.bytes).sum();
        let mut last_removed = None;
        for entry in &entries {
            if total <= max_bytes {
                break;
            }
            total -= entry.bytes;
            last_removed = Some(entry.seq);
        }
        if let Some(last) = last_removed {
            let gone = archive.remove(|e| e.seq <= last)?;
            removed = (removed.0 + gone.0, removed.1 + gone.1);
        }
    }
    Ok(removed)
}

/// What `cleanup_archive` removes: whole segments matching every given bound.
#[derive(Debug, Clone, Copy, Default)]
pub struct CleanupBounds {
    /// Keep the last N minutes (before now).
    pub target_depth_minutes: Option<u64>,
    /// Only content recorded after this (Unix seconds).
    pub from: Option<i64>,
    /// Only content recorded before this (Unix seconds).
    pub to: Option<i64>,
}

impl CleanupBounds {
    pub fn removes(&self, entry: &SegmentEntry, now_ms: i64) -> bool {
        let depth_ok = self.target_depth_minutes.is_none_or(|minutes| {
            let minutes = i64::try_from(minutes).unwrap_or(i64::MAX / 120_000);
            entry.end_ms() <= now_ms.saturating_sub(minutes.saturating_mul(60_000))
        });
        let from_ok = self
            .from
            .is_none_or(|from| entry.start_ms >= from.saturating_mul(1000));
        let to_ok = self
            .to
            .is_none_or(|to| entry.end_ms() <= to.saturating_mul(1000));
        depth_ok && from_ok && to_ok
    }
}

pub fn cleanup(archive: &SharedArchive, bounds: CleanupBounds) -> io::Result<(usize, u64)> {
    let now_ms = unix_now_ms();
    archive.remove(|e| bounds.removes(e, now_ms))
}

/// Checks the free space of the archive filesystem every few seconds and removes the
/// oldest segments while it is below `floor_bytes()`.
pub async fn floor_loop(
    archives: Arc<Archives>,
    floor_bytes: impl Fn() -> u64 + Send + Sync + 'static,
    shutdown: CancellationToken,
) {
    let floor_bytes = Arc::new(floor_bytes);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(FLOOR_CHECK_EVERY) => {}
        }
        let (archives, floor_bytes) = (Arc::clone(&archives), Arc::clone(&floor_bytes));
        let round = tokio::task::spawn_blocking(move || keep_floor(&archives, floor_bytes()));
        match round.await {
            Ok(Err(e)) => tracing::warn!(error = %e, "DVR free-space check failed"),
            Err(e) => tracing::warn!(error = %e, "DVR free-space check did not finish"),
            Ok(Ok(())) => {}
        }
    }
}

fn keep_floor(archives: &Archives, floor: u64) -> io::Result<()> {
    if floor == 0 || space_available(&archives.root()) >= floor {
        return Ok(());
    }
    let keys = archives.keys()?;
    let mut removed = (0usize, 0u64);
    while removed.0 < FLOOR_ROUND_SEGMENTS && space_available(&archives.root()) < floor {
        // One archive open at a time (see `archives`): the oldest start of each, then
        // the archive that has the oldest.
        let mut oldest: Option<(i64, &StreamKey)> = None;
        for key in &keys {
            let start = archives
                .existing(&key.app, &key.stream)?
                .and_then(|archive| archive.oldest_start_ms());
            if let Some(start) = start
                && oldest.is_none_or(|(earliest, _)| start < earliest)
            {
                oldest = Some((start, key));
            }
        }
        let Some((start, key)) = oldest else {
            break;
        };
        let Some(archive) = archives.existing(&key.app, &key.stream)? else {
            break;
        };
        let gone = archive.remove(|e| e.start_ms <= start)?;
        if gone.0 == 0 {
            break;
        }
        removed = (removed.0 + gone.0, removed.1 + gone.1);
    }
    if removed.0 > 0 {
        tracing::warn!(
            segments = removed.0,
            bytes = removed.1,
            floor_bytes = floor,
            available = space_available(&archives.root()),
            "DVR free space below the floor: oldest recordings removed"
        );
    } else {
        tracing::warn!(
            floor_bytes = floor,
            "DVR free space below the floor and nothing left to remove"
        );
    }
    Ok(())
}
