//! RTSP over TLS (`rtsps://`) on the server side: the delivery certificate (the one HTTPS
//! serves, handed over by the supervisor and swapped on reload for new handshakes), the
//! handshake of an accepted connection, and the rule that media over an rtsps
//! connection stays inside it (interleaved; UDP would leave the TLS connection in clear,
//! and SRTP is not offered).

use crate::message::Request;
use std::sync::Arc;
use std::time::Duration;
use strom_ipc::messages::TlsMaterial;
use strom_tls::SwappableCertificate;
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// A client that has not finished its handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The certificate of the rtsps listeners and the acceptor that presents it.
pub struct RtspsCertificate {
    certificate: Arc<SwappableCertificate>,
    acceptor: TlsAcceptor,
}

impl RtspsCertificate {
    /// With the material of the worker's hello, if any (without, handshakes are refused
    /// until [`RtspsCertificate::replace`]).
    pub fn new(material: Option<&TlsMaterial>) -> Result<Self, String> {
        let certificate = Arc::new(SwappableCertificate::default());
        if let Some(material) = material {
            certificate.replace(strom_tls::certified_key(material)?);
        }
        let mut config = (*strom_tls::server_config(Arc::clone(&certificate))?).clone();
        // The shared configuration announces HTTP/1.1; RTSP clients offer no ALPN, and a
        // client that offered some other protocol would be refused for a wrong reason.
        config.alpn_protocols.clear();
        Ok(Self {
            certificate,
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }

    /// New handshakes present `material`; open connections keep theirs.
    pub fn replace(&self, material: &TlsMaterial) -> Result<(), String> {
        self.certificate
            .replace(strom_tls::certified_key(material)?);
        Ok(())
    }

    /// Completes the server handshake of an accepted connection.
    pub async fn accept(&self, stream: TcpStream) -> Result<TlsStream<TcpStream>, String> {
        if !self.certificate.is_loaded() {
            return Err("no certificate loaded (strom.conf ssl_certificate)".to_owned());
        }
        match tokio::time::timeout(HANDSHAKE_TIMEOUT, self.acceptor.accept(stream)).await {
            Ok(Ok(tls)) => Ok(tls),
            Ok(Err(error)) => Err(format!("TLS handshake failed: {error}")),
            Err(_) => Err(format!("no TLS handshake within {HANDSHAKE_TIMEOUT:?}")),
        }
    }
}

/// Keeps only the interleaved (lower transport TCP) alternatives of a SETUP's
/// `Transport` header; `false` when none is left, which the caller answers with 461
/// (Unsupported Transport) so that the client can retry over TCP.
pub fn interleaved_only(request: &mut Request) -> bool {
    let Some(header) = request.header("Transport") else {
        return false;
    };
    let kept: Vec<&str> = header
        .split(',')
        .map(str::trim)
        .filter(|spec| {
            let protocol = spec.split(';').next().unwrap_or("").trim();
            protocol.to_ascii_uppercase().ends_with("/TCP")
        })
        .collect();
    if kept.is_empty() {
        return false;
    }
    let kept = kept.join(",");
    request.set_header("Transport", kept);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Incoming, parse};
    use bytes::BytesMut;

    fn setup(transport: &str) -> Request {
        let text = format!(
            "SETUP rtsps://h/live/cam/trackID=0 RTSP/1.0\r\nCSeq: 3\r\nTransport: {transport}\r\n\r\n"
        );
        let mut buffer = BytesMut::from(text.as_bytes());
        match parse(&mut buffer, 16 * 1024) {
            Ok(Some(Incoming::Request(request))) => request,
            other => panic!("not a request: {other:?}"),
        }
    }

    #[test]
    fn over_tls_only_interleaved_transports_are_considered() {
        let mut udp_then_tcp =
            setup("RTP/AVP;unicast;client_port=5000-5001, RTP/AVP/TCP;unicast;interleaved=0-1");
        assert!(interleaved_only(&mut udp_then_tcp));
        assert_eq!(
            udp_then_tcp.header("Transport"),
            Some("RTP/AVP/TCP;unicast;interleaved=0-1")
        );
        let mut udp = setup("RTP/AVP;unicast;client_port=5000-5001");
        assert!(!interleaved_only(&mut udp), "UDP alone is refused");
        let mut udp_lower = setup("RTP/AVP/UDP;unicast;client_port=5000-5001");
        assert!(!interleaved_only(&mut udp_lower));
    }
}
