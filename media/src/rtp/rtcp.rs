//! RTCP sender reports (RFC 3550 section 6.4.1): which RTP timestamp corresponds to
//! which wall-clock (NTP) time, so players can synchronise audio and video and show
//! the capture time.

use std::time::{SystemTime, UNIX_EPOCH};

/// Bytes of a sender report without report blocks.
pub const SENDER_REPORT_LEN: usize = 28;

/// Seconds from the NTP epoch (1900) to the Unix epoch (1970).
const NTP_UNIX_OFFSET: u64 = 2_208_988_800;

/// A wall-clock time as a 64-bit NTP timestamp (seconds, then the fraction in 2^-32).
pub fn ntp_time(time: SystemTime) -> u64 {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since.as_secs() + NTP_UNIX_OFFSET;
    let fraction = (u64::from(since.subsec_nanos()) << 32) / 1_000_000_000;
    (seconds << 32) | fraction
}

/// A sender report for `ssrc`: at NTP time `ntp` the stream's RTP clock read
/// `rtp_timestamp`; `packets` and `octets` (payload bytes) sent so far.
pub fn sender_report(
    ssrc: u32,
    ntp: u64,
    rtp_timestamp: u32,
    packets: u32,
    octets: u32,
) -> [u8; SENDER_REPORT_LEN] {
    let mut report = [0u8; SENDER_REPORT_LEN];
    report[0] = 0x80;
    report[1] = 200;
    // Length in 32-bit words minus one.
    report[2..4].copy_from_slice(&6u16.to_be_bytes());
    report[4..8].copy_from_slice(&ssrc.to_be_bytes());
    report[8..16].copy_from_slice(&ntp.to_be_bytes());
    report[16..20].copy_from_slice(&rtp_timestamp.to_be_bytes());
    report[20..24].copy_from_slice(&packets.to_be_bytes());
    report[24..28].copy_from_slice(&octets.to_be_bytes());
    report
}
