//! Packaging live streams into HLS: for each stream to package, a bus subscription feeds
//! the stream into the packager's own hub (`strom_stream::bus::subscriber`), and a
//! packaging task reads it there like any reader, cuts segments at keyframes and muxes
//! each into MPEG-TS and fMP4. Frames arrive neutral: no container is parsed here.
//!
//! A task outlives its producer: when the bus connection breaks (publisher gone, rtmp
//! worker restarting) the segments stay served and the subscription reconnects with
//! backoff; every new publisher (generation) starts with a discontinuity.
//!
//! A stream that leaves the registry is marked ended in the [`Store`], which frees it
//! after the grace time unless it comes back. Names that fail `strom_ipc::names` are
//! never packaged (a producer should not announce them; if one does, it is logged).

use crate::store::{HlsStream, Store};
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use strom_ipc::WorkerKind;
use strom_ipc::bus::StreamLocation;
use strom_ipc::rules::{DeliveryOutput, HlsCueTags, Rules};
use strom_media::fmp4::{Fragmenter, init_segment};
use strom_media::frame::Codec;
use strom_media::hls::cues::{CueStyle, CueTracker};
use strom_media::hls::segmenter::{CutSegment, Segmenter};
use strom_media::track_builder::TrackBuilder;
use strom_media::ts::TsMuxer;
use strom_stream::bus::subscriber::{Relay, feed};
use strom_stream::{Hub, StreamKey};
use strom_worker_runtime::SessionIds;
use strom_worker_runtime::sync::locked;
use tokio_util::sync::CancellationToken;

/// Whether `app/stream` is delivered as MPEG-TS over HTTP (`mpegts.stream`).
pub fn mpegts_enabled(rules: &Rules, app: &str, stream: &str) -> bool {
    rules
        .delivery
        .for_stream(app, stream)
        .has(DeliveryOutput::MpegTs)
}

/// Whether `app/stream` is relayed here for a listener format (`mpegts.stream`,
/// `icecast.stream`) or an Icecast push (`IcecastPush`) besides HLS.
fn streamed(rules: &Rules, app: &str, stream: &str) -> bool {
    let delivery = rules.delivery.for_stream(app, stream);
    delivery.has(DeliveryOutput::MpegTs)
        || delivery.has(DeliveryOutput::Icecast)
        || rules
            .icecast_pushes
            .iter()
            .any(|p| p.app == app && p.stream == stream)
}

/// How the stream's HLS playlists show SCTE-35 breaks (`AdInsertion` `hls_tags`).
pub fn cue_style(rules: &Rules, app: &str, stream: &str) -> CueStyle {
    match rules.ad_insertion_for(app, stream).map(|a| a.hls_tags) {
        Some(HlsCueTags::Cue) => CueStyle::Cue,
        Some(HlsCueTags::SplicePoint) => CueStyle::SplicePoint,
        Some(HlsCueTags::DateRange) | None => CueStyle::DateRange,
    }
}

/// HLS switch and segment duration of a stream, from the delivery settings only, never
/// the RTMP listener's settings (the supervisor translates those of old files).
pub fn hls_settings(rules: &Rules, app: &str, stream: &str) -> (bool, u32) {
    let delivery = rules.delivery.for_stream(app, stream);
    (
        delivery.has(DeliveryOutput::Hls),
        delivery.segment_duration_secs,
    )
}

struct Task {
    location: StreamLocation,
    /// Whether the task packages HLS (or only relays the stream for `mpegts.stream`).
    hls: bool,
    cue_style: CueStyle,
    stop: CancellationToken,
}

pub struct Packaging {
    pub store: Arc<Store>,
    /// The streams this worker relays from their producers; packaging tasks read them.
    hub: Hub,
    ids: Arc<SessionIds>,
    rules: Mutex<Arc<Rules>>,
    tasks: Mutex<HashMap<(String, String), Task>>,
    shutdown: CancellationToken,
}

impl Packaging {
    pub fn new(
        hub: Hub,
        store: Arc<Store>,
        rules: Rules,
        ids: Arc<SessionIds>,
        shutdown: CancellationToken,
    ) -> Self {
        Self {
            store,
            hub,
            ids,
            rules: Mutex::new(Arc::new(rules)),
            tasks: Mutex::new(HashMap::new()),
            shutdown,
        }
    }

    pub fn rules(&self) -> Arc<Rules> {
        Arc::clone(&locked(&self.rules))
    }

    pub fn set_rules(&self, rules: Rules) {
        *locked(&self.rules) = Arc::new(rules);
    }

    /// The packager's hub: streams relayed here for HLS or MPEG-TS over HTTP.
    pub fn hub(&self) -> &Hub {
        &self.hub
    }

