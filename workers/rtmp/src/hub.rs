//! Live streams inside the rtmp worker: one publisher, many players, a GOP cache for fast
//! start, and bounded per-player queues that drop whole GOPs when a player falls behind.
//!
//! The publisher never waits for a player: delivery is `try_send`. A player whose queue is
//! full loses frames up to the next keyframe (never part of a frame, so its chunk stream
//! stays valid), gets the current sequence headers again and resumes there; every drop is
//! counted and the first of a run is logged.
//!
//! Publishes, unpublishes and the first and last player of a stream are announced on
//! [`HubEvents`] for the re-publisher and on-demand pulled sources.

use crate::frame::{FrameKind, MediaFrame};
use crate::hub_events::{HubEvent, HubEvents};
// Defined in a leaf so that `hub_events` can name streams without depending on the hub.
pub use crate::stream_key::StreamKey;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use strom_worker_runtime::sync::locked;
use tokio::sync::{mpsc, watch};

/// Frames a player may have queued: a few seconds of 60 fps video plus audio.
pub const PLAYER_QUEUE_FRAMES: usize = 1024;
/// The GOP cache stops growing here (a publisher with no keyframes).
const MAX_GOP_FRAMES: usize = 900;
const MAX_GOP_BYTES: usize = 32 * 1024 * 1024;

pub type FrameSender = mpsc::Sender<Arc<MediaFrame>>;
pub type FrameReceiver = mpsc::Receiver<Arc<MediaFrame>>;

/// Facts about the publisher that status queries report.
#[derive(Debug, Clone)]
pub struct PublisherInfo {
    pub session_id: u64,
    /// The pushing client's address; empty for a pulled source.
    pub ip: String,
    pub publish_time: i64,
    /// The query of the publisher's stream name (`cam?a=1` → `a=1`), which re-publishing
    /// rules with `keep_src_stream_params` carry over.
    pub query: String,
    /// Set when the stream is pulled from another server.
    pub source_url: Option<String>,
}

/// Codec facts learned from sequence headers.
#[derive(Debug, Clone, Default)]
pub struct CodecInfo {
    pub vcodec: String,
    pub acodec: String,
    pub width: u32,
    pub height: u32,
}

struct Player {
    id: u64,
    queue: FrameSender,
    /// Dropping until the next keyframe.
    lagging: bool,
    dropped: Arc<AtomicU64>,
}

#[derive(Default)]
struct StreamState {
    publisher: Option<PublisherInfo>,
    metadata: Option<Arc<MediaFrame>>,
    video_header: Option<Arc<MediaFrame>>,
    audio_header: Option<Arc<MediaFrame>>,
    gop: Vec<Arc<MediaFrame>>,
    gop_bytes: usize,
    players: Vec<Player>,
    codecs: CodecInfo,
    /// RTMP timestamps are 32-bit milliseconds; this unwraps them.
    last_timestamp: Option<u32>,
    wraps: i64,
    generation: u32,
    /// Bytes received in the current rate window, and the last measured rate.
    window_start: Option<Instant>,
    window_bytes: u64,
    bandwidth_bps: u64,
}

/// One live stream.
pub struct Stream {
    pub key: StreamKey,
    state: Mutex<StreamState>,
    /// Whether a publisher is on the stream, for players waiting for one (changes only
    /// on publish and unpublish, so watching it costs players nothing per frame).
    live: watch::Sender<bool>,
}

/// Why a publisher could not take a stream.
#[derive(Debug, PartialEq, Eq)]
pub struct AlreadyPublishing;

impl Stream {
    fn new(key: StreamKey) -> Self {
        Self {
            key,
            state: Mutex::new(StreamState::default()),
            live: watch::Sender::new(false),
        }
    }

    /// Follows whether the stream has a publisher.
    pub fn watch_live(&self) -> watch::Receiver<bool> {
        self.live.subscribe()
    }

    pub fn publisher(&self) -> Option<PublisherInfo> {
        locked(&self.state).publisher.clone()
    }

    pub fn codecs(&self) -> CodecInfo {
        locked(&self.state).codecs.clone()
    }

    pub fn bandwidth_bps(&self) -> u64 {
        let state = locked(&self.state);
        // A publisher that went quiet has no bandwidth, whatever the last window said.
        match state.window_start {
            Some(start) if start.elapsed().as_secs() < 3 => state.bandwidth_bps,
            _ => 0,
        }
    }

    pub fn set_codecs(&self, update: impl FnOnce(&mut CodecInfo)) {
        update(&mut locked(&self.state).codecs);
    }

