//! HLS timed metadata in MPEG-TS, as Apple's "Timed Metadata for HTTP Live Streaming"
//! describes it: ID3v2 tags ([`crate::id3`]) as PES packets (stream_id 0xBD,
//! private_stream_1, with a PTS) on a PID of their own whose PMT entry has stream_type
//! 0x15 (metadata in PES) and a `metadata_descriptor`, and a `metadata_pointer_descriptor`
//! in the program loop, both with format identifier `ID3 `. ffmpeg reads such a stream
//! as `timed_id3` data.

use super::packet::{PesStart, write_pes_packets};
use super::pes::write_pes_header;

/// PID of the timed metadata stream.
pub const ID3_PID: u16 = 0x0103;
/// stream_type of metadata carried in PES packets (ISO/IEC 13818-1 Table 2-34).
pub const STREAM_TYPE_METADATA: u8 = 0x15;
/// PES stream_id private_stream_1, which Apple's spec prescribes.
const PRIVATE_STREAM_1: u8 = 0xbd;

/// `metadata_pointer_descriptor` (tag 0x25) for the program loop: application format
/// and format `ID3 `, service 0, no locator record, MPEG carriage 0 (same transport
/// stream), program `program_number`.
pub(crate) fn metadata_pointer_descriptor(program_number: u16) -> [u8; 17] {
    let [hi, lo] = program_number.to_be_bytes();
    [
        0x25, 15, 0xff, 0xff, b'I', b'D', b'3', b' ', 0xff, b'I', b'D', b'3', b' ', 0x00, 0x1f, hi,
        lo,
    ]
}

/// `metadata_descriptor` (tag 0x26) for the stream's ES info loop: format `ID3 `,
/// service 0, no decoder config, no DSM-CC.
pub(crate) const METADATA_DESCRIPTOR: [u8; 15] = [
    0x26, 13, 0xff, 0xff, b'I', b'D', b'3', b' ', 0xff, b'I', b'D', b'3', b' ', 0x00, 0x0f,
];

/// Appends `tag` presented at `pts` as one PES on [`ID3_PID`]; a tag too long for one
/// PES (64 KB) is left out.
pub(crate) fn write_id3_pes(
    pts: i64,
    tag: &[u8],
    cc: &mut u8,
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
) {
    scratch.clear();
    if write_pes_header(PRIVATE_STREAM_1, pts, pts, Some(tag.len()), scratch).is_err() {
        return;
    }
    scratch.extend_from_slice(tag);
    write_pes_packets(ID3_PID, cc, scratch, PesStart::default(), out);
}
