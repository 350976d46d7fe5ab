//! Both ends of the media bus on Unix sockets (wire format in `strom_ipc::bus`).
//!
//! A producer worker listens at `run_dir/bus/<kind>.sock`; a subscriber connects, sends
//! a [`Subscribe`] and reads frames until the producer goes away, then reconnects.

use bytes::{Bytes, BytesMut};
use std::io::{self, IoSlice};
use std::path::Path;
use strom_ipc::bus::{MEDIA_HEADER_LEN, MediaHeader, Subscribe};
use strom_ipc::{IpcError, frame};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

/// Largest subscribe request read from a subscriber.
const MAX_SUBSCRIBE: usize = 4096;

pub use strom_ipc::contract::bus_path;

/// Binds the producer's bus socket, replacing a stale one from a previous process.
pub fn bind(path: &Path) -> io::Result<UnixListener> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    UnixListener::bind(path)
}

/// Reads the subscriber's request.
pub async fn read_subscribe(stream: &mut UnixStream) -> Result<Subscribe, IpcError> {
    let mut buffer = Vec::with_capacity(256);
    let mut chunk = [0u8; 512];
    loop {
        if let Some(raw) = frame::split_frame(&mut buffer)? {
            return frame::decode(&raw.payload);
        }
        if buffer.len() > MAX_SUBSCRIBE {
            return Err(IpcError::FrameTooLarge {
                size: buffer.len(),
                max: MAX_SUBSCRIBE,
            });
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(IpcError::Closed);
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
}

/// Writes one media frame: header and shared payload in one vectored write loop.
pub async fn write_media<W: AsyncWriteExt + Unpin>(
    socket: &mut W,
    header: &MediaHeader,
    payload: &Bytes,
) -> io::Result<()> {
    let head = header.encode();
    let total = head.len() + payload.len();
    let mut written = 0;
    while written < total {
        let n = if written < head.len() {
            let slices = [IoSlice::new(&head[written..]), IoSlice::new(payload)];
            socket.write_vectored(&slices).await?
        } else {
            socket.write(&payload[written - head.len()..]).await?
        };
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        written += n;
    }
    Ok(())
}

/// A subscriber's connection to one stream.
pub struct Subscription {
    socket: UnixStream,
}

impl Subscription {
    pub async fn connect(path: &Path, app: &str, stream: &str) -> Result<Self, IpcError> {
        let mut socket = UnixStream::connect(path).await?;
        let request = frame::encode(
            &Subscribe {
                app: app.to_owned(),
                stream: stream.to_owned(),
            },
            0,
        )?;
        socket.write_all(&request).await?;
        Ok(Self { socket })
    }

    /// The next frame; `Err(Closed)` when the producer went away.
    pub async fn next(&mut self) -> Result<(MediaHeader, Bytes), IpcError> {
        let mut head = [0u8; MEDIA_HEADER_LEN];
        match self.socket.read_exact(&mut head).await {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(IpcError::Closed),
            Err(e) => return Err(e.into()),
        }
        let header = MediaHeader::decode(&head)?;
        let mut payload = BytesMut::zeroed(header.payload_len as usize);
        self.socket.read_exact(&mut payload).await?;
        Ok((header, payload.freeze()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strom_ipc::WorkerKind;
    use strom_ipc::bus::BusTrack;

    #[tokio::test]
    async fn a_subscriber_receives_frames_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = bus_path(dir.path(), WorkerKind::Rtmp);
        let listener = bind(&path).unwrap();
        let producer = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let request = read_subscribe(&mut socket).await.unwrap();
            assert_eq!(request.stream, "cam");
            for i in 0..100u32 {
                let payload = Bytes::from(vec![i as u8; 1000 + i as usize * 100]);
                let header = MediaHeader {
                    track: BusTrack::Video,
                    codec: 1,
                    keyframe: i % 10 == 0,
                    config: false,
                    control: false,
                    payload_len: payload.len() as u32,
                    dts: i64::from(i) * 3600,
                    pts: i64::from(i) * 3600 + 7200,
                    generation: 1,
                    source_form: None,
                };
                write_media(&mut socket, &header, &payload).await.unwrap();
            }
        });
        let mut subscription = Subscription::connect(&path, "live", "cam").await.unwrap();
        for i in 0..100u32 {
            let (header, payload) = subscription.next().await.unwrap();
            assert_eq!(header.dts, i64::from(i) * 3600);
            assert_eq!(header.keyframe, i % 10 == 0);
            assert_eq!(payload.len(), 1000 + i as usize * 100);
            assert!(payload.iter().all(|b| *b == i as u8));
        }
        producer.await.unwrap();
        assert!(matches!(subscription.next().await, Err(IpcError::Closed)));
    }
}