    /// Starts relaying (and packaging, for HLS) streams that appeared and stops those
    /// that are gone.
    pub fn apply_registry(&self, locations: Vec<StreamLocation>) {
        let rules = self.rules();
        let mut tasks = locked(&self.tasks);
        let wanted: HashMap<(String, String), StreamLocation> = locations
            .into_iter()
            .filter(|l| {
                hls_settings(&rules, &l.app, &l.stream).0 || streamed(&rules, &l.app, &l.stream)
            })
            .filter(|l| match strom_ipc::names::check_pair(&l.app, &l.stream) {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!(app = ?l.app, stream = ?l.stream, error = %e, "announced stream not packaged: bad name");
                    false
                }
            })
            .map(|l| ((l.app.clone(), l.stream.clone()), l))
            .collect();
        tasks.retain(|key, task| {
            let keep = wanted.get(key).is_some_and(|l| {
                *l == task.location
                    && hls_settings(&rules, &l.app, &l.stream).0 == task.hls
                    && cue_style(&rules, &l.app, &l.stream) == task.cue_style
            });
            if !keep {
                task.stop.cancel();
                if !wanted.contains_key(key) {
                    self.store.mark_ended(&key.0, &key.1);
                }
            }
            keep
        });
        for (key, location) in wanted {
            if tasks.contains_key(&key) {
                continue;
            }
            let (hls, duration) = hls_settings(&rules, &location.app, &location.stream);
            let cue_style = cue_style(&rules, &location.app, &location.stream);
            let stop = self.shutdown.child_token();
            let relay = Relay {
                key: StreamKey::new(key.0.clone(), key.1.clone()),
                bus_path: location.bus_path.clone(),
                producer: location.producer.to_string(),
            };
            if hls {
                let Some(stream) = self.store.get_or_create(&location.app, &location.stream) else {
                    continue;
                };
                tracing::info!(app = %location.app, stream = %location.stream, "packaging HLS");
                let reader = self.ids.next_id();
                let (frames, _dropped) = self.hub.subscribe(&relay.key, reader);
                tokio::spawn(package(
                    Reading {
                        hub: self.hub.clone(),
                        key: relay.key.clone(),
                        id: reader,
                        frames,
                    },
                    stream,
                    Arc::clone(&self.store),
                    (duration, cue_style),
                    stop.clone(),
                ));
            }
            // An Icecast source publishes into this hub itself: nothing to relay.
            if location.producer != WorkerKind::Packager {
                tokio::spawn(feed(
                    self.hub.clone(),
                    relay,
                    Arc::clone(&self.ids),
                    stop.clone(),
                ));
            }
            tasks.insert(
                key,
                Task {
                    location,
                    hls,
                    cue_style,
                    stop,
                },
            );
        }
    }
}

/// A packaging task's place among the readers of its stream, left when dropped.
struct Reading {
    hub: Hub,
    key: StreamKey,
    id: u64,
    frames: strom_stream::FrameReceiver,
}

impl Drop for Reading {
    fn drop(&mut self) {
        self.hub.leave(&self.key, self.id);
    }
}

/// Stream titles (timed metadata ID3 tags) waiting for their segment at most; older
/// ones are dropped (a segment that never ends).
const MAX_PENDING_TITLES: usize = 16;

/// Muxers for one timeline (one publisher on one bus connection).
struct Timeline {
    tracks: TrackBuilder,
    /// SCTE-35 breaks and the playlist tags they make.
    cues: CueTracker,
    /// Titles (ID3 tags, with their PTS) of the segment being built.
    titles: Vec<(i64, Bytes)>,
    /// The latest title, repeated at the start of every later segment.
    last_title: Option<Bytes>,
    segmenter: Option<Segmenter>,
    ts: Option<TsMuxer>,
    fragmenter: Fragmenter,
    generation: u32,
}

impl Timeline {
    fn new(generation: u32, style: CueStyle) -> Self {
        Self {
            tracks: TrackBuilder::default(),
            cues: CueTracker::new(style),
            titles: Vec::new(),
            last_title: None,
            segmenter: None,
            ts: None,
            fragmenter: Fragmenter::new(),
            generation,
        }
    }
}

