//! ICE-TCP (RFC 6544, passive candidates) for networks that block UDP: each accepted
//! connection carries one peer's STUN, DTLS and SRTP framed by a 16-bit length (RFC
//! 4571). The first packet must be a binding request for a live session, which then
//! owns the connection; its writer is a bounded queue of whole packets.

use crate::routing::{Inbound, ReplyPath, Routes};
use bytes::{Bytes, BytesMut};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Packets waiting to be written to one connection; a viewer that cannot take them
/// loses packets (NACK and the next keyframe recover), the session never waits.
const WRITE_QUEUE_PACKETS: usize = 512;
/// The first packet (a binding request) must arrive this soon after the connection.
const FIRST_PACKET_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves one accepted ICE-TCP connection until either side ends it.
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
        let mut first = true;
        let mut inbox = None;
        loop {
            let packet = if first {
                tokio::time::timeout(FIRST_PACKET_TIMEOUT, read_packet(&mut reader))
                    .await
                    .ok()
                    .flatten()
            } else {
                read_packet(&mut reader).await
            };
            let Some(data) = packet else {
                return;
            };
            first = false;
            if inbox.is_none() {
                inbox = routes.route(true, peer, &data);
            }
            let Some(target) = &inbox else {
                tracing::debug!(%peer, "ice-tcp connection for no session closed");
                return;
            };
            let inbound = Inbound {
                tcp: true,
                source: peer,
                local_port,
                data,
                reply: ReplyPath::Tcp(queue.clone()),
            };
            if target.is_closed() {
                return;
            }
            let _ = target.try_send(inbound);
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