    /// Hands `frame` to every player and the GOP cache. Never blocks.
    pub fn publish(&self, mut frame: MediaFrame) {
        let mut state = locked(&self.state);
        let dts_ms = state.unwrap_timestamp(frame.timestamp);
        frame.dts = dts_ms * 90;
        frame.pts = (dts_ms + i64::from(frame.composition_ms)) * 90;
        frame.generation = state.generation;
        let frame = Arc::new(frame);
        state.measure(frame.payload.len());
        match (frame.kind, frame.sequence_header) {
            (FrameKind::Metadata, _) => state.metadata = Some(Arc::clone(&frame)),
            (FrameKind::Video, true) => state.video_header = Some(Arc::clone(&frame)),
            (FrameKind::Audio, true) => state.audio_header = Some(Arc::clone(&frame)),
            _ => state.cache(&frame),
        }
        let headers = state.headers();
        let key = &self.key;
        state
            .players
            .retain_mut(|player| deliver(player, &frame, &headers, key));
    }

    /// Adds a player; it gets metadata, sequence headers and the current GOP at once.
    pub fn subscribe(&self, id: u64) -> (FrameReceiver, Arc<AtomicU64>) {
        let (tx, rx) = mpsc::channel(PLAYER_QUEUE_FRAMES);
        let dropped = Arc::new(AtomicU64::new(0));
        let mut state = locked(&self.state);
        for frame in state.headers().into_iter().chain(state.gop.iter().cloned()) {
            // The queue is larger than the GOP cache can grow, so this cannot fill it.
            let _ = tx.try_send(frame);
        }
        state.players.push(Player {
            id,
            queue: tx,
            lagging: false,
            dropped: Arc::clone(&dropped),
        });
        (rx, dropped)
    }

    /// Every player's id and dropped-frame count (the counter `subscribe` returns).
    #[cfg(test)]
    pub(crate) fn player_drops(&self) -> Vec<(u64, u64)> {
        locked(&self.state)
            .players
            .iter()
            .map(|p| (p.id, p.dropped.load(Ordering::Relaxed)))
            .collect()
    }

    pub fn unsubscribe(&self, id: u64) {
        locked(&self.state).players.retain(|p| p.id != id);
    }

    fn player_count(&self) -> usize {
        locked(&self.state).players.len()
    }

    fn claim(&self, publisher: PublisherInfo) -> Result<(), AlreadyPublishing> {
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
        state.codecs = CodecInfo::default();
        state.window_start = None;
        state.last_timestamp = None;
        state.wraps = 0;
        // Fold the 64-bit session id so a restarted worker's new ids still differ.
        state.generation = (publisher.session_id ^ (publisher.session_id >> 32)) as u32;
        state.publisher = Some(publisher);
        self.live.send_replace(true);
        Ok(())
    }

    fn release(&self, session_id: u64) -> bool {
        let mut state = locked(&self.state);
        if state.publisher.as_ref().map(|p| p.session_id) == Some(session_id) {
            state.publisher = None;
            state.gop.clear();
            state.gop_bytes = 0;
            self.live.send_replace(false);
            return true;
        }
        false
    }

    fn is_idle(&self) -> bool {
        let state = locked(&self.state);
        state.publisher.is_none() && state.players.is_empty()
    }
}

