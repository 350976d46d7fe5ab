//! One live stream of a hub: its publisher, the configuration frames, latest timed
//! metadata and GOP a new reader starts with, its readers, the codecs learned from
//! configuration frames, and the measured ingest bandwidth.

use crate::audio_history::AudioHistory;
use crate::cues::{Cue, CueError, Cues};
use crate::events::{HubEvent, HubEvents};
use crate::key::StreamKey;
use crate::publisher_info::{AlreadyPublishing, PublisherInfo};
use crate::reader::{DropCounter, FrameReceiver, QueuedReader, READER_QUEUE_FRAMES, deliver};
use crate::ring::{CursorSlot, CursorState, Ring};
use crate::shared_frame::SharedFrame;
use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use strom_media::frame::{Codec, Frame, Track};
use strom_media::sample::VideoConfig;
use strom_media::track_info::{self, TrackInfo};
use strom_worker_runtime::sync::locked;
use tokio::sync::{mpsc, watch};

/// The GOP cache stops growing here (a publisher with no keyframes).
const MAX_GOP_FRAMES: usize = 900;
const MAX_GOP_BYTES: usize = 32 * 1024 * 1024;

/// Codec facts learned from configuration frames (for status: resolution, RFC 6381
/// codec strings).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodecInfo {
    pub vcodec: String,
    pub acodec: String,
    pub width: u32,
    pub height: u32,
}

#[derive(Default)]
struct StreamState {
    publisher: Option<PublisherInfo>,
    /// The latest stream metadata (AMF `onMetaData`), sent to new readers first.
    metadata: Option<Arc<SharedFrame>>,
    video_header: Option<Arc<SharedFrame>>,
    audio_header: Option<Arc<SharedFrame>>,
    gop: Vec<Arc<SharedFrame>>,
    gop_bytes: usize,
    /// The latest audio while the stream has no video (nothing in `gop` then).
    audio_history: AudioHistory,
    readers: Vec<QueuedReader>,
    /// Cursor readers and the frames they read ([`crate::ring`]).
    cursors: Vec<CursorSlot>,
    ring: Ring,
    codecs: CodecInfo,
    generation: u32,
    /// Bytes received in the current rate window, and the last measured rate.
    window_start: Option<Instant>,
    window_bytes: u64,
    bandwidth_bps: u64,
    /// SCTE-35 cues from the API waiting for a keyframe.
    cues: Cues,
    /// The latest SCTE-35 markers the stream carried (for its status).
    markers: std::collections::VecDeque<strom_ipc::status::Scte35Event>,
    /// The latest timed metadata (a stream title), sent to new readers after the
    /// configuration frames, stamped at the start of the cached GOP ([`crate::titles`]).
    timed_metadata: Option<Arc<SharedFrame>>,
    /// The decode time of the latest audio or video frame: the stream's current time.
    now: Option<i64>,
}

/// One live stream.
pub struct Stream {
    pub key: StreamKey,
    state: Mutex<StreamState>,
    /// Whether a publisher is on the stream, for readers waiting for one (changes only
    /// on publish and unpublish, so watching it costs readers nothing per frame).
    live: watch::Sender<bool>,
    /// Bumped once every reader has been offered the frames of a publish: a reader that
    /// writes for many others ([`Stream::watch_delivered`]) wakes once per publish.
    delivered: watch::Sender<u64>,
    events: HubEvents,
}

impl Stream {
    pub(crate) fn new(key: StreamKey, events: HubEvents) -> Self {
        Self {
            key,
            state: Mutex::new(StreamState::default()),
            live: watch::Sender::new(false),
            delivered: watch::Sender::new(0),
            events,
        }
    }

    /// Follows whether the stream has a publisher.
    pub fn watch_live(&self) -> watch::Receiver<bool> {
        self.live.subscribe()
    }

    /// Changes each time frames were offered to every reader's queue (once per publish,
    /// after the readers: a waiter finds the frames in the queues it reads).
    pub fn watch_delivered(&self) -> watch::Receiver<u64> {
        self.delivered.subscribe()
    }

