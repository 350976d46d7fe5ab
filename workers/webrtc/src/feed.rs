//! One played stream as WebRTC sends it, made once per stream and shared by all its
//! viewers: every frame already cut into RTP payloads (H.264 single NAL units and FU-A
//! fragments per RFC 6184, with the parameter sets in front of every keyframe; one Opus
//! frame per packet), and the audio as Opus (AAC transcoded here, once, not per viewer).
//! A viewer's session only puts its own RTP header on each shared payload and encrypts
//! it; its retransmission cache holds the same shared payloads.
//!
//! The feed reads the stream from the worker's hub like any reader (so a stream of
//! another worker is relayed in, and an absent one starts its on-demand or edge pull),
//! keeps the frames since the last keyframe for viewers that join, and broadcasts every
//! new frame. A viewer that falls behind the broadcast's bound loses frames and resumes
//! at the next keyframe; the feed and the publisher never wait for it.

use crate::audio::AacToOpus;
use crate::core::Core;
use crate::fanout::Fanout;
use crate::feed_frame::{FeedFrame, MAX_RTP_PAYLOAD};
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strom_media::avc::AvcDecoderConfig;
use strom_media::frame::{Codec, Frame, Track};
use strom_media::rtp::{RtpPayload, packetize_h264};
use strom_stream::{Hub, Queue, Reader, StreamKey};
use strom_worker_runtime::SessionIds;
use strom_worker_runtime::sync::locked;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

/// Frames the broadcast holds for its slowest fan-out shard (a few seconds of video and
/// audio).
const BROADCAST_FRAMES: usize = 1024;
/// Frames kept since the last keyframe at most; a longer GOP is not kept whole (its
/// viewers start at the next keyframe instead).
const MAX_GOP_FRAMES: usize = 1500;
/// Bytes kept since the last keyframe at most.
const MAX_GOP_BYTES: usize = 32 * 1024 * 1024;
/// A stream without a publisher this long ends its feed, and with it its viewers'
/// sessions (a publisher that reconnects sooner keeps them).
const GONE_LINGER: Duration = Duration::from_secs(10);
/// A feed with no viewers this long leaves the stream (longer than an offer waits for
/// the stream to start, so a feed is not closed under a waiting offer).
const IDLE_LINGER: Duration = Duration::from_secs(10);

/// What the feed knows about the stream's tracks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tracks {
    /// H.264 video is sent.
    pub video: bool,
    /// Opus audio is sent, with this many channels.
    pub audio_channels: Option<u8>,
    /// A media frame went out: the tracks above are what the stream has.
    pub started: bool,
}

pub struct Feed {
    key: StreamKey,
    sender: broadcast::Sender<Arc<FeedFrame>>,
    fanout: Fanout,
    gop: Mutex<Gop>,
    tracks: watch::Receiver<Tracks>,
    stop: CancellationToken,
}

#[derive(Default)]
struct Gop {
    frames: Vec<Arc<FeedFrame>>,
    /// The number the next frame gets.
    next_seq: u64,
    bytes: usize,
    /// The GOP outgrew the bounds: nothing kept until the next keyframe.
    overflowed: bool,
}

impl Feed {
    /// Adds a connected viewer to the stream's fan-out; the frames since the last
    /// keyframe (empty before the first), which the caller sends it first, holding its
    /// core's lock so that its shard's frames come after them.
    pub fn attach(&self, id: u64, core: &Arc<Mutex<Core>>) -> Vec<Arc<FeedFrame>> {
        let gop = locked(&self.gop);
        self.fanout.join(id, core, gop.next_seq);
        gop.frames.clone()
    }

    /// Waits up to `wait` for the stream's first media frame; the tracks then.
    pub async fn started(&self, wait: Duration) -> Option<Tracks> {
        let mut tracks = self.tracks.clone();
        let known = tokio::time::timeout(wait, tracks.wait_for(|t| t.started)).await;
        match known {
            Ok(Ok(tracks)) => Some(*tracks),
            _ => None,
        }
    }

    pub fn key(&self) -> &StreamKey {
        &self.key
    }

    /// Cancelled when the feed ended (the stream gone, the worker stopping).
    pub fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }
}

/// The feeds of the streams this worker's viewers play.
pub struct Feeds {
    hub: Hub,
    ids: Arc<SessionIds>,
    feeds: Mutex<HashMap<StreamKey, Arc<Feed>>>,
    stop: CancellationToken,
}

