//! Reassembly of PSI sections (PAT, PMT, SCTE-35) from the payloads of one PID:
//! pointer_field handling, several sections per packet, sections across packets,
//! stuffing, and a cap of [`MAX_SECTION`] bytes. Complete sections are queued
//! back to back in a reused buffer; each one is self-delimiting.

/// The longest section accepted (private sections: 4096 bytes in all).
pub(crate) const MAX_SECTION: usize = 4096;

/// Section reassembly state for one PID.
#[derive(Debug, Default)]
pub(crate) struct SectionAssembler {
    /// The section in progress, from its table_id on.
    buf: Vec<u8>,
    /// Whether `buf` continues a section (false until the next unit start).
    active: bool,
    /// Complete sections, concatenated; drained by [`Self::take_ready`].
    ready: Vec<u8>,
}

impl SectionAssembler {
    /// Forgets the section in progress (after a continuity error).
    pub fn reset(&mut self) {
        self.buf.clear();
        self.active = false;
    }

    /// Feeds the payload of one packet.
    pub fn push(&mut self, payload: &[u8], unit_start: bool) {
        if unit_start {
            let Some((&pointer, rest)) = payload.split_first() else {
                self.reset();
                return;
            };
            let Some((tail, head)) = rest.split_at_checked(usize::from(pointer)) else {
                self.reset();
                return;
            };
            if self.active {
                self.append(tail);
            }
            self.buf.clear();
            self.active = true;
            self.append(head);
        } else if self.active {
            self.append(payload);
        }
    }

    fn append(&mut self, data: &[u8]) {
        if !self.active {
            return;
        }
        if self.buf.len() + data.len() > MAX_SECTION + super::PACKET_SIZE {
            self.reset();
            return;
        }
        self.buf.extend_from_slice(data);
        loop {
            match self.buf.first() {
                None => return,
                Some(0xff) => {
                    // Stuffing: no more sections in this packet.
                    self.reset();
                    return;
                }
                Some(_) => {}
            }
            let Some(&[_, hi, lo]) = self.buf.get(..3) else {
                return;
            };
            let len = 3 + usize::from(u16::from_be_bytes([hi & 0x0f, lo]));
            if len > MAX_SECTION {
                self.reset();
                return;
            }
            let Some(section) = self.buf.get(..len) else {
                return;
            };
            self.ready.extend_from_slice(section);
            self.buf.drain(..len);
        }
    }

    /// Takes the complete sections (iterate with [`sections`]); give the buffer
    /// back with [`Self::give_back`] so its capacity is reused.
    pub fn take_ready(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.ready)
    }

    pub fn give_back(&mut self, mut ready: Vec<u8>) {
        ready.clear();
        if self.ready.is_empty() {
            self.ready = ready;
        }
    }
}

/// The sections in a buffer from [`SectionAssembler::take_ready`].
pub(crate) fn sections(mut ready: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        let &[_, hi, lo] = ready.get(..3)? else {
            return None;
        };
        let len = 3 + usize::from(u16::from_be_bytes([hi & 0x0f, lo]));
        let (section, rest) = ready.split_at_checked(len)?;
        ready = rest;
        Some(section)
    })
}
