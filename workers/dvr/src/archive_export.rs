//! The archive as the MP4 export's [`ExportSource`]: the segments that overlap the
//! requested range, their samples from the keyframe at or before the start to the end,
//! on one timeline.
//!
//! Within a period the stream's own decode times are kept (relative); each period is
//! placed at its wall-clock offset from the first, so a gap between publishes stays a
//! gap in the file. An export covers one codec configuration: it ends where the
//! configuration changes (a new encoder setting, a publisher with other codecs).

use crate::archives::Archives;
use crate::export::{ExportSource, SelectError, Selection};
use bytes::Bytes;
use std::sync::Arc;
use strom_media::dvr::segment_file::tracks_of;
use strom_media::dvr::{SegmentEntry, read_segment, segment_file_name};
use strom_media::frame::Codec;
use strom_media::mp4::{ExportSample, MAX_EXPORT_SAMPLES};
use strom_media::sample::TrackKind;

pub struct ArchiveExport {
    /// The archives it reads.
    pub archives: Arc<Archives>,
}

/// Where a segment's samples go on the export timeline.
struct Placement {
    period: u32,
    /// Export dts of the period's first sample.
    base: i64,
    /// The period's first dts (its own timeline).
    first_dts: i64,
}

impl ExportSource for ArchiveExport {
    fn select(
        &self,
        app: &str,
        stream: &str,
        start: Option<i64>,
        end: Option<i64>,
    ) -> Result<Selection, SelectError> {
        if let (Some(start), Some(end)) = (start, end)
            && end < start
        {
            return Err(SelectError::Inverted);
        }
        let archive = self
            .archives
            .existing(app, stream)
            .map_err(|e| SelectError::Io(e.to_string()))?
            .ok_or(SelectError::NotFound)?;
        let start_ms = start.map_or(i64::MIN, |s| s.saturating_mul(1000));
        let end_ms = end.map_or(i64::MAX, |e| e.saturating_mul(1000));
        let entries: Vec<SegmentEntry> = archive
            .entries()
            .into_iter()
            .filter(|e| e.end_ms() > start_ms && e.start_ms < end_ms)
            .collect();
        let Some(first) = entries.first() else {
            return Err(SelectError::Empty);
        };
        let origin_ms = first.start_ms;
        let mut selection = Selection {
            tracks: Default::default(),
            samples: Vec::new(),
            files: Vec::new(),
            play_from: None,
        };
        let mut configs: Vec<(Codec, Bytes)> = Vec::new();
        let mut placement: Option<Placement> = None;
        // Where the segments placed so far end on the export timeline.
        let mut timeline_end = i64::MIN;
        // Collecting from the keyframe at or before the start: an earlier one is
        // replaced by a later one while that is still not after the start.
        let (mut collecting, mut locked, mut done) = (false, false, false);
        let mut from_dts = i64::MIN;
        for entry in &entries {
            if done {
                break;
            }
            let path = archive.dir().join(segment_file_name(entry.seq));
            let contents = read_segment(&path)
                .map_err(|e| SelectError::Io(format!("{}: {e}", path.display())))?;
            match merge_configs(&mut configs, &contents.configs) {
                Merge::Same => {}
                Merge::Added => selection.tracks = tracks_of(&configs),
                Merge::Changed => {
                    tracing::info!(
                        app,
                        stream,
                        seq = entry.seq,
                        "MP4 export ends at a codec change"
                    );
                    break;
                }
            }
            let place = match &placement {
                Some(p) if p.period == entry.period => p,
                // A new period starts at its wall-clock offset, but never before the end
                // of the previous one: media time can run up to the re-anchoring margin
                // ahead of the clock, and decode times must only grow.
                _ => placement.insert(Placement {
                    period: entry.period,
                    base: ((entry.start_ms - origin_ms) * 90).max(timeline_end),
                    first_dts: entry.start_dts,
                }),
            };
            timeline_end = timeline_end
                .max(place.base + entry.start_dts + entry.duration as i64 - place.first_dts);
            let file = selection.files.len() as u32;
            selection.files.push(path);
            let has_video = selection.tracks.video.is_some();
            for record in &contents.samples {
                let wall_ms = entry.start_ms + (record.dts - entry.start_dts) / 90;
                if wall_ms >= end_ms {
                    done = true;
                    break;
                }
                let dts = place.base + record.dts - place.first_dts;
                let starts_here =
                    !has_video || (record.kind == TrackKind::Video && record.keyframe);
                if starts_here && !locked {
                    if wall_ms <= start_ms {
                        selection.samples.clear();
                    } else {
                        locked = true;
                    }
                    if !collecting || wall_ms <= start_ms {
                        from_dts = dts;
                    }
                    collecting = true;
                }
                if !collecting || dts < from_dts {
                    continue;
                }
                if selection.samples.len() >= MAX_EXPORT_SAMPLES {
                    return Err(SelectError::Io(format!(
                        "the range holds more than {MAX_EXPORT_SAMPLES} samples: export a shorter one"
                    )));
                }
                selection.samples.push(ExportSample {
                    kind: record.kind,
                    dts,
                    pts: dts + (record.pts - record.dts),
                    keyframe: record.keyframe,
                    size: record.size,
                    file,
                    offset: record.offset,
                });
            }
        }
        let Some(first_sample) = selection.samples.first() else {
            return Err(SelectError::Empty);
        };
        let first_dts = first_sample.dts;
        let first_wall_ms = origin_ms + first_dts / 90;
        for sample in &mut selection.samples {
            sample.dts -= first_dts;
            sample.pts -= first_dts;
        }
        if start.is_some() && start_ms > first_wall_ms {
            selection.play_from = Some((start_ms - first_wall_ms) * 90);
        }
        Ok(selection)
    }
}

enum Merge {
    Same,
    /// A track the export did not have yet (audio whose configuration came after the
    /// first segment began): it joins, starting later.
    Added,
    /// A track's configuration differs: the export ends here.
    Changed,
}

/// Adds `segment`'s configuration frames to `known`, one per track.
fn merge_configs(known: &mut Vec<(Codec, Bytes)>, segment: &[(Codec, Bytes)]) -> Merge {
    let mut merge = Merge::Same;
    for (codec, record) in segment {
        match known.iter().find(|(k, _)| k.track() == codec.track()) {
            Some((k, r)) if k != codec || r != record => return Merge::Changed,
            Some(_) => {}
            None => {
                known.push((*codec, record.clone()));
                merge = Merge::Added;
            }
        }
    }
    merge
}
