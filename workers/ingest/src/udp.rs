//! The UDP sockets the supervisor lends the ingest worker (listening `Cameras`: `udp`,
//! and `srt`/`rist` in `listen` mode): one receive task per socket, counting what
//! arrives into the worker's counters (`bytes_received`) until the set is replaced or the
//! worker stops. Turning the datagrams into streams (MPEG-TS demuxing, SRT and RIST)
//! arrives with the ingest issue; this is the seam it plugs into.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use strom_worker_runtime::sync::locked;
use strom_worker_runtime::{InheritedUdpSocket, WorkerCounters};
use tokio_util::sync::CancellationToken;

/// Largest UDP payload: one buffer this size per socket holds any datagram whole.
const DATAGRAM_BUFFER: usize = 65_536;
/// Pause after a receive error (an ICMP error reported on the socket, say), so a socket
/// that keeps failing does not spin.
const ERROR_PAUSE: Duration = Duration::from_millis(100);

pub struct UdpReceivers {
    counters: Arc<WorkerCounters>,
    shutdown: CancellationToken,
    /// Stops the tasks of the current socket set.
    current: Mutex<CancellationToken>,
}

impl UdpReceivers {
    pub fn new(counters: Arc<WorkerCounters>, shutdown: CancellationToken) -> Self {
        let current = Mutex::new(shutdown.child_token());
        Self {
            counters,
            shutdown,
            current,
        }
    }

    /// Receives on `sockets` instead of the current set. The supervisor keeps its own
    /// copy of every socket, so datagrams that arrive in between wait in the kernel.
    pub fn replace(&self, sockets: Vec<InheritedUdpSocket>) {
        let next = self.shutdown.child_token();
        let previous = std::mem::replace(&mut *locked(&self.current), next.clone());
        previous.cancel();
        for inherited in sockets {
            tracing::info!(role = ?inherited.spec.role, addr = %inherited.spec.addr, "udp socket adopted");
            tokio::spawn(receive(inherited, Arc::clone(&self.counters), next.clone()));
        }
    }
}

async fn receive(
    inherited: InheritedUdpSocket,
    counters: Arc<WorkerCounters>,
    stop: CancellationToken,
) {
    let mut buffer = vec![0u8; DATAGRAM_BUFFER];
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            received = inherited.socket.recv_from(&mut buffer) => match received {
                Ok((len, _peer)) => counters.add_received(len as u64),
                Err(e) => {
                    tracing::debug!(addr = %inherited.spec.addr, error = %e, "udp receive failed");
                    tokio::time::sleep(ERROR_PAUSE).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strom_ipc::messages::{ListenerRole, ListenerSpec};

    fn inherited(socket: std::net::UdpSocket) -> InheritedUdpSocket {
        socket.set_nonblocking(true).unwrap();
        InheritedUdpSocket {
            spec: ListenerSpec {
                role: ListenerRole::Udp,
                addr: socket.local_addr().unwrap(),
            },
            socket: tokio::net::UdpSocket::from_std(socket).unwrap(),
        }
    }

    async fn received_reaches(counters: &WorkerCounters, bytes: u64) {
        for _ in 0..200 {
            if counters.snapshot().bytes_received >= bytes {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{:?}", counters.snapshot());
    }

    #[tokio::test]
    async fn datagrams_are_counted_and_a_replaced_set_stops() {
        let counters = Arc::new(WorkerCounters::default());
        let receivers = UdpReceivers::new(Arc::clone(&counters), CancellationToken::new());
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = socket.local_addr().unwrap();
        let kept = socket.try_clone().unwrap();
        receivers.replace(vec![inherited(socket)]);
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        sender.send_to(&[0x47; 188 * 7], addr).unwrap();
        received_reaches(&counters, 188 * 7).await;

        receivers.replace(Vec::new());
        tokio::time::sleep(Duration::from_millis(50)).await;
        sender.send_to(&[0x47; 188], addr).unwrap();
        // Nobody in the worker reads any more: the datagram waits in the socket.
        kept.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut buffer = [0u8; 512];
        assert_eq!(kept.recv(&mut buffer).unwrap(), 188);
        assert_eq!(counters.snapshot().bytes_received, 188 * 7);
    }
}
