//! MSB-first bit reader for codec headers: fixed-width fields, Exp-Golomb codes
//! (`ue(v)`/`se(v)`), and optional on-the-fly removal of H.264/H.265
//! emulation-prevention bytes (`00 00 03`), so NAL units are read without copying.

use crate::ParseError;

/// Reads bits MSB-first from a byte slice; every read past the end is an error.
#[derive(Debug, Clone)]
pub struct BitReader<'a> {
    data: &'a [u8],
    pos: usize,
    bit: u8,
    zeros: u8,
    rbsp: bool,
}

impl<'a> BitReader<'a> {
    /// A reader over plain bits (e.g. an AAC AudioSpecificConfig).
    pub fn new(data: &'a [u8]) -> Self {
        Self {
            data,
            pos: 0,
            bit: 0,
            zeros: 0,
            rbsp: false,
        }
    }

    /// A reader over a NAL unit payload that skips emulation-prevention bytes,
    /// yielding the RBSP bits.
    pub fn rbsp(data: &'a [u8]) -> Self {
        Self {
            rbsp: true,
            ..Self::new(data)
        }
    }

    /// One bit.
    pub fn read_bit(&mut self) -> Result<bool, ParseError> {
        if self.rbsp && self.bit == 0 && self.zeros >= 2 && self.data.get(self.pos) == Some(&3) {
            self.pos += 1;
            self.zeros = 0;
        }
        let byte = *self
            .data
            .get(self.pos)
            .ok_or(ParseError::Truncated("bitstream"))?;
        let value = (byte >> (7 - self.bit)) & 1;
        self.bit += 1;
        if self.bit == 8 {
            self.bit = 0;
            self.pos += 1;
            self.zeros = if byte == 0 {
                self.zeros.saturating_add(1)
            } else {
                0
            };
        }
        Ok(value == 1)
    }

    /// `n` bits (at most 32) as an unsigned big-endian number.
    pub fn read_bits(&mut self, n: u8) -> Result<u32, ParseError> {
        if n > 32 {
            return Err(ParseError::Invalid("bit field wider than 32 bits"));
        }
        let mut value = 0u64;
        for _ in 0..n {
            value = (value << 1) | u64::from(self.read_bit()?);
        }
        u32::try_from(value).map_err(|_| ParseError::Invalid("bit field"))
    }

    /// `n` bits (at most 64) as an unsigned big-endian number (33-bit PTS, 40-bit
    /// durations).
    pub fn read_u64(&mut self, n: u8) -> Result<u64, ParseError> {
        if n > 64 {
            return Err(ParseError::Invalid("bit field wider than 64 bits"));
        }
        let mut value = 0u64;
        for _ in 0..n {
            value = (value << 1) | u64::from(self.read_bit()?);
        }
        Ok(value)
    }

    /// The index of the next whole byte (the current one when reading mid-byte is done
    /// on a byte boundary).
    pub fn byte_position(&self) -> usize {
        self.pos + usize::from(self.bit != 0)
    }

    /// Eight bits.
    pub fn read_u8(&mut self) -> Result<u8, ParseError> {
        u8::try_from(self.read_bits(8)?).map_err(|_| ParseError::Invalid("byte"))
    }

    /// Skips `n` bits.
    pub fn skip_bits(&mut self, n: u32) -> Result<(), ParseError> {
        for _ in 0..n {
            self.read_bit()?;
        }
        Ok(())
    }

    /// Unsigned Exp-Golomb `ue(v)`; codes longer than 32 bits of prefix are rejected.
    pub fn read_ue(&mut self) -> Result<u32, ParseError> {
        let mut leading_zeros = 0u8;
        while !self.read_bit()? {
            leading_zeros += 1;
            if leading_zeros > 31 {
                return Err(ParseError::Invalid("Exp-Golomb code too long"));
            }
        }
        let suffix = u64::from(self.read_bits(leading_zeros)?);
        u32::try_from((1u64 << leading_zeros) - 1 + suffix)
            .map_err(|_| ParseError::Invalid("Exp-Golomb code"))
    }

    /// Signed Exp-Golomb `se(v)`.
    pub fn read_se(&mut self) -> Result<i32, ParseError> {
        let k = i64::from(self.read_ue()?);
        let value = if k & 1 == 1 { (k + 1) / 2 } else { -(k / 2) };
        i32::try_from(value).map_err(|_| ParseError::Invalid("Exp-Golomb code"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_and_exp_golomb() {
        // 1 | 010 | 011 | 00100 | 00101 | 0001000 -> ue 0,1,2,3,4 then ue 7
        let data = [0b1010_0110, 0b0100_0010, 0b1000_1000];
        let mut r = BitReader::new(&data);
        let got: Vec<u32> = (0..6).map(|_| r.read_ue().unwrap()).collect();
        assert_eq!(got, [0, 1, 2, 3, 4, 7]);
        assert!(r.read_bit().is_err());
    }

    #[test]
    fn signed_exp_golomb() {
        // ue 0..=4 -> se 0, 1, -1, 2, -2
        let data = [0b1010_0110, 0b0100_0010, 0b1000_0000];
        let mut r = BitReader::new(&data);
        let got: Vec<i32> = (0..5).map(|_| r.read_se().unwrap()).collect();
        assert_eq!(got, [0, 1, -1, 2, -2]);
    }

    #[test]
    fn rbsp_skips_emulation_prevention() {
        let cases: &[(&[u8], bool, u32)] = &[
            (&[0, 0, 3, 1], true, 0x00_00_01),
            (&[0, 0, 3, 1], false, 0x00_00_03),
            (&[0, 1, 3, 1], true, 0x00_01_03),
            (&[0, 0, 3, 0, 0, 3, 1], true, 0x00_00_00),
            (&[0, 0, 3, 3, 1], true, 0x00_00_03),
        ];
        for &(data, rbsp, want) in cases {
            let mut r = if rbsp {
                BitReader::rbsp(data)
            } else {
                BitReader::new(data)
            };
            assert_eq!(r.read_bits(24), Ok(want), "{data:?} rbsp={rbsp}");
        }
    }

    #[test]
    fn limits() {
        let mut r = BitReader::new(&[0, 0, 0, 0, 0]);
        assert_eq!(
            r.read_ue(),
            Err(ParseError::Invalid("Exp-Golomb code too long"))
        );
        assert!(BitReader::new(&[0xff; 8]).read_bits(33).is_err());
        // The longest accepted code: 31 zeros, a one, 31 bits.
        let mut max = [0u8; 8];
        max[3] = 0b0000_0001;
        max[4..].fill(0xff);
        assert_eq!(BitReader::new(&max).read_ue(), Ok(u32::MAX - 1));
    }
}
