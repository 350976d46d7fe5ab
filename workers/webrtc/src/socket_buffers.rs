//! The buffers of a shared ICE UDP socket: one socket carries every session's packets, so
//! its kernel buffers must hold a burst of thousands of viewers' datagrams (a keyframe
//! sent to each) where one connection's socket would hold one. The size asked for is
//! `WebRtcSettings.limits.socket_buffer_bytes`; the kernel caps it at `net.core.wmem_max`
//! and `net.core.rmem_max` (212,992 bytes unless raised), so what it granted is logged
//! beside what was asked.

use socket2::SockRef;
use tokio::net::UdpSocket;

/// Asks for `bytes` of send and receive buffer on `socket` and logs what the kernel gave.
pub fn size(socket: &UdpSocket, bytes: u32) {
    let socket_ref = SockRef::from(socket);
    let wanted = bytes as usize;
    let send = socket_ref.set_send_buffer_size(wanted);
    let receive = socket_ref.set_recv_buffer_size(wanted);
    if let Err(error) = send.and(receive) {
        tracing::warn!(%error, wanted, "webrtc ice port: socket buffers not set");
        return;
    }
    // Linux reports twice what it keeps for the data (the rest is its bookkeeping).
    let granted = |size: std::io::Result<usize>| size.map(|s| s / 2).unwrap_or_default();
    let (send, receive) = (
        granted(socket_ref.send_buffer_size()),
        granted(socket_ref.recv_buffer_size()),
    );
    let address = socket.local_addr().ok();
    if send < wanted || receive < wanted {
        tracing::warn!(
            ?address,
            wanted,
            send,
            receive,
            "webrtc ice port: the kernel capped the socket buffers (raise net.core.wmem_max and net.core.rmem_max)"
        );
    } else {
        tracing::info!(?address, send, receive, "webrtc ice port: socket buffers");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn buffers_grow_up_to_what_the_kernel_allows() {
        let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let before = SockRef::from(&socket).send_buffer_size().unwrap();
        size(&socket, 4 * 1024 * 1024);
        let after = SockRef::from(&socket).send_buffer_size().unwrap();
        // Never smaller; larger unless the default already is the kernel's cap (root may
        // raise it past the cap only with SO_SNDBUFFORCE, which this does not use).
        assert!(after >= before, "{before} -> {after}");
        let cap = std::fs::read_to_string("/proc/sys/net/core/wmem_max")
            .ok()
            .and_then(|text| text.trim().parse::<usize>().ok());
        if let Some(cap) = cap {
            assert_eq!(after, (4 * 1024 * 1024).min(cap) * 2);
        }
    }
}
