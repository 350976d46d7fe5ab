//! RTP payloads back into access units, for RTSP publishers: H.264 (RFC 6184: single
//! NAL units, STAP-A, FU-A), H.265 (RFC 7798: single NAL units, aggregation packets,
//! FUs) and AAC (RFC 3640 AAC-hbr: AU headers of 13-bit sizes, fragmented AUs). Video
//! access units end at the marker bit or a new timestamp and go through the same
//! Annex B conversion as MPEG-TS ingest (parameter sets kept, `avcC`/`hvcC` records
//! built), so the output is config frames and MP4-sample form. A lost fragment drops the
//! NAL unit it belonged to; every buffer is bounded.

use super::packet::RtpPacket;
use crate::ts_demux::video::{NalCodec, VideoState};
use bytes::{BufMut, Bytes, BytesMut};

/// The largest access unit kept (a 4K keyframe is a few MiB).
pub const MAX_ACCESS_UNIT_BYTES: usize = 16 * 1024 * 1024;

/// What a packet completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Depacketized {
    /// A new decoder configuration record (`avcC`, `hvcC`), before the sample it precedes.
    Config(Bytes),
    /// A video access unit (MP4-sample form) or one AAC frame, with its RTP timestamp.
    Sample {
        timestamp: u32,
        payload: Bytes,
        keyframe: bool,
    },
}

/// Video: H.264 or H.265.
#[derive(Debug)]
pub struct VideoDepacketizer {
    codec: NalCodec,
    /// The access unit being gathered, in Annex B form.
    unit: BytesMut,
    timestamp: Option<u32>,
    /// A fragmented NAL unit in progress (without start code), dropped on a gap.
    fragment: Option<BytesMut>,
    last_sequence: Option<u16>,
    state: VideoState,
}

impl VideoDepacketizer {
    pub fn h264() -> Self {
        Self::new(NalCodec::H264)
    }

    pub fn h265() -> Self {
        Self::new(NalCodec::H265)
    }

    fn new(codec: NalCodec) -> Self {
        Self {
            codec,
            unit: BytesMut::new(),
            timestamp: None,
            fragment: None,
            last_sequence: None,
            state: VideoState::default(),
        }
    }

    /// Parameter sets from the SDP (`sprop-parameter-sets`, `sprop-vps/sps/pps`), taken
    /// as if they led the first access unit.
    pub fn prime(&mut self, parameter_sets: &[Bytes]) {
        for set in parameter_sets {
            self.push_nal(set);
        }
    }

    /// Takes one packet; returns what it completed.
    pub fn push(&mut self, packet: &RtpPacket) -> Vec<Depacketized> {
        let mut out = Vec::new();
        let gap = self
            .last_sequence
            .is_some_and(|last| last.wrapping_add(1) != packet.sequence);
        self.last_sequence = Some(packet.sequence);
        if gap {
            self.fragment = None;
        }
        if self.timestamp.is_some_and(|ts| ts != packet.timestamp) {
            self.finish(&mut out);
        }
        self.timestamp = Some(packet.timestamp);
        match self.codec {
            NalCodec::H264 => self.h264_payload(&packet.payload),
            NalCodec::H265 => self.h265_payload(&packet.payload),
        }
        if packet.marker {
            self.finish(&mut out);
        }
        out
    }

    fn h264_payload(&mut self, payload: &Bytes) {
        let Some(&first) = payload.first() else {
            return;
        };
        match first & 0x1f {
            1..=23 => self.push_nal(payload),
            // STAP-A: 16-bit sizes and NAL units.
            24 => self.aggregated(&payload[1..]),
            28 => {
                let Some(&header) = payload.get(1) else {
                    return;
                };
                let nal_header = (first & 0xe0) | (header & 0x1f);
                self.fragmented(header, &[nal_header], &payload[2..]);
            }
            _ => {}
        }
    }

    fn h265_payload(&mut self, payload: &Bytes) {
        let Some(&[a, b]) = payload.get(..2).and_then(|h| <&[u8; 2]>::try_from(h).ok()) else {
            return;
        };
        match (a >> 1) & 0x3f {
            0..=47 => self.push_nal(payload),
            48 => self.aggregated(&payload[2..]),
            49 => {
                let Some(&header) = payload.get(2) else {
                    return;
                };
                let nal_header = [(a & 0x81) | ((header & 0x3f) << 1), b];
                self.fragmented(header, &nal_header, &payload[3..]);
            }
            _ => {}
        }
    }

    fn aggregated(&mut self, mut rest: &[u8]) {
        while let Some((size, tail)) = rest.split_first_chunk::<2>() {
            let len = usize::from(u16::from_be_bytes(*size));
            let Some(nal) = tail.get(..len) else {
                return;
            };
            self.push_nal(nal);
            rest = &tail[len..];
        }
    }