impl Feeds {
    pub fn new(hub: Hub, ids: Arc<SessionIds>, stop: CancellationToken) -> Arc<Self> {
        Arc::new(Self {
            hub,
            ids,
            feeds: Mutex::new(HashMap::new()),
            stop,
        })
    }

    /// The feed of `key`, started if no viewer plays it yet.
    pub fn get(self: &Arc<Self>, key: &StreamKey) -> Arc<Feed> {
        let mut feeds = locked(&self.feeds);
        if let Some(feed) = feeds.get(key)
            && !feed.stop.is_cancelled()
        {
            return Arc::clone(feed);
        }
        let (sender, _) = broadcast::channel(BROADCAST_FRAMES);
        let (tracks_tx, tracks) = watch::channel(Tracks::default());
        let stop = self.stop.child_token();
        let feed = Arc::new(Feed {
            key: key.clone(),
            fanout: Fanout::start(&sender, &stop, key),
            sender,
            gop: Mutex::new(Gop::default()),
            tracks,
            stop,
        });
        feeds.insert(key.clone(), Arc::clone(&feed));
        let feeds_of = Arc::clone(self);
        let running = Arc::clone(&feed);
        tokio::spawn(async move {
            let reader_id = feeds_of.ids.next_id();
            run(&feeds_of.hub, &running, reader_id, tracks_tx).await;
            running.stop.cancel();
            let mut feeds = locked(&feeds_of.feeds);
            if feeds
                .get(running.key())
                .is_some_and(|f| Arc::ptr_eq(f, &running))
            {
                feeds.remove(running.key());
            }
        });
        feed
    }

    /// Streams with a feed running (viewers or lingering).
    pub fn count(&self) -> usize {
        locked(&self.feeds).len()
    }
}

/// Converts frames of the stream until it has had no viewer for [`IDLE_LINGER`] or the
/// worker stops. The feed is the one reader of the stream for all its sessions (each
/// admitted by the gate at its offer), so it reads as the operator's own.
async fn run(hub: &Hub, feed: &Arc<Feed>, reader_id: u64, tracks: watch::Sender<Tracks>) {
    let Reader {
        mut frames, place, ..
    } = hub.own_reader(&feed.key, Queue, reader_id);
    // Left when the feed ends, however it ends.
    let _place = place;
    let live = hub.watch_live(&feed.key);
    let mut converter = Converter::default();
    let mut idle_since: Option<tokio::time::Instant> = None;
    let mut gone_since: Option<tokio::time::Instant> = None;
    let mut check = tokio::time::interval(Duration::from_secs(1));
    loop {
        let frame = tokio::select! {
            () = feed.stop.cancelled() => return,
            _ = check.tick() => {
                // Sessions hold the feed from their offer on (they join its fan-out only
                // once connected); the registry and this task hold it too.
                if Arc::strong_count(feed) > 2 {
                    idle_since = None;
                } else if idle_since.get_or_insert_with(tokio::time::Instant::now).elapsed() >= IDLE_LINGER {
                    tracing::debug!(stream = %feed.key, "webrtc feed without viewers closed");
                    return;
                }
                let publishing = live.as_ref().is_none_or(|live| *live.borrow());
                if publishing || !converter.started {
                    gone_since = None;
                } else if gone_since.get_or_insert_with(tokio::time::Instant::now).elapsed() >= GONE_LINGER {
                    tracing::info!(stream = %feed.key, "stream gone: its webrtc viewers are closed");
                    return;
                }
                continue;
            }
            frame = frames.recv() => frame,
        };
        let Some(frame) = frame else {
            return;
        };
        for mut out in converter.convert(&frame.frame, &feed.key) {
            let mut gop = locked(&feed.gop);
            out.seq = gop.next_seq;
            gop.next_seq += 1;
            let out = Arc::new(out);
            gop.keep(&out);
            let _ = feed.sender.send(out);
        }
        tracks.send_if_modified(|known| {
            let now = converter.tracks();
            let changed = *known != now;
            *known = now;
            changed
        });
    }
}

impl Gop {
    fn keep(&mut self, frame: &Arc<FeedFrame>) {
        if frame.video && frame.keyframe {
            self.frames.clear();
            self.bytes = 0;
            self.overflowed = false;
        }
        if self.overflowed {
            return;
        }
        let bytes = frame.bytes();
        if self.frames.len() >= MAX_GOP_FRAMES || self.bytes + bytes > MAX_GOP_BYTES {
            self.frames.clear();
            self.bytes = 0;
            self.overflowed = true;
            return;
        }
        self.bytes += bytes;
        self.frames.push(Arc::clone(frame));
    }
}

