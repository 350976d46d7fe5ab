//! Packaging live streams into HLS and DASH: for each stream to package, a bus
//! subscription feeds the stream into the delivery worker's own hub
//! (`strom_stream::bus::subscriber`), and a packaging task reads it there like any
//! reader, cuts segments at keyframes within the playlist's fixed target duration and
//! muxes each into MPEG-TS and fMP4 (one CMAF fragment per track, which DASH serves
//! track by track). For LL-HLS streams the segment being built is also cut into parts
//! as its samples arrive ([`crate::part_cutter`]). Frames arrive neutral: no container is
//! parsed here.
//!
//! A task outlives its producer: when the bus connection breaks (publisher gone, rtmp
//! worker restarting) the segments stay served and the subscription reconnects with
//! backoff; every new publisher (generation) starts with a discontinuity. When a
//! publisher leaves (or the task stops), the segment it was filling is finished, so its
//! last seconds are served too.
//!
//! A stream that leaves the registry is marked ended in the [`Store`], which frees it
//! after the grace time unless it comes back. Names that fail `strom_ipc::names` are
//! never packaged (a producer should not announce them; if one does, it is logged).

use crate::media_clock::{self, MediaClock};
use crate::part_cutter::PartCutter;
use crate::store::{DashParts, DashTrack, HlsStream, InitSegments, SegmentFacts, Store};
use base64::Engine;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use strom_ipc::WorkerKind;
use strom_ipc::bus::StreamLocation;
use strom_ipc::rules::{DeliveryOutput, HlsCueTags, Rules};
use strom_media::fmp4::{Fragmenter, init_segment, track_init_segment};
use strom_media::frame::Codec;
use strom_media::hls::cues::{CueStyle, CueTracker};
use strom_media::hls::segmenter::{CutSegment, Segmenter};
use strom_media::sample::TrackKind;
use strom_media::track_builder::TrackBuilder;
use strom_media::ts::TsMuxer;
use strom_stream::bus::subscriber::{Relay, feed};
use strom_stream::{FrameReceiver, Hub, Queue, Reader, StreamKey};
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

/// Whether a stream is segmented (its outputs include HLS or DASH, which share the
/// segments) and its segment duration, from the delivery settings only, never the RTMP
/// listener's settings (the supervisor translates those of old files).
pub fn hls_settings(rules: &Rules, app: &str, stream: &str) -> (bool, u32) {
    let delivery = rules.delivery.for_stream(app, stream);
    (
        delivery.has(DeliveryOutput::Hls)
            || delivery.has(DeliveryOutput::Dash)
            || delivery.has(DeliveryOutput::LlHls),
        delivery.segment_duration_secs,
    )
}

/// The LL-HLS part target (ms) of `app/stream`, `None` unless its outputs include
/// `LLHLS`; never above the segment duration.
pub fn part_target_ms(rules: &Rules, app: &str, stream: &str) -> Option<u32> {
    let delivery = rules.delivery.for_stream(app, stream);
    delivery.has(DeliveryOutput::LlHls).then(|| {
        rules
            .delivery
            .part_target_ms
            .min(delivery.segment_duration_secs.saturating_mul(1000))
            .max(1)
    })
}

/// Whether `app/stream` is served as MPEG-DASH (`manifest.mpd`).
pub fn dash_enabled(rules: &Rules, app: &str, stream: &str) -> bool {
    rules
        .delivery
        .for_stream(app, stream)
        .has(DeliveryOutput::Dash)
}

struct Task {
    location: StreamLocation,
    /// Whether the task packages HLS/DASH (or only relays the stream for `mpegts.stream`).
    hls: bool,
    cue_style: CueStyle,
    /// LL-HLS part target, ms.
    part_target_ms: Option<u32>,
    stop: CancellationToken,
}

pub struct Packaging {
    pub store: Arc<Store>,
    /// The streams this worker relays from their producers; packaging tasks read them.
    hub: Hub,
    ids: Arc<SessionIds>,
    /// The worker's gate, over `hub`: it holds the rules in force (one copy per worker).
    gate: Arc<strom_stream::Gate>,
    tasks: Mutex<HashMap<(String, String), Task>>,
    shutdown: CancellationToken,
}

impl Packaging {
    pub fn new(
        gate: Arc<strom_stream::Gate>,
        store: Arc<Store>,
        ids: Arc<SessionIds>,
        shutdown: CancellationToken,
    ) -> Self {
        Self {
            store,
            hub: gate.hub().clone(),
            ids,
            gate,
            tasks: Mutex::new(HashMap::new()),
            shutdown,
        }
    }

