//! The async control channel: framed, typed messages plus descriptors over a Unix socket.
//!
//! The socket is shared by a [`ControlReader`] and a [`ControlWriter`] so that one task can
//! wait for messages while others send. Descriptors are read with every `recvmsg` and
//! queued; a frame takes as many from the queue as its header announces. The kernel never
//! delivers the bytes of a frame before the descriptors sent with its first byte, so the
//! queue holds them by the time the frame is complete.
//!
//! Messages larger than one frame are sent as fragments ([`frame::encode_message`]) and
//! joined here before decoding, up to the reader's message limit.

use crate::error::IpcError;
use crate::fd_passing::{recv_with_fds, send_with_fds};
use crate::frame::{self, MAX_FDS_PER_FRAME};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use tokio::io::Interest;
use tokio::net::UnixStream;

/// A message and the descriptors that travelled with it.
#[derive(Debug)]
pub struct Received<T> {
    pub message: T,
    pub fds: Vec<OwnedFd>,
}

/// Both ends of one side of a control channel.
#[derive(Debug)]
pub struct ControlChannel {
    stream: Arc<UnixStream>,
}

impl ControlChannel {
    /// Wraps a connected Unix stream socket (it must already be non-blocking).
    pub fn new(stream: UnixStream) -> Self {
        Self {
            stream: Arc::new(stream),
        }
    }

    /// Wraps a connected std socket, switching it to non-blocking mode.
    pub fn from_std(stream: std::os::unix::net::UnixStream) -> io::Result<Self> {
        stream.set_nonblocking(true)?;
        Ok(Self::new(UnixStream::from_std(stream)?))
    }

    pub fn split(self) -> (ControlReader, ControlWriter) {
        (
            ControlReader {
                stream: Arc::clone(&self.stream),
                buffer: Vec::with_capacity(4096),
                fds: VecDeque::new(),
                partial: None,
                max_message: frame::MAX_MESSAGE_SIZE,
            },
            ControlWriter {
                stream: self.stream,
            },
        )
    }
}

/// Receiving half: yields whole typed messages.
#[derive(Debug)]
pub struct ControlReader {
    stream: Arc<UnixStream>,
    buffer: Vec<u8>,
    fds: VecDeque<OwnedFd>,
    /// The fragments of a message received so far, and their descriptors.
    partial: Option<(Vec<u8>, Vec<OwnedFd>)>,
    /// Largest message (all fragments together) accepted from the peer.
    max_message: usize,
}

impl ControlReader {
    /// Lowers (or raises, up to [`frame::MAX_MESSAGE_SIZE`]) the largest message this
    /// reader assembles from fragments; a peer that sends more fails the channel with
    /// [`IpcError::MessageTooLarge`]. Never below one frame.
    pub fn set_max_message(&mut self, bytes: usize) {
        self.max_message = bytes.clamp(frame::MAX_FRAME_SIZE, frame::MAX_MESSAGE_SIZE);
    }

    /// Waits for the next message. `Err(IpcError::Closed)` when the peer has gone.
    pub async fn recv<T: DeserializeOwned>(&mut self) -> Result<Received<T>, IpcError> {
        loop {
            if let Some(raw) = frame::split_frame(&mut self.buffer)? {
                if raw.fd_count > self.fds.len() {
                    return Err(IpcError::MissingDescriptors {
                        announced: raw.fd_count,
                        available: self.fds.len(),
                    });
                }
                let fds: Vec<OwnedFd> = self.fds.drain(..raw.fd_count).collect();
                if !raw.more && self.partial.is_none() {
                    let message = frame::decode(&raw.payload)?;
                    return Ok(Received { message, fds });
                }
                let (payload, held) = self.partial.get_or_insert_with(Default::default);
                let size = payload.len() + raw.payload.len();
                if size > self.max_message {
                    self.partial = None;
                    return Err(IpcError::MessageTooLarge {
                        size,
                        max: self.max_message,
                    });
                }
                payload.extend_from_slice(&raw.payload);
                held.extend(fds);
                if raw.more {
                    continue;
                }
                let (payload, fds) = self.partial.take().unwrap_or_default();
                let message = frame::decode_message(&payload)?;
                return Ok(Received { message, fds });
            }
            self.fill().await?;
        }
    }

