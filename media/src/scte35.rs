//! SCTE-35 `splice_info_section`s (ANSI/SCTE 35 §9): building the ones the API asks
//! for (splice_insert out and in, time_signal) and parsing any section a stream carries,
//! with its CRC-32; the hex and base64 forms HLS tags carry.
//!
//! Parsed: splice_null, splice_insert (program splice mode; component mode is skipped
//! past), time_signal, bandwidth_reservation; segmentation descriptors (event id,
//! cancel, duration, type id, UPID); other commands and descriptors are kept as raw
//! bytes. Encrypted sections (`encrypted_packet` set) are refused: strom has no keys.

use crate::ParseError;
use crate::bits::BitReader;
use crate::ts::psi::crc32_mpeg2 as psi_crc32;

pub const TABLE_ID: u8 = 0xfc;
/// 90 kHz ticks are 33-bit in splice times and 40-bit in durations.
const PTS_MASK: u64 = (1 << 33) - 1;
const DURATION_MASK: u64 = (1 << 33) - 1;
const SEGMENTATION_DESCRIPTOR: u8 = 0x02;
/// `CUEI` identifies SCTE-35 descriptors.
const CUEI: u32 = 0x4355_4549;
/// The largest section: section_length is 12 bits.
pub const MAX_SECTION: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpliceInfo {
    pub pts_adjustment: u64,
    pub tier: u16,
    pub command: SpliceCommand,
    pub descriptors: Vec<Descriptor>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpliceCommand {
    Null,
    Insert(SpliceInsert),
    /// `None`: time_specified_flag 0 (now).
    TimeSignal(Option<u64>),
    BandwidthReservation,
    /// Another command type, its bytes as they came.
    Other {
        command_type: u8,
        bytes: Vec<u8>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpliceInsert {
    pub event_id: u32,
    /// splice_event_cancel_indicator: nothing else follows.
    pub cancel: bool,
    pub out_of_network: bool,
    /// The splice time (90 kHz, 33-bit); `None` for splice_immediate.
    pub splice_time: Option<u64>,
    pub break_duration: Option<BreakDuration>,
    pub unique_program_id: u16,
    pub avail_num: u8,
    pub avails_expected: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakDuration {
    pub auto_return: bool,
    /// 90 kHz ticks.
    pub duration: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Descriptor {
    Segmentation(SegmentationDescriptor),
    /// Another descriptor: tag and body (after the length).
    Other {
        tag: u8,
        body: Vec<u8>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentationDescriptor {
    pub event_id: u32,
    pub cancel: bool,
    /// 90 kHz ticks, when given.
    pub duration: Option<u64>,
    pub upid_type: u8,
    pub upid: Vec<u8>,
    pub type_id: u8,
    pub segment_num: u8,
    pub segments_expected: u8,
}

impl SpliceInfo {
    /// A splice_insert in program splice mode: an out (`out_of_network`) or an in.
    pub fn insert(
        event_id: u32,
        out_of_network: bool,
        splice_time: Option<u64>,
        break_duration: Option<BreakDuration>,
    ) -> Self {
        Self {
            pts_adjustment: 0,
            tier: 0xfff,
            command: SpliceCommand::Insert(SpliceInsert {
                event_id,
                cancel: false,
                out_of_network,
                splice_time,
                break_duration,
                unique_program_id: 1,
                avail_num: 0,
                avails_expected: 0,
            }),
            descriptors: Vec::new(),
        }
    }

    /// The splice_insert, if that is the command.
    pub fn splice_insert(&self) -> Option<&SpliceInsert> {
        match &self.command {
            SpliceCommand::Insert(insert) => Some(insert),
            _ => None,
        }
    }

    /// The whole section, CRC included.
    pub fn encode(&self) -> Vec<u8> {
        let mut command = Vec::new();
        let command_type = match &self.command {
            SpliceCommand::Null => 0x00,
            SpliceCommand::Insert(insert) => {
                write_insert(insert, &mut command);
                0x05
            }
            SpliceCommand::TimeSignal(time) => {
                write_splice_time(*time, &mut command);
                0x06
            }
            SpliceCommand::BandwidthReservation => 0x07,
            SpliceCommand::Other {
                command_type,
                bytes,
            } => {
                command.extend_from_slice(bytes);
                *command_type
            }
        };
        let mut descriptors = Vec::new();
        for descriptor in &self.descriptors {
            write_descriptor(descriptor, &mut descriptors);
        }
        let mut out = vec![TABLE_ID, 0, 0, 0];
        // protocol_version 0; encrypted_packet 0, encryption_algorithm 0, pts_adjustment.
        let adjustment = self.pts_adjustment & PTS_MASK;
        out.push((adjustment >> 32) as u8 & 1);
        out.extend_from_slice(&(adjustment as u32).to_be_bytes());
        // cw_index, tier (12 bits), splice_command_length (12 bits).
        out.push(0xff);
        let length = command.len().min(0xfff) as u32;
        let tier_and_length = (u32::from(self.tier & 0xfff) << 12) | length;
        out.extend_from_slice(&tier_and_length.to_be_bytes()[1..]);
        out.push(command_type);
        out.extend_from_slice(&command);
        out.extend_from_slice(&(descriptors.len().min(0xffff) as u16).to_be_bytes());
        out.extend_from_slice(&descriptors);
        // section_syntax_indicator 0, private_indicator 0, sap_type 3 (not specified).
        let section_length = (out.len() - 3 + 4).min(0xfff) as u16;
        out[1] = 0x30 | (section_length >> 8) as u8;
        out[2] = section_length as u8;
        let crc = psi_crc32(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    /// Parses a whole section (CRC checked).
    pub fn parse(section: &[u8]) -> Result<Self, ParseError> {
        if section.len() < 17 || section.len() > MAX_SECTION {
            return Err(ParseError::Invalid("SCTE-35 section too short or too long"));
        }
        if section[0] != TABLE_ID {
            return Err(ParseError::Invalid("not an SCTE-35 section (table_id)"));
        }
        let length = usize::from(u16::from_be_bytes([section[1] & 0x0f, section[2]]));
        let Some(section) = section.get(..3 + length) else {
            return Err(ParseError::Truncated("SCTE-35 section"));
        };
        if psi_crc32(section) != 0 {
            return Err(ParseError::Invalid("SCTE-35 section CRC mismatch"));
        }
        let body = &section[3..section.len() - 4];
        let mut r = BitReader::new(body);
        let _protocol_version = r.read_bits(8)?;
        if r.read_bits(1)? == 1 {
            return Err(ParseError::Unsupported("encrypted SCTE-35 section"));
        }
        r.skip_bits(6)?; // encryption_algorithm
        let pts_adjustment = r.read_u64(33)?;
        r.skip_bits(8)?; // cw_index
        let tier = r.read_bits(12)? as u16;
        let command_length = r.read_bits(12)? as usize;
        let command_type = r.read_bits(8)? as u8;
        let start = r.byte_position();
        let command_bytes = body.get(start..).unwrap_or_default();
        let (command, used) = parse_command(command_type, command_bytes, command_length)?;
        let rest = command_bytes
            .get(used..)
            .ok_or(ParseError::Truncated("SCTE-35 section"))?;
        let loop_length = usize::from(u16::from_be_bytes([
            *rest
                .first()
                .ok_or(ParseError::Truncated("SCTE-35 section"))?,
            *rest
                .get(1)
                .ok_or(ParseError::Truncated("SCTE-35 section"))?,
        ]));
        let descriptors = parse_descriptors(
            rest.get(2..2 + loop_length)
                .ok_or(ParseError::Truncated("SCTE-35 section"))?,
        )?;
        Ok(Self {
            pts_adjustment,
            tier,
            command,
            descriptors,
        })
    }
}

/// CRC-32/MPEG-2 of `data` (a whole section, CRC included, checks to 0).
pub fn crc32(data: &[u8]) -> u32 {
    psi_crc32(data)
}

/// `0xFC30...`: the hex form of `#EXT-X-DATERANGE` `SCTE35-OUT`/`SCTE35-IN`.
pub fn to_hex(section: &[u8]) -> String {
    let mut hex = String::with_capacity(2 + section.len() * 2);
    hex.push_str("0x");
    for byte in section {
        hex.push_str(&format!("{byte:02X}"));
    }
    hex
}

/// Parses [`to_hex`]'s form (with or without `0x`, any case).
pub fn from_hex(text: &str) -> Result<Vec<u8>, ParseError> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    if !digits.len().is_multiple_of(2) || digits.len() > MAX_SECTION * 2 {
        return Err(ParseError::Invalid(
            "hex SCTE-35 of odd or excessive length",
        ));
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            digits
                .get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or(ParseError::Invalid("not hex"))
        })
        .collect()
}

fn write_splice_time(time: Option<u64>, out: &mut Vec<u8>) {
    match time {
        Some(pts) => {
            let pts = pts & PTS_MASK;
            out.push(0x80 | 0x7e | (pts >> 32) as u8);
            out.extend_from_slice(&(pts as u32).to_be_bytes());
        }
        None => out.push(0x7f),
    }
}

fn write_insert(insert: &SpliceInsert, out: &mut Vec<u8>) {
    out.extend_from_slice(&insert.event_id.to_be_bytes());
    out.push(if insert.cancel { 0xff } else { 0x7f });
    if insert.cancel {
        return;
    }
    let flags = (u8::from(insert.out_of_network) << 7)
        | 0x40 // program_splice_flag
        | (u8::from(insert.break_duration.is_some()) << 5)
        | (u8::from(insert.splice_time.is_none()) << 4)
        | 0x0f;
    out.push(flags);
    if insert.splice_time.is_some() {
        write_splice_time(insert.splice_time, out);
    }
    if let Some(duration) = insert.break_duration {
        let ticks = duration.duration & DURATION_MASK;
        out.push((u8::from(duration.auto_return) << 7) | 0x7e | (ticks >> 32) as u8);
        out.extend_from_slice(&(ticks as u32).to_be_bytes());
    }
    out.extend_from_slice(&insert.unique_program_id.to_be_bytes());
    out.push(insert.avail_num);
    out.push(insert.avails_expected);
}

fn write_descriptor(descriptor: &Descriptor, out: &mut Vec<u8>) {
    let (tag, body) = match descriptor {
        Descriptor::Other { tag, body } => (*tag, body.clone()),
        Descriptor::Segmentation(s) => {
            let mut body = CUEI.to_be_bytes().to_vec();
            body.extend_from_slice(&s.event_id.to_be_bytes());
            body.push(if s.cancel { 0xff } else { 0x7f });
            if !s.cancel {
                // program_segmentation_flag, segmentation_duration_flag,
                // delivery_not_restricted_flag, reserved.
                body.push(0x80 | (u8::from(s.duration.is_some()) << 6) | 0x20 | 0x1f);
                if let Some(duration) = s.duration {
                    let ticks = duration & ((1 << 40) - 1);
                    body.push((ticks >> 32) as u8);
                    body.extend_from_slice(&(ticks as u32).to_be_bytes());
                }
                body.push(s.upid_type);
                body.push(s.upid.len().min(255) as u8);
                body.extend_from_slice(s.upid.get(..s.upid.len().min(255)).unwrap_or_default());
                body.extend_from_slice(&[s.type_id, s.segment_num, s.segments_expected]);
            }
            (SEGMENTATION_DESCRIPTOR, body)
        }
    };
    out.push(tag);
    out.push(body.len().min(255) as u8);
    out.extend_from_slice(body.get(..body.len().min(255)).unwrap_or_default());
}

fn read_splice_time(r: &mut BitReader<'_>) -> Result<Option<u64>, ParseError> {
    if r.read_bits(1)? == 1 {
        r.skip_bits(6)?;
        Ok(Some(r.read_u64(33)?))
    } else {
        r.skip_bits(7)?;
        Ok(None)
    }
}

/// The command and the bytes it took (`command_length` when given, 0xFFF meaning
/// "not given" in old encoders).
fn parse_command(
    command_type: u8,
    bytes: &[u8],
    command_length: usize,
) -> Result<(SpliceCommand, usize), ParseError> {
    let mut r = BitReader::new(bytes);
    let command = match command_type {
        0x00 => SpliceCommand::Null,
        0x05 => SpliceCommand::Insert(parse_insert(&mut r)?),
        0x06 => SpliceCommand::TimeSignal(read_splice_time(&mut r)?),
        0x07 => SpliceCommand::BandwidthReservation,
        other => {
            let length = if command_length == 0xfff {
                0
            } else {
                command_length
            };
            let raw = bytes
                .get(..length)
                .ok_or(ParseError::Truncated("SCTE-35 section"))?;
            return Ok((
                SpliceCommand::Other {
                    command_type: other,
                    bytes: raw.to_vec(),
                },
                length,
            ));
        }
    };
    let parsed = r.byte_position();
    let used = if command_length == 0xfff {
        parsed
    } else {
        command_length
    };
    if used > bytes.len() || used < parsed {
        return Err(ParseError::Invalid(
            "splice_command_length disagrees with the command",
        ));
    }
    Ok((command, used))
}

fn parse_insert(r: &mut BitReader<'_>) -> Result<SpliceInsert, ParseError> {
    let event_id = r.read_bits(32)?;
    let cancel = r.read_bits(1)? == 1;
    r.skip_bits(7)?;
    let mut insert = SpliceInsert {
        event_id,
        cancel,
        out_of_network: false,
        splice_time: None,
        break_duration: None,
        unique_program_id: 0,
        avail_num: 0,
        avails_expected: 0,
    };
    if cancel {
        return Ok(insert);
    }
    insert.out_of_network = r.read_bits(1)? == 1;
    let program_splice = r.read_bits(1)? == 1;
    let has_duration = r.read_bits(1)? == 1;
    let immediate = r.read_bits(1)? == 1;
    r.skip_bits(4)?;
    if program_splice {
        if !immediate {
            insert.splice_time = read_splice_time(r)?;
        }
    } else {
        let components = r.read_bits(8)?;
        for _ in 0..components {
            r.skip_bits(8)?; // component_tag
            if !immediate {
                read_splice_time(r)?;
            }
        }
    }
    if has_duration {
        let auto_return = r.read_bits(1)? == 1;
        r.skip_bits(6)?;
        insert.break_duration = Some(BreakDuration {
            auto_return,
            duration: r.read_u64(33)?,
        });
    }
    insert.unique_program_id = r.read_bits(16)? as u16;
    insert.avail_num = r.read_bits(8)? as u8;
    insert.avails_expected = r.read_bits(8)? as u8;
    Ok(insert)
}

fn parse_descriptors(mut bytes: &[u8]) -> Result<Vec<Descriptor>, ParseError> {
    let mut descriptors = Vec::new();
    while let [tag, length, rest @ ..] = bytes {
        let body = rest
            .get(..usize::from(*length))
            .ok_or(ParseError::Truncated("SCTE-35 section"))?;
        let segmentation = (*tag == SEGMENTATION_DESCRIPTOR)
            .then(|| parse_segmentation(body))
            .transpose()?
            .flatten();
        descriptors.push(match segmentation {
            Some(s) => Descriptor::Segmentation(s),
            None => Descriptor::Other {
                tag: *tag,
                body: body.to_vec(),
            },
        });
        bytes = rest.get(usize::from(*length)..).unwrap_or_default();
    }
    Ok(descriptors)
}

/// A segmentation descriptor; `None` when it is not a `CUEI` one or uses component mode.
fn parse_segmentation(body: &[u8]) -> Result<Option<SegmentationDescriptor>, ParseError> {
    let mut r = BitReader::new(body);
    if r.read_bits(32)? != CUEI {
        return Ok(None);
    }
    let event_id = r.read_bits(32)?;
    let cancel = r.read_bits(1)? == 1;
    r.skip_bits(7)?;
    let mut descriptor = SegmentationDescriptor {
        event_id,
        cancel,
        duration: None,
        upid_type: 0,
        upid: Vec::new(),
        type_id: 0,
        segment_num: 0,
        segments_expected: 0,
    };
    if cancel {
        return Ok(Some(descriptor));
    }
    let program = r.read_bits(1)? == 1;
    let has_duration = r.read_bits(1)? == 1;
    let not_restricted = r.read_bits(1)? == 1;
    // The restriction flags (5 bits) follow when delivery is restricted, reserved
    // bits otherwise: 5 bits either way.
    let _ = not_restricted;
    r.skip_bits(5)?;
    if !program {
        return Ok(None);
    }
    if has_duration {
        descriptor.duration = Some(r.read_u64(40)?);
    }
    descriptor.upid_type = r.read_bits(8)? as u8;
    let upid_length = r.read_bits(8)? as usize;
    let start = r.byte_position();
    descriptor.upid = body
        .get(start..start + upid_length)
        .ok_or(ParseError::Truncated("SCTE-35 section"))?
        .to_vec();
    let mut r = BitReader::new(body.get(start + upid_length..).unwrap_or_default());
    descriptor.type_id = r.read_bits(8)? as u8;
    descriptor.segment_num = r.read_bits(8)? as u8;
    descriptor.segments_expected = r.read_bits(8)? as u8;
    Ok(Some(descriptor))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SCTE 35 (2019) §14.2, "splice_insert": out of network, splice time 0x07369C02E,
    /// break duration 0x00052CCF5 with auto return, event 0x4800008F.
    const SPEC_INSERT: &str = "0xFC302F000000000000FFFFF014054800008F7FEFFE7369C02EFE0052CCF500000000000A0008435545490000013562DBA30A";

    #[test]
    fn parses_the_spec_example_and_round_trips_what_it_builds() {
        let section = from_hex(SPEC_INSERT).unwrap();
        let info = SpliceInfo::parse(&section).unwrap();
        let insert = info.splice_insert().unwrap();
        assert_eq!(insert.event_id, 0x4800_008f);
        assert!(insert.out_of_network);
        assert_eq!(insert.splice_time, Some(0x0_7369_c02e));
        assert_eq!(
            insert.break_duration,
            Some(BreakDuration {
                auto_return: true,
                duration: 0x0_0052_ccf5
            })
        );
        assert_eq!(info.descriptors.len(), 1);

        let built = SpliceInfo::insert(
            7,
            true,
            None,
            Some(BreakDuration {
                auto_return: true,
                duration: 900_000,
            }),
        );
        let encoded = built.encode();
        assert_eq!(psi_crc32(&encoded), 0, "the CRC checks");
        assert_eq!(SpliceInfo::parse(&encoded).unwrap(), built);
        assert_eq!(from_hex(&to_hex(&encoded)).unwrap(), encoded);
        let back_in = SpliceInfo::insert(7, false, Some(123_456_789), None);
        assert_eq!(SpliceInfo::parse(&back_in.encode()).unwrap(), back_in);
        let signal = SpliceInfo {
            pts_adjustment: 5,
            tier: 0xfff,
            command: SpliceCommand::TimeSignal(Some(1 << 32)),
            descriptors: vec![Descriptor::Segmentation(SegmentationDescriptor {
                event_id: 9,
                cancel: false,
                duration: Some(2_700_000),
                upid_type: 9,
                upid: b"SIGNAL:abc".to_vec(),
                type_id: 0x34,
                segment_num: 1,
                segments_expected: 1,
            })],
        };
        assert_eq!(SpliceInfo::parse(&signal.encode()).unwrap(), signal);
    }

    #[test]
    fn bad_sections_are_errors() {
        let mut section = SpliceInfo::insert(1, true, None, None).encode();
        assert!(SpliceInfo::parse(&section[..10]).is_err());
        section[10] ^= 1;
        assert!(SpliceInfo::parse(&section).is_err(), "CRC");
        assert!(SpliceInfo::parse(&[0u8; 20]).is_err(), "table id");
        assert!(from_hex("0xF").is_err());
        assert!(from_hex("zz").is_err());
        for cut in 0..40 {
            let _ = SpliceInfo::parse(&from_hex(SPEC_INSERT).unwrap()[..cut]);
        }
    }
}
