//! The accept loop of an SRT listener on a socket the supervisor lends, shared by SRT
//! inputs (contributors call in) and SRT outputs (viewers call in): libsrt takes over a
//! duplicate of the lent socket, and every caller is handed to `on_caller` with its
//! `streamid`, until `stop`. On a listener with a passphrase, failed handshakes are
//! failed logins, and a listener may refuse callers by their streamid in the handshake
//! ([`super::handshakes`]).

use super::handshakes::{Handshakes, StreamIdFilter};
use super::{SrtListener, SrtOptions, SrtSocket};
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::Duration;
use strom_worker_runtime::InheritedUdpSocket;
use tokio_util::sync::CancellationToken;

/// How long the accept loop waits in libsrt before looking at its stop token.
const POLL: Duration = Duration::from_millis(250);

/// Listens on `inherited` with `options` and hands each caller (socket, address,
/// streamid) to `on_caller` until `stop`; `name` names the listener in log lines.
/// Callers whose streamid `not_found` refuses are told so in the handshake.
pub fn accept_callers(
    inherited: &InheritedUdpSocket,
    options: &SrtOptions,
    backlog: i32,
    name: &str,
    stop: &CancellationToken,
    not_found: Option<StreamIdFilter>,
    mut on_caller: impl FnMut(SrtSocket, SocketAddr, String),
) {
    super::startup();
    let mut listener = match SrtListener::bind_acquire(inherited.socket.as_fd(), options, backlog) {
        Ok(listener) => listener,
        Err(e) => {
            tracing::error!(listener = name, error = %e, "SRT listener failed");
            return;
        }
    };
    // Only a passphrase makes libsrt refuse callers over credentials (see `handshakes`).
    let handshakes = Handshakes::new(name)
        .counting_logins(options.passphrase.is_some())
        .refusing_streams(not_found);
    let handshakes = handshakes.is_needed().then(|| Arc::new(handshakes));
    if let Some(handshakes) = &handshakes
        && let Err(e) = listener.watch_handshakes(Arc::clone(handshakes))
    {
        tracing::error!(listener = name, error = %e, "SRT listener failed");
        return;
    }
    tracing::info!(listener = name, addr = %inherited.spec.addr, "SRT listening");
    while !stop.is_cancelled() {
        let accepted = listener.accept(POLL);
        if let Some(handshakes) = &handshakes {
            let handle = match &accepted {
                Ok(Some((socket, _))) => Some(socket.handle()),
                _ => None,
            };
            handshakes.settle(handle);
        }
        match accepted {
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
