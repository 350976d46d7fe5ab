//! The datagrams one drain of a session produces for a UDP socket (a frame's packets, a
//! burst of RTCP), sent together: one `sendmmsg` system call for up to [`MAX_BATCH`]
//! datagrams instead of one `sendto` each (a system call per datagram was 28% of the
//! worker's CPU, BENCHMARKS.md). Where the kernel has no `sendmmsg` the batch falls back to
//! a `sendto` per datagram, logged once. A datagram the socket has no room for is dropped,
//! as a full socket buffer drops it, and counted ([`UdpBatch::refused`]) so that the
//! session can skip to the next keyframe; the next drain goes on.
//!
//! With UDP GSO (`UDP_SEGMENT`, Linux 4.18), a viewer's run of equal-sized datagrams (a
//! frame's FU-A fragments: all of one size but the last) is one message of the
//! `sendmmsg`, which the kernel cuts into datagrams late, after one pass through the UDP
//! and IP layers ([`gso_messages`]). A kernel or device that refuses it (no checksum
//! offload gives `EIO`) is found at the first send that fails with it and succeeds
//! without it; GSO is then off for the worker, logged once.

use std::io::{ErrorKind, IoSlice};
use std::net::SocketAddr;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::io::Interest;
use tokio::net::UdpSocket;

/// Datagrams sent in one system call at most (the kernel's `UIO_MAXIOV` is 1024).
pub const MAX_BATCH: usize = 64;

/// Whether `sendmmsg` works here; cleared at the first `ENOSYS`.
static BATCHING: AtomicBool = AtomicBool::new(true);
/// Whether UDP GSO works here; cleared at the first send it made fail.
static SEGMENTING: AtomicBool = AtomicBool::new(true);
/// Whether the first GSO send was logged.
static SEGMENTING_LOGGED: AtomicBool = AtomicBool::new(false);
/// Segments of one GSO message at most (the kernel's `UDP_MAX_SEGMENTS` is 64 before
/// Linux 5.x raised it), and its bytes at most (one UDP datagram's payload).
const MAX_SEGMENTS: usize = 64;
const MAX_GSO_BYTES: usize = 65_000;

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
        let segmenting = SEGMENTING.load(Ordering::Relaxed);
        match socket.try_io(Interest::WRITABLE, || send_some(socket, rest, segmenting)) {
            Ok(count) => sent += count.max(1),
            Err(error) if segmenting && error.kind() != ErrorKind::WouldBlock => {
                // Without GSO: if that goes, GSO was what failed.
                match socket.try_io(Interest::WRITABLE, || send_some(socket, rest, false)) {
                    Ok(count) => {
                        if SEGMENTING.swap(false, Ordering::Relaxed) {
                            tracing::warn!(%error, "webrtc: UDP GSO refused here; sending each datagram of a batch on its own");
                        }
                        sent += count.max(1);
                    }
                    Err(error) if error.kind() == ErrorKind::WouldBlock => return sent,
                    // Not GSO's fault: the next round tells what it was.
                    Err(error) if error.raw_os_error() == Some(nix::libc::ENOSYS) => {
                        no_batching();
                    }
                    Err(_) => sent += 1,
                }
            }
            // No room: the rest is dropped, as `try_send_to` drops it.
            Err(error) if error.kind() == ErrorKind::WouldBlock => return sent,
            Err(error) if error.raw_os_error() == Some(nix::libc::ENOSYS) => no_batching(),
            // The first datagram was refused (an unreachable address): skip it.
            Err(_) => sent += 1,
        }
    }
    sent
}

/// The kernel has no `sendmmsg`: one `sendto` per datagram from now on.
fn no_batching() {
    if BATCHING.swap(false, Ordering::Relaxed) {
        tracing::warn!("webrtc: the kernel has no sendmmsg; one sendto per datagram");
    }
}

