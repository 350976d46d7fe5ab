//! One 188-byte transport packet split into the fields the demuxer uses
//! (ISO/IEC 13818-1 §2.4.3.2–§2.4.3.5): PID, unit start, continuity counter,
//! the adaptation field's discontinuity_indicator, and the payload.

use super::PACKET_SIZE;

/// A parsed transport packet header; `payload` borrows the packet.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Packet<'a> {
    pub pid: u16,
    pub unit_start: bool,
    pub cc: u8,
    /// The packet carries a payload (adaptation_field_control 01 or 11); only
    /// those advance the continuity counter.
    pub has_payload: bool,
    pub discontinuity: bool,
    pub payload: &'a [u8],
}

impl<'a> Packet<'a> {
    /// `None` for packets to skip: transport_error_indicator set, reserved
    /// adaptation_field_control 00, or an adaptation field longer than the packet.
    pub fn parse(p: &'a [u8; PACKET_SIZE]) -> Option<Self> {
        let [_, b1, b2, b3, rest @ ..] = p;
        if b1 & 0x80 != 0 {
            return None;
        }
        let control = (b3 >> 4) & 0x03;
        if control == 0 {
            return None;
        }
        let mut payload: &[u8] = rest;
        let mut discontinuity = false;
        if control & 0x02 != 0 {
            let (&len, after) = payload.split_first()?;
            let (field, tail) = after.split_at_checked(usize::from(len))?;
            discontinuity = field.first().is_some_and(|flags| flags & 0x80 != 0);
            payload = tail;
        }
        let has_payload = control & 0x01 != 0;
        Some(Self {
            pid: (u16::from(b1 & 0x1f) << 8) | u16::from(*b2),
            unit_start: b1 & 0x40 != 0,
            cc: b3 & 0x0f,
            has_payload,
            discontinuity,
            payload: if has_payload { payload } else { &[] },
        })
    }
}
