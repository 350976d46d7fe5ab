//! A viewer's RTP written by strom instead of str0m, once its DTLS handshake has given
//! AES-GCM SRTP keys (dtls_keys.rs, srtp_send.rs): per packet a header of at most 32
//! bytes (the viewer's SSRC, sequence number and timestamp, and the media id extension
//! BUNDLE uses), one AES-GCM seal over the stream's shared payload, and nothing else.
//! str0m keeps ICE and DTLS. What str0m's send path did beside that is here too:
//! - the viewer's NACKs are answered from a history of references to the shared
//!   payloads of the last `limits.retransmission_window_ms` (no copies);
//! - its PLIs and FIRs are counted (video passes through; it recovers at the
//!   publisher's next keyframe);
//! - each track sends a sender report every second, which the browser's audio/video
//!   synchronisation needs.
//!
//! Measured against str0m's RTP mode in BENCHMARKS.md ("strom's own RTP send path").

use crate::srtp_send::SrtpSession;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Sender reports per track, one this often.
const REPORT_INTERVAL: Duration = Duration::from_secs(1);
/// Packets resent for one RTCP packet at most, and so the lost packets read from it.
const MAX_RESENDS_PER_FEEDBACK: usize = 64;
/// Feedback messages read from one (compound) RTCP packet at most: an ICE-TCP frame can
/// be 64 KiB, and what it holds must not size what the parser keeps.
const MAX_FEEDBACKS: usize = 16;
/// Resends earned per packet sent, and the most that can be saved up: a viewer's NACKs
/// (honest or not) cost at most a quarter more than its stream, as str0m's 15% cap on
/// queued resends bounded them before.
const RESENDS_PER_PACKET: f32 = 0.25;
const MAX_RESEND_CREDIT: f32 = 256.0;
/// Packets the history keeps per track at most, whatever the window (about 12 Mbit/s of
/// full packets for 1 s).
const MAX_HISTORY: usize = 1000;
/// Seconds from the NTP epoch (1900) to the Unix epoch.
const NTP_UNIX_OFFSET: u64 = 2_208_988_800;

/// One packet as the history keeps it.
struct Sent {
    index: u64,
    time: u32,
    marker: bool,
    payload: Arc<[u8]>,
    at: Instant,
}

/// One track the viewer is sent.
pub struct Track {
    ssrc: u32,
    pt: u8,
    /// The media id, for the header extension (1..=16 bytes), and the extension's id.
    mid: Option<(u8, Vec<u8>)>,
    clock_rate: u64,
    /// Packets kept for NACKs (video; audio is not NACKed by browsers).
    history: Option<VecDeque<Sent>>,
    packets: u32,
    octets: u32,
    /// The last packet's RTP time and when it was sent, for the sender report.
    last: Option<(u32, Instant)>,
    next_report: Instant,
}

impl Track {
    /// `mid`: the media id and the id its header extension was negotiated with.
    pub fn new(ssrc: u32, pt: u8, clock_rate: u32, mid: Option<(u8, &str)>, nacked: bool) -> Self {
        Self {
            ssrc,
            pt,
            mid: mid
                .filter(|(id, mid)| (1..=14).contains(id) && (1..=16).contains(&mid.len()))
                .map(|(id, mid)| (id, mid.as_bytes().to_vec())),
            clock_rate: u64::from(clock_rate),
            history: nacked.then(VecDeque::new),
            packets: 0,
            octets: 0,
            last: None,
            next_report: Instant::now() + REPORT_INTERVAL,
        }
    }

    /// The RTP header of one packet (returns its length within `out`).
    fn header(&self, index: u64, time: u32, marker: bool, out: &mut [u8; 32]) -> usize {
        out[0] = 0x80;
        out[1] = self.pt | if marker { 0x80 } else { 0 };
        out[2..4].copy_from_slice(&(index as u16).to_be_bytes());
        out[4..8].copy_from_slice(&time.to_be_bytes());
        out[8..12].copy_from_slice(&self.ssrc.to_be_bytes());
        let Some((id, mid)) = &self.mid else {
            return 12;
        };
        // RFC 8285 one-byte header extensions: 0xBEDE, the length in words, then the
        // element, padded to a word.
        out[0] |= 0x10;
        let element = 1 + mid.len();
        let words = element.div_ceil(4);
        out[12..14].copy_from_slice(&[0xbe, 0xde]);
        out[14..16].copy_from_slice(&(words as u16).to_be_bytes());
        out[16] = (id << 4) | (mid.len() as u8 - 1);
        out[17..17 + mid.len()].copy_from_slice(mid);
        let end = 16 + words * 4;
        out[17 + mid.len()..end].fill(0);
        end
    }
}

