//! The client side of the RTMP handshake (C0/C1, S0/S1/S2, C2) with `rml_rtmp`.

use crate::client::error::ClientError;
use rml_rtmp::handshake::{Handshake, HandshakeProcessResult, PeerType};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Performs the handshake; returns the bytes that arrived after it (the start of the
/// session) and the bytes exchanged `(sent, received)`.
pub async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
) -> Result<(Vec<u8>, u64, u64), ClientError> {
    let mut handshake = Handshake::new(PeerType::Client);
    let c0_c1 = handshake
        .generate_outbound_p0_and_p1()
        .map_err(|e| ClientError::Handshake(e.to_string()))?;
    io.write_all(&c0_c1).await?;
    let mut sent = c0_c1.len() as u64;
    let mut received = 0u64;
    let mut buffer = [0u8; 4096];
    loop {
        let read = io.read(&mut buffer).await?;
        if read == 0 {
            return Err(ClientError::Handshake(
                "the server closed during the handshake".to_owned(),
            ));
        }
        received += read as u64;
        match handshake.process_bytes(&buffer[..read]) {
            Ok(HandshakeProcessResult::InProgress { response_bytes }) => {
                io.write_all(&response_bytes).await?;
                sent += response_bytes.len() as u64;
            }
            Ok(HandshakeProcessResult::Completed {
                response_bytes,
                remaining_bytes,
            }) => {
                io.write_all(&response_bytes).await?;
                sent += response_bytes.len() as u64;
                return Ok((remaining_bytes, sent, received));
            }
            Err(e) => return Err(ClientError::Handshake(e.to_string())),
        }
    }
}