    pub fn rules(&self) -> Arc<Rules> {
        self.gate.rules()
    }

    pub fn set_rules(&self, rules: Rules) {
        self.gate.set_rules(Arc::new(rules));
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
                    && part_target_ms(&rules, &l.app, &l.stream) == task.part_target_ms
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
            let part_target_ms = part_target_ms(&rules, &location.app, &location.stream);
            let stop = self.shutdown.child_token();
            let relay = Relay::of(StreamKey::new(key.0.clone(), key.1.clone()), &location);
            if hls {
                let Some(stream) = self.store.get_or_create(&location.app, &location.stream) else {
                    continue;
                };
                stream.set_part_target(part_target_ms.map(|ms| f64::from(ms) / 1000.0));
                tracing::info!(app = %location.app, stream = %location.stream, ?part_target_ms, "packaging HLS");
                let reader = self.hub.own_reader(&relay.key, Queue, self.ids.next_id());
                tokio::spawn(package(
                    self.hub.clone(),
                    reader,
                    stream,
                    Arc::clone(&self.store),
                    (duration, cue_style, part_target_ms),
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
                    part_target_ms,
                    stop,
                },
            );
        }
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
    /// The DASH period of the latest segment: its init segment id, wall-clock start (Unix
    /// ms) and media time (90 kHz).
    period: Option<(u64, i64, i64)>,
    /// LL-HLS: the parts of the segment being built.
    parts: Option<PartCutter>,
    /// The decode time (90 kHz) of the first audio sample while no video is known yet:
    /// a stream is packaged as audio only once [`AUDIO_ONLY_AFTER`] of audio came
    /// without video.
    audio_without_video_since: Option<i64>,
    /// The dates of its segments and parts.
    clock: MediaClock,
    /// Whether this publisher was told (once) that its keyframes are too far apart for
    /// LL-HLS.
    long_gop_logged: bool,
}

/// The date the server's clock suggests for media of `duration_secs` that just arrived
/// whole.
fn arrival_ms(duration_secs: f64) -> i64 {
    media_clock::now_ms() - (duration_secs * 1000.0) as i64
}

/// How much audio (90 kHz) may come before a stream's video is known (a TS input joined
/// mid-GOP, a restarted worker: audio settings come at once, the video's with the next
/// keyframe) before the stream is packaged as audio only. Deciding at the first sample
/// would cut a video stream as audio only for as long as it lasts, at any frame. Ten
/// seconds cover the longest common GOP (OBS's default, 8.3 s).
const AUDIO_ONLY_AFTER: i64 = 10 * 90_000;
/// A segment this many times its target long means keyframes further apart than the
/// target (a segment ends at the first keyframe past it): logged once for LL-HLS.
const LONG_GOP_FACTOR: f64 = 1.5;

impl Timeline {
    fn new(generation: u32, style: CueStyle, part_target_ms: Option<u32>) -> Self {
        Self {
            tracks: TrackBuilder::default(),
            cues: CueTracker::new(style),
            titles: Vec::new(),
            last_title: None,
            segmenter: None,
            ts: None,
            fragmenter: Fragmenter::new(),
            generation,
            period: None,
            parts: part_target_ms.map(|ms| PartCutter::new(i64::from(ms) * 90)),
            audio_without_video_since: None,
            clock: MediaClock::default(),
            long_gop_logged: false,
        }
    }

    /// The id of the init segment its segments use (new with a publisher or a codec
    /// change).
    fn init_id(&self) -> u64 {
        (u64::from(self.generation) << 16) | u64::from(self.tracks.config_version & 0xFFFF)
    }

