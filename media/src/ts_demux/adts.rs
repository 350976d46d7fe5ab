//! AAC in ADTS (ISO/IEC 13818-7 §6.2, ISO/IEC 14496-3 §1.A.2): splitting a PES
//! payload into ADTS frames, each given back without its header, and the
//! two-byte AudioSpecificConfig the header implies.

/// AAC frames hold 1024 samples per channel.
pub(crate) const FRAME_SAMPLES: u64 = 1024;

/// One ADTS frame within a PES payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AdtsFrame {
    /// The AudioSpecificConfig: object type, frequency index, channels.
    pub asc: [u8; 2],
    pub sampling_frequency: u32,
    /// The raw data after the header, as a range of the payload.
    pub start: usize,
    pub end: usize,
    /// Raw data blocks in the frame (1..=4), 1024 samples each.
    pub blocks: u8,
}

/// Parses the ADTS frame at the start of `data`; `None` when there is no
/// syncword, a reserved field, or the frame runs past the data.
pub(crate) fn parse_adts(data: &[u8]) -> Option<AdtsFrame> {
    let (&[b0, b1, b2, b3, b4, _, b6], _) = data.split_first_chunk::<7>()?;
    if b0 != 0xff || b1 & 0xf6 != 0xf0 {
        return None; // syncword, layer 00
    }
    let header_len = if b1 & 0x01 != 0 { 7 } else { 9 };
    let profile = b2 >> 6;
    let frequency_index = (b2 >> 2) & 0x0f;
    let sampling_frequency = *crate::aac::SAMPLING_FREQUENCIES.get(usize::from(frequency_index))?;
    let channels = ((b2 & 0x01) << 2) | (b3 >> 6);
    let frame_len = (usize::from(b3 & 0x03) << 11)
        | (usize::from(b4) << 3)
        | usize::from(data.get(5).copied().unwrap_or(0) >> 5);
    if frame_len < header_len || frame_len > data.len() {
        return None;
    }
    let object_type = profile + 1;
    Some(AdtsFrame {
        asc: [
            (object_type << 3) | (frequency_index >> 1),
            ((frequency_index & 1) << 7) | (channels << 3),
        ],
        sampling_frequency,
        start: header_len,
        end: frame_len,
        blocks: (b6 & 0x03) + 1,
    })
}