/// Frames of the stream in WebRTC's forms.
#[derive(Default)]
struct Converter {
    /// SPS and PPS NAL units, sent in front of every keyframe.
    parameter_sets: Vec<Bytes>,
    nal_length_size: u8,
    video: bool,
    audio: Option<AacToOpus>,
    /// The stream's audio is Opus already.
    opus_channels: Option<u8>,
    started: bool,
    warned: bool,
}

impl Converter {
    fn tracks(&self) -> Tracks {
        Tracks {
            video: self.video,
            audio_channels: self
                .audio
                .as_ref()
                .map(|a| a.channels())
                .or(self.opus_channels),
            started: self.started,
        }
    }

    fn convert(&mut self, frame: &Frame, key: &StreamKey) -> Vec<FeedFrame> {
        if frame.control {
            return Vec::new();
        }
        match (frame.track, frame.codec) {
            (Track::Video, Codec::H264) => self.video_frame(frame, key).into_iter().collect(),
            (Track::Audio, Codec::Aac) => self.aac_frame(frame, key),
            (Track::Audio, Codec::Opus) if !frame.config => {
                self.opus_channels.get_or_insert(2);
                self.started = true;
                vec![FeedFrame {
                    seq: 0,
                    video: false,
                    keyframe: false,
                    pts: frame.pts,
                    payloads: vec![Arc::from(&frame.payload[..])],
                }]
            }
            (Track::Video | Track::Audio, codec) if !self.warned => {
                self.warned = true;
                tracing::warn!(stream = %key, ?codec, "webrtc viewers get no track of this codec (H.264 video and AAC or Opus audio are sent)");
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn video_frame(&mut self, frame: &Frame, key: &StreamKey) -> Option<FeedFrame> {
        if frame.config {
            match AvcDecoderConfig::parse(&frame.payload) {
                Ok(config) => {
                    self.parameter_sets = config.sps.iter().chain(&config.pps).cloned().collect();
                    self.nal_length_size = config.nal_length_size;
                    self.video = true;
                }
                Err(error) => tracing::warn!(stream = %key, %error, "bad H.264 configuration"),
            }
            return None;
        }
        if !self.video {
            return None;
        }
        let parameter_sets: &[Bytes] = if frame.keyframe {
            &self.parameter_sets
        } else {
            &[]
        };
        let payloads = match packetize_h264(
            &frame.payload,
            self.nal_length_size,
            parameter_sets,
            MAX_RTP_PAYLOAD,
        ) {
            Ok(payloads) if !payloads.is_empty() => payloads,
            Ok(_) => return None,
            Err(error) => {
                tracing::debug!(stream = %key, %error, "H.264 frame not sent");
                return None;
            }
        };
        self.started = true;
        Some(FeedFrame {
            seq: 0,
            video: true,
            keyframe: frame.keyframe,
            pts: frame.pts,
            payloads: payloads.iter().map(payload_bytes).collect(),
        })
    }

    fn aac_frame(&mut self, frame: &Frame, key: &StreamKey) -> Vec<FeedFrame> {
        if frame.config {
            match AacToOpus::new(&frame.payload) {
                Ok(transcoder) => self.audio = Some(transcoder),
                Err(error) => {
                    self.audio = None;
                    tracing::warn!(stream = %key, %error, "AAC configuration cannot be transcoded to Opus: no audio for webrtc viewers");
                }
            }
            return Vec::new();
        }
        let Some(audio) = &mut self.audio else {
            return Vec::new();
        };
        match audio.push(&frame.payload, frame.pts) {
            Ok(packets) => {
                if !packets.is_empty() {
                    self.started = true;
                }
                packets
                    .into_iter()
                    .map(|packet| FeedFrame {
                        seq: 0,
                        video: false,
                        keyframe: false,
                        pts: packet.pts,
                        payloads: vec![Arc::from(&packet.data[..])],
                    })
                    .collect()
            }
            Err(error) => {
                strom_worker_runtime::limited_log!(debug, 5, Duration::from_secs(10); stream = %key, %error, "AAC frame not transcoded");
                Vec::new()
            }
        }
    }
}

/// One payload as the bytes every viewer's packets share: its prefix (an FU header) and
/// its slice of the frame, copied together once per stream.
fn payload_bytes(payload: &RtpPayload) -> Arc<[u8]> {
    let mut bytes = Vec::with_capacity(payload.len());
    bytes.extend_from_slice(payload.prefix.as_slice());
    bytes.extend_from_slice(&payload.body);
    Arc::from(bytes)
}
