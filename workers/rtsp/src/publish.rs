//! An RTSP publisher's media: the announced tracks, RTP from each (interleaved or UDP)
//! depacketized into neutral frames (`strom_media::rtp::depacketize`) and published into
//! the hub under the publisher's claim. RTP clocks become 90 kHz stream time, each
//! track aligned to the wall clock at its first packet, so audio and video start
//! together. RTP carries presentation times only: video decode times are derived from
//! the stream's reorder depth ([`DecodeTimes`]), so B-frame streams (ffmpeg's default
//! libx264) play over RTMP and MP4 in order.

use bytes::Bytes;
use std::time::Instant;
use strom_media::decode_time::DecodeTimes;
use strom_media::frame::{Codec, Frame, Track};
use strom_media::rtp::announce::AnnouncedTrack;
use strom_media::rtp::depacketize::{AacDepacketizer, Depacketized, VideoDepacketizer};
use strom_media::rtp::packet;
use strom_stream::Publishing;

enum Depacketizer {
    Video(VideoDepacketizer),
    Aac(AacDepacketizer),
}

/// One track being received.
pub struct TrackReceiver {
    codec: Codec,
    clock_rate: u32,
    depacketizer: Depacketizer,
    /// The last RTP timestamp and the wraps so far, to unwrap the 32-bit clock.
    last: Option<u32>,
    wraps: i64,
    /// Stream time (90 kHz) minus the unwrapped RTP time (90 kHz), fixed at the first
    /// packet.
    offset: Option<i64>,
    /// The AudioSpecificConfig, published once before the first audio frame.
    audio_config: Option<Bytes>,
    /// Video decode times (unused for audio).
    decode_times: DecodeTimes,
}

impl TrackReceiver {
    /// A receiver for `track`; `None` for a codec strom does not take.
    pub fn new(track: &AnnouncedTrack) -> Option<Self> {
        let depacketizer = match track.codec? {
            Codec::H264 | Codec::H265 => {
                let mut video = if track.codec == Some(Codec::H264) {
                    VideoDepacketizer::h264()
                } else {
                    VideoDepacketizer::h265()
                };
                video.prime(&track.parameter_sets);
                Depacketizer::Video(video)
            }
            Codec::Aac => Depacketizer::Aac(AacDepacketizer::default()),
            _ => return None,
        };
        Some(Self {
            codec: track.codec?,
            clock_rate: track.clock_rate.max(1),
            depacketizer,
            last: None,
            wraps: 0,
            offset: None,
            audio_config: track.audio_config.clone(),
            decode_times: DecodeTimes::default(),
        })
    }

    fn stream_time(&mut self, timestamp: u32, started: Instant) -> i64 {
        if let Some(last) = self.last
            && timestamp < last
            && last - timestamp > u32::MAX / 2
        {
            self.wraps = self.wraps.saturating_add(1);
        }
        self.last = Some(timestamp);
        let unwrapped = self
            .wraps
            .saturating_mul(1 << 32)
            .saturating_add(i64::from(timestamp));
        let ticks = (i128::from(unwrapped) * 90_000 / i128::from(self.clock_rate)) as i64;
        let offset = *self.offset.get_or_insert_with(|| {
            let arrived = (started.elapsed().as_micros() * 9 / 100) as i64;
            arrived - ticks
        });
        ticks.saturating_add(offset)
    }

    /// Depacketizes one RTP packet and publishes what it completed.
    pub fn receive(&mut self, data: &Bytes, started: Instant, publishing: &Publishing) {
        let Ok(packet) = packet::parse(data) else {
            return;
        };
        let outputs = match &mut self.depacketizer {
            Depacketizer::Video(video) => video.push(&packet),
            Depacketizer::Aac(aac) => aac.push(&packet),
        };
        let track = if self.codec == Codec::Aac {
            Track::Audio
        } else {
            Track::Video
        };
        for output in outputs {
            match output {
                Depacketized::Config(record) => {
                    let time = self.stream_time(packet.timestamp, started);
                    self.decode_times.configure(self.codec, &record);
                    publishing.publish(frame(track, self.codec, time, true, false, record));
                }
                Depacketized::Sample {
                    timestamp,
                    payload,
                    keyframe,
                } => {
                    let time = self.stream_time(timestamp, started);
                    if let Some(config) = self.audio_config.take() {
                        publishing.publish(frame(track, self.codec, time, true, false, config));
                    }
                    let sample = frame(track, self.codec, time, false, keyframe, payload);
                    publishing.publish(match track {
                        Track::Video => reordered(sample, &mut self.decode_times),
                        _ => sample,
                    });
                }
            }
        }
    }
}

/// A frame from RTP: presentation times only, so `dts` = `pts` ([`Frame::neutral`]).
pub(crate) fn frame(
    track: Track,
    codec: Codec,
    time: i64,
    config: bool,
    keyframe: bool,
    payload: Bytes,
) -> Frame {
    Frame {
        config,
        keyframe,
        ..Frame::neutral(track, codec, time, payload)
    }
}

/// `sample` (a video frame at its presentation time) with its derived decode time.
pub(crate) fn reordered(sample: Frame, decode_times: &mut DecodeTimes) -> Frame {
    Frame {
        dts: decode_times.next(sample.pts),
        ..sample
    }
}
