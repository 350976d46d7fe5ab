//! The shared ICE port over UDP: one receive loop per lent socket hands every datagram
//! to its session ([`crate::routing`]); sessions send on the same socket.

use crate::routing::{Inbound, ReplyPath, Routes};
use bytes::BytesMut;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::net::UdpSocket;
use tokio_util::sync::CancellationToken;

/// Larger than any datagram WebRTC sends (MTU-sized SRTP, DTLS flights, STUN).
const MAX_DATAGRAM: usize = 2048;

/// Datagrams no session took (unknown address and not a binding request for a live
/// session, or its inbox full).
#[derive(Debug, Default)]
pub struct UdpCounters {
    pub unrouted: AtomicU64,
    pub inbox_full: AtomicU64,
}

pub async fn receive(
    socket: Arc<UdpSocket>,
    routes: Arc<Routes>,
    counters: Arc<UdpCounters>,
    stop: CancellationToken,
) {
    let local_port = socket.local_addr().map(|a| a.port()).unwrap_or_default();
    let mut buffer = BytesMut::with_capacity(64 * MAX_DATAGRAM);
    loop {
        if buffer.capacity() < MAX_DATAGRAM {
            buffer.reserve(64 * MAX_DATAGRAM);
        }
        buffer.resize(MAX_DATAGRAM, 0);
        let received = tokio::select! {
            () = stop.cancelled() => return,
            received = socket.recv_from(&mut buffer) => received,
        };
        let (len, source) = match received {
            Ok(received) => received,
            Err(error) => {
                // ICMP errors of a previous send (a viewer gone) surface here on Linux.
                tracing::debug!(%error, "webrtc udp receive error");
                continue;
            }
        };
        buffer.truncate(len);
        let data = buffer.split().freeze();
        let Some(inbox) = routes.route(false, source, &data) else {
            counters.unrouted.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        let inbound = Inbound {
            tcp: false,
            source,
            local_port,
            data,
            reply: ReplyPath::Udp(Arc::clone(&socket)),
        };
        if inbox.try_send(inbound).is_err() {
            counters.inbox_full.fetch_add(1, Ordering::Relaxed);
        }
    }
}
