//! One RTP synchronization source of a player (RFC 3550): its SSRC, sequence numbers,
//! randomly based RTP clock, and the counts its RTCP sender reports carry. Shared by the
//! per-track senders and the MPEG-TS sender.

use strom_media::rtp::{header, rtcp};

pub struct RtpSource {
    ssrc: u32,
    sequence: u16,
    /// Random start of the RTP clock (RFC 3550 5.1).
    timestamp_base: u32,
    clock_rate: u32,
    packets: u32,
    octets: u32,
    /// Whether anything was sent (sender reports only follow packets).
    packets_sent: bool,
}

impl RtpSource {
    /// A source with a random SSRC and clock base, its first packet numbered
    /// `first_sequence`, on a clock of `clock_rate` Hz.
    pub fn new(clock_rate: u32, first_sequence: u16) -> Self {
        Self {
            ssrc: rand::random(),
            sequence: first_sequence,
            timestamp_base: rand::random(),
            clock_rate: clock_rate.max(1),
            packets: 0,
            octets: 0,
            packets_sent: false,
        }
    }

    /// The RTP time of stream time `pts` (90 kHz).
    pub fn rtp_time(&self, pts: i64) -> u32 {
        let ticks = i128::from(pts) * i128::from(self.clock_rate) / 90_000;
        // The RTP clock wraps at 32 bits.
        self.timestamp_base.wrapping_add(ticks as u32)
    }

    /// The next sequence number and the RTP time of `pts`, for `RTP-Info`.
    pub fn rtp_info(&self, pts: i64) -> (u16, u32) {
        (self.sequence, self.rtp_time(pts))
    }

    /// The header of the next packet (`payload_len` bytes of payload), counted for the
    /// sender reports.
    pub fn next_header(
        &mut self,
        marker: bool,
        payload_type: u8,
        timestamp: u32,
        payload_len: usize,
    ) -> [u8; header::LEN] {
        let head = header::write(marker, payload_type, self.sequence, timestamp, self.ssrc);
        self.sequence = self.sequence.wrapping_add(1);
        self.packets = self.packets.wrapping_add(1);
        self.octets = self.octets.wrapping_add(payload_len as u32);
        self.packets_sent = true;
        head
    }

    /// A sender report saying that stream time `pts` is wall-clock time `ntp`; `None`
    /// before the first packet.
    pub fn sender_report(&self, pts: i64, ntp: u64) -> Option<[u8; rtcp::SENDER_REPORT_LEN]> {
        self.packets_sent.then_some(())?;
        Some(rtcp::sender_report(
            self.ssrc,
            ntp,
            self.rtp_time(pts),
            self.packets,
            self.octets,
        ))
    }

    pub fn ssrc(&self) -> u32 {
        self.ssrc
    }
}
