//! Splitting one PES packet into 188-byte transport packets (ISO/IEC 13818-1
//! §2.4.3.2): the first carries payload_unit_start_indicator and, when asked,
//! an adaptation field with the PCR and random_access_indicator; the last is
//! padded with adaptation-field stuffing, never with payload bytes.

use super::pes::wrap33;

pub(crate) const PACKET_SIZE: usize = 188;
pub(crate) const SYNC_BYTE: u8 = 0x47;
const HEADER_SIZE: usize = 4;
const PAYLOAD_SIZE: usize = PACKET_SIZE - HEADER_SIZE;

const RANDOM_ACCESS: u8 = 0x40;
const PCR_FLAG: u8 = 0x10;
/// adaptation_field_control: payload only / adaptation field then payload.
const PAYLOAD_ONLY: u8 = 0x10;
const ADAPTATION_AND_PAYLOAD: u8 = 0x30;

/// What the adaptation field of a PES's first packet announces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PesStart {
    /// The PCR base in 90 kHz ticks (written modulo 2^33, extension 0).
    pub pcr: Option<i64>,
    pub random_access: bool,
}

/// Appends `pes` to `out` as TS packets on `pid`, advancing the continuity
/// counter `cc` (mod 16) once per packet. An empty `pes` writes nothing.
pub(crate) fn write_pes_packets(
    pid: u16,
    cc: &mut u8,
    pes: &[u8],
    start: PesStart,
    out: &mut Vec<u8>,
) {
    let [pid_hi, pid_lo] = pid.to_be_bytes();
    out.reserve(pes.len().div_ceil(PAYLOAD_SIZE) * PACKET_SIZE);
    let mut rest = pes;
    let mut first = true;
    while !rest.is_empty() {
        // Flags byte plus optional PCR, after the adaptation_field_length byte.
        let (flags, pcr) = if first {
            let flags = if start.random_access {
                RANDOM_ACCESS
            } else {
                0
            } | if start.pcr.is_some() { PCR_FLAG } else { 0 };
            (flags, start.pcr)
        } else {
            (0, None)
        };
        let needed_af = match (flags, pcr) {
            (0, _) => 0,
            (_, Some(_)) => 8, // length, flags, 6-byte PCR
            (_, None) => 2,    // length, flags
        };
        let take = rest.len().min(PAYLOAD_SIZE - needed_af);
        let af_len = PAYLOAD_SIZE - take; // needed bytes plus stuffing
        let control = if af_len > 0 {
            ADAPTATION_AND_PAYLOAD
        } else {
            PAYLOAD_ONLY
        };
        let unit_start = if first { 0x40 } else { 0 };
        out.extend_from_slice(&[
            SYNC_BYTE,
            unit_start | (pid_hi & 0x1f),
            pid_lo,
            control | (*cc & 0x0f),
        ]);
        *cc = (*cc + 1) & 0x0f;
        if af_len > 0 {
            // adaptation_field_length excludes itself; a lone length byte 0 is
            // one byte of stuffing.
            out.push((af_len - 1) as u8);
            if af_len > 1 {
                let af_end = out.len() + af_len - 1;
                out.push(flags);
                if let Some(pcr) = pcr {
                    write_pcr(pcr, out);
                }
                out.resize(af_end, 0xff);
            }
        }
        let (payload, tail) = rest.split_at(take);
        out.extend_from_slice(payload);
        rest = tail;
        first = false;
    }
}

/// program_clock_reference_base (33 bits), 6 reserved bits, extension 0.
fn write_pcr(ticks: i64, out: &mut Vec<u8>) {
    let base = wrap33(ticks);
    out.extend_from_slice(&[
        (base >> 25) as u8,
        (base >> 17) as u8,
        (base >> 9) as u8,
        (base >> 1) as u8,
        ((base & 1) << 7) as u8 | 0x7e,
        0x00,
    ]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_stuffs() {
        let none = PesStart::default();
        let pcr = PesStart {
            pcr: Some(0x1_8000_0001),
            random_access: true,
        };
        let rai = PesStart {
            pcr: None,
            random_access: true,
        };
        // (PES length, start, packets, adaptation field length of each packet)
        let cases: &[(usize, PesStart, &[Option<u8>])] = &[
            (0, none, &[]),
            (1, none, &[Some(182)]),
            (182, none, &[Some(1)]),
            (183, none, &[Some(0)]), // one stuffing byte: the length byte alone
            (184, none, &[None]),
            (185, none, &[None, Some(182)]),
            (368, none, &[None, None]),
            (369, none, &[None, None, Some(182)]),
            (176, pcr, &[Some(7)]),
            (177, pcr, &[Some(7), Some(182)]),
            (100, pcr, &[Some(83)]),
            (182, rai, &[Some(1)]),
            (183, rai, &[Some(1), Some(182)]),
        ];
        for &(len, start, afs) in cases {
            let pes: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut cc = 14;
            let mut out = Vec::new();
            write_pes_packets(0x101, &mut cc, &pes, start, &mut out);
            assert_eq!(out.len(), afs.len() * PACKET_SIZE, "{len}");
            assert_eq!(usize::from(cc), (14 + afs.len()) % 16, "{len}");
            let mut payload = Vec::new();
            for (i, (packet, af)) in out.chunks(PACKET_SIZE).zip(afs.iter()).enumerate() {
                assert_eq!(packet[0], SYNC_BYTE);
                assert_eq!(packet[1], if i == 0 { 0x41 } else { 0x01 });
                assert_eq!(packet[2], 0x01);
                assert_eq!(usize::from(packet[3] & 0x0f), (14 + i) % 16);
                let body = match af {
                    None => {
                        assert_eq!(packet[3] & 0x30, 0x10, "{len} #{i}");
                        &packet[4..]
                    }
                    Some(af) => {
                        assert_eq!(packet[3] & 0x30, 0x30, "{len} #{i}");
                        assert_eq!(packet[4], *af, "{len} #{i}");
                        let af = usize::from(*af);
                        if af > 0 {
                            let flags = packet[5];
                            let want = if i > 0 {
                                0
                            } else {
                                (u8::from(start.random_access) * 0x40)
                                    | (u8::from(start.pcr.is_some()) * 0x10)
                            };
                            assert_eq!(flags, want, "{len} #{i}");
                            let fixed = if flags & 0x10 != 0 { 7 } else { 1 };
                            assert!(packet[5 + fixed..5 + af].iter().all(|&b| b == 0xff));
                        }
                        &packet[5 + af..]
                    }
                };
                payload.extend_from_slice(body);
            }
            assert_eq!(payload, pes, "{len}");
        }
    }

    #[test]
    fn pcr_field() {
        let cases: &[(i64, [u8; 6])] = &[
            (0, [0, 0, 0, 0, 0x7e, 0]),
            (1, [0, 0, 0, 0, 0xfe, 0]),
            (90_000, [0x00, 0x00, 0xaf, 0xc8, 0x7e, 0]),
            ((1 << 33) - 1, [0xff, 0xff, 0xff, 0xff, 0xfe, 0]),
            (1 << 33, [0, 0, 0, 0, 0x7e, 0]),
            (-1, [0xff, 0xff, 0xff, 0xff, 0xfe, 0]),
        ];
        for (ticks, want) in cases {
            let mut out = Vec::new();
            write_pcr(*ticks, &mut out);
            assert_eq!(out, want, "{ticks}");
        }
    }
}
