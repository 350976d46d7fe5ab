//! Continuity counters of one receiver's transport stream (ISO/IEC 13818-1 §2.4.3.3).
//!
//! Live outputs share one rendering of each frame among all receivers, and a receiver
//! that fell behind skips whole GOPs, so the counters in the shared packets cannot be
//! right for everyone. Each receiver owns a [`Continuity`] and rewrites the counters of
//! the packets it is about to send: every PID's counter runs on by one per packet that
//! carries payload, whatever was skipped, so its receiver never sees a continuity error.

use super::packet::{PACKET_SIZE, SYNC_BYTE};

/// PIDs whose counters are tracked; more than a live output ever writes.
const MAX_PIDS: usize = 16;
const NULL_PID: u16 = 0x1fff;

/// The next continuity counter of each PID a receiver has been sent.
#[derive(Debug, Clone, Default)]
pub struct Continuity {
    pids: Vec<(u16, u8)>,
}

impl Continuity {
    /// Rewrites the continuity counter of every whole packet in `packets` (a run of
    /// 188-byte packets; a trailing partial packet and packets without a sync byte are
    /// left alone). Null packets and packets without payload keep theirs.
    pub fn restamp(&mut self, packets: &mut [u8]) {
        for packet in packets.chunks_exact_mut(PACKET_SIZE) {
            if packet[0] != SYNC_BYTE {
                continue;
            }
            let pid = u16::from_be_bytes([packet[1] & 0x1f, packet[2]]);
            let has_payload = packet[3] & 0x10 != 0;
            if pid == NULL_PID || !has_payload {
                continue;
            }
            let counter = self.next(pid);
            packet[3] = (packet[3] & 0xf0) | counter;
        }
    }

    /// The counter for `pid`'s next packet, advancing it.
    fn next(&mut self, pid: u16) -> u8 {
        if let Some((_, counter)) = self.pids.iter_mut().find(|(p, _)| *p == pid) {
            let current = *counter;
            *counter = (current + 1) & 0x0f;
            return current;
        }
        if self.pids.len() < MAX_PIDS {
            self.pids.push((pid, 1));
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(pid: u16, control: u8, cc: u8) -> [u8; PACKET_SIZE] {
        let mut packet = [0xff; PACKET_SIZE];
        packet[..4].copy_from_slice(&[SYNC_BYTE, (pid >> 8) as u8, pid as u8, (control << 4) | cc]);
        packet
    }

    fn counters(packets: &[u8]) -> Vec<(u16, u8)> {
        packets
            .chunks_exact(PACKET_SIZE)
            .map(|p| (u16::from_be_bytes([p[1] & 0x1f, p[2]]), p[3] & 0x0f))
            .collect()
    }

    #[test]
    fn counters_run_on_per_pid_across_calls_and_skip_what_carries_no_payload() {
        let mut continuity = Continuity::default();
        let mut first: Vec<u8> = [
            packet(0x100, 0b01, 7),
            packet(0x101, 0b11, 3),
            packet(0x100, 0b01, 9),
        ]
        .concat();
        continuity.restamp(&mut first);
        assert_eq!(counters(&first), [(0x100, 0), (0x101, 0), (0x100, 1)]);
        // A later frame whose shared packets carry unrelated counters (a GOP was
        // skipped): this receiver's counters run on; adaptation-only and null
        // packets keep theirs.
        let mut second: Vec<u8> = [
            packet(0x100, 0b01, 12),
            packet(0x100, 0b10, 5),
            packet(NULL_PID, 0b01, 4),
            packet(0x101, 0b01, 0),
        ]
        .concat();
        second.extend_from_slice(&[SYNC_BYTE, 0x01]); // a partial packet: untouched
        continuity.restamp(&mut second);
        assert_eq!(
            counters(&second),
            [(0x100, 2), (0x100, 5), (NULL_PID, 4), (0x101, 1)]
        );
        assert_eq!(&second[second.len() - 2..], &[SYNC_BYTE, 0x01]);
        // Counters wrap at 16.
        let mut many: Vec<u8> = (0..16).flat_map(|_| packet(0x100, 0b01, 0)).collect();
        continuity.restamp(&mut many);
        assert_eq!(counters(&many).first(), Some(&(0x100, 3)));
        assert_eq!(counters(&many).last(), Some(&(0x100, 2)));
    }
}
