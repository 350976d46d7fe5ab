//! A WHIP publisher's media into the hub: H.264 access units (Annex B, as str0m
//! depacketizes them) become MP4-form samples with their `avcC` record; Opus becomes
//! AAC-LC (once, here) so HLS, DASH, RTMP and DVR players decode it. Both tracks are
//! put on one 90 kHz timeline anchored on the wall clock at each track's first packet.

use crate::audio::OpusToAac;
use str0m::format::Codec as RtcCodec;
use str0m::media::MediaData;
use strom_media::annexb_h264::AnnexbH264;
use strom_media::decode_time::DecodeTimes;
use strom_media::frame::{Codec, Frame, Track};
use strom_stream::Publishing;
use tokio::time::Instant;

/// How often at most a keyframe is asked for while none arrived or after a loss.
const KEYFRAME_REQUEST_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);

/// One track's RTP time mapped onto the stream's timeline.
#[derive(Default)]
struct Timeline {
    /// Stream time minus the track's time, fixed at its first packet.
    offset: Option<i64>,
}

impl Timeline {
    fn at(&mut self, ticks: i64, started: Instant) -> i64 {
        let offset = *self.offset.get_or_insert_with(|| {
            let arrived = (started.elapsed().as_micros() * 9 / 100) as i64;
            arrived - ticks
        });
        ticks.saturating_add(offset)
    }
}

pub struct Publisher {
    publishing: Publishing,
    started: Instant,
    video: AnnexbH264,
    video_time: Timeline,
    decode_times: DecodeTimes,
    keyframe_seen: bool,
    last_keyframe_request: Option<Instant>,
    audio: Option<OpusToAac>,
    audio_failed: bool,
    audio_time: Timeline,
}

impl Publisher {
    pub fn new(publishing: Publishing) -> Self {
        Self {
            publishing,
            started: Instant::now(),
            video: AnnexbH264::default(),
            video_time: Timeline::default(),
            decode_times: DecodeTimes::default(),
            keyframe_seen: false,
            last_keyframe_request: None,
            audio: None,
            audio_failed: false,
            audio_time: Timeline::default(),
        }
    }

    /// Publishes what `data` completes; whether to ask the publisher for a keyframe.
    pub fn receive(&mut self, data: &MediaData) -> bool {
        let ticks = data
            .time
            .rebase(str0m::media::Frequency::NINETY_KHZ)
            .numer() as i64;
        match data.params.spec().codec {
            RtcCodec::H264 => self.video(data, ticks),
            RtcCodec::Opus => {
                self.audio(data, ticks);
                false
            }
            _ => false,
        }
    }

    fn video(&mut self, data: &MediaData, ticks: i64) -> bool {
        let pts = self.video_time.at(ticks, self.started);
        let converted = self.video.convert(&data.data);
        if let Some(record) = converted.config {
            self.decode_times.configure(Codec::H264, &record);
            self.publishing.publish(Frame {
                config: true,
                ..Frame::neutral(Track::Video, Codec::H264, pts, record)
            });
        }
        if let Some((sample, keyframe)) = converted.sample {
            self.keyframe_seen |= keyframe;
            if self.keyframe_seen {
                let frame = Frame {
                    keyframe,
                    ..Frame::neutral(Track::Video, Codec::H264, pts, sample)
                };
                self.publishing.publish(Frame {
                    dts: self.decode_times.next(frame.pts),
                    ..frame
                });
            }
        }
        let wants = !self.keyframe_seen || !data.contiguous;
        if !data.contiguous {
            self.keyframe_seen = false;
        }
        if wants
            && self
                .last_keyframe_request
                .is_none_or(|at| at.elapsed() >= KEYFRAME_REQUEST_INTERVAL)
        {
            self.last_keyframe_request = Some(Instant::now());
            return true;
        }
        false
    }

    fn audio(&mut self, data: &MediaData, ticks: i64) {
        if self.audio.is_none() && !self.audio_failed {
            match OpusToAac::new(2) {
                Ok(transcoder) => {
                    let pts = self.audio_time.at(ticks, self.started);
                    self.publishing.publish(Frame {
                        config: true,
                        ..Frame::neutral(
                            Track::Audio,
                            Codec::Aac,
                            pts,
                            transcoder.audio_specific_config(),
                        )
                    });
                    self.audio = Some(transcoder);
                }
                Err(error) => {
                    self.audio_failed = true;
                    tracing::warn!(stream = %self.publishing.key(), %error, "whip audio cannot be transcoded to AAC: published without audio");
                }
            }
        }
        let Some(transcoder) = &mut self.audio else {
            return;
        };
        if data.data.is_empty() {
            // An empty payload carries no audio (padding for bandwidth probing).
            return;
        }
        let pts = self.audio_time.at(ticks, self.started);
        match transcoder.push(&data.data, pts) {
            Ok(frames) => {
                for aac in frames {
                    self.publishing.publish(Frame::neutral(
                        Track::Audio,
                        Codec::Aac,
                        aac.pts,
                        aac.data,
                    ));
                }
            }
            Err(error) => {
                strom_worker_runtime::limited_log!(debug, 5, std::time::Duration::from_secs(10); stream = %self.publishing.key(), %error, "whip opus packet not transcoded");
            }
        }
    }

    /// The session ended: the name is free again.
    pub fn finish(&mut self) {
        self.release_claim();
    }

    /// Gives the name back (a refused or ended publisher).
    pub fn release_claim(&self) {
        self.publishing.release();
    }
}