/// Which of a viewer's tracks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Video,
    Audio,
}

/// A viewer's RTP and RTCP, sealed and waiting for the next drain.
pub struct RtpSender {
    srtp: SrtpSession,
    video: Option<Track>,
    audio: Option<Track>,
    window: Duration,
    /// Sealed datagrams for the next drain.
    pub outbox: Vec<Vec<u8>>,
    /// Keyframe requests (PLI, FIR) and packets resent, for the closing log.
    pub keyframe_requests: u64,
    pub resent: u64,
    /// Resends the viewer may still be sent (earned by packets sent).
    resend_credit: f32,
}

impl RtpSender {
    pub fn new(
        srtp: SrtpSession,
        video: Option<Track>,
        audio: Option<Track>,
        window: Duration,
    ) -> Self {
        Self {
            srtp,
            video,
            audio,
            window,
            outbox: Vec::new(),
            keyframe_requests: 0,
            resent: 0,
            resend_credit: 0.0,
        }
    }

    fn track(&mut self, kind: Kind) -> Option<&mut Track> {
        match kind {
            Kind::Video => self.video.as_mut(),
            Kind::Audio => self.audio.as_mut(),
        }
    }

    /// Seals one packet into the outbox (`index`: the extended sequence number, whose
    /// upper bits are the SRTP rollover counter).
    pub fn write(
        &mut self,
        kind: Kind,
        index: u64,
        time: u32,
        marker: bool,
        payload: &Arc<[u8]>,
        now: Instant,
    ) {
        let window = self.window;
        self.resend_credit = (self.resend_credit + RESENDS_PER_PACKET).min(MAX_RESEND_CREDIT);
        let Some(track) = self.track(kind) else {
            return;
        };
        let mut header = [0u8; 32];
        let len = track.header(index, time, marker, &mut header);
        track.packets = track.packets.wrapping_add(1);
        track.octets = track.octets.wrapping_add(payload.len() as u32);
        track.last = Some((time, now));
        if let Some(history) = &mut track.history {
            while history
                .front()
                .is_some_and(|oldest| now.duration_since(oldest.at) > window)
                || history.len() >= MAX_HISTORY
            {
                history.pop_front();
            }
            history.push_back(Sent {
                index,
                time,
                marker,
                payload: Arc::clone(payload),
                at: now,
            });
        }
        if let Some(datagram) = self.srtp.protect_rtp(&header[..len], payload, index) {
            self.outbox.push(datagram);
        }
    }

    /// Sender reports of the tracks whose report is due, into the outbox.
    pub fn report_if_due(&mut self, now: Instant) {
        for kind in [Kind::Video, Kind::Audio] {
            let Some(track) = self.track(kind) else {
                continue;
            };
            let Some((time, at)) = track.last else {
                continue;
            };
            if now < track.next_report {
                continue;
            }
            track.next_report = now + REPORT_INTERVAL;
            let elapsed = now.saturating_duration_since(at);
            let ticks = elapsed.as_micros() as u64 * track.clock_rate / 1_000_000;
            let report = sender_report(
                track.ssrc,
                time.wrapping_add(ticks as u32),
                track.packets,
                track.octets,
            );
            if let Some(datagram) = self.srtp.protect_rtcp(&report) {
                self.outbox.push(datagram);
            }
        }
    }

    /// The peer's SRTCP packet: NACKed packets resent into the outbox, keyframe
    /// requests counted. Whether it authenticated (only then is it the peer's).
    pub fn receive_rtcp(&mut self, datagram: &[u8]) -> bool {
        let Some(plain) = self.srtp.unprotect_rtcp(datagram) else {
            return false;
        };
        for feedback in feedbacks(&plain) {
            match feedback {
                Feedback::KeyframeRequest => self.keyframe_requests += 1,
                Feedback::Nack { ssrc, lost } => self.resend(ssrc, &lost),
            }
        }
        true
    }