    /// Ends the part being built where the segment is cut and lists it.
    fn last_part(&mut self, end: i64, hls: &HlsStream) {
        let listed = hls.parts_may_follow(self.init_id());
        if let Some(part) = self
            .parts
            .as_mut()
            .and_then(|p| p.finish(&self.tracks.tracks, end))
            && listed
        {
            let date = self
                .clock
                .date_of(part.start, arrival_ms(part.duration_secs));
            hls.add_part(part.bytes, part.duration_secs, part.independent, date);
        }
    }
}

async fn package(
    hub: Hub,
    mut reading: Reader<FrameReceiver>,
    hls: Arc<HlsStream>,
    store: Arc<Store>,
    (duration, cue_style, part_target_ms): (u32, CueStyle, Option<u32>),
    stop: CancellationToken,
) {
    let mut packager = Packager {
        hls,
        store,
        duration,
        cue_style,
        part_target_ms,
        key: reading.place.key().clone(),
        timeline: None,
    };
    let mut live = hub.watch_live(reading.place.key());
    loop {
        tokio::select! {
            () = stop.cancelled() => {
                // Unpublished (or the settings changed): what is queued, then the segment
                // being built, so the publisher's last seconds are not lost.
                packager.drain(&mut reading.frames).await;
                packager.flush().await;
                return;
            }
            () = went_offline(&mut live) => {
                packager.drain(&mut reading.frames).await;
                packager.flush().await;
            }
            frame = reading.frames.recv() => match frame {
                Some(frame) => packager.frame(&frame).await,
                // The hub closes a reader's queue only when the reader is removed.
                None => {
                    packager.flush().await;
                    return;
                }
            },
        }
    }
}

/// Frames taken from the queue at most when the stream stops: a publisher that goes on
/// (the settings changed) cannot keep a stopping task busy.
const MAX_DRAINED_FRAMES: usize = strom_stream::READER_QUEUE_FRAMES;

/// Resolves when the stream's publisher leaves (never, without a stream to watch).
async fn went_offline(live: &mut Option<tokio::sync::watch::Receiver<bool>>) {
    if let Some(receiver) = live {
        while receiver.changed().await.is_ok() {
            if !*receiver.borrow_and_update() {
                return;
            }
        }
    }
    std::future::pending::<()>().await;
}

/// One stream's packaging: the timeline of its current publisher.
struct Packager {
    hls: Arc<HlsStream>,
    store: Arc<Store>,
    /// The configured segment duration, seconds.
    duration: u32,
    cue_style: CueStyle,
    /// LL-HLS part target, ms.
    part_target_ms: Option<u32>,
    key: StreamKey,
    timeline: Option<Timeline>,
}

impl Packager {
    async fn drain(&mut self, frames: &mut strom_stream::FrameReceiver) {
        for _ in 0..MAX_DRAINED_FRAMES {
            let Ok(frame) = frames.try_recv() else {
                return;
            };
            self.frame(&frame).await;
        }
    }

    /// Ends the segment being built (the publisher stopped or changed).
    async fn flush(&mut self) {
        let Some(timeline) = self.timeline.as_mut() else {
            return;
        };
        let cut = timeline.segmenter.as_mut().and_then(|segmenter| {
            let cut = segmenter.flush()?;
            self.hls.target_duration(segmenter.limit_secs());
            Some(cut)
        });
        let Some(cut) = cut else {
            // No segment to end: parts of one would be listed without it.
            if let Some(parts) = timeline.parts.as_mut() {
                parts.clear();
            }
            self.hls.discard_pending_parts();
            return;
        };
        tracing::debug!(stream = %self.key, duration = cut.duration_secs(), "last segment of the publisher flushed");
        timeline.last_part(cut.end, &self.hls);
        finish(timeline, cut, &self.hls, &self.store).await;
    }

