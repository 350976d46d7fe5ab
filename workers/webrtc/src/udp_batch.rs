//! The datagrams one drain of a session produces for a UDP socket (a frame's packets, a
//! burst of RTCP), sent together: one `sendmmsg` system call for up to [`MAX_BATCH`]
//! datagrams instead of one `sendto` each (a system call per datagram was 28% of the
//! worker's CPU, BENCHMARKS.md). Where the kernel has no `sendmmsg` the batch falls back to
//! a `sendto` per datagram, logged once. A datagram the socket has no room for is dropped,
//! as a full socket buffer drops it, and counted ([`UdpBatch::refused`]) so that the
//! session can skip to the next keyframe; the next drain goes on.

use std::io::{ErrorKind, IoSlice};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::io::Interest;
use tokio::net::UdpSocket;

/// Datagrams sent in one system call at most (the kernel's `UIO_MAXIOV` is 1024).
pub const MAX_BATCH: usize = 64;

/// Whether `sendmmsg` works here; cleared at the first `ENOSYS`.
static BATCHING: AtomicBool = AtomicBool::new(true);

/// Datagrams waiting for one socket; sent when the socket changes, when
/// [`MAX_BATCH`] are waiting, on [`UdpBatch::flush`] and on drop.
#[derive(Default)]
pub struct UdpBatch {
    socket: Option<Arc<UdpSocket>>,
    datagrams: Vec<(Vec<u8>, SocketAddr)>,
    refused: usize,
}

impl UdpBatch {
    pub fn push(&mut self, socket: &Arc<UdpSocket>, datagram: Vec<u8>, to: SocketAddr) {
        if self
            .socket
            .as_ref()
            .is_some_and(|s| !Arc::ptr_eq(s, socket))
        {
            self.flush();
        }
        if self.socket.is_none() {
            self.socket = Some(Arc::clone(socket));
        }
        self.datagrams.push((datagram, to));
        if self.datagrams.len() >= MAX_BATCH {
            self.flush();
        }
    }

    /// Sends what is waiting.
    pub fn flush(&mut self) {
        if let Some(socket) = self.socket.take() {
            let sent = send_all(&socket, &self.datagrams);
            self.refused += self.datagrams.len() - sent;
            self.datagrams.clear();
        }
    }

    /// Datagrams flushed since the last call that the socket had no room for.
    pub fn take_refused(&mut self) -> usize {
        std::mem::take(&mut self.refused)
    }
}

impl Drop for UdpBatch {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Sends `datagrams`; how many of them were not refused for lack of room (an
/// unreachable address counts as sent: the datagram is gone either way, and the
/// socket was not full).
fn send_all(socket: &UdpSocket, datagrams: &[(Vec<u8>, SocketAddr)]) -> usize {
    let mut sent = 0;
    while sent < datagrams.len() {
        let rest = &datagrams[sent..];
        if rest.len() == 1 || !BATCHING.load(Ordering::Relaxed) {
            for (datagram, to) in rest {
                match socket.try_send_to(datagram, *to) {
                    Err(error) if error.kind() == ErrorKind::WouldBlock => return sent,
                    _ => sent += 1,
                }
            }
            return sent;
        }
        match socket.try_io(Interest::WRITABLE, || send_some(socket, rest)) {
            Ok(count) => sent += count.max(1),
            // No room: the rest is dropped, as `try_send_to` drops it.
            Err(error) if error.kind() == ErrorKind::WouldBlock => return sent,
            Err(error) if error.raw_os_error() == Some(nix::libc::ENOSYS) => {
                if BATCHING.swap(false, Ordering::Relaxed) {
                    tracing::warn!("webrtc: the kernel has no sendmmsg; one sendto per datagram");
                }
            }
            // The first datagram was refused (an unreachable address): skip it.
            Err(_) => sent += 1,
        }
    }
    sent
}

/// One `sendmmsg` of the first [`MAX_BATCH`] of `datagrams`; how many went out.
fn send_some(socket: &UdpSocket, datagrams: &[(Vec<u8>, SocketAddr)]) -> std::io::Result<usize> {
    use nix::sys::socket::{ControlMessage, MsgFlags, MultiHeaders, SockaddrStorage, sendmmsg};
    let datagrams = &datagrams[..datagrams.len().min(MAX_BATCH)];
    let slices: Vec<[IoSlice<'_>; 1]> = (datagrams.iter())
        .map(|(datagram, _)| [IoSlice::new(datagram)])
        .collect();
    let addresses: Vec<Option<SockaddrStorage>> = (datagrams.iter())
        .map(|(_, to)| Some(SockaddrStorage::from(*to)))
        .collect();
    let mut headers = MultiHeaders::<SockaddrStorage>::preallocate(datagrams.len(), None);
    let no_cmsgs: [ControlMessage<'_>; 0] = [];
    let results = sendmmsg(
        socket.as_raw_fd(),
        &mut headers,
        &slices,
        &addresses,
        no_cmsgs,
        MsgFlags::empty(),
    )
    .map_err(std::io::Error::from)?;
    Ok(results.count())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn a_batch_arrives_whole_and_in_order_across_sockets() {
        let sender_a = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
        let sender_b = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
        let receiver = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let to = receiver.local_addr().unwrap();
        // As the worker's long-lived socket is: its readiness known to the runtime.
        sender_a.writable().await.unwrap();
        sender_b.writable().await.unwrap();
        let mut batch = UdpBatch::default();
        // More than one system call's worth, then a datagram from another socket.
        for i in 0..(MAX_BATCH + 10) as u32 {
            batch.push(&sender_a, i.to_be_bytes().to_vec(), to);
        }
        batch.push(&sender_b, b"from b".to_vec(), to);
        drop(batch);
        let mut buffer = [0u8; 64];
        for i in 0..(MAX_BATCH + 10) as u32 {
            let (len, from) = receiver.recv_from(&mut buffer).await.unwrap();
            assert_eq!(&buffer[..len], i.to_be_bytes());
            assert_eq!(from, sender_a.local_addr().unwrap());
        }
        let (len, from) = receiver.recv_from(&mut buffer).await.unwrap();
        assert_eq!(
            (&buffer[..len], from),
            (&b"from b"[..], sender_b.local_addr().unwrap())
        );
        assert!(BATCHING.load(Ordering::Relaxed), "Linux has sendmmsg");
    }

    #[tokio::test]
    async fn an_unreachable_datagram_does_not_stop_the_rest() {
        let sender = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
        let receiver = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let to = receiver.local_addr().unwrap();
        sender.writable().await.unwrap();
        let mut batch = UdpBatch::default();
        // An IPv6 destination from an IPv4 socket is refused by the kernel.
        batch.push(&sender, b"lost".to_vec(), "[::1]:9".parse().unwrap());
        batch.push(&sender, b"kept".to_vec(), to);
        batch.flush();
        assert_eq!(
            batch.take_refused(),
            0,
            "an unreachable address is no full socket"
        );
        let mut buffer = [0u8; 16];
        let (len, _) = receiver.recv_from(&mut buffer).await.unwrap();
        assert_eq!(&buffer[..len], b"kept");
    }
}
