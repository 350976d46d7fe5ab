//! The byte stream under an outgoing RTMP connection: TCP, or TLS over TCP for RTMPS.
//!
//! RTMPS servers are verified against the operating system's trust store through
//! `rustls-platform-verifier` (on Linux the CA bundle under `/etc/ssl/certs`), with the
//! ring provider. Chosen over `webpki-roots`: an operator who re-publishes to an ingest
//! behind a private or corporate CA adds it the way it is added for every other program
//! (`update-ca-certificates`), the roots follow the system's security updates instead of
//! strom's releases, and the crate is already in the build through `reqwest`.

use crate::client::endpoint::Endpoint;
use crate::client::error::ClientError;
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// A connected byte stream, plain or TLS.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}
pub type BoxedIo = Box<dyn Io>;

/// Connects to `endpoint` (TLS when it says so); `limit` bounds each step.
pub async fn open(endpoint: &Endpoint, limit: Duration) -> Result<BoxedIo, ClientError> {
    let config = if endpoint.tls {
        Some(platform_config()?)
    } else {
        None
    };
    open_with(endpoint, limit, config).await
}

/// [`open`] with the TLS configuration given (tests trust their own certificate).
pub async fn open_with(
    endpoint: &Endpoint,
    limit: Duration,
    tls: Option<Arc<ClientConfig>>,
) -> Result<BoxedIo, ClientError> {
    let timeout = |step| ClientError::Timeout { step, limit };
    let tcp = tokio::time::timeout(
        limit,
        TcpStream::connect((endpoint.host.as_str(), endpoint.port)),
    )
    .await
    .map_err(|_| timeout("tcp connect"))?
    .map_err(|source| ClientError::Connect {
        endpoint: endpoint.to_string(),
        source,
    })?;
    let _ = tcp.set_nodelay(true);
    let Some(config) = tls.filter(|_| endpoint.tls) else {
        return Ok(Box::new(tcp));
    };
    let name = ServerName::try_from(endpoint.host.clone())
        .map_err(|e| ClientError::Tls(format!("{:?}: {e}", endpoint.host)))?;
    let stream = tokio::time::timeout(limit, TlsConnector::from(config).connect(name, tcp))
        .await
        .map_err(|_| timeout("tls handshake"))?
        .map_err(|e| ClientError::Tls(e.to_string()))?;
    Ok(Box::new(stream))
}

/// The process-wide client configuration with the platform verifier
/// ([`strom_tls::platform_client_config`], shared with `rtsps://` pulls).
fn platform_config() -> Result<Arc<ClientConfig>, ClientError> {
    strom_tls::platform_client_config().map_err(ClientError::Tls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unreachable_endpoint_names_itself() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let endpoint = Endpoint {
            host: "127.0.0.1".into(),
            port,
            tls: false,
        };
        match open(&endpoint, Duration::from_secs(10)).await {
            Err(error @ ClientError::Connect { .. }) => {
                assert!(
                    error
                        .to_string()
                        .contains(&format!("rtmp://127.0.0.1:{port}"))
                )
            }
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("nothing listens on {port}"),
        }
    }
}