    async fn frame(&mut self, frame: &strom_stream::SharedFrame) {
        if self
            .timeline
            .as_ref()
            .is_none_or(|t| t.generation != frame.generation)
        {
            // The previous publisher's last segment goes before the break.
            self.flush().await;
            // A new publisher (or the first after a packager restart, whose mirrored
            // segments are served already): a discontinuity.
            self.hls.mark_discontinuity();
            self.timeline = Some(Timeline::new(
                frame.generation,
                self.cue_style,
                self.part_target_ms,
            ));
        }
        let Some(current) = self.timeline.as_mut() else {
            return;
        };
        if frame.frame.codec == Codec::Scte35 {
            if current.cues.marker(&frame.frame.payload) {
                tracing::info!(stream = %self.key, "SCTE-35 splice: cutting a segment at the next keyframe");
                if let Some(segmenter) = current.segmenter.as_mut() {
                    segmenter.cut_at_next_start();
                }
            }
            return;
        }
        if frame.frame.codec == Codec::TimedMetadata {
            if current.titles.len() >= MAX_PENDING_TITLES {
                current.titles.remove(0);
            }
            current
                .titles
                .push((frame.frame.pts, frame.frame.payload.clone()));
            return;
        }
        let sample = current.tracks.accept_frame(frame.frame.clone());
        if let Some(codec) = current.tracks.take_unmuxed_video() {
            tracing::warn!(stream = %self.key, ?codec, "video codec not packaged for HLS");
        }
        let Some(sample) = sample else {
            return;
        };
        let has_video = current.tracks.tracks.video.is_some();
        if current.segmenter.is_none() && !has_video {
            let since = *current.audio_without_video_since.get_or_insert(sample.dts);
            if sample.dts.saturating_sub(since) < AUDIO_ONLY_AFTER {
                // Perhaps a video stream whose settings come with its next keyframe.
                return;
            }
            tracing::info!(stream = %self.key, "no video within 10 s of audio: packaged as audio only");
        }
        let segmenter = current.segmenter.get_or_insert_with(|| {
            // The playlist's target duration is fixed when it starts (decided at the
            // first cut, from the configured duration and the keyframe spacing) and kept
            // by every later publisher; a longer configured duration cannot exceed it.
            match self.hls.fixed_target_duration() {
                Some(limit) => Segmenter::new(self.duration.min(limit), limit, has_video),
                None => Segmenter::with_open_limit(self.duration, has_video),
            }
        });
        let was_started = segmenter.started();
        let for_part = current.parts.is_some().then(|| sample.clone());
        match segmenter.push(sample) {
            Some(cut) => {
                let long = f64::from(self.duration) * LONG_GOP_FACTOR;
                if current.parts.is_some() && !current.long_gop_logged && cut.duration_secs() > long
                {
                    current.long_gop_logged = true;
                    tracing::warn!(
                        stream = %self.key,
                        segment_secs = cut.duration_secs(),
                        target_secs = self.duration,
                        "LL-HLS stream's keyframes are further apart than its segment target: segments, \
                         playlists and players' latency follow the keyframes; set the encoder's keyframe \
                         interval to the segment duration (1 s keyframes with 1 s segments for the lowest latency)"
                    );
                }
                self.hls.target_duration(segmenter.limit_secs());
                current.last_part(cut.end, &self.hls);
                finish(current, cut, &self.hls, &self.store).await;
                current.cues.segment_started();
            }
            None if !was_started && segmenter.started() => current.cues.segment_started(),
            None => {}
        }
        // The sample belongs to the segment being built (unless it was dropped, before
        // the first keyframe): it goes into that segment's current part.
        let accepted = current.segmenter.as_ref().is_some_and(Segmenter::started);
        if let Some(sample) = for_part.filter(|_| accepted) {
            // Parts follow the init segment and timeline of the segments listed before
            // them: a segment after a new init segment or a discontinuity comes whole.
            let listed = self.hls.parts_may_follow(current.init_id());
            if let Some(parts) = current.parts.as_mut()
                && let Some(part) = parts.push(&current.tracks.tracks, &sample)
                && listed
            {
                let date = current
                    .clock
                    .date_of(part.start, arrival_ms(part.duration_secs));
                self.hls
                    .add_part(part.bytes, part.duration_secs, part.independent, date);
            }
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
) {
    let init_id = timeline.init_id();
    let tracks = &timeline.tracks.tracks;
    if hls.init(init_id).is_none() {
        match init_segment(tracks) {
            Ok(init) => {
                // Each track alone too, for DASH's per-track representations.
                let alone = |kind| match track_init_segment(tracks, kind)? {
                    Ok(init) => Some(Bytes::from(init)),
                    Err(e) => {
                        tracing::warn!(error = %e, ?kind, "fMP4 track init segment failed");
                        None
                    }
                };
                hls.add_inits(
                    init_id,
                    InitSegments {
                        muxed: Bytes::from(init),
                        video: alone(TrackKind::Video),
                        audio: alone(TrackKind::Audio),
                    },
                );
            }
            Err(e) => tracing::warn!(error = %e, "fMP4 init segment failed"),
        }
    }
    let muxer = timeline.ts.get_or_insert_with(|| TsMuxer::new(tracks));
    let mut ts = Vec::with_capacity(
        cut.samples.iter().map(|s| s.data.len()).sum::<usize>() * 11 / 10 + 4096,
    );
    let markers = timeline.cues.sections_of_current();
    // For DASH `EventStream`s (SCTE 214): the sections in the form the MPD carries.
    let scte35: Vec<String> = markers
        .iter()
        .map(|m| base64::engine::general_purpose::STANDARD.encode(m))
        .collect();
    let titles = segment_titles(&mut timeline.titles, &mut timeline.last_title, cut.start);
    let timed: Vec<(i64, &[u8])> = titles.iter().map(|(pts, tag)| (*pts, &tag[..])).collect();
    if let Err(e) =
        muxer.write_segment_with_metadata(tracks, &markers, &timed, &cut.samples, &mut ts)
    {
        tracing::warn!(error = %e, "TS segment failed");
        return;
    }
    let next_video = tracks.video.as_ref().map(|_| cut.end);
    // Audio is timed by its sample count (1024 per AAC frame): no cut point needed.
    let next_audio = None;
    let mut m4s = Vec::with_capacity(ts.len());
    strom_media::fmp4::segment_type(&mut m4s);
    // Titles as ID3 `emsg` boxes before the `moof`, numbered by the segment.
    let first_id = timeline.fragmenter.sequence_number().wrapping_mul(64);
    for (n, (pts, tag)) in timed.iter().enumerate() {
        let id = first_id.wrapping_add(n as u32);
        strom_media::fmp4::emsg::write_id3_emsg(*pts, id, tag, &mut m4s);
    }
    // SCTE-35 markers (SCTE 214-3) at the segment's start, where the splice is; their
    // ids after the titles' (a segment has fewer than 32 titles and 4 markers).
    strom_media::fmp4::emsg::write_scte35_emsgs(
        &markers,
        cut.start,
        first_id.wrapping_add(32),
        &mut m4s,
    );
    // One fragment per track (video, then audio): HLS plays the segment whole, DASH
    // serves each track's fragment as that track's segment.
    let mut parts = [None, None];
    for (slot, (kind, next)) in parts.iter_mut().zip([
        (TrackKind::Video, next_video),
        (TrackKind::Audio, next_audio),
    ]) {
        let offset = m4s.len();
        match timeline
            .fragmenter
            .fragment_track(tracks, kind, &cut.samples, next, &mut m4s)
        {
            Ok(span) => {
                *slot = span.and_then(|span| {
                    Some(DashTrack {
                        start: span.start,
                        duration: span.duration,
                        timescale: span.timescale,
                        offset: u32::try_from(offset).ok()?,
                        len: u32::try_from(m4s.len() - offset).ok()?,
                    })
                })
            }
            Err(e) => {
                tracing::warn!(error = %e, ?kind, "fMP4 fragment failed");
                m4s.clear();
                parts = [None, None];
                break;
            }
        }
    }
    let duration_secs = cut.duration_secs();
    let video_frames = cut
        .samples
        .iter()
        .filter(|s| s.kind == TrackKind::Video)
        .count();
    let program_date_time_ms = timeline.clock.date_of(cut.start, arrival_ms(duration_secs));
    let tags = timeline.cues.tags_for(cut.start, program_date_time_ms);
    // A DASH period per timeline and init segment, anchored where its first segment is.
    let period = match timeline.period {
        Some(period) if period.0 == init_id => period,
        _ => {
            // A publisher back soon after the previous one left continues the DASH
            // timeline where it ended: players go from period to period without a gap
            // (dash.js stalls on some). After a longer absence the new period starts at
            // its own time: shifted that far, it would lag the wall clock beyond the
            // players' presentation delay.
            let longest_gap = i64::from(hls.target_duration(1)) * 2_000;
            let anchor = hls
                .dash_end_ms()
                .filter(|end| {
                    (program_date_time_ms.saturating_sub(longest_gap)..program_date_time_ms)
                        .contains(end)
                })
                .unwrap_or(program_date_time_ms);
            *timeline.period.insert((init_id, anchor, cut.start))
        }
    };
    let dash = match parts {
        [None, None] => None,
        [video, audio] => Some(DashParts {
            video,
            audio,
            period_ms: period.1,
            period_time: period.2,
        }),
    };
    let facts = SegmentFacts {
        codecs: strom_media::fmp4::codecs(tracks),
        width: tracks.video.as_ref().map(|v| v.width).unwrap_or_default(),
        height: tracks.video.as_ref().map(|v| v.height).unwrap_or_default(),
        // Over a whole segment only: a short one (a flushed tail) says little.
        frame_rate: (video_frames > 1 && duration_secs >= 0.5)
            .then(|| (video_frames as f64 / duration_secs * 1000.0).round() / 1000.0),
        independent: cut.independent,
        dash,
        scte35,
    };
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
#[path = "packaging_tests.rs"]
mod tests;