    fn resend(&mut self, ssrc: u32, lost: &[u16]) {
        let Some(track) = [self.video.as_ref(), self.audio.as_ref()]
            .into_iter()
            .flatten()
            .find(|track| track.ssrc == ssrc)
        else {
            return;
        };
        let Some(history) = &track.history else {
            return;
        };
        let Some(newest) = history.back().map(|sent| sent.index) else {
            return;
        };
        let mut datagrams = Vec::new();
        for &seq in lost {
            // The 16-bit number nearest below the newest sent.
            let back = (newest as u16).wrapping_sub(seq);
            let Some(index) = newest.checked_sub(u64::from(back)) else {
                continue;
            };
            let Some(first) = history.front().map(|sent| sent.index) else {
                continue;
            };
            let Some(sent) = index
                .checked_sub(first)
                .and_then(|at| history.get(at as usize))
                .filter(|sent| sent.index == index)
            else {
                continue;
            };
            let mut header = [0u8; 32];
            let len = track.header(sent.index, sent.time, sent.marker, &mut header);
            datagrams.push((header, len, Arc::clone(&sent.payload), sent.index));
        }
        for (header, len, payload, index) in datagrams {
            if self.resend_credit < 1.0 {
                break;
            }
            self.resend_credit -= 1.0;
            if let Some(datagram) = self.srtp.protect_rtp(&header[..len], &payload, index) {
                self.outbox.push(datagram);
                self.resent += 1;
            }
        }
    }
}

/// An RTCP sender report (RFC 3550 6.4.1) with no report blocks; reduced-size RTCP
/// (RFC 5506), which WebRTC peers negotiate, needs no SDES beside it.
fn sender_report(ssrc: u32, rtp_time: u32, packets: u32, octets: u32) -> [u8; 28] {
    let since_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = since_unix.as_secs() + NTP_UNIX_OFFSET;
    let fraction = (u64::from(since_unix.subsec_nanos()) << 32) / 1_000_000_000;
    let mut report = [0u8; 28];
    report[..4].copy_from_slice(&[0x80, 200, 0, 6]);
    report[4..8].copy_from_slice(&ssrc.to_be_bytes());
    report[8..12].copy_from_slice(&(seconds as u32).to_be_bytes());
    report[12..16].copy_from_slice(&(fraction as u32).to_be_bytes());
    report[16..20].copy_from_slice(&rtp_time.to_be_bytes());
    report[20..24].copy_from_slice(&packets.to_be_bytes());
    report[24..28].copy_from_slice(&octets.to_be_bytes());
    report
}

/// What a viewer's RTCP asks of the sender.
#[derive(Debug, PartialEq, Eq)]
enum Feedback {
    Nack { ssrc: u32, lost: Vec<u16> },
    KeyframeRequest,
}

/// The feedback in a (compound) RTCP packet: generic NACKs (RFC 4585 6.2.1), PLI and
/// FIR (RFC 4585 6.3.1, RFC 5104 4.3.1), at most [`MAX_FEEDBACKS`] of them and
/// [`MAX_RESENDS_PER_FEEDBACK`] lost packets per NACK. Anything else, or a malformed
/// rest, is skipped.
fn feedbacks(mut rtcp: &[u8]) -> Vec<Feedback> {
    let mut found = Vec::new();
    while rtcp.len() >= 4 && found.len() < MAX_FEEDBACKS {
        let format = rtcp[0] & 0x1f;
        let packet_type = rtcp[1];
        let words = usize::from(u16::from_be_bytes([rtcp[2], rtcp[3]]));
        let len = (words + 1) * 4;
        let Some(packet) = rtcp.get(..len) else {
            break;
        };
        if rtcp[0] >> 6 != 2 {
            break;
        }
        match (packet_type, format) {
            (205, 1) if len >= 16 => {
                let ssrc = u32::from_be_bytes([packet[8], packet[9], packet[10], packet[11]]);
                let lost = packet[12..]
                    .chunks_exact(4)
                    .flat_map(|entry| {
                        let pid = u16::from_be_bytes([entry[0], entry[1]]);
                        let bitmask = u16::from_be_bytes([entry[2], entry[3]]);
                        std::iter::once(pid).chain(
                            (0..16)
                                .filter(move |bit| bitmask & (1 << bit) != 0)
                                .map(move |bit| pid.wrapping_add(bit + 1)),
                        )
                    })
                    .take(MAX_RESENDS_PER_FEEDBACK)
                    .collect();
                found.push(Feedback::Nack { ssrc, lost });
            }
            (206, 1) | (206, 4) => found.push(Feedback::KeyframeRequest),
            _ => {}
        }
        rtcp = &rtcp[len..];
    }
    found
}

