//! SCTE-35 sections as TS inputs carry them and the API's hex form: parse any bytes
//! (CRC checked first, then forced valid so the command and descriptor parsers are
//! reached), and re-encode what parses.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strom_media::scte35::{self, SpliceInfo};

fuzz_target!(|data: &[u8]| {
    let _ = SpliceInfo::parse(data);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = scte35::from_hex(text);
    }
    // The same bytes as the body of a section with a correct length and CRC.
    let mut section = vec![scte35::TABLE_ID, 0, 0];
    section.extend_from_slice(data.get(..data.len().min(4000)).unwrap_or_default());
    let length = (section.len() - 3 + 4) as u16;
    section[1] = 0x30 | (length >> 8) as u8;
    section[2] = length as u8;
    let crc = scte35::crc32(&section);
    section.extend_from_slice(&crc.to_be_bytes());
    if let Ok(info) = SpliceInfo::parse(&section) {
        let _ = SpliceInfo::parse(&info.encode());
    }
});
