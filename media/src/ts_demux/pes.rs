//! PES packets (ISO/IEC 13818-1 §2.4.3.6): reassembly per PID in a reused
//! buffer, bounded by [`MAX_PES`], and the header fields the demuxer needs
//! (PTS, DTS, where the payload starts).

use bytes::BytesMut;

/// The largest PES accepted; bigger ones are dropped and reported.
pub const MAX_PES: usize = 8 << 20;

/// A PES being collected from the packets of one PID.
#[derive(Debug, Default)]
pub(crate) struct PesAssembler {
    pub buf: BytesMut,
    /// Collecting: a unit start was seen and nothing was dropped since.
    pub active: bool,
}

/// What [`PesAssembler::push`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// Nothing complete yet.
    Pending,
    /// The PES reached its PES_packet_length: finish it now.
    Complete,
    /// The PES outgrew [`MAX_PES`] and was dropped.
    TooLarge,
}

impl PesAssembler {
    pub fn reset(&mut self) {
        self.buf.clear();
        self.active = false;
    }

    /// The total PES length from its header, `None` while unknown or unbounded.
    pub fn declared_len(&self) -> Option<usize> {
        let &[_, _, _, _, hi, lo] = self.buf.get(..6)? else {
            return None;
        };
        let len = usize::from(u16::from_be_bytes([hi, lo]));
        (len != 0).then_some(6 + len)
    }

    /// Appends a continuation payload.
    pub fn push(&mut self, payload: &[u8]) -> Pushed {
        if !self.active {
            return Pushed::Pending;
        }
        if self.buf.len() + payload.len() > MAX_PES {
            self.reset();
            return Pushed::TooLarge;
        }
        self.buf.extend_from_slice(payload);
        self.check_complete()
    }

    /// Starts a new PES with `payload` (after the previous one was finished).
    pub fn start(&mut self, payload: &[u8]) -> Pushed {
        self.buf.clear();
        self.active = true;
        self.push(payload)
    }

    fn check_complete(&mut self) -> Pushed {
        match self.declared_len() {
            Some(len) if self.buf.len() >= len => {
                self.buf.truncate(len);
                Pushed::Complete
            }
            _ => Pushed::Pending,
        }
    }
}

/// The header fields of a complete PES.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PesHeader {
    pub pts: Option<u64>,
    pub dts: Option<u64>,
    /// Offset of the payload in the PES.
    pub payload_start: usize,
}

impl PesHeader {
    /// `None` when the start code is missing or the header runs past the data.
    pub fn parse(pes: &[u8]) -> Option<Self> {
        let &[0, 0, 1, stream_id, _, _] = pes.get(..6)? else {
            return None;
        };
        // Streams without the optional header (§2.4.3.7 table 2-21).
        if matches!(
            stream_id,
            0xbc | 0xbe | 0xbf | 0xf0 | 0xf1 | 0xf2 | 0xf8 | 0xff
        ) {
            return Some(Self {
                pts: None,
                dts: None,
                payload_start: 6,
            });
        }
        let &[marker, flags, header_len] = pes.get(6..9)? else {
            return None;
        };
        if marker & 0xc0 != 0x80 {
            return None;
        }
        let payload_start = 9 + usize::from(header_len);
        if pes.len() < payload_start {
            return None;
        }
        let field = |at: usize| pes.get(at..at + 5).map(read_timestamp);
        let (pts, dts) = match flags >> 6 {
            0b10 => (field(9), None),
            0b11 => (field(9), field(14)),
            _ => (None, None),
        };
        Some(Self {
            pts,
            dts,
            payload_start,
        })
    }
}

/// A 5-byte PTS/DTS field: 33 bits in groups of 3, 15 and 15.
fn read_timestamp(b: &[u8]) -> u64 {
    let byte = |i: usize| u64::from(b.get(i).copied().unwrap_or(0));
    ((byte(0) & 0x0e) << 29)
        | (byte(1) << 22)
        | ((byte(2) & 0xfe) << 14)
        | (byte(3) << 7)
        | (byte(4) >> 1)
}