/// Whether a datagram on the ICE port is RTCP (RFC 7983's RTP range, RFC 5761's RTCP
/// packet types).
pub fn is_rtcp(datagram: &[u8]) -> bool {
    matches!(datagram, [first, second, ..] if (128..=191).contains(first) && (192..=223).contains(second))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_header_carries_the_mid_extension_padded_to_a_word() {
        let track = Track::new(0x0102_0304, 96, 90_000, Some((4, "0")), true);
        let mut out = [0xffu8; 32];
        let len = track.header(0x1_0005, 77, true, &mut out);
        assert_eq!(len, 20);
        assert_eq!(
            &out[..20],
            &[
                0x90, 0xe0, 0, 5, 0, 0, 0, 77, 1, 2, 3, 4, 0xbe, 0xde, 0, 1, 0x40, b'0', 0, 0
            ]
        );
        let bare = Track::new(9, 111, 48_000, None, false);
        assert_eq!(bare.header(3, 1, false, &mut out), 12);
        assert_eq!(&out[..4], &[0x80, 111, 0, 3]);
        // An id a one-byte header cannot carry, or an empty mid: no extension.
        assert!(
            Track::new(9, 111, 48_000, Some((15, "0")), false)
                .mid
                .is_none()
        );
        assert!(
            Track::new(9, 111, 48_000, Some((3, "")), false)
                .mid
                .is_none()
        );
    }

    #[test]
    fn nacks_plis_and_firs_are_read_from_compound_rtcp() {
        let receiver_report = [0x80, 201, 0, 1, 0, 0, 0, 1];
        let nack = [
            0x81,
            205,
            0,
            3,
            0,
            0,
            0,
            1,
            0,
            0,
            0,
            9,
            0xff,
            0xfe,
            0b0000_0000,
            0b0000_0101,
        ];
        let pli = [0x81, 206, 0, 2, 0, 0, 0, 1, 0, 0, 0, 9];
        let fir = [0x84, 206, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0];
        let compound = [&receiver_report[..], &nack, &pli, &fir].concat();
        assert_eq!(
            feedbacks(&compound),
            vec![
                Feedback::Nack {
                    ssrc: 9,
                    lost: vec![0xfffe, 0xffff, 1]
                },
                Feedback::KeyframeRequest,
                Feedback::KeyframeRequest
            ]
        );
        // A length past the end, or not version 2: the rest is skipped.
        assert!(feedbacks(&[0x81, 206, 0, 9, 0, 0, 0, 1]).is_empty());
        assert!(feedbacks(&[0x41, 206, 0, 2, 0, 0, 0, 1, 0, 0, 0, 9]).is_empty());
        assert!(feedbacks(&[]).is_empty());
        // A 64 KiB frame of NACKs keeps what one is resent for, no more.
        let mut huge = vec![0x81, 205, 0x3f, 0xff, 0, 0, 0, 1, 0, 0, 0, 9];
        huge.resize(0x4000 * 4, 0xff);
        let found = feedbacks(&huge);
        assert!(
            matches!(&found[..], [Feedback::Nack { lost, .. }] if lost.len() == MAX_RESENDS_PER_FEEDBACK)
        );
        let many_plis = pli.repeat(100);
        assert_eq!(feedbacks(&many_plis).len(), MAX_FEEDBACKS);
    }

    #[test]
    fn rtcp_is_told_from_rtp_stun_and_dtls() {
        assert!(is_rtcp(&[0x81, 205, 0, 3]));
        assert!(is_rtcp(&[0x80, 200]));
        assert!(!is_rtcp(&[0x80, 96, 0, 1]));
        assert!(!is_rtcp(&[0x00, 0x01, 0, 0]));
        assert!(!is_rtcp(&[22, 254, 253]));
        assert!(!is_rtcp(&[0x80]));
    }

    fn sender() -> RtpSender {
        let keys = crate::dtls_keys::Keys {
            material: (0..56).collect(),
            profile: str0m::crypto::dtls::SrtpProfile::AEAD_AES_128_GCM,
            active: false,
        };
        RtpSender::new(
            SrtpSession::new(&keys).unwrap(),
            Some(Track::new(9, 96, 90_000, Some((4, "0")), true)),
            Some(Track::new(10, 111, 48_000, Some((4, "1")), false)),
            Duration::from_secs(1),
        )
    }

    #[test]
    fn nacked_packets_are_resent_from_the_history_within_its_window() {
        let mut sender = sender();
        let payload: Arc<[u8]> = Arc::from(vec![5u8; 50]);
        let start = Instant::now();
        // Audio sent before earns the resends below their credit.
        for index in 0..8 {
            sender.write(Kind::Audio, index, 1, false, &payload, start);
        }
        sender.outbox.clear();
        for index in 0xfffe..0x1_0003u64 {
            sender.write(Kind::Video, index, 1000, false, &payload, start);
        }
        sender.write(Kind::Audio, 7, 1, false, &payload, start);
        let written = std::mem::take(&mut sender.outbox);
        assert_eq!(written.len(), 6);
        // Across the 16-bit wrap: 0xffff and 0x0001 are the packets of index 0xffff and
        // 0x1_0001, resent as they were (same header, same IV, same bytes).
        sender.resend(9, &[0xffff, 0x0001, 0x4000]);
        assert_eq!(sender.outbox, vec![written[1].clone(), written[3].clone()]);
        assert_eq!(sender.resent, 2);
        sender.outbox.clear();
        // Audio keeps no history; an unknown SSRC is ignored.
        sender.resend(10, &[7]);
        sender.resend(11, &[1]);
        assert!(sender.outbox.is_empty());
        // Past the window, the history has let the old packets go.
        let later = start + Duration::from_secs(2);
        sender.write(Kind::Video, 0x1_0003, 2000, true, &payload, later);
        sender.outbox.clear();
        sender.resend(9, &[0xffff]);
        assert!(sender.outbox.is_empty());
    }

    #[test]
    fn nacks_cost_at_most_a_quarter_of_what_was_sent() {
        let mut sender = sender();
        let payload: Arc<[u8]> = Arc::from(vec![5u8; 50]);
        let start = Instant::now();
        for index in 0..40u64 {
            sender.write(Kind::Video, index, 1000, false, &payload, start);
        }
        sender.outbox.clear();
        let all: Vec<u16> = (0..40).collect();
        // The same NACK again and again: 40 packets sent earned 10 resends.
        for _ in 0..20 {
            sender.resend(9, &all);
        }
        assert_eq!(sender.resent, 10);
        assert_eq!(sender.outbox.len(), 10);
    }

    #[test]
    fn each_track_reports_once_a_second_after_it_has_sent() {
        let mut sender = sender();
        let start = Instant::now();
        sender.report_if_due(start + Duration::from_secs(5));
        assert!(sender.outbox.is_empty(), "nothing sent, nothing reported");
        let payload: Arc<[u8]> = Arc::from(vec![5u8; 50]);
        sender.write(Kind::Video, 1, 1000, true, &payload, start);
        sender.outbox.clear();
        sender.report_if_due(start + Duration::from_secs(2));
        assert_eq!(sender.outbox.len(), 1);
        assert_eq!(&sender.outbox[0][..8], &[0x80, 200, 0, 6, 0, 0, 0, 9]);
        sender.outbox.clear();
        sender.report_if_due(start + Duration::from_millis(2500));
        assert!(sender.outbox.is_empty());
    }

    #[test]
    fn a_sender_report_maps_ntp_time_to_rtp_time() {
        let report = sender_report(9, 1234, 3, 150);
        assert_eq!(&report[..8], &[0x80, 200, 0, 6, 0, 0, 0, 9]);
        let ntp_seconds = u32::from_be_bytes(report[8..12].try_into().unwrap());
        assert!(u64::from(ntp_seconds) > NTP_UNIX_OFFSET);
        assert_eq!(&report[16..28], &[0, 0, 4, 210, 0, 0, 0, 3, 0, 0, 0, 150]);
    }
}
