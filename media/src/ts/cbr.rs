//! A constant-bitrate transport stream for IPTV gear: packets leave at exactly the
//! configured mux rate, null packets (PID 0x1FFF) fill the slots media leaves empty,
//! and every PCR is rewritten to the time its packet's position in the output stands
//! for, so the PCR is exact for the constant rate (ISO/IEC 13818-1 §2.4.2.2) whatever
//! delay the packet had before it was sent.
//!
//! Sans-io: the sender asks [`ConstantRate::due`] how many packets the elapsed time
//! owes and calls [`ConstantRate::emit`] once per packet.

use super::packet::{PACKET_SIZE, SYNC_BYTE};
use std::time::Duration;

const NULL_PID: u16 = 0x1fff;
const PCR_FLAG: u8 = 0x10;
/// The PCR is 27 MHz: a 33-bit base of 90 kHz ticks times 300 plus a 9-bit extension.
const PCR_HZ: u128 = 27_000_000;
const PCR_MODULUS: u64 = (1 << 33) * 300;
/// A source PCR further than this from where the output clock stands re-anchors the
/// clock (a new publisher, skipped GOPs): one second.
const REANCHOR_TICKS: u64 = 27_000_000;
const BITS_PER_PACKET: u128 = PACKET_SIZE as u128 * 8;

/// The schedule and PCR clock of one constant-rate output.
#[derive(Debug, Clone)]
pub struct ConstantRate {
    rate_bps: u64,
    emitted: u64,
    /// The output packet index and the 27 MHz PCR the clock was anchored at.
    anchor: Option<(u64, u64)>,
}

impl ConstantRate {
    /// A schedule at `rate_bps` bits per second (at least one packet per second).
    pub fn new(rate_bps: u64) -> Self {
        Self {
            rate_bps: rate_bps.max(BITS_PER_PACKET as u64),
            emitted: 0,
            anchor: None,
        }
    }

    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// Packets emitted so far.
    pub fn emitted(&self) -> u64 {
        self.emitted
    }

    /// How many packets are owed `elapsed` after the first one was due.
    pub fn due(&self, elapsed: Duration) -> u64 {
        let owed =
            elapsed.as_nanos() * u128::from(self.rate_bps) / (BITS_PER_PACKET * 1_000_000_000);
        u64::try_from(owed)
            .unwrap_or(u64::MAX)
            .saturating_sub(self.emitted)
    }

    /// Appends the next packet of the output to `out`: `media` (one 188-byte TS packet,
    /// its PCR rewritten) or, when there is none or it is not a whole packet, a null
    /// packet.
    pub fn emit(&mut self, media: Option<&[u8]>, out: &mut Vec<u8>) {
        match media {
            Some(packet) if packet.len() == PACKET_SIZE && packet[0] == SYNC_BYTE => {
                let start = out.len();
                out.extend_from_slice(packet);
                if let Some(packet) = out.get_mut(start..) {
                    self.restamp_pcr(packet);
                }
            }
            _ => write_null_packet(out),
        }
        self.emitted += 1;
    }

    /// The 27 MHz PCR that output packet `index` stands for, once anchored.
    fn clock_at(&self, index: u64) -> Option<u64> {
        let (anchor_index, anchor_pcr) = self.anchor?;
        let packets = u128::from(index.saturating_sub(anchor_index));
        let ticks = packets * BITS_PER_PACKET * PCR_HZ / u128::from(self.rate_bps);
        let ticks = (ticks % u128::from(PCR_MODULUS)) as u64;
        Some((anchor_pcr + ticks) % PCR_MODULUS)
    }

    fn restamp_pcr(&mut self, packet: &mut [u8]) {
        let has_adaptation = packet[3] & 0x20 != 0;
        if !has_adaptation || packet[4] < 7 || packet[5] & PCR_FLAG == 0 {
            return;
        }
        let Some(field) = packet.get_mut(6..12) else {
            return;
        };
        let source = read_pcr(field);
        let clock = match self.clock_at(self.emitted) {
            Some(clock) if distance(clock, source) <= REANCHOR_TICKS => clock,
            _ => {
                self.anchor = Some((self.emitted, source));
                source
            }
        };
        write_pcr(clock, field);
    }
}

/// The distance between two PCRs on the wrapping 27 MHz clock.
fn distance(a: u64, b: u64) -> u64 {
    let forward = (a + PCR_MODULUS - b) % PCR_MODULUS;
    forward.min(PCR_MODULUS - forward)
}

