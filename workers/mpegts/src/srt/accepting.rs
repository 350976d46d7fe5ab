//! The accept loop of an SRT listener on a socket the supervisor lends, shared by SRT
//! inputs (contributors call in) and SRT outputs (viewers call in): libsrt takes over a
//! duplicate of the lent socket, and every caller is handed to `on_caller` with its
//! `streamid`, until `stop`.

use super::{SrtListener, SrtOptions, SrtSocket};
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::time::Duration;
use strom_worker_runtime::InheritedUdpSocket;
use tokio_util::sync::CancellationToken;

/// How long the accept loop waits in libsrt before looking at its stop token.
const POLL: Duration = Duration::from_millis(250);

/// Listens on `inherited` with `options` and hands each caller (socket, address,
/// streamid) to `on_caller` until `stop`; `name` names the listener in log lines.
pub fn accept_callers(
    inherited: &InheritedUdpSocket,
    options: &SrtOptions,
    backlog: i32,
    name: &str,
    stop: &CancellationToken,
    mut on_caller: impl FnMut(SrtSocket, SocketAddr, String),
) {
    super::startup();
    let listener = match SrtListener::bind_acquire(inherited.socket.as_fd(), options, backlog) {
        Ok(listener) => listener,
        Err(e) => {
            tracing::error!(listener = name, error = %e, "SRT listener failed");
            return;
        }
    };
    tracing::info!(listener = name, addr = %inherited.spec.addr, "SRT listening");
    while !stop.is_cancelled() {
        match listener.accept(POLL) {
            Ok(Some((socket, peer))) => {
                let stream_id = socket.stream_id();
                on_caller(socket, peer, stream_id);
            }
            Ok(None) => {}
            // Stopping (a reload, shutdown) closes the listener under the accept.
            Err(_) if stop.is_cancelled() => break,
            Err(e) => {
                tracing::warn!(listener = name, error = %e, "SRT accept failed");
                std::thread::sleep(POLL);
            }
        }
    }
}