impl StreamState {
    fn unwrap_timestamp(&mut self, timestamp: u32) -> i64 {
        if let Some(last) = self.last_timestamp
            && timestamp < last
            && last - timestamp > u32::MAX / 2
        {
            self.wraps += 1;
        }
        self.last_timestamp = Some(timestamp);
        (self.wraps << 32) + i64::from(timestamp)
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

    fn cache(&mut self, frame: &Arc<MediaFrame>) {
        if frame.kind == FrameKind::Video && frame.keyframe {
            self.gop.clear();
            self.gop_bytes = 0;
        } else if self.gop.is_empty() && self.video_header.is_some() {
            // Nothing before the first keyframe is useful to a new player.
            return;
        }
        if self.gop.len() >= MAX_GOP_FRAMES || self.gop_bytes + frame.payload.len() > MAX_GOP_BYTES
        {
            self.gop.clear();
            self.gop_bytes = 0;
            return;
        }
        if self.video_header.is_some() || frame.kind == FrameKind::Video {
            self.gop_bytes += frame.payload.len();
            self.gop.push(Arc::clone(frame));
        }
    }

    fn headers(&self) -> Vec<Arc<MediaFrame>> {
        [&self.metadata, &self.video_header, &self.audio_header]
            .into_iter()
            .flatten()
            .cloned()
            .collect()
    }
}

/// Offers `frame` to one player; `false` when the player is gone.
fn deliver(
    player: &mut Player,
    frame: &Arc<MediaFrame>,
    headers: &[Arc<MediaFrame>],
    key: &StreamKey,
) -> bool {
    // A stream without video has no keyframes: any audio frame is a place to resume.
    let resumes_here = match frame.kind {
        FrameKind::Video => frame.keyframe,
        FrameKind::Audio => !headers.iter().any(|h| h.kind == FrameKind::Video),
        FrameKind::Metadata => false,
    };
    if player.lagging {
        if !resumes_here || player.queue.capacity() < headers.len() + 1 {
            player.dropped.fetch_add(1, Ordering::Relaxed);
            return !player.queue.is_closed();
        }
        for header in headers {
            if player.queue.try_send(Arc::clone(header)).is_err() {
                return !player.queue.is_closed();
            }
        }
        player.lagging = false;
        tracing::info!(stream = %key, player = player.id, dropped = player.dropped.load(Ordering::Relaxed), "player caught up at a keyframe");
    }
    match player.queue.try_send(Arc::clone(frame)) {
        Ok(()) => true,
        Err(mpsc::error::TrySendError::Full(_)) => {
            player.lagging = true;
            player.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(stream = %key, player = player.id, "player too slow: dropping until the next keyframe");
            true
        }
        Err(mpsc::error::TrySendError::Closed(_)) => false,
    }
}

/// Every live stream of the worker.
#[derive(Default)]
pub struct Streams {
    map: Mutex<HashMap<StreamKey, Arc<Stream>>>,
    pub events: HubEvents,
}

impl Streams {
    /// The stream for `key`, created if needed (tests look streams up directly).
    #[cfg(test)]
    pub fn get_or_create(&self, key: &StreamKey) -> Arc<Stream> {
        Arc::clone(
            locked(&self.map)
                .entry(key.clone())
                .or_insert_with(|| Arc::new(Stream::new(key.clone()))),
        )
    }

    /// Makes `publisher` the publisher of `key`. The map stays locked until the stream is
    /// claimed: otherwise the last player leaving in between would remove the stream from
    /// the map and the publisher would publish into a stream nobody can find.
    pub fn claim(
        &self,
        key: &StreamKey,
        publisher: PublisherInfo,
    ) -> Result<Arc<Stream>, AlreadyPublishing> {
        let mut map = locked(&self.map);
        let stream = Arc::clone(
            map.entry(key.clone())
                .or_insert_with(|| Arc::new(Stream::new(key.clone()))),
        );
        stream.claim(publisher)?;
        self.events.send(HubEvent::Published(key.clone()));
        Ok(stream)
    }

    /// Adds player `id` to `key` (created if needed), under the map lock for the same
    /// reason as [`Streams::claim`].
    pub fn subscribe(&self, key: &StreamKey, id: u64) -> (FrameReceiver, Arc<AtomicU64>) {
        let mut map = locked(&self.map);
        let stream = map
            .entry(key.clone())
            .or_insert_with(|| Arc::new(Stream::new(key.clone())));
        let subscribed = stream.subscribe(id);
        if stream.player_count() == 1 {
            self.events.send(HubEvent::Demand(key.clone()));
        }
        subscribed
    }

    /// Follows whether `key` has a publisher; `None` when nobody publishes or plays it.
    pub fn watch_live(&self, key: &StreamKey) -> Option<watch::Receiver<bool>> {
        locked(&self.map).get(key).map(|stream| stream.watch_live())
    }

    /// Streams known to the hub (with a publisher or readers) right now.
    #[cfg(test)]
    pub fn count(&self) -> usize {
        locked(&self.map).len()
    }

    /// Players (RTMP players, bus subscribers, pushes) of `key` right now.
    pub fn player_count(&self, key: &StreamKey) -> usize {
        locked(&self.map)
            .get(key)
            .map_or(0, |stream| stream.player_count())
    }

    /// Ends `session_id`'s publish of `key`; returns whether it was the publisher.
    pub fn release(&self, key: &StreamKey, session_id: u64) -> bool {
        let mut map = locked(&self.map);
        let Some(stream) = map.get(key).cloned() else {
            return false;
        };
        let released = stream.release(session_id);
        if stream.is_idle() {
            map.remove(key);
        }
        if released {
            self.events.send(HubEvent::Unpublished(key.clone()));
        }
        released
    }

