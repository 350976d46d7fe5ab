//! `rtsps://` pulls: retina speaks RTSP over plain TCP only and has no hook for another
//! transport, so each pull attempt opens the TLS connection to the source itself and
//! lends it to retina through a local relay: a listener on `127.0.0.1:0` that accepts
//! exactly one connection (retina's) and copies bytes both ways. retina is given
//! `rtsp://127.0.0.1:<port>/<path and query>`; RTP comes interleaved on that connection.
//!
//! The source's certificate is verified before retina starts, against the operating
//! system's trust store ([`strom_tls::platform_client_config`], as RTMPS pulls and
//! pushes are: a private CA is added with `update-ca-certificates` or `SSL_CERT_FILE`),
//! so that a refused certificate is the reason the pull logs rather than a connection
//! retina saw closing. There is no option to skip verification.

use rustls_pki_types::ServerName;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use url::Url;

/// The port of an `rtsps://` URL that names none (IANA `rtsps`).
const RTSPS_PORT: u16 = 322;
/// retina connects to the relay at once; a relay nobody takes within this is closed.
const LOCAL_ACCEPT_LIMIT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error("rtsps URL {0:?} has no host")]
    NoHost(String),
    #[error("connecting to {endpoint}: {source}")]
    Connect {
        endpoint: String,
        #[source]
        source: std::io::Error,
    },
    #[error("TLS with {endpoint}: {why}")]
    Tls { endpoint: String, why: String },
    #[error("local relay: {0}")]
    Local(std::io::Error),
}

/// A TLS connection to an `rtsps://` source, served to retina on a local port for one
/// connection. Dropping it closes the relay and the TLS connection.
pub struct TlsRelay {
    local: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for TlsRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TlsRelay {
    /// Connects to the source `url` names (TCP, then a verified TLS handshake) and opens
    /// the local end.
    pub async fn open(url: &Url) -> Result<Self, RelayError> {
        let host = url
            .host_str()
            .map(|h| h.trim_start_matches('[').trim_end_matches(']').to_owned())
            .filter(|h| !h.is_empty())
            .ok_or_else(|| RelayError::NoHost(url.to_string()))?;
        let port = url.port().unwrap_or(RTSPS_PORT);
        let endpoint = format!("{host}:{port}");
        let tls_error = |why: String| RelayError::Tls {
            endpoint: endpoint.clone(),
            why,
        };
        let config = strom_tls::platform_client_config().map_err(tls_error)?;
        let name = ServerName::try_from(host.clone())
            .map_err(|e| tls_error(format!("{host:?} is no server name: {e}")))?;
        let tcp = TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|source| RelayError::Connect {
                endpoint: endpoint.clone(),
                source,
            })?;
        let _ = tcp.set_nodelay(true);
        let tls = TlsConnector::from(config)
            .connect(name, tcp)
            .await
            .map_err(|e| tls_error(e.to_string()))?;
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(RelayError::Local)?;
        let local = listener.local_addr().map_err(RelayError::Local)?;
        let task = tokio::spawn(relay(listener, tls, endpoint));
        Ok(Self { local, task })
    }

    /// What retina is given instead of `url`: the same path and query on the relay.
    pub fn local_url(&self, url: &Url) -> Result<Url, String> {
        let mut local =
            Url::parse(&format!("rtsp://{}/", self.local)).map_err(|e| e.to_string())?;
        local.set_path(url.path());
        local.set_query(url.query());
        Ok(local)
    }
}

/// Takes the one local connection and copies bytes both ways until either side ends.
async fn relay(listener: TcpListener, mut remote: TlsStream<TcpStream>, endpoint: String) {
    let accepted = tokio::time::timeout(LOCAL_ACCEPT_LIMIT, listener.accept()).await;
    // Exactly one connection: nothing else reaches the source through this relay.
    drop(listener);
    let mut local = match accepted {
        Ok(Ok((local, _))) => local,
        Ok(Err(error)) => {
            tracing::warn!(%endpoint, %error, "rtsps relay: local accept failed");
            return;
        }
        Err(_) => return,
    };
    let _ = local.set_nodelay(true);
    if let Err(error) = tokio::io::copy_bidirectional(&mut local, &mut remote).await {
        tracing::debug!(%endpoint, %error, "rtsps relay ended");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_local_url_keeps_path_and_query() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let local = listener.local_addr().unwrap();
        let relay = TlsRelay {
            local,
            task: tokio::spawn(async {}),
        };
        let url = Url::parse("rtsps://cam.example:8322/Streaming/101?profile=main").unwrap();
        let mapped = relay.local_url(&url).unwrap();
        assert_eq!(
            mapped.as_str(),
            format!("rtsp://{local}/Streaming/101?profile=main")
        );
    }

    #[tokio::test]
    async fn a_refused_connection_names_the_endpoint() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let url = Url::parse(&format!("rtsps://127.0.0.1:{port}/live/cam")).unwrap();
        match TlsRelay::open(&url).await {
            Err(error @ RelayError::Connect { .. }) => {
                assert!(
                    error.to_string().contains(&format!("127.0.0.1:{port}")),
                    "{error}"
                )
            }
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("nothing listens on {port}"),
        }
    }
}
