//! Numbers and names both sides of a process boundary must agree on.
//!
//! The supervisor places descriptors, builds paths and hands out generations; the worker
//! runtime finds them again. Keeping each value here, once, means the two sides cannot
//! drift apart when one of them changes.

use crate::WorkerKind;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};

/// Where the supervisor's `pre_exec` puts the worker's end of the control socketpair.
pub const CONTROL_FD: RawFd = 3;

/// Largest process generation. A session id is `generation << 32 | counter`, and keeping
/// generations below 2^21 keeps every id below 2^53 (`Number.MAX_SAFE_INTEGER`), so API
/// clients in JavaScript read ids exactly.
pub const MAX_GENERATION: u32 = (1 << 21) - 1;

/// The generation for the `counter`-th process the supervisor starts: always in
/// `1..=MAX_GENERATION` (0 is never handed out), wrapping around after that many starts.
pub fn generation_from_counter(counter: u32) -> u32 {
    counter % MAX_GENERATION + 1
}

/// The Unix socket a producer worker of `producer`'s kind serves its media bus on.
pub fn bus_path(run_dir: &Path, producer: WorkerKind) -> PathBuf {
    run_dir.join("bus").join(format!("{producer}.sock"))
}

/// The Unix socket the dvr worker serves MP4 exports on (beside the bus sockets); the
/// supervisor streams `export_mp4` answers from it.
pub fn dvr_export_path(run_dir: &Path) -> PathBuf {
    run_dir.join("bus").join("dvr-export.sock")
}

/// The Unix socket the webrtc worker answers WHEP and WHIP requests on (HTTP/1.1); the
/// packager forwards them from the delivery port, so SDP is parsed in the webrtc worker.
pub fn webrtc_signaling_path(run_dir: &Path) -> PathBuf {
    run_dir.join("bus").join("webrtc-signaling.sock")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations_stay_in_range_and_never_zero() {
        for counter in [
            0,
            1,
            MAX_GENERATION - 1,
            MAX_GENERATION,
            u32::MAX - 1,
            u32::MAX,
        ] {
            let generation = generation_from_counter(counter);
            assert!((1..=MAX_GENERATION).contains(&generation), "{counter}");
        }
        // The largest id a process of the largest generation hands out is still exact in
        // a JavaScript number.
        assert!((u64::from(MAX_GENERATION) << 32 | u64::from(u32::MAX)) < (1u64 << 53));
    }

    #[test]
    fn bus_socket_lives_under_run_dir_by_producer_kind() {
        assert_eq!(
            bus_path(Path::new("/run/strom"), WorkerKind::Rtmp),
            Path::new("/run/strom/bus/rtmp.sock")
        );
    }
}