async fn package(
    mut reading: Reading,
    hls: Arc<HlsStream>,
    store: Arc<Store>,
    (duration, cue_style): (u32, CueStyle),
    stop: CancellationToken,
) {
    let (hls, store) = (&hls, &store);
    let mut timeline: Option<Timeline> = None;
    loop {
        let frame = tokio::select! {
            () = stop.cancelled() => return,
            frame = reading.frames.recv() => frame,
        };
        // The hub closes a reader's queue only when the reader is removed.
        let Some(frame) = frame else { return };
        let current = match &mut timeline {
            Some(t) if t.generation == frame.generation => t,
            _ => {
                // A new publisher (or the first after a packager restart, whose mirrored
                // segments are served already): a discontinuity.
                hls.mark_discontinuity();
                timeline.insert(Timeline::new(frame.generation, cue_style))
            }
        };
        if frame.frame.codec == Codec::Scte35 {
            if current.cues.marker(&frame.frame.payload) {
                tracing::info!(stream = %reading.key, "SCTE-35 splice: cutting a segment at the next keyframe");
                if let Some(segmenter) = current.segmenter.as_mut() {
                    segmenter.cut_at_next_start();
                }
            }
            continue;
        }
        if frame.frame.codec == Codec::TimedMetadata {
            if current.titles.len() >= MAX_PENDING_TITLES {
                current.titles.remove(0);
            }
            current
                .titles
                .push((frame.frame.pts, frame.frame.payload.clone()));
            continue;
        }
        let sample = current.tracks.accept_frame(frame.frame.clone());
        if let Some(codec) = current.tracks.take_unmuxed_video() {
            tracing::warn!(stream = %reading.key, ?codec, "video codec not packaged for HLS");
        }
        let Some(sample) = sample else {
            continue;
        };
        let has_video = current.tracks.tracks.video.is_some();
        let segmenter = current
            .segmenter
            .get_or_insert_with(|| Segmenter::new(duration, has_video));
        let was_started = segmenter.started();
        match segmenter.push(sample) {
            Some(cut) => {
                finish(current, cut, hls, store, duration).await;
                current.cues.segment_started();
            }
            None if !was_started && segmenter.started() => current.cues.segment_started(),
            None => {}
        }
    }
}

/// The titles a segment starting at `start` carries (HLS timed ID3): those that came
/// during it, after the latest earlier one at its start (so a player that starts with
/// this segment knows what is playing) unless one came right there.
fn segment_titles(
    pending: &mut Vec<(i64, Bytes)>,
    last: &mut Option<Bytes>,
    start: i64,
) -> Vec<(i64, Bytes)> {
    let mut titles = std::mem::take(pending);
    if titles.first().is_none_or(|&(pts, _)| pts > start)
        && let Some(repeated) = last.clone()
    {
        titles.insert(0, (start, repeated));
    }
    if let Some((_, latest)) = titles.last() {
        *last = Some(latest.clone());
    }
    titles
}

