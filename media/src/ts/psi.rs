//! Program-specific information for strom's single-program transport streams:
//! the PAT and the PMT (ISO/IEC 13818-1 §2.4.4), each one section in one TS
//! packet, protected by CRC-32/MPEG-2.

use super::packet::{PACKET_SIZE, SYNC_BYTE};

/// CRC-32/MPEG-2: polynomial 0x04C11DB7, initial value all ones, MSB first,
/// no reflection and no final XOR.
const CRC_TABLE: [u32; 256] = crc_table();

const fn crc_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u32) << 24;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000_0000 != 0 {
                (crc << 1) ^ 0x04c1_1db7
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
}

/// The CRC-32/MPEG-2 of `data`; a whole section including its CRC checks to 0.
pub(crate) fn crc32_mpeg2(data: &[u8]) -> u32 {
    data.iter().fold(0xffff_ffff, |crc, &b| {
        (crc << 8) ^ CRC_TABLE[usize::from((crc >> 24) as u8 ^ b)]
    })
}

const PAT_TABLE_ID: u8 = 0x00;
const PMT_TABLE_ID: u8 = 0x02;
/// transport_stream_id in the PAT, as ffmpeg writes it.
const TRANSPORT_STREAM_ID: u16 = 1;

/// Appends a PAT announcing `program_number` at `pmt_pid` as one TS packet on PID 0.
pub(crate) fn write_pat(
    program_number: u16,
    pmt_pid: u16,
    version: u8,
    cc: &mut u8,
    out: &mut Vec<u8>,
) {
    let [tsid_hi, tsid_lo] = TRANSPORT_STREAM_ID.to_be_bytes();
    let [prog_hi, prog_lo] = program_number.to_be_bytes();
    let [pid_hi, pid_lo] = pmt_pid.to_be_bytes();
    let body = [
        tsid_hi,
        tsid_lo,
        version_byte(version),
        0,
        0,
        prog_hi,
        prog_lo,
    ]
    .into_iter()
    .chain([0xe0 | (pid_hi & 0x1f), pid_lo]);
    write_section(0, PAT_TABLE_ID, body, cc, out);
}

/// Appends a PMT for `program_number` on `pmt_pid` listing `streams` as
/// (stream_type, elementary PID), without stream descriptors; `program_info` is the
/// program's descriptor loop (a few bytes at most).
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_pmt(
    program_number: u16,
    pmt_pid: u16,
    version: u8,
    pcr_pid: u16,
    program_info: &[u8],
    streams: &[(u8, u16)],
    cc: &mut u8,
    out: &mut Vec<u8>,
) {
    let described: Vec<(u8, u16, &[u8])> =
        streams.iter().map(|&(t, pid)| (t, pid, &[][..])).collect();
    write_pmt_described(
        program_number,
        pmt_pid,
        version,
        pcr_pid,
        program_info,
        &described,
        cc,
        out,
    );
}

/// [`write_pmt`] with each stream's ES info descriptors: (stream_type, elementary PID,
/// descriptors), a few bytes each.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_pmt_described(
    program_number: u16,
    pmt_pid: u16,
    version: u8,
    pcr_pid: u16,
    program_info: &[u8],
    streams: &[(u8, u16, &[u8])],
    cc: &mut u8,
    out: &mut Vec<u8>,
) {
    let [prog_hi, prog_lo] = program_number.to_be_bytes();
    let [pcr_hi, pcr_lo] = pcr_pid.to_be_bytes();
    let header = [prog_hi, prog_lo, version_byte(version), 0, 0];
    let [info_hi, info_lo] = (program_info.len() as u16 & 0x3ff).to_be_bytes();
    // PCR_PID, then program_info_length and the descriptors.
    let pcr = [0xe0 | (pcr_hi & 0x1f), pcr_lo, 0xf0 | info_hi, info_lo]
        .into_iter()
        .chain(program_info.iter().copied());
    let entries = streams.iter().flat_map(|&(stream_type, pid, descriptors)| {
        let [pid_hi, pid_lo] = pid.to_be_bytes();
        let [es_hi, es_lo] = (descriptors.len() as u16 & 0x3ff).to_be_bytes();
        // stream_type, elementary_PID, ES_info_length, the descriptors.
        [
            stream_type,
            0xe0 | (pid_hi & 0x1f),
            pid_lo,
            0xf0 | es_hi,
            es_lo,
        ]
        .into_iter()
        .chain(descriptors.iter().copied())
    });
    let body = header.into_iter().chain(pcr).chain(entries);
    write_section(pmt_pid, PMT_TABLE_ID, body, cc, out);
}

/// reserved '11', version_number, current_next_indicator 1.
fn version_byte(version: u8) -> u8 {
    0xc1 | ((version & 0x1f) << 1)
}

