//! Parsing the PAT and PMT sections (ISO/IEC 13818-1 §2.4.4.3, §2.4.4.8) after a
//! CRC-32 check: the programs of the transport stream, and the elementary streams
//! (stream_type, PID, the descriptors that matter here) of one program.

use super::crc::crc32_mpeg2;
use crate::ParseError;

pub(crate) const PAT_TABLE_ID: u8 = 0x00;
pub(crate) const PMT_TABLE_ID: u8 = 0x02;

/// The most elementary streams one PMT may list before the rest are ignored.
pub const MAX_STREAMS: usize = 64;

/// The long-form section header, after a CRC check.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Section<'a> {
    pub table_id: u8,
    /// transport_stream_id (PAT) or program_number (PMT).
    pub id: u16,
    pub version: u8,
    pub current: bool,
    /// Between the header and the CRC.
    pub body: &'a [u8],
}

impl<'a> Section<'a> {
    pub fn parse(section: &'a [u8]) -> Result<Self, ParseError> {
        let Some((&[table_id, flags, _, id_hi, id_lo, version, _, _], _)) =
            section.split_first_chunk::<8>()
        else {
            return Err(ParseError::Truncated("PSI section"));
        };
        if flags & 0x80 == 0 {
            return Err(ParseError::Unsupported("short-form PSI section"));
        }
        if section.len() < 12 {
            return Err(ParseError::Truncated("PSI section"));
        }
        if crc32_mpeg2(section) != 0 {
            return Err(ParseError::Invalid("PSI section CRC"));
        }
        Ok(Self {
            table_id,
            id: u16::from_be_bytes([id_hi, id_lo]),
            version: (version >> 1) & 0x1f,
            current: version & 0x01 != 0,
            body: section.get(8..section.len() - 4).unwrap_or_default(),
        })
    }
}

/// (program_number, program_map_PID) pairs of a PAT body, network PID excluded.
pub(crate) fn pat_programs(body: &[u8]) -> impl Iterator<Item = (u16, u16)> + '_ {
    body.chunks_exact(4).filter_map(|e| {
        let program = u16::from_be_bytes([e[0], e[1]]);
        let pid = u16::from_be_bytes([e[2] & 0x1f, e[3]]);
        (program != 0).then_some((program, pid))
    })
}

/// One elementary stream of a PMT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EsInfo {
    pub pid: u16,
    pub stream_type: u8,
    /// stream_type 0x06 with an AC-3 descriptor (DVB tag 0x6A) or an `AC-3`
    /// registration descriptor.
    pub ac3_descriptor: bool,
}

/// A parsed PMT body: PCR_PID and the elementary streams (at most
/// [`MAX_STREAMS`], appended to `streams` after clearing it).
pub(crate) fn parse_pmt(body: &[u8], streams: &mut Vec<EsInfo>) -> Result<u16, ParseError> {
    streams.clear();
    let Some((&[pcr_hi, pcr_lo, info_hi, info_lo], rest)) = body.split_first_chunk::<4>() else {
        return Err(ParseError::Truncated("PMT"));
    };
    let pcr_pid = u16::from_be_bytes([pcr_hi & 0x1f, pcr_lo]);
    let info_len = usize::from(u16::from_be_bytes([info_hi & 0x0f, info_lo]));
    let mut rest = rest
        .get(info_len..)
        .ok_or(ParseError::Truncated("PMT program_info"))?;
    while let Some((&[stream_type, pid_hi, pid_lo, es_hi, es_lo], after)) =
        rest.split_first_chunk::<5>()
    {
        let es_len = usize::from(u16::from_be_bytes([es_hi & 0x0f, es_lo]));
        let (descriptors, tail) = after
            .split_at_checked(es_len)
            .ok_or(ParseError::Truncated("PMT ES_info"))?;
        rest = tail;
        if streams.len() < MAX_STREAMS {
            streams.push(EsInfo {
                pid: u16::from_be_bytes([pid_hi & 0x1f, pid_lo]),
                stream_type,
                ac3_descriptor: has_ac3_descriptor(descriptors),
            });
        }
    }
    Ok(pcr_pid)
}

fn has_ac3_descriptor(mut descriptors: &[u8]) -> bool {
    while let Some((&[tag, len], rest)) = descriptors.split_first_chunk::<2>() {
        let Some((body, tail)) = rest.split_at_checked(usize::from(len)) else {
            return false;
        };
        if tag == 0x6a || (tag == 0x05 && body == b"AC-3") {
            return true;
        }
        descriptors = tail;
    }
    false
}
