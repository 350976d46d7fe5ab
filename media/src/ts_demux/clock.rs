//! The program's 90 kHz timeline: 33-bit PTS/DTS unwrapped into a continuous
//! `i64`. Each timestamp is placed relative to the previous one of the program
//! (any stream) by the shorter way round the 2^33 circle, so wraps are invisible.
//! A step of more than [`MAX_STEP`] either way is a discontinuity (a splice, an
//! encoder restart, a long outage): the timeline is re-based so that the
//! timestamp lands [`JUMP_STEP`] after the latest time seen, and the caller
//! reports it.

/// 2^33: PTS, DTS and the PCR base count modulo this.
pub(crate) const WRAP: i64 = 1 << 33;
/// The largest step between consecutive timestamps of a program still taken
/// as continuous: 5 s.
pub const MAX_STEP: i64 = 5 * 90_000;
/// Where a timestamp after a discontinuity lands: one 25 fps frame after the
/// latest time of the program.
pub const JUMP_STEP: i64 = 3_600;

/// `raw` minus `reference` in (-2^32, 2^32], both modulo 2^33.
pub(crate) fn signed_delta(raw: u64, reference: u64) -> i64 {
    let d = (raw.wrapping_sub(reference) as i64) & (WRAP - 1);
    if d > WRAP / 2 { d - WRAP } else { d }
}

/// Unwrapping state of one program.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Timeline {
    /// The last raw timestamp and where it landed.
    last: Option<(u64, i64)>,
    /// The latest time placed on the timeline.
    max: Option<i64>,
}

impl Timeline {
    /// Places a raw 33-bit timestamp; the flag is true on a discontinuity.
    pub fn place(&mut self, raw: u64) -> (i64, bool) {
        let raw = raw & (WRAP as u64 - 1);
        let (out, jumped) = match self.last {
            None => (raw as i64, false),
            Some((last_raw, last_out)) => {
                let delta = signed_delta(raw, last_raw);
                if delta.abs() > MAX_STEP {
                    (self.max.unwrap_or(last_out).saturating_add(JUMP_STEP), true)
                } else {
                    (last_out.saturating_add(delta), false)
                }
            }
        };
        self.last = Some((raw, out));
        self.max = Some(self.max.map_or(out, |m| m.max(out)));
        (out, jumped)
    }

    /// The latest time placed, 0 before the first.
    pub fn latest(&self) -> i64 {
        self.max.unwrap_or(0)
    }
}