    pub fn leave(&self, key: &StreamKey, player_id: u64) {
        let mut map = locked(&self.map);
        if let Some(stream) = map.get(key).cloned() {
            stream.unsubscribe(player_id);
            if stream.player_count() == 0 {
                self.events.send(HubEvent::NoDemand(key.clone()));
            }
            if stream.is_idle() {
                map.remove(key);
            }
        }
    }

    /// Streams that have a publisher right now.
    pub fn live(&self) -> Vec<Arc<Stream>> {
        locked(&self.map)
            .values()
            .filter(|stream| stream.publisher().is_some())
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn video(ts: u32, key: bool) -> MediaFrame {
        MediaFrame::new(
            FrameKind::Video,
            ts,
            key,
            false,
            Bytes::from_static(&[0x17, 1, 0, 0, 0, 9]),
        )
    }

    fn publisher() -> PublisherInfo {
        PublisherInfo {
            session_id: 1,
            ip: "127.0.0.1".into(),
            publish_time: 0,
            query: String::new(),
            source_url: None,
        }
    }

    #[test]
    fn a_second_publisher_is_refused() {
        let streams = Streams::default();
        let key = StreamKey {
            app: "live".into(),
            stream: "a".into(),
        };
        streams.claim(&key, publisher()).unwrap();
        assert_eq!(
            streams.claim(&key, publisher()).err(),
            Some(AlreadyPublishing)
        );
        assert!(streams.release(&key, 1));
        assert!(streams.claim(&key, publisher()).is_ok());
    }

    #[test]
    fn streams_without_publisher_and_readers_leave_the_hub_and_players_see_it() {
        let streams = Streams::default();
        for i in 0..100 {
            let key = StreamKey {
                app: "live".into(),
                stream: format!("s{i}"),
            };
            streams.claim(&key, publisher()).unwrap();
            let _ = streams.subscribe(&key, 7);
            let mut live = streams.watch_live(&key).unwrap();
            assert!(*live.borrow_and_update());
            assert!(streams.release(&key, 1));
            assert!(live.has_changed().unwrap());
            assert!(
                !*live.borrow_and_update(),
                "players learn the publisher left"
            );
            assert_eq!(streams.count(), 1, "a reader keeps the stream");
            streams.leave(&key, 7);
            assert_eq!(streams.count(), 0, "nothing left behind for {key}");
        }
    }

    #[test]
    fn a_new_player_starts_at_the_last_keyframe() {
        let streams = Streams::default();
        let key = StreamKey {
            app: "live".into(),
            stream: "a".into(),
        };
        let stream = streams.claim(&key, publisher()).unwrap();
        stream.publish(MediaFrame::new(
            FrameKind::Video,
            0,
            true,
            true,
            Bytes::from_static(&[0x17, 0]),
        ));
        stream.publish(video(0, true));
        stream.publish(video(33, false));
        stream.publish(video(66, true));
        stream.publish(video(99, false));
        let (mut rx, _) = stream.subscribe(7);
        let first = rx.try_recv().unwrap();
        assert!(first.sequence_header);
        let second = rx.try_recv().unwrap();
        assert!(second.keyframe);
        assert_eq!(second.timestamp, 66);
        assert_eq!(rx.try_recv().unwrap().timestamp, 99);
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn a_slow_player_drops_whole_gops_and_resumes_at_a_keyframe() {
        let streams = Streams::default();
        let key = StreamKey {
            app: "live".into(),
            stream: "a".into(),
        };
        let stream = streams.claim(&key, publisher()).unwrap();
        stream.publish(MediaFrame::new(
            FrameKind::Video,
            0,
            true,
            true,
            Bytes::from_static(&[0x17, 0]),
        ));
        let (mut rx, dropped) = stream.subscribe(1);
        let mut ts = 0;
        for i in 0..(PLAYER_QUEUE_FRAMES + 50) {
            ts += 1;
            stream.publish(video(ts, i % 100 == 0));
        }
        assert!(dropped.load(Ordering::Relaxed) > 0);
        // Drain: everything queued is whole frames in order.
        let mut last = 0;
        while let Ok(frame) = rx.try_recv() {
            assert!(frame.timestamp >= last);
            last = frame.timestamp;
        }
        // Next keyframe: headers again, then the keyframe.
        stream.publish(video(ts + 1, false));
        assert!(rx.try_recv().is_err(), "still dropping until a keyframe");
        stream.publish(video(ts + 2, true));
        assert!(rx.try_recv().unwrap().sequence_header);
        let resumed = rx.try_recv().unwrap();
        assert!(resumed.keyframe);
        assert_eq!(resumed.timestamp, ts + 2);
    }
}
