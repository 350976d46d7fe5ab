//! What each configured input (`Cameras` entry) is doing, for `mpeg2ts_status` and the
//! stream list: packets arriving or not, bytes and rate, the programs its MPEG-TS
//! carries. Written by the input's receive task, read by status
//! queries; nothing here waits on the media path.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use strom_ipc::status::TsProgram;
use strom_worker_runtime::sync::locked;

/// An input with no packet for this long is offline.
pub const OFFLINE_AFTER: Duration = Duration::from_secs(3);
/// The receive rate is measured over windows of this length.
const RATE_WINDOW: Duration = Duration::from_secs(1);

#[derive(Debug, Default)]
pub struct InputStatus {
    bytes: AtomicU64,
    rate: Mutex<Rate>,
    programs: Mutex<Vec<TsProgram>>,
}

#[derive(Debug, Default)]
struct Rate {
    last_packet: Option<Instant>,
    window_start: Option<Instant>,
    window_bytes: u64,
    bits_per_second: u64,
}

impl InputStatus {
    /// Records a datagram of `len` bytes.
    pub fn received(&self, len: usize) {
        self.bytes.fetch_add(len as u64, Ordering::Relaxed);
        let now = Instant::now();
        let mut rate = locked(&self.rate);
        rate.last_packet = Some(now);
        let start = *rate.window_start.get_or_insert(now);
        rate.window_bytes += len as u64;
        let elapsed = now.duration_since(start);
        if elapsed >= RATE_WINDOW {
            rate.bits_per_second = (rate.window_bytes as f64 * 8.0 / elapsed.as_secs_f64()) as u64;
            rate.window_start = Some(now);
            rate.window_bytes = 0;
        }
    }

    pub fn online(&self) -> bool {
        locked(&self.rate)
            .last_packet
            .is_some_and(|last| last.elapsed() < OFFLINE_AFTER)
    }

    pub fn total_bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Bits per second over the last window; 0 once the input went quiet.
    pub fn bits_per_second(&self) -> u64 {
        let rate = locked(&self.rate);
        match rate.last_packet {
            Some(last) if last.elapsed() < OFFLINE_AFTER => rate.bits_per_second,
            _ => 0,
        }
    }

    pub fn set_programs(&self, programs: Vec<TsProgram>) {
        *locked(&self.programs) = programs;
    }

    pub fn programs(&self) -> Vec<TsProgram> {
        locked(&self.programs).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_make_an_input_online_with_a_byte_count() {
        let status = InputStatus::default();
        assert!(!status.online());
        assert_eq!(status.bits_per_second(), 0);
        status.received(1316);
        assert!(status.online());
        status.received(1316);
        assert_eq!(status.total_bytes(), 2632);
    }
}
