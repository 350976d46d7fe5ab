//! The part of an FLV tag header that a neutral [`crate::frame::Frame`] cannot say
//! (legacy vs Enhanced header, frame type bits, packet type, the audio format byte),
//! kept with a frame that came from FLV so that [`crate::flv_adapter`] writes the body
//! back byte for byte. A leaf: the frame and the adapter both use it.

use crate::ParseError;

/// The longest FLV header kept: Enhanced RTMP byte and FourCC.
pub(crate) const PREFIX_MAX: usize = 5;
/// The FLV tag header bytes of one frame, up to (not including) the composition time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlvForm {
    pub(crate) prefix: [u8; PREFIX_MAX],
    pub(crate) len: u8,
    /// A 24-bit composition time (from `pts - dts`) follows the prefix.
    pub(crate) cts: bool,
}

impl FlvForm {
    pub(crate) fn new(body: &[u8], len: usize, cts: bool) -> Self {
        let mut prefix = [0; PREFIX_MAX];
        let len = len.min(PREFIX_MAX).min(body.len());
        prefix[..len].copy_from_slice(&body[..len]);
        Self {
            prefix,
            len: len as u8,
            cts,
        }
    }

    /// The header bytes before the composition time.
    pub fn prefix(&self) -> &[u8] {
        &self.prefix[..usize::from(self.len)]
    }

    /// Whether a composition time follows the prefix.
    pub fn has_composition_time(&self) -> bool {
        self.cts
    }

    /// A fixed 6-byte encoding (for a bus header): length and composition flag, prefix.
    pub fn to_bytes(&self) -> [u8; 6] {
        let mut out = [0; 6];
        out[0] = self.len | (u8::from(self.cts) << 7);
        out[1..].copy_from_slice(&self.prefix);
        out
    }

    /// Inverse of [`FlvForm::to_bytes`].
    pub fn from_bytes(bytes: [u8; 6]) -> Result<Self, ParseError> {
        let len = bytes[0] & 0x7f;
        if usize::from(len) > PREFIX_MAX {
            return Err(ParseError::Invalid("FLV form length"));
        }
        let mut prefix = [0; PREFIX_MAX];
        prefix.copy_from_slice(&bytes[1..]);
        Ok(Self {
            prefix,
            len,
            cts: bytes[0] & 0x80 != 0,
        })
    }
}