/// One `sendmmsg` of the first [`MAX_BATCH`] of `datagrams`; how many datagrams went
/// out. With `segmenting`, runs of equal-sized datagrams to one address go as one GSO
/// message each.
fn send_some(
    socket: &UdpSocket,
    datagrams: &[(Vec<u8>, SocketAddr)],
    segmenting: bool,
) -> std::io::Result<usize> {
    use nix::sys::socket::{ControlMessage, MsgFlags, MultiHeaders, SockaddrStorage, sendmmsg};
    let datagrams = &datagrams[..datagrams.len().min(MAX_BATCH)];
    let segment = datagrams.iter().map(|(d, _)| d.len()).max().unwrap_or(0);
    let size = u16::try_from(segment).ok().filter(|_| segmenting);
    let messages = match size {
        Some(_) => gso_messages(datagrams, segment),
        None => (0..datagrams.len()).map(|i| i..i + 1).collect(),
    };
    // One buffer of every datagram's slice; a message is its run of them.
    let all: Vec<IoSlice<'_>> = (datagrams.iter())
        .map(|(datagram, _)| IoSlice::new(datagram))
        .collect();
    let slices: Vec<&[IoSlice<'_>]> = (messages.iter())
        .filter_map(|range| all.get(range.clone()))
        .collect();
    let addresses: Vec<Option<SockaddrStorage>> = (messages.iter())
        .map(|range| Some(SockaddrStorage::from(datagrams[range.start].1)))
        .collect();
    let cmsg_space = size.map(|_| nix::cmsg_space!(u16));
    let mut headers = MultiHeaders::<SockaddrStorage>::preallocate(messages.len(), cmsg_space);
    let segment_size = size.unwrap_or(0);
    let gso = [ControlMessage::UdpGsoSegments(&segment_size)];
    let cmsgs: &[ControlMessage<'_>] = if size.is_some() { &gso } else { &[] };
    let results = sendmmsg(
        socket.as_raw_fd(),
        &mut headers,
        &slices,
        &addresses,
        cmsgs,
        MsgFlags::empty(),
    )
    .map_err(std::io::Error::from)?;
    let sent_messages = results.count();
    if size.is_some() && sent_messages > 0 && !SEGMENTING_LOGGED.swap(true, Ordering::Relaxed) {
        tracing::info!(
            "webrtc: sending with UDP GSO (a viewer's packets of a frame in one message)"
        );
    }
    Ok(messages
        .get(..sent_messages)
        .and_then(<[Range<usize>]>::last)
        .map_or(0, |last| last.end))
}

/// `datagrams` cut into GSO messages of `segment`-byte segments: a run to one address
/// whose datagrams all have `segment` bytes but the last, which may have fewer (the
/// kernel cuts a message at every `segment` bytes, so a shorter datagram ends it).
/// Every datagram is at most `segment` bytes.
fn gso_messages(datagrams: &[(Vec<u8>, SocketAddr)], segment: usize) -> Vec<Range<usize>> {
    let most = MAX_SEGMENTS.min(MAX_GSO_BYTES / segment.max(1)).max(1);
    let mut messages = Vec::new();
    let mut start = 0;
    for (i, (datagram, to)) in datagrams.iter().enumerate() {
        let next_elsewhere = datagrams.get(i + 1).is_none_or(|(_, next)| next != to);
        if datagram.len() != segment || next_elsewhere || i + 1 - start >= most {
            messages.push(start..i + 1);
            start = i + 1;
        }
    }
    messages
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

    fn datagram(len: usize, to: &str) -> (Vec<u8>, SocketAddr) {
        (vec![0; len], to.parse().unwrap())
    }

    #[test]
    fn gso_messages_are_runs_of_full_segments_to_one_address() {
        let (a, b) = ("127.0.0.1:1", "127.0.0.1:2");
        let batch = [
            datagram(1200, a),
            datagram(1200, a),
            datagram(700, a),
            datagram(1200, a),
            datagram(1200, b),
            datagram(300, b),
            datagram(1200, b),
            datagram(90, a),
        ];
        assert_eq!(
            gso_messages(&batch, 1200),
            vec![0..3, 3..4, 4..6, 6..7, 7..8]
        );
        // A run longer than one datagram's bytes is cut.
        let long: Vec<_> = (0..60).map(|_| datagram(1200, a)).collect();
        assert_eq!(gso_messages(&long, 1200), vec![0..54, 54..60]);
    }

    #[tokio::test]
    async fn gso_runs_arrive_as_their_datagrams_in_order() {
        let sender = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
        let (first, second) = (
            UdpSocket::bind("127.0.0.1:0").await.unwrap(),
            UdpSocket::bind("127.0.0.1:0").await.unwrap(),
        );
        sender.writable().await.unwrap();
        let mut batch = UdpBatch::default();
        let mut expected = Vec::new();
        // Two viewers' frames: three full fragments and a short last one each.
        for (viewer, receiver) in [&first, &second].into_iter().enumerate() {
            for i in 0..4u8 {
                let len = if i == 3 { 500 } else { 1100 };
                let datagram: Vec<u8> = (0..len).map(|n| (n as u8) ^ i ^ viewer as u8).collect();
                batch.push(&sender, datagram.clone(), receiver.local_addr().unwrap());
                expected.push((viewer, datagram));
            }
        }
        batch.flush();
        assert_eq!(batch.take_refused(), 0);
        let mut buffer = [0u8; 2048];
        for (viewer, datagram) in expected {
            let receiver = if viewer == 0 { &first } else { &second };
            let (len, from) = receiver.recv_from(&mut buffer).await.unwrap();
            assert_eq!(&buffer[..len], &datagram[..], "viewer {viewer}");
            assert_eq!(from, sender.local_addr().unwrap());
        }
        assert!(SEGMENTING.load(Ordering::Relaxed), "loopback takes UDP GSO");
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