    async fn fill(&mut self) -> Result<(), IpcError> {
        let mut chunk = [0u8; 16 * 1024];
        let mut fds = Vec::new();
        let read = loop {
            self.stream.readable().await?;
            match self.stream.try_io(Interest::READABLE, || {
                recv_with_fds(self.stream.as_fd(), &mut chunk, &mut fds)
            }) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e.into()),
            }
        };
        if self.fds.len() + fds.len() > 4 * MAX_FDS_PER_FRAME {
            return Err(IpcError::TooManyDescriptors {
                count: self.fds.len() + fds.len(),
                max: 4 * MAX_FDS_PER_FRAME,
            });
        }
        self.fds.extend(fds);
        if read == 0 {
            return Err(IpcError::Closed);
        }
        self.buffer.extend_from_slice(&chunk[..read]);
        Ok(())
    }
}

/// Sending half. Wrap it in a mutex when several tasks send.
#[derive(Debug)]
pub struct ControlWriter {
    stream: Arc<UnixStream>,
}

impl ControlWriter {
    /// Sends `message`, with `fds` attached to its first byte.
    pub async fn send<T: Serialize>(
        &mut self,
        message: &T,
        fds: &[BorrowedFd<'_>],
    ) -> Result<(), IpcError> {
        let bytes = frame::encode_message(message, fds.len())?;
        let mut written = 0;
        while written < bytes.len() {
            self.stream.writable().await?;
            let attach: &[BorrowedFd<'_>] = if written == 0 { fds } else { &[] };
            match self.stream.try_io(Interest::WRITABLE, || {
                send_with_fds(self.stream.as_fd(), &bytes[written..], attach)
            }) {
                Ok(0) => return Err(IpcError::Closed),
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Err(IpcError::Closed),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, Write};

    #[tokio::test]
    async fn messages_and_descriptors_arrive_in_order() {
        let (left, right) = std::os::unix::net::UnixStream::pair().unwrap();
        let (_, mut writer) = ControlChannel::from_std(left).unwrap().split();
        let (mut reader, _) = ControlChannel::from_std(right).unwrap().split();

        let mut file = tempfile::tempfile().unwrap();
        file.write_all(b"listener").unwrap();
        let sender = tokio::spawn(async move {
            writer.send(&"first".to_string(), &[]).await.unwrap();
            writer
                .send(&"second".to_string(), &[file.as_fd()])
                .await
                .unwrap();
            // Larger than the socket buffer: the write must complete in several pieces.
            writer.send(&"x".repeat(600_000), &[]).await.unwrap();
            writer
        });

        let first: Received<String> = reader.recv().await.unwrap();
        assert_eq!(first.message, "first");
        assert!(first.fds.is_empty());
        let mut second: Received<String> = reader.recv().await.unwrap();
        assert_eq!(second.message, "second");
        let mut passed = std::fs::File::from(second.fds.pop().unwrap());
        passed.rewind().unwrap();
        let mut text = String::new();
        passed.read_to_string(&mut text).unwrap();
        assert_eq!(text, "listener");
        let third: Received<String> = reader.recv().await.unwrap();
        assert_eq!(third.message.len(), 600_000);

        drop(sender.await.unwrap());
        assert!(matches!(
            reader.recv::<String>().await,
            Err(IpcError::Closed)
        ));
    }

    /// A message larger than one frame arrives whole, with its descriptors, and the
    /// channel goes on with ordinary frames; a reader with a lower limit refuses it.
    #[tokio::test]
    async fn messages_larger_than_a_frame_arrive_whole() {
        let (left, right) = std::os::unix::net::UnixStream::pair().unwrap();
        let (_, mut writer) = ControlChannel::from_std(left).unwrap().split();
        let (mut reader, _) = ControlChannel::from_std(right).unwrap().split();
        let big: Vec<String> = (0..20_000).map(|i| format!("{i:0>1000}")).collect();
        let file = tempfile::tempfile().unwrap();
        let expected = big.clone();
        let sender = tokio::spawn(async move {
            writer.send(&big, &[file.as_fd()]).await.unwrap();
            writer.send(&vec!["small".to_string()], &[]).await.unwrap();
            writer.send(&big, &[]).await.unwrap();
            writer
        });
        let first: Received<Vec<String>> = reader.recv().await.unwrap();
        assert_eq!(first.message, expected);
        assert_eq!(first.fds.len(), 1);
        let second: Received<Vec<String>> = reader.recv().await.unwrap();
        assert_eq!(second.message, vec!["small".to_string()]);
        reader.set_max_message(frame::MAX_FRAME_SIZE);
        assert!(matches!(
            reader.recv::<Vec<String>>().await,
            Err(IpcError::MessageTooLarge { .. })
        ));
        drop(sender.await.unwrap());
    }
}
