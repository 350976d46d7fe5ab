//! A live stream of the server read as a playout source: a reader of the stream in
//! the MPEG-TS worker's hub (a stream of another worker comes in over a relay while the
//! reader is there), whether it is up, its configuration frames, and the frames since
//! its latest keyframe when the playout takes it over.
//!
//! The source is up from its first frame after being down, and down when its publisher
//! leaves or no frame came for [`SILENCE`].

use std::collections::VecDeque;
use std::time::Duration;
use strom_media::frame::{Frame, Track};
use strom_stream::{FrameReceiver, Hub, Queue, ReaderPlace, StreamKey};
use tokio::sync::watch;
use tokio::time::Instant;

/// A source that sent nothing for this long is down (the default stream takes over).
pub const SILENCE: Duration = Duration::from_millis(700);

pub enum LiveItem {
    /// A frame; `restarted` when a new publisher of the source sent it (a new timeline).
    Frame {
        frame: Frame,
        restarted: bool,
    },
    Down,
}

pub struct LiveFeed {
    frames: FrameReceiver,
    /// The channel's place among the stream's readers (and the stream), left when the
    /// feed drops.
    place: ReaderPlace,
    live: Option<watch::Receiver<bool>>,
    last_frame: Instant,
    up: bool,
    generation: Option<u32>,
    video_config: Option<Frame>,
    audio_config: Option<Frame>,
    /// Frames taken from the queue by [`LiveFeed::catch_up`], from a keyframe on.
    buffered: VecDeque<(Frame, bool)>,
}

impl LiveFeed {
    pub fn subscribe(hub: &Hub, key: &StreamKey, reader_id: u64) -> Self {
        let reader = hub.own_reader(key, Queue, reader_id);
        Self {
            frames: reader.frames,
            place: reader.place,
            live: hub.watch_live(key),
            last_frame: Instant::now(),
            up: false,
            generation: None,
            video_config: None,
            audio_config: None,
            buffered: VecDeque::new(),
        }
    }

    /// The stream the feed reads.
    pub fn key(&self) -> &StreamKey {
        self.place.key()
    }

    /// The source's configuration frames (latest of each track).
    pub fn configs(&self) -> Vec<Frame> {
        [&self.video_config, &self.audio_config]
            .into_iter()
            .flatten()
            .cloned()
            .collect()
    }

    /// Whether the source has video (known from its configuration).
    pub fn has_video(&self) -> bool {
        self.video_config.is_some()
    }

    /// Whether `frame` is a place to start playing this source at.
    pub fn starts_at(&self, frame: &Frame) -> bool {
        match frame.track {
            Track::Video => frame.keyframe && !frame.config,
            Track::Audio => !self.has_video() && !frame.config,
            Track::Data => false,
        }
    }

    /// Moves what is queued now into the buffer, which then holds the frames from the
    /// latest place to start at among them (or all of them when none is one).
    pub fn drain(&mut self) {
        while let Ok(shared) = self.frames.try_recv() {
            let restarted = self.note(&shared.frame, shared.generation);
            if self.starts_at(&shared.frame) {
                self.buffered.clear();
            }
            if !shared.frame.config {
                self.buffered.push_back((shared.frame.clone(), restarted));
            }
        }
    }

    /// [`LiveFeed::drain`], keeping only frames from a place to start at: a playout
    /// switching to the source starts as close to live as it can.
    pub fn catch_up(&mut self) {
        self.drain();
        while self
            .buffered
            .front()
            .is_some_and(|(frame, _)| !self.starts_at(frame))
        {
            self.buffered.pop_front();
        }
    }

    /// Whether the buffer begins at a place to start at.
    pub fn buffered_start(&self) -> bool {
        self.buffered
            .front()
            .is_some_and(|(frame, _)| self.starts_at(frame))
    }

    pub fn clear_buffered(&mut self) {
        self.buffered.clear();
    }

    /// Learns from a frame; `true` when it comes from a new publisher.
    fn note(&mut self, frame: &Frame, generation: u32) -> bool {
        self.last_frame = Instant::now();
        self.up = true;
        let restarted = self.generation.is_some_and(|g| g != generation);
        self.generation = Some(generation);
        if frame.config {
            match frame.track {
                Track::Video => self.video_config = Some(frame.clone()),
                Track::Audio => self.audio_config = Some(frame.clone()),
                Track::Data => {}
            }
        }
        restarted
    }

    /// The next frame, or word that the source went down. Cancel-safe.
    pub async fn next(&mut self) -> LiveItem {
        if let Some((frame, restarted)) = self.buffered.pop_front() {
            return LiveItem::Frame { frame, restarted };
        }
        loop {
            let silence = self.last_frame + SILENCE;
            let up = self.up;
            let event = {
                let (frames, live) = (&mut self.frames, &mut self.live);
                let gone = async {
                    match live.as_mut() {
                        Some(live) => match live.changed().await {
                            Ok(()) => Some(!*live.borrow()),
                            Err(_) => None,
                        },
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    shared = frames.recv() => Event::Frame(shared),
                    gone = gone => Event::Gone(gone),
                    () = tokio::time::sleep_until(silence), if up => Event::Silent,
                }
            };
            match event {
                Event::Frame(Some(shared)) => {
                    let restarted = self.note(&shared.frame, shared.generation);
                    let frame = shared.frame.clone();
                    return LiveItem::Frame { frame, restarted };
                }
                Event::Frame(None) => {
                    // The hub closed this reader: nothing comes any more.
                    self.live = None;
                    if std::mem::take(&mut self.up) {
                        return LiveItem::Down;
                    }
                    return std::future::pending().await;
                }
                Event::Gone(Some(true)) | Event::Silent if std::mem::take(&mut self.up) => {
                    return LiveItem::Down;
                }
                Event::Gone(None) => self.live = None,
                Event::Gone(_) | Event::Silent => {}
            }
        }
    }
}

enum Event {
    Frame(Option<std::sync::Arc<strom_stream::SharedFrame>>),
    /// Whether the publisher left; `None` when the stream can no longer say.
    Gone(Option<bool>),
    Silent,
}
