//! A small, safe wrapper over Debian's libsrt 1.5.1 (`libsrt-openssl-dev`): SRT
//! listeners and sockets in live mode (message API) for the MPEG-TS worker's SRT inputs,
//! their options from `Cameras` parameters, and their statistics as the JSON deployed
//! clients parse. Process-wide library setup lives here; the C declarations are in
//! [`ffi`] (checked against the header by `csrc/srt_layout.c`, see `tests.rs`).

pub mod accepting;
mod ffi;
pub mod handshakes;
mod socket;
mod stats;
pub mod stream_id;
#[cfg(test)]
mod tests;

pub use socket::{SrtError, SrtListener, SrtOptions, SrtSocket};
pub use stats::SrtStats;

use std::sync::Once;

/// syslog's `LOG_ERR`, the level `srt_setloglevel` takes.
const LOG_ERR: libc::c_int = 3;

/// Calls `srt_startup()` once per process; idempotent (every constructor in this
/// module calls it too). Also turns libsrt's own logging down to errors only.
pub fn startup() {
    static STARTUP: Once = Once::new();
    STARTUP.call_once(|| {
        // SAFETY: srt_startup and srt_setloglevel take no pointers; libsrt allows
        // them at any time (srt_startup is reference counted, and `Once` makes this
        // run a single time anyway).
        let rc = unsafe {
            let rc = ffi::srt_startup();
            ffi::srt_setloglevel(LOG_ERR);
            rc
        };
        if rc < 0 {
            tracing::warn!("srt_startup failed ({rc}); SRT sockets will not work");
        }
    });
}