async fn finish(
    timeline: &mut Timeline,
    cut: CutSegment,
    hls: &Arc<HlsStream>,
    store: &Arc<Store>,
    duration: u32,
) {
    let tracks = &timeline.tracks.tracks;
    let init_id =
        (u64::from(timeline.generation) << 16) | u64::from(timeline.tracks.config_version & 0xFFFF);
    if hls.init(init_id).is_none() {
        match init_segment(tracks) {
            Ok(init) => hls.add_init(init_id, Bytes::from(init)),
            Err(e) => tracing::warn!(error = %e, "fMP4 init segment failed"),
        }
    }
    let muxer = timeline.ts.get_or_insert_with(|| TsMuxer::new(tracks));
    let mut ts = Vec::with_capacity(
        cut.samples.iter().map(|s| s.data.len()).sum::<usize>() * 11 / 10 + 4096,
    );
    let markers = timeline.cues.sections_of_current();
    let titles = segment_titles(&mut timeline.titles, &mut timeline.last_title, cut.start);
    let timed: Vec<(i64, &[u8])> = titles.iter().map(|(pts, tag)| (*pts, &tag[..])).collect();
    if let Err(e) =
        muxer.write_segment_with_metadata(tracks, &markers, &timed, &cut.samples, &mut ts)
    {
        tracing::warn!(error = %e, "TS segment failed");
        return;
    }
    let next_video = tracks.video.as_ref().map(|_| cut.end);
    // The audio cut point is not known here; the fragmenter repeats the last duration.
    let next_audio = None;
    let mut m4s = Vec::with_capacity(ts.len());
    // Titles as ID3 `emsg` boxes before the `moof`, numbered by the segment.
    let first_id = timeline.fragmenter.sequence_number().wrapping_mul(64);
    for (n, (pts, tag)) in timed.iter().enumerate() {
        let id = first_id.wrapping_add(n as u32);
        strom_media::fmp4::emsg::write_id3_emsg(*pts, id, tag, &mut m4s);
    }
    if let Err(e) =
        timeline
            .fragmenter
            .fragment(tracks, &cut.samples, next_video, next_audio, &mut m4s)
    {
        tracing::warn!(error = %e, "fMP4 segment failed");
        m4s.clear();
    }
    let duration_secs = cut.duration_secs();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default();
    let program_date_time_ms = now_ms - (duration_secs * 1000.0) as i64;
    let tags = timeline.cues.tags_for(cut.start, program_date_time_ms);
    let facts = (
        strom_media::fmp4::codecs(tracks),
        tracks.video.as_ref().map(|v| v.width).unwrap_or_default(),
        tracks.video.as_ref().map(|v| v.height).unwrap_or_default(),
        duration,
    );
    let hls = Arc::clone(hls);
    let store = Arc::clone(store);
    let (ts, m4s) = (Bytes::from(ts), Bytes::from(m4s));
    // Segments are mirrored to disk (and evicted under memory pressure): off the async
    // threads.
    let added = tokio::task::spawn_blocking(move || {
        let sequence = hls.add_segment(
            duration_secs,
            program_date_time_ms,
            init_id,
            ts,
            m4s,
            facts,
            tags,
        );
        store.enforce_ram_limit();
        sequence
    })
    .await;
    if let Ok(sequence) = added {
        tracing::debug!(sequence, duration_secs, "segment ready");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::store::Limits;
    use std::path::PathBuf;
    use std::time::Duration;
    use strom_ipc::WorkerKind;

    fn location(app: &str, stream: &str, bus: &std::path::Path) -> StreamLocation {
        StreamLocation {
            app: app.to_owned(),
            stream: stream.to_owned(),
            producer: WorkerKind::Rtmp,
            bus_path: bus.to_owned(),
        }
    }

    /// Every path under `dir`.
    fn tree(dir: &std::path::Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            out.push(entry.path());
            if entry.file_type().unwrap().is_dir() {
                out.extend(tree(&entry.path()));
            }
        }
        out
    }

    /// A stream's delivery entry beats the defaults; other streams keep them.
    #[test]
    fn hls_follows_the_delivery_settings_of_each_stream() {
        use strom_ipc::rules::StreamDelivery;
        let mut rules = Rules::default();
        assert_eq!(hls_settings(&rules, "live", "s"), (true, 6));
        rules.delivery.streams.push(StreamDelivery {
            app: "live".into(),
            stream: "s".into(),
            outputs: Some(vec![DeliveryOutput::Dash]),
            segment_duration_secs: Some(2),
        });
        assert_eq!(hls_settings(&rules, "live", "s"), (false, 2));
        assert_eq!(hls_settings(&rules, "live", "t"), (true, 6));
    }

    /// A producer announcing hostile names (as the registry would pass them on) gets
    /// nothing packaged and nothing written, inside or outside `run_dir`.
    #[tokio::test]
    async fn hostile_announced_names_are_not_packaged() {
        let top = tempfile::tempdir().unwrap();
        let run_dir = top.path().join("a/b/run");
        std::fs::create_dir_all(&run_dir).unwrap();
        let bus = run_dir.join("bus.sock");
        let shutdown = CancellationToken::new();
        let store = Arc::new(Store::new(
            &run_dir,
            Limits {
                max_ram_bytes: u64::MAX,
                grace: Duration::from_secs(30),
            },
        ));
        let packaging = Packaging::new(
            Hub::default(),
            Arc::clone(&store),
            Rules::default(),
            Arc::new(SessionIds::new(1)),
            shutdown.clone(),
        );
        assert!(hls_settings(&packaging.rules(), "live", "good").0);
        let hostile = [
            ("live", "../../../../x"),
            ("live", "/tmp/x"),
            ("..", ".."),
            ("live", "a/b"),
            ("live", ".hidden"),
            ("live", ""),
        ];
        packaging.apply_registry(
            hostile
                .iter()
                .map(|(app, stream)| location(app, stream, &bus))
                .collect(),
        );
        assert!(locked(&packaging.tasks).is_empty());
        for (app, stream) in hostile {
            assert!(packaging.store.get(app, stream).is_none());
        }
        // A good name beside them is packaged.
        packaging.apply_registry(vec![
            location("live", "../../../../x", &bus),
            location("live", "good", &bus),
        ]);
        assert_eq!(locked(&packaging.tasks).len(), 1);
        assert!(packaging.store.get("live", "good").is_some());
        // Gone from the registry: ended, freed after the grace time.
        packaging.apply_registry(Vec::new());
        assert!(locked(&packaging.tasks).is_empty());
        shutdown.cancel();
        assert_eq!(
            tree(top.path()),
            vec![top.path().join("a"), top.path().join("a/b"), run_dir]
        );
    }
}