    fn signal_delivered(&self) {
        self.delivered
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    pub fn publisher(&self) -> Option<PublisherInfo> {
        locked(&self.state).publisher.clone()
    }

    pub fn codecs(&self) -> CodecInfo {
        locked(&self.state).codecs.clone()
    }

    /// The stream as the API's stream lists show it, named by the worker's `protocol`;
    /// `None` without a publisher, and for a stream relayed from another worker (that
    /// worker lists it).
    pub fn live_status(&self) -> Option<strom_ipc::status::LiveStream> {
        let publisher = self.publisher().filter(|p| p.relayed_from.is_none())?;
        let codecs = self.codecs();
        Some(strom_ipc::status::LiveStream {
            app: self.key.app.clone(),
            stream: self.key.stream.clone(),
            bandwidth_bps: self.bandwidth_bps(),
            width: codecs.width,
            height: codecs.height,
            vcodec: codecs.vcodec,
            acodec: codecs.acodec,
            protocol: publisher.protocol.to_owned(),
            publish_time: publisher.publish_time,
            publisher_ip: publisher.source_url.is_none().then_some(publisher.ip),
            source_url: publisher.source_url,
            scte35: locked(&self.state).markers.iter().cloned().collect(),
        })
    }

    pub fn bandwidth_bps(&self) -> u64 {
        let state = locked(&self.state);
        // A publisher that went quiet has no bandwidth, whatever the last window said.
        match state.window_start {
            Some(start) if start.elapsed().as_secs() < 3 => state.bandwidth_bps,
            _ => 0,
        }
    }

    /// Schedules an SCTE-35 cue: it goes out before the next keyframe ([`crate::cues`]).
    pub fn cue(&self, cue: Cue) -> Result<(), CueError> {
        let mut state = locked(&self.state);
        if state.publisher.is_none() {
            return Err(CueError::NotLive);
        }
        state.cues.request(cue)
    }

    /// The latest timed metadata frame the stream carried (a title), if any.
    pub fn timed_metadata(&self) -> Option<Frame> {
        locked(&self.state)
            .timed_metadata
            .as_ref()
            .map(|shared| shared.frame.clone())
    }

    /// Puts a timed metadata frame with `payload` (an ID3 tag) into the stream at its
    /// current time (the latest audio or video frame's), in order with the media, for
    /// every reader; readers that join later get it after the configuration frames.
    pub fn insert_timed_metadata(&self, payload: Bytes) -> Result<(), crate::titles::NotLive> {
        let mut state = locked(&self.state);
        if state.publisher.is_none() {
            return Err(crate::titles::NotLive);
        }
        let dts = state.now.unwrap_or(0);
        let frame = Frame::neutral(Track::Data, Codec::TimedMetadata, dts, payload);
        // Data frames teach nothing about codecs: no TracksKnown event to send.
        self.publish_locked(&mut state, frame, None);
        drop(state);
        self.signal_delivered();
        Ok(())
    }

    /// Hands `frame` (90 kHz times, unwrapped by the producer) to every reader and the
    /// GOP cache, after the markers of cues that splice at it. Never blocks.
    pub(crate) fn publish(&self, frame: Frame, container: Option<Bytes>) {
        let markers = {
            let mut state = locked(&self.state);
            let has_video = state.video_header.is_some();
            state.cues.markers_before(&frame, has_video)
        };
        for marker in markers {
            tracing::info!(stream = %self.key, pts = marker.pts, "SCTE-35 marker inserted");
            self.publish_one(marker, None);
        }
        self.publish_one(frame, container);
        self.signal_delivered();
    }

    fn publish_one(&self, frame: Frame, container: Option<Bytes>) {
        let mut state = locked(&self.state);
        let learned = self.publish_locked(&mut state, frame, container);
        drop(state);
        if learned {
            self.events.send(HubEvent::TracksKnown(self.key.clone()));
        }
    }

    /// [`Self::publish_one`] under the state lock; `true` when the frame taught new
    /// codec facts (the caller sends the event once the lock is released).
    fn publish_locked(
        &self,
        state: &mut StreamState,
        frame: Frame,
        container: Option<Bytes>,
    ) -> bool {
        let generation = state.generation;
        let learned = state.learn(&frame, &self.key);
        let frame = Arc::new(match container {
            Some(container) => SharedFrame::with_container(frame, generation, container),
            None => SharedFrame::new(frame, generation),
        });
        state.measure(frame.received_len());
        let media = &frame.frame;
        if media.codec == Codec::Scte35 {
            if state.markers.len() >= crate::cues::MARKERS_SHOWN {
                state.markers.pop_front();
            }
            state
                .markers
                .push_back(crate::cues::event_of(&media.payload));
        }
        if matches!(media.track, Track::Video | Track::Audio) {
            state.now = Some(media.dts);
        }
        match (media.track, media.config) {
            (Track::Data, _) if media.codec == Codec::AmfData => {
                state.metadata = Some(Arc::clone(&frame));
            }
            (Track::Data, _) if media.codec == Codec::TimedMetadata => {
                state.keep_timed_metadata(&frame);
            }
            (Track::Video, true) => state.video_header = Some(Arc::clone(&frame)),
            (Track::Audio, true) => state.audio_header = Some(Arc::clone(&frame)),
            _ => state.cache(&frame),
        }
        let headers = state.headers();
        let has_video = state.video_header.is_some();
        let key = &self.key;
        state
            .readers
            .retain_mut(|reader| deliver(reader, &frame, &headers, has_video, key));
        if !state.cursors.is_empty() {
            let resume = crate::reader::resumes_at(&frame.frame, has_video).then(|| headers.into());
            let StreamState { ring, cursors, .. } = state;
            ring.push(frame, resume, cursors, key);
        }
        learned
    }

    /// Adds reader `id`; it gets metadata, configuration frames and the current GOP at
    /// once (for an audio-only stream: its latest `audio_burst_bytes` of audio), then
    /// every frame published from now on.
    pub(crate) fn subscribe(
        &self,
        id: u64,
        audio_burst_bytes: usize,
    ) -> (FrameReceiver, DropCounter) {
        let (tx, rx) = mpsc::channel(READER_QUEUE_FRAMES);
        let dropped = DropCounter::default();
        let mut state = locked(&self.state);
        let start = state
            .headers()
            .into_iter()
            .chain(state.gop.iter().cloned())
            .chain(state.audio_history.tail(audio_burst_bytes));
        for frame in start {
            // The queue is larger than the GOP cache can grow, so this cannot fill it.
            let _ = tx.try_send(frame);
        }
        state.readers.push(QueuedReader {
            id,
            queue: tx,
            lagging: false,
            dropped: Arc::clone(&dropped),
        });
        (rx, dropped)
    }

    /// Adds cursor reader `id` ([`crate::cursor`]); like a queue reader it starts with
    /// metadata, configuration frames and the current GOP, then reads every frame
    /// published from now on.
    /// Returns what the reader starts with and its place in the ring; the hub wraps them
    /// in a [`crate::Cursor`].
    pub(crate) fn subscribe_cursor(
        &self,
        id: u64,
    ) -> (
        std::collections::VecDeque<Arc<SharedFrame>>,
        Arc<CursorState>,
    ) {
        let mut state = locked(&self.state);
        let start = state
            .headers()
            .into_iter()
            .chain(state.gop.iter().cloned())
            .collect();
        let cursor = state.ring.new_cursor();
        state.cursors.push(CursorSlot {
            id,
            state: Arc::clone(&cursor),
        });
        drop(state);
        (start, cursor)
    }

    /// [`crate::Cursor::take`]'s reading of the ring, under the stream's lock.
    pub(crate) fn read_ring(
        &self,
        id: u64,
        cursor: &CursorState,
        max: usize,
        each: &mut impl FnMut(&Arc<SharedFrame>),
    ) -> usize {
        locked(&self.state)
            .ring
            .read(id, cursor, max, &self.key, each)
    }

    /// Frames the ring holds for its cursors right now.
    #[cfg(test)]
    pub(crate) fn ring_len(&self) -> usize {
        let state = locked(&self.state);
        let ring = &state.ring;
        usize::try_from(ring.end() - ring.base()).unwrap_or(usize::MAX)
    }

    /// Every reader's id and dropped-frame count.
    pub fn reader_drops(&self) -> Vec<(u64, u64)> {
        let state = locked(&self.state);
        let queues = state.readers.iter().map(|r| (r.id, &r.dropped));
        let cursors = state.cursors.iter().map(|c| (c.id, &c.state.dropped));
        queues
            .chain(cursors)
            .map(|(id, dropped)| (id, dropped.load(Ordering::Relaxed)))
            .collect()
    }

    pub(crate) fn unsubscribe(&self, id: u64) {
        let mut state = locked(&self.state);
        state.readers.retain(|r| r.id != id);
        state.cursors.retain(|c| c.id != id);
        if state.cursors.is_empty() {
            state.ring.clear();
        }
    }

    pub(crate) fn reader_count(&self) -> usize {
        let state = locked(&self.state);
        state.readers.len() + state.cursors.len()
    }

    pub(crate) fn claim(&self, publisher: PublisherInfo) -> Result<(), AlreadyPublishing> {
        let mut state = locked(&self.state);
        if state.publisher.is_some() {
            return Err(AlreadyPublishing);
        }
        // A new publisher starts a new timeline: old headers and GOP must not leak into it.
        state.metadata = None;
        state.video_header = None;
        state.audio_header = None;
        state.gop.clear();
        state.gop_bytes = 0;
        state.audio_history.clear();
        state.codecs = CodecInfo::default();
        state.window_start = None;
        state.cues = Cues::default();
        state.markers.clear();
        state.timed_metadata = None;
        state.now = None;
        // Fold the 64-bit session id so a restarted worker's new ids still differ.
        state.generation = (publisher.session_id ^ (publisher.session_id >> 32)) as u32;
        state.publisher = Some(publisher);
        self.live.send_replace(true);
        Ok(())
    }

    /// A new generation of the same publisher: headers, GOP and codecs start afresh.
    pub(crate) fn restart_timeline(&self) {
        let mut state = locked(&self.state);
        state.video_header = None;
        state.audio_header = None;
        state.gop.clear();
        state.gop_bytes = 0;
        state.audio_history.clear();
        state.codecs = CodecInfo::default();
        state.generation = state.generation.wrapping_add(1);
    }

    pub(crate) fn release(&self, session_id: u64) -> bool {
        let mut state = locked(&self.state);
        if state.publisher.as_ref().map(|p| p.session_id) == Some(session_id) {
            state.publisher = None;
            state.gop.clear();
            state.gop_bytes = 0;
            state.audio_history.clear();
            self.live.send_replace(false);
            return true;
        }
        false
    }

    pub(crate) fn is_idle(&self) -> bool {
        let state = locked(&self.state);
        state.publisher.is_none() && state.readers.is_empty() && state.cursors.is_empty()
    }
}

/// Warns (once per new video configuration of a publisher) when the stream's H.264 is
/// a form many browsers, phones and TVs cannot decode, naming the ffmpeg option that
/// fixes it: strom passes video through, so its viewers get what the encoder sent.
fn warn_if_browsers_cannot_decode(key: &StreamKey, info: &strom_media::track_info::VideoInfo) {
    let Some(VideoConfig::H264 { config, .. }) = &info.decoder else {
        return;
    };
    let Some(trouble) = config.sps_info().ok().and_then(|sps| sps.browser_trouble()) else {
        return;
    };
    tracing::warn!(
        stream = %key,
        codec = %info.codec_string,
        "H.264 with {trouble}: many browsers, phones and TVs cannot decode it; encode 8-bit 4:2:0 (ffmpeg: -pix_fmt yuv420p)"
    );
}

impl StreamState {
    /// Records what `frame` teaches about the codecs; `true` when that changed them.
    fn learn(&mut self, frame: &Frame, key: &StreamKey) -> bool {
        let codecs = &mut self.codecs;
        let mut changed = false;
        match track_info::learn(frame) {
            Some(TrackInfo::Video(info)) => {
                if codecs.vcodec != info.codec_string {
                    let published_here = self
                        .publisher
                        .as_ref()
                        .is_some_and(|p| p.relayed_from.is_none());
                    if published_here {
                        warn_if_browsers_cannot_decode(key, &info);
                    }
                    codecs.vcodec = info.codec_string.into_owned();
                    changed = true;
                }
                if info.width > 0 && (codecs.width, codecs.height) != (info.width, info.height) {
                    codecs.width = info.width;
                    codecs.height = info.height;
                    changed = true;
                }
            }
            // MP3 is learned from every frame: assign only on change, no per-frame String.
            Some(TrackInfo::Audio(info)) if codecs.acodec != info.codec_string => {
                codecs.acodec = info.codec_string.into_owned();
                changed = true;
            }
            Some(TrackInfo::Audio(_)) => {}
            None => {}
        }
        changed
    }

