//! ICE-TCP (RFC 6544, passive candidates) for networks that block UDP: each accepted
//! connection carries one peer's STUN, DTLS and SRTP framed by a 16-bit length (RFC
//! 4571). The first packet must be a binding request for a live session, which then
//! owns the connection; its writer is a bounded queue of whole packets. A connection
//! ends with its session, after [`IDLE_TIMEOUT`] without a packet, and a session or a
//! client address holds only a few ([`MAX_TCP_PER_SESSION`], [`per_address_cap`]): an
//! anonymous client cannot pin down the worker's connection budget.

use crate::routing::{Inbound, MAX_TCP_PER_SESSION, ReplyPath, Routes, TcpRefusal};
use bytes::{Bytes, BytesMut};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use strom_ipc::webrtc_rules::WebRtcLimits;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Packets waiting to be written to one connection; a viewer that cannot take them
/// loses packets (NACK and the next keyframe recover), the session never waits.
const WRITE_QUEUE_PACKETS: usize = 512;
/// The first packet (a binding request) must arrive this soon after the connection.
const FIRST_PACKET_TIMEOUT: Duration = Duration::from_secs(5);
/// A connection that carries nothing this long is closed: a live peer sends a consent
/// check every 5 s or so (RFC 7675) and RTCP more often.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(15);
/// ICE-TCP connections one client address may hold at least, whatever
/// `max_sessions_per_ip` says (a viewer tries a few candidate pairs).
const MIN_PER_ADDRESS: u32 = 8;

/// ICE-TCP connections one client address may hold: one per session it may open, and
/// never fewer than [`MIN_PER_ADDRESS`].
pub fn per_address_cap(limits: &WebRtcLimits) -> u32 {
    limits.max_sessions_per_ip.max(MIN_PER_ADDRESS)
}

/// Serves one accepted ICE-TCP connection until either side ends it, its session ends,
/// or it goes idle.
pub async fn serve(
    stream: TcpStream,
    peer: SocketAddr,
    routes: Arc<Routes>,
    stop: CancellationToken,
) {
    let _ = stream.set_nodelay(true);
    let local_port = stream.local_addr().map(|a| a.port()).unwrap_or_default();
    let (mut reader, mut writer) = stream.into_split();
    let (queue, mut outgoing) = mpsc::channel::<Bytes>(WRITE_QUEUE_PACKETS);
    let write = async move {
        while let Some(packet) = outgoing.recv().await {
            let Ok(len) = u16::try_from(packet.len()) else {
                continue;
            };
            if writer.write_all(&len.to_be_bytes()).await.is_err()
                || writer.write_all(&packet).await.is_err()
            {
                return;
            }
        }
    };
    let read = async {
        let first = tokio::time::timeout(FIRST_PACKET_TIMEOUT, read_packet(&mut reader))
            .await
            .ok()
            .flatten();
        let Some(first) = first else {
            return;
        };
        let (target, _place) = match routes.route_tcp(peer, &first) {
            Ok(found) => found,
            Err(TcpRefusal::NoSession) => {
                tracing::debug!(%peer, "ice-tcp connection for no session closed");
                return;
            }
            Err(TcpRefusal::SessionFull) => {
                strom_worker_runtime::limited_log!(info, 5, Duration::from_secs(10); %peer, max = MAX_TCP_PER_SESSION, "ice-tcp connection refused: its session holds the most it may");
                return;
            }
        };
        let mut packet = first;
        loop {
            let inbound = Inbound {
                tcp: true,
                source: peer,
                local_port,
                data: packet,
                reply: ReplyPath::Tcp(queue.clone()),
            };
            if target.is_closed() {
                return;
            }
            let _ = target.try_send(inbound);
            let next = tokio::select! {
                // The session ended: its connections go with it.
                () = target.closed() => return,
                next = tokio::time::timeout(IDLE_TIMEOUT, read_packet(&mut reader)) => next,
            };
            match next {
                Ok(Some(data)) => packet = data,
                Ok(None) => return,
                Err(_) => {
                    tracing::debug!(%peer, "idle ice-tcp connection closed");
                    return;
                }
            }
        }
    };
    tokio::select! {
        () = stop.cancelled() => {}
        () = read => {}
        () = write => {}
    }
}

/// One RFC 4571 frame; `None` at the end of the connection or on a read error.
async fn read_packet(reader: &mut tokio::net::tcp::OwnedReadHalf) -> Option<Bytes> {
    let len = reader.read_u16().await.ok()?;
    let mut packet = BytesMut::zeroed(usize::from(len));
    reader.read_exact(&mut packet).await.ok()?;
    Some(packet.freeze())
}