    /// An FU: `header` holds the start and end bits; `nal_header` rebuilds the unit's.
    fn fragmented(&mut self, header: u8, nal_header: &[u8], body: &[u8]) {
        let (start, end) = (header & 0x80 != 0, header & 0x40 != 0);
        if start {
            let mut nal = BytesMut::with_capacity(nal_header.len() + body.len());
            nal.extend_from_slice(nal_header);
            self.fragment = Some(nal);
        }
        let Some(nal) = self.fragment.as_mut() else {
            return;
        };
        if nal.len() + body.len() > MAX_ACCESS_UNIT_BYTES {
            self.fragment = None;
            return;
        }
        nal.extend_from_slice(body);
        if end && let Some(nal) = self.fragment.take() {
            self.push_nal(&nal);
        }
    }

    fn push_nal(&mut self, nal: &[u8]) {
        if nal.is_empty() || self.unit.len() + nal.len() + 4 > MAX_ACCESS_UNIT_BYTES {
            return;
        }
        self.unit.put_u32(1);
        self.unit.extend_from_slice(nal);
    }

    fn finish(&mut self, out: &mut Vec<Depacketized>) {
        let Some(timestamp) = self.timestamp else {
            return;
        };
        if self.unit.is_empty() {
            return;
        }
        let unit = self.unit.split();
        let converted = self.state.convert(self.codec, &unit);
        if let Some(config) = converted.config {
            out.push(Depacketized::Config(config));
        }
        if let Some((payload, keyframe)) = converted.sample {
            out.push(Depacketized::Sample {
                timestamp,
                payload,
                keyframe,
            });
        }
    }
}

/// AAC in `mpeg4-generic` AAC-hbr: 13-bit AU sizes, 3-bit indexes.
#[derive(Debug, Default)]
pub struct AacDepacketizer {
    /// A fragmented AU in progress, with its announced size.
    fragment: Option<(BytesMut, usize)>,
}

/// Samples per AAC frame: the RTP timestamp step between AUs of one packet.
const AAC_FRAME_SAMPLES: u32 = 1024;

impl AacDepacketizer {
    pub fn push(&mut self, packet: &RtpPacket) -> Vec<Depacketized> {
        let payload = &packet.payload;
        let Some(header_bits) = payload
            .get(..2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
        else {
            return Vec::new();
        };
        let count = header_bits / 16;
        let data_start = 2 + header_bits.div_ceil(8);
        let (Some(headers), Some(data)) = (payload.get(2..data_start), payload.get(data_start..))
        else {
            self.fragment = None;
            return Vec::new();
        };
        let sizes: Vec<usize> = headers
            .chunks_exact(2)
            .take(count)
            .map(|h| usize::from(u16::from_be_bytes([h[0], h[1]]) >> 3))
            .collect();
        let mut out = Vec::new();
        // One AU larger than the packet: fragments until the marker (RFC 3640 3.2.3).
        if let [size] = sizes.as_slice()
            && (data.len() < *size || self.fragment.is_some())
        {
            self.fragment_of(*size, data, packet, &mut out);
            return out;
        }
        let mut at = 0;
        let mut timestamp = packet.timestamp;
        for size in sizes {
            let Some(frame) = packet.payload.get(data_start + at..data_start + at + size) else {
                break;
            };
            if !frame.is_empty() {
                out.push(Depacketized::Sample {
                    timestamp,
                    payload: packet
                        .payload
                        .slice(data_start + at..data_start + at + size),
                    keyframe: false,
                });
            }
            at += size;
            timestamp = timestamp.wrapping_add(AAC_FRAME_SAMPLES);
        }
        out
    }

    /// A fragment of an AU of `size` bytes; the AU goes out when complete.
    fn fragment_of(
        &mut self,
        size: usize,
        data: &[u8],
        packet: &RtpPacket,
        out: &mut Vec<Depacketized>,
    ) {
        let (buffer, expected) = self.fragment.get_or_insert_with(|| (BytesMut::new(), size));
        if *expected != size || buffer.len() + data.len() > *expected {
            self.fragment = None;
            return;
        }
        buffer.extend_from_slice(data);
        let complete = buffer.len() == *expected;
        if !(complete || packet.marker) {
            return;
        }
        // At the marker an incomplete AU is lost (a fragment went missing).
        if let Some((buffer, _)) = self.fragment.take().filter(|_| complete) {
            out.push(Depacketized::Sample {
                timestamp: packet.timestamp,
                payload: buffer.freeze(),
                keyframe: false,
            });
        }
    }
}
