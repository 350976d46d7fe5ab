//! Log output: one line per event on stderr (journald adds time and unit).

use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// Installs the global subscriber with `filter` (a tracing directive such as `info` or
/// `info,strom=debug`). An invalid directive falls back to `info` with a warning.
pub fn init(filter: &str, process: &'static str) {
    let (env_filter, bad) = match EnvFilter::try_new(filter) {
        Ok(parsed) => (parsed, None),
        Err(e) => (EnvFilter::new("info"), Some(e)),
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(env_filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        // Worker threads are named `strom-<kind>`, so every line says which process wrote it.
        .with_thread_names(true)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
    tracing::debug!(process, "logging started");
    if let Some(e) = bad {
        tracing::warn!(filter, error = %e, "invalid logging filter; using info");
    }
}
