//! One track of a player: its frames as RTP packets (timestamps on the track's clock,
//! this player's sequence numbers and SSRC) and its RTCP sender reports. Every track of
//! a player maps stream time to wall-clock time the same way (see
//! `connection::StreamClock`), so players synchronise audio and video from the reports.

use crate::describe::TrackPlan;
use crate::rtp_source::RtpSource;
use crate::transport::Transport;
use bytes::Bytes;
use strom_media::avc::AvcDecoderConfig;
use strom_media::frame::{Codec, Frame};
use strom_media::hevc::HevcDecoderConfig;
use strom_media::rtp::{self, RtpPayload, header, rtcp};

pub struct TrackSender {
    pub transport: Transport,
    codec: Codec,
    payload_type: u8,
    rtp: RtpSource,
    /// NAL length size and parameter sets of the current video configuration, put in
    /// front of every keyframe.
    nal_length_size: u8,
    parameter_sets: Vec<Bytes>,
    /// Video waits for a keyframe before it sends anything.
    started: bool,
}

impl TrackSender {
    pub fn new(plan: &TrackPlan, transport: Transport) -> Self {
        let mut sender = Self {
            transport,
            codec: plan.codec,
            payload_type: plan.media.payload_type,
            rtp: RtpSource::new(plan.media.clock_rate, rand::random()),
            nal_length_size: 4,
            parameter_sets: Vec::new(),
            started: plan.codec == Codec::Aac,
        };
        sender.configure(&plan.config);
        sender
    }

    /// The next sequence number and the RTP time of `pts`, for `RTP-Info`.
    pub fn rtp_info(&self, pts: i64) -> (u16, u32) {
        self.rtp.rtp_info(pts)
    }

    fn configure(&mut self, record: &Bytes) {
        match self.codec {
            Codec::H264 => {
                if let Ok(config) = AvcDecoderConfig::parse(record) {
                    self.nal_length_size = config.nal_length_size;
                    self.parameter_sets = config.sps.into_iter().chain(config.pps).collect();
                }
            }
            Codec::H265 => {
                if let Ok(config) = HevcDecoderConfig::parse(record) {
                    self.nal_length_size = config.nal_length_size;
                    self.parameter_sets = config
                        .vps
                        .into_iter()
                        .chain(config.sps)
                        .chain(config.pps)
                        .collect();
                }
            }
            _ => {}
        }
    }

    /// Whether `frame` belongs to this track.
    pub fn carries(&self, frame: &Frame) -> bool {
        frame.codec == self.codec && !frame.control
    }

    /// The RTP packets of `frame` (a frame of this track), each a complete packet.
    pub fn packets(&mut self, frame: &Frame) -> Vec<Vec<u8>> {
        if frame.config {
            self.configure(&frame.payload);
            return Vec::new();
        }
        if !self.started {
            if !frame.keyframe {
                return Vec::new();
            }
            self.started = true;
        }
        let sets: &[Bytes] = if frame.keyframe {
            &self.parameter_sets
        } else {
            &[]
        };
        let payloads: Option<Vec<RtpPayload>> = match self.codec {
            Codec::H264 => {
                rtp::packetize_h264(&frame.payload, self.nal_length_size, sets, rtp::MAX_PAYLOAD)
                    .ok()
            }
            Codec::H265 => {
                rtp::packetize_h265(&frame.payload, self.nal_length_size, sets, rtp::MAX_PAYLOAD)
                    .ok()
            }
            Codec::Aac => rtp::packetize_aac(&frame.payload, rtp::MAX_PAYLOAD),
            _ => None,
        };
        let Some(payloads) = payloads else {
            tracing::debug!(codec = ?self.codec, "frame RTP cannot carry skipped");
            return Vec::new();
        };
        let timestamp = self.rtp.rtp_time(frame.pts);
        payloads
            .into_iter()
            .map(|payload| {
                let head = self.rtp.next_header(
                    payload.marker,
                    self.payload_type,
                    timestamp,
                    payload.len(),
                );
                let mut packet = Vec::with_capacity(header::LEN + payload.len());
                packet.extend_from_slice(&head);
                packet.extend_from_slice(payload.prefix.as_slice());
                packet.extend_from_slice(&payload.body);
                packet
            })
            .collect()
    }

    /// A sender report saying that the stream time `pts` is wall-clock time `ntp`;
    /// `None` before the first packet.
    pub fn sender_report(&self, pts: i64, ntp: u64) -> Option<[u8; rtcp::SENDER_REPORT_LEN]> {
        self.rtp.sender_report(pts, ntp)
    }

    pub fn ssrc(&self) -> u32 {
        self.rtp.ssrc()
    }
}
