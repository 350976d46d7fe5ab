//! What happens to an accepted RTMP connection.

use std::net::SocketAddr;
use strom_ipc::messages::ListenerSpec;
use strom_worker_runtime::accept::ConnectionHandler;
use strom_worker_runtime::counters::ConnectionGuard;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

/// Accepts connections on the RTMP ports. Until the RTMP session layer lands the
/// connection is closed at once, which clients see as a refused handshake.
#[derive(Debug, Default)]
pub struct RtmpConnections;

impl ConnectionHandler for RtmpConnections {
    async fn handle(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        listener: &ListenerSpec,
        _guard: ConnectionGuard,
        _shutdown: CancellationToken,
    ) {
        tracing::debug!(%peer, port = listener.addr.port(), "rtmp connection closed: no session layer");
        drop(stream);
    }
}