fn read_pcr(field: &[u8]) -> u64 {
    let base = (u64::from(field[0]) << 25)
        | (u64::from(field[1]) << 17)
        | (u64::from(field[2]) << 9)
        | (u64::from(field[3]) << 1)
        | (u64::from(field[4]) >> 7);
    let extension = (u64::from(field[4] & 1) << 8) | u64::from(field[5]);
    base * 300 + extension
}

fn write_pcr(pcr: u64, field: &mut [u8]) {
    let (base, extension) = (pcr / 300, pcr % 300);
    field.copy_from_slice(&[
        (base >> 25) as u8,
        (base >> 17) as u8,
        (base >> 9) as u8,
        (base >> 1) as u8,
        ((base & 1) << 7) as u8 | 0x7e | (extension >> 8) as u8,
        extension as u8,
    ]);
}

fn write_null_packet(out: &mut Vec<u8>) {
    let [pid_hi, pid_lo] = NULL_PID.to_be_bytes();
    let start = out.len();
    out.extend_from_slice(&[SYNC_BYTE, pid_hi, pid_lo, 0x10]);
    out.resize(start + PACKET_SIZE, 0xff);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A packet on PID 0x100 with an adaptation field carrying `pcr` (27 MHz).
    fn pcr_packet(pcr: u64) -> Vec<u8> {
        let mut packet = vec![SYNC_BYTE, 0x41, 0x00, 0x30, 7, PCR_FLAG, 0, 0, 0, 0, 0, 0];
        write_pcr(pcr, &mut packet[6..12]);
        packet.resize(PACKET_SIZE, 0xaa);
        packet
    }

    fn pcr_of(packet: &[u8]) -> u64 {
        read_pcr(&packet[6..12])
    }

    #[test]
    fn schedule_owes_packets_at_the_rate() {
        // 1,504,000 bit/s is exactly 1000 packets per second.
        let mut rate = ConstantRate::new(1_504_000);
        assert_eq!(rate.due(Duration::from_millis(10)), 10);
        assert_eq!(rate.due(Duration::from_secs(10)), 10_000);
        let mut out = Vec::new();
        for _ in 0..4 {
            rate.emit(None, &mut out);
        }
        assert_eq!(rate.due(Duration::from_millis(10)), 6);
        assert_eq!(rate.due(Duration::from_millis(1)), 0);
        assert_eq!(out.len(), 4 * PACKET_SIZE);
        assert!(
            out.chunks(PACKET_SIZE)
                .all(|p| p[..4] == [SYNC_BYTE, 0x1f, 0xff, 0x10])
        );
    }

    #[test]
    fn pcrs_follow_the_output_position_and_reanchor_on_jumps() {
        let mut rate = ConstantRate::new(1_504_000); // 27,000 PCR ticks per packet
        let mut out = Vec::new();
        rate.emit(Some(&pcr_packet(5_000_000)), &mut out);
        for _ in 0..9 {
            rate.emit(None, &mut out);
        }
        // The source said 5,400,000 (late by 130,000 ticks); the output position says
        // 10 packets after the anchor.
        rate.emit(Some(&pcr_packet(5_400_000)), &mut out);
        let packets: Vec<&[u8]> = out.chunks(PACKET_SIZE).collect();
        assert_eq!(pcr_of(packets[0]), 5_000_000);
        assert_eq!(pcr_of(packets[10]), 5_270_000);
        // The payload of a restamped packet is untouched.
        assert!(packets[10][12..].iter().all(|&b| b == 0xaa));
        // A jump of more than a second re-anchors at the source's PCR.
        rate.emit(Some(&pcr_packet(90_000_000)), &mut out);
        assert_eq!(pcr_of(&out[11 * PACKET_SIZE..]), 90_000_000);
        // Near the wrap of the 33-bit base the clock wraps too.
        let mut rate = ConstantRate::new(1_504_000);
        let mut out = Vec::new();
        rate.emit(Some(&pcr_packet(PCR_MODULUS - 10_000)), &mut out);
        rate.emit(Some(&pcr_packet(20_000)), &mut out);
        assert_eq!(pcr_of(&out[PACKET_SIZE..]), 17_000);
        // A part of a packet is never sent: a null packet takes its slot.
        rate.emit(Some(&[SYNC_BYTE, 0, 0]), &mut out);
        assert_eq!(
            &out[2 * PACKET_SIZE..2 * PACKET_SIZE + 3],
            &[SYNC_BYTE, 0x1f, 0xff]
        );
    }
}
