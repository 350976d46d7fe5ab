//! A small, safe wrapper over Debian's librist 0.2.7 (`librist-dev`): RIST receivers
//! ([`RistReceiver`], listening or calling, read with a timeout) and senders
//! ([`RistSender`], for the coming RIST outputs), their options from `Cameras`
//! parameters ([`RistOptions`]), librist's log lines routed into `tracing`, and the
//! latest stats JSON librist's stats callback produces. The C declarations are in
//! [`ffi`] (checked against the header by `csrc/rist_layout.c`, see `tests.rs`).

mod context;
mod ffi;
mod options;
#[cfg(test)]
mod tests;

pub use context::{RistBlock, RistReceiver, RistSender, StatsSlot};
pub use options::{RistOptions, RistProfile};

use std::sync::Once;

#[derive(Debug, thiserror::Error)]
pub enum RistError {
    /// Bad options (names the parameter).
    #[error("rist: {0}")]
    Config(String),
    /// A librist call failed (librist logs its reason through the log callback).
    #[error("rist {call} failed ({rc})")]
    Call { call: &'static str, rc: i32 },
}

/// Sets librist's global log settings once per process: errors and warnings into
/// `tracing`. librist uses them where it has no context (address parsing, sockets);
/// every context also gets its own settings at its input's `rist-logging` level.
pub fn startup() {
    static STARTUP: Once = Once::new();
    STARTUP.call_once(|| {
        let mut settings = std::ptr::null_mut();
        // SAFETY: `settings` is a valid out-pointer that librist fills with a struct it
        // allocates; the callback is a plain function and its argument is null, so the
        // copy librist keeps as global settings never points at freed memory. The
        // allocation is kept for the life of the process (never freed).
        let rc = unsafe {
            let rc = ffi::rist_logging_set(
                &mut settings,
                ffi::RIST_LOG_WARN,
                Some(context::log_line),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            );
            if rc == 0 && !settings.is_null() {
                ffi::rist_logging_set_global(settings)
            } else {
                rc
            }
        };
        if rc != 0 {
            tracing::warn!(rc, "librist global log settings not set");
        }
    });
}