/// Appends `section` (a whole PSI section, CRC included, as received) on `pid` in as
/// many TS packets as it needs, the first with pointer_field 0, the last padded with
/// 0xFF (ISO/IEC 13818-1 §2.4.4).
pub(crate) fn write_whole_section(pid: u16, section: &[u8], cc: &mut u8, out: &mut Vec<u8>) {
    let [pid_hi, pid_lo] = pid.to_be_bytes();
    let mut rest = section;
    let mut first = true;
    while first || !rest.is_empty() {
        let start = out.len();
        let unit_start = if first { 0x40 } else { 0 };
        out.extend_from_slice(&[SYNC_BYTE, unit_start | (pid_hi & 0x1f), pid_lo, 0x10 | *cc]);
        *cc = (*cc + 1) & 0x0f;
        if first {
            out.push(0x00);
        }
        let room = PACKET_SIZE - (out.len() - start);
        let (now, later) = rest.split_at(rest.len().min(room));
        out.extend_from_slice(now);
        out.resize(start + PACKET_SIZE, 0xff);
        rest = later;
        first = false;
    }
}

/// Writes one TS packet on `pid` holding a section with `table_id` and
/// `body` (everything between section_length and the CRC), padded with 0xFF.
/// Bodies here are at most a few dozen bytes, so the section always fits.
fn write_section(
    pid: u16,
    table_id: u8,
    body: impl Iterator<Item = u8>,
    cc: &mut u8,
    out: &mut Vec<u8>,
) {
    let start = out.len();
    let [pid_hi, pid_lo] = pid.to_be_bytes();
    // payload_unit_start_indicator, payload only, then the pointer_field.
    out.extend_from_slice(&[SYNC_BYTE, 0x40 | (pid_hi & 0x1f), pid_lo, 0x10 | *cc, 0x00]);
    *cc = (*cc + 1) & 0x0f;
    let section = out.len();
    out.extend_from_slice(&[table_id, 0, 0]);
    out.extend(body);
    // section_length counts the bytes after it, CRC included; 12 bits.
    let section_length = (out.len() - section - 3 + 4).min(0x3ff) as u16;
    let [len_hi, len_lo] = section_length.to_be_bytes();
    if let Some(length) = out.get_mut(section + 1..section + 3) {
        // section_syntax_indicator 1, '0', reserved '11'.
        length.copy_from_slice(&[0xb0 | len_hi, len_lo]);
    }
    let crc = crc32_mpeg2(out.get(section..).unwrap_or_default());
    out.extend_from_slice(&crc.to_be_bytes());
    out.resize(start + PACKET_SIZE, 0xff);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::hex;

    #[test]
    fn crc_check_value() {
        assert_eq!(crc32_mpeg2(b"123456789"), 0x0376_e6e7);
        assert_eq!(crc32_mpeg2(b""), 0xffff_ffff);
    }

    /// The first packets of `ffmpeg -c:v libx264 -c:a aac -f mpegts`: a PAT for
    /// program 1 with its PMT on PID 0x1000, and that PMT (PCR on 0x100, H.264
    /// on 0x100, AAC on 0x101).
    const FFMPEG_PAT: &str = "474000 10 00 00b00d0001c100000001f0002ab104b2";
    const FFMPEG_PMT: &str = "475000 10 00 02b0170001c10000e100f0001be100f0000fe101f0002f44b99b";

    #[test]
    fn matches_ffmpeg() {
        type Write<'a> = &'a dyn Fn(&mut u8, &mut Vec<u8>);
        let cases: &[(&str, Write)] = &[
            (FFMPEG_PAT, &|cc, out| write_pat(1, 0x1000, 0, cc, out)),
            (FFMPEG_PMT, &|cc, out| {
                write_pmt(
                    1,
                    0x1000,
                    0,
                    0x100,
                    &[],
                    &[(0x1b, 0x100), (0x0f, 0x101)],
                    cc,
                    out,
                )
            }),
        ];
        for (want, write) in cases {
            let mut cc = 0;
            let mut out = Vec::new();
            write(&mut cc, &mut out);
            let want = hex(want);
            assert_eq!(out.len(), PACKET_SIZE);
            assert_eq!(out[..want.len()], want[..]);
            assert!(out[want.len()..].iter().all(|&b| b == 0xff));
            assert_eq!(cc, 1);
        }
    }

    #[test]
    fn sections_check_out() {
        type Streams<'a> = &'a [(u8, u16)];
        let cases: &[(u8, u16, Streams)] = &[
            (0, 0x101, &[(0x0f, 0x101)]),
            (5, 0x100, &[(0x24, 0x100), (0x0f, 0x101)]),
            (31, 0x1fff, &[]),
        ];
        for &(version, pcr_pid, streams) in cases {
            let mut cc = 15;
            let mut out = Vec::new();
            write_pmt(1, 0x1000, version, pcr_pid, &[], streams, &mut cc, &mut out);
            assert_eq!(cc, 0, "wraps mod 16");
            assert_eq!(out[..5], [0x47, 0x50, 0x00, 0x1f, 0x00]);
            let len = usize::from(u16::from_be_bytes([out[6], out[7]]) & 0x0fff);
            assert_eq!(len, 13 + 5 * streams.len());
            assert_eq!(crc32_mpeg2(&out[5..8 + len]), 0, "CRC over the section");
            assert_eq!((out[10] >> 1) & 0x1f, version);
            assert_eq!(u16::from_be_bytes([out[13], out[14]]) & 0x1fff, pcr_pid);
        }
    }
}
