//! MPEG-TS over RTP (RFC 2250): a player's transport stream cut into RTP packets of
//! whole 188-byte TS packets, payload type 33 on a 90 kHz clock, and the RTCP sender
//! reports that go with them. This is what SAT>IP clients expect (VLC without live555
//! plays `rtsp://` that way); the TS bytes come from a `strom_stream::TsFeed`.

use crate::rtp_source::RtpSource;
use strom_media::rtp::rtcp;

/// The static payload type of MPEG-TS (RFC 3551 6).
pub const PAYLOAD_TYPE: u8 = 33;
/// A TS packet; the payload of an RTP packet is a whole number of them.
pub const TS_PACKET: usize = 188;
/// At most this many TS packets per RTP packet: 1316 bytes, which with the RTP, UDP and
/// IP headers stays inside an Ethernet MTU.
pub const TS_PACKETS_PER_RTP: usize = 7;
pub const MAX_PAYLOAD: usize = TS_PACKET * TS_PACKETS_PER_RTP;

pub struct Mp2tSender {
    rtp: RtpSource,
}

impl Default for Mp2tSender {
    fn default() -> Self {
        Self::new()
    }
}

impl Mp2tSender {
    pub fn new() -> Self {
        // VLC's SAT>IP client takes sequence number 0 as the first packet's duplicate and
        // anything below its last one as out of order, even across the wrap: starting in
        // the lower half, not at 0, keeps a wrap out of short sessions.
        let first_sequence = (rand::random::<u16>() >> 1).max(1);
        Self {
            rtp: RtpSource::new(90_000, first_sequence),
        }
    }

    /// The next sequence number and the RTP time of `pts`, for `RTP-Info`.
    pub fn rtp_info(&self, pts: i64) -> (u16, u32) {
        self.rtp.rtp_info(pts)
    }

    /// Cuts `ts` (whole TS packets; a trailing partial one is left out) into RTP packets
    /// stamped with `time_90khz` and hands each to `emit` as header and payload.
    pub fn packetize(&mut self, ts: &[u8], time_90khz: i64, mut emit: impl FnMut(&[u8], &[u8])) {
        let whole = ts.len() - ts.len() % TS_PACKET;
        let timestamp = self.rtp.rtp_time(time_90khz);
        for payload in ts[..whole].chunks(MAX_PAYLOAD) {
            // RFC 2250 2.1: the marker bit carries nothing for MPEG-TS.
            let head = self
                .rtp
                .next_header(false, PAYLOAD_TYPE, timestamp, payload.len());
            emit(&head, payload);
        }
    }

    /// A sender report saying that stream time `pts` is wall-clock time `ntp`; `None`
    /// before the first packet.
    pub fn sender_report(&self, pts: i64, ntp: u64) -> Option<[u8; rtcp::SENDER_REPORT_LEN]> {
        self.rtp.sender_report(pts, ntp)
    }

    pub fn ssrc(&self) -> u32 {
        self.rtp.ssrc()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packets(sender: &mut Mp2tSender, ts: &[u8], time: i64) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        sender.packetize(ts, time, |head, payload| {
            out.push([head, payload].concat());
        });
        out
    }

    #[test]
    fn ts_packets_go_seven_to_an_rtp_packet() {
        let mut sender = Mp2tSender::new();
        let ts: Vec<u8> = (0..16).flat_map(|i| [0x47, i as u8].repeat(94)).collect();
        let first = packets(&mut sender, &ts, 90_000);
        assert_eq!(
            first.iter().map(|p| p.len() - 12).collect::<Vec<_>>(),
            [1316, 1316, 376]
        );
        let sequence = u16::from_be_bytes([first[0][2], first[0][3]]);
        assert_ne!(sequence, 0, "VLC would drop a first packet numbered 0");
        for (i, packet) in first.iter().enumerate() {
            assert_eq!(
                packet[0], 0x80,
                "RTP version 2, no padding, extension or CSRCs"
            );
            assert_eq!(packet[1], PAYLOAD_TYPE, "payload type 33, no marker");
            assert_eq!(
                u16::from_be_bytes([packet[2], packet[3]]),
                sequence.wrapping_add(i as u16)
            );
            assert_eq!(packet[4..8], first[0][4..8], "one timestamp per frame");
            assert_eq!(packet[12], 0x47, "payloads start at a TS sync byte");
        }
        let later = packets(&mut sender, &ts[..188 * 2 + 100], 93_600);
        assert_eq!(later.len(), 1);
        assert_eq!(later[0].len(), 12 + 376, "partial TS packets are left out");
        let step = u32::from_be_bytes(later[0][4..8].try_into().unwrap())
            .wrapping_sub(u32::from_be_bytes(first[0][4..8].try_into().unwrap()));
        assert_eq!(step, 3600, "a 90 kHz clock");
        assert!(sender.sender_report(93_600, 1).is_some());
        assert!(Mp2tSender::new().sender_report(0, 1).is_none());
    }
}
