//! The MPEG-TS worker's own threads (libsrt and librist block): started named, joined
//! before a replacement binds the same port.

use std::sync::Mutex;
use strom_worker_runtime::sync::locked;

/// Waits until every thread in `threads` ended (the first caller joins them, the others
/// wait for it on the lock).
pub fn wait_for(threads: &Mutex<Vec<std::thread::JoinHandle<()>>>) {
    let mut threads = locked(threads);
    for thread in threads.drain(..) {
        let _ = thread.join();
    }
}

/// Runs `work` on a named thread (libsrt blocks); a failure to start is logged.
pub fn spawn_thread(
    name: &str,
    work: impl FnOnce() + Send + 'static,
) -> Option<std::thread::JoinHandle<()>> {
    let spawned = std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(work);
    if let Err(e) = &spawned {
        tracing::error!(thread = name, error = %e, "thread not started");
    }
    spawned.ok()
}