    fn measure(&mut self, bytes: usize) {
        let now = Instant::now();
        let start = *self.window_start.get_or_insert(now);
        self.window_bytes += bytes as u64;
        let elapsed = now.duration_since(start).as_secs_f64();
        if elapsed >= 1.0 {
            self.bandwidth_bps = (self.window_bytes as f64 * 8.0 / elapsed) as u64;
            self.window_start = Some(now);
            self.window_bytes = 0;
        }
    }

    fn cache(&mut self, frame: &Arc<SharedFrame>) {
        let media = &frame.frame;
        if self.video_header.is_some() {
            self.audio_history.clear();
        } else if media.track == Track::Audio {
            self.audio_history.push(frame);
        }
        if media.track == Track::Video && media.keyframe {
            self.gop.clear();
            self.gop_bytes = 0;
            // New readers start here: their title comes at this time, not before.
            if let Some(title) = self.timed_metadata.take() {
                let restamped = restamped(&title, media.dts);
                self.timed_metadata = Some(restamped);
            }
        } else if self.gop.is_empty() && self.video_header.is_some() {
            // Nothing before the first keyframe is useful to a new reader.
            return;
        }
        let len = media.payload.len();
        if self.gop.len() >= MAX_GOP_FRAMES || self.gop_bytes + len > MAX_GOP_BYTES {
            self.gop.clear();
            self.gop_bytes = 0;
            return;
        }
        if self.video_header.is_some() || media.track == Track::Video {
            self.gop_bytes += len;
            self.gop.push(Arc::clone(frame));
        }
    }

    fn headers(&self) -> Vec<Arc<SharedFrame>> {
        [
            &self.metadata,
            &self.video_header,
            &self.audio_header,
            &self.timed_metadata,
        ]
        .into_iter()
        .flatten()
        .cloned()
        .collect()
    }

    /// Keeps `frame` as the title new readers get: as is, or stamped at the start of
    /// the cached GOP they will start with, so that their timestamps never go back.
    fn keep_timed_metadata(&mut self, frame: &Arc<SharedFrame>) {
        let gop_start = self
            .gop
            .first()
            .filter(|first| first.frame.track == Track::Video)
            .map(|first| first.frame.dts)
            .filter(|&start| start < frame.frame.dts);
        self.timed_metadata = Some(match gop_start {
            Some(start) => restamped(frame, start),
            None => Arc::clone(frame),
        });
    }
}

/// `frame` again at `dts` (also its pts), as a new shared frame of the same publisher.
fn restamped(frame: &Arc<SharedFrame>, dts: i64) -> Arc<SharedFrame> {
    if frame.frame.dts == dts {
        return Arc::clone(frame);
    }
    let moved = Frame {
        dts,
        pts: dts,
        ..frame.frame.clone()
    };
    Arc::new(SharedFrame::new(moved, frame.generation))
}
