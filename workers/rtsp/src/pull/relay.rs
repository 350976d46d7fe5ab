//! The connection to a pulled source, lent to retina through a local relay: retina
//! speaks RTSP over plain TCP only, has no hook for another transport and no limit on
//! what it buffers, so each pull attempt (of an `rtsps://` source, or an `rtsp://` one
//! with RTP over TCP) opens the connection to the source itself, and a listener on
//! `127.0.0.1:0` accepts exactly one connection (retina's) and copies bytes both ways,
//! those from the source through a [`MessageLimit`]: a source sending a message head over
//! 64 KiB or a body over 1 MiB is cut off, and [`SourceRelay::broken`] says why. retina
//! is given `rtsp://127.0.0.1:<port>/<path and query>`; RTP comes interleaved on that
//! connection. (RTP over UDP needs retina to see the source's own address, so such pulls
//! connect directly.)
//!
//! An `rtsps://` source's certificate is verified before retina starts, against the
//! operating system's trust store ([`strom_tls::platform_client_config`], as RTMPS pulls
//! and pushes are: a private CA is added with `update-ca-certificates` or
//! `SSL_CERT_FILE`), so that a refused certificate is the reason the pull logs rather
//! than a connection retina saw closing. There is no option to skip verification.

use super::message_limit::MessageLimit;
use rustls_pki_types::ServerName;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strom_worker_runtime::sync::locked;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::TlsConnector;
use url::Url;

/// The port of an `rtsps://` URL that names none (IANA `rtsps`).
const RTSPS_PORT: u16 = 322;
/// The port of an `rtsp://` URL that names none.
const RTSP_PORT: u16 = 554;
/// Bytes read from the source at a time.
const READ_CHUNK: usize = 16 * 1024;
/// retina connects to the relay at once; a relay nobody takes within this is closed.
const LOCAL_ACCEPT_LIMIT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error("URL {0:?} has no host")]
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

/// A connection to a source, served to retina on a local port for one connection.
/// Dropping it closes the relay and the connection.
pub struct SourceRelay {
    local: SocketAddr,
    task: JoinHandle<()>,
    /// Why the relay cut the source off, if it did.
    broken: Arc<Mutex<Option<String>>>,
}

impl Drop for SourceRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SourceRelay {
    /// Connects to the source `url` names (TCP, then for `rtsps` a verified TLS
    /// handshake) and opens the local end.
    pub async fn open(url: &Url) -> Result<Self, RelayError> {
        let tls = url.scheme() == "rtsps";
        let host = url
            .host_str()
            .map(|h| h.trim_start_matches('[').trim_end_matches(']').to_owned())
            .filter(|h| !h.is_empty())
            .ok_or_else(|| RelayError::NoHost(url.to_string()))?;
        let port = url
            .port()
            .unwrap_or(if tls { RTSPS_PORT } else { RTSP_PORT });
        let endpoint = format!("{host}:{port}");
        let tls_error = |why: String| RelayError::Tls {
            endpoint: endpoint.clone(),
            why,
        };
        let tcp = TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|source| RelayError::Connect {
                endpoint: endpoint.clone(),
                source,
            })?;
        let _ = tcp.set_nodelay(true);
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(RelayError::Local)?;
        let local = listener.local_addr().map_err(RelayError::Local)?;
        let broken = Arc::new(Mutex::new(None));
        let task = if tls {
            let config = strom_tls::platform_client_config().map_err(tls_error)?;
            let name = ServerName::try_from(host.clone())
                .map_err(|e| tls_error(format!("{host:?} is no server name: {e}")))?;
            let tls = TlsConnector::from(config)
                .connect(name, tcp)
                .await
                .map_err(|e| tls_error(e.to_string()))?;
            tokio::spawn(relay(listener, tls, endpoint, Arc::clone(&broken)))
        } else {
            tokio::spawn(relay(listener, tcp, endpoint, Arc::clone(&broken)))
        };
        Ok(Self {
            local,
            task,
            broken,
        })
    }

    /// Why the relay cut the source off (a limit it broke), if it did.
    pub fn broken(&self) -> Option<String> {
        locked(&self.broken).clone()
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

/// Takes the one local connection and copies bytes both ways until either side ends or
/// the source breaks a limit (noted in `broken`).
async fn relay<S>(
    listener: TcpListener,
    remote: S,
    endpoint: String,
    broken: Arc<Mutex<Option<String>>>,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let accepted = tokio::time::timeout(LOCAL_ACCEPT_LIMIT, listener.accept()).await;
    // Exactly one connection: nothing else reaches the source through this relay.
    drop(listener);
    let local = match accepted {
        Ok(Ok((local, _))) => local,
        Ok(Err(error)) => {
            tracing::warn!(%endpoint, %error, "rtsps relay: local accept failed");
            return;
        }
        Err(_) => return,
    };
    let _ = local.set_nodelay(true);
    let (mut local_read, mut local_write) = local.into_split();
    let (mut remote_read, mut remote_write) = tokio::io::split(remote);
    let requests = tokio::io::copy(&mut local_read, &mut remote_write);
    let answers = async {
        let mut limit = MessageLimit::default();
        let mut buffer = vec![0u8; READ_CHUNK];
        loop {
            let n = remote_read.read(&mut buffer).await?;
            if n == 0 {
                return Ok(());
            }
            if let Err(why) = limit.feed(&buffer[..n]) {
                tracing::warn!(%endpoint, %why, "RTSP source cut off: it sent more than a source may");
                *locked(&broken) = Some(why);
                return Ok(());
            }
            local_write.write_all(&buffer[..n]).await?;
        }
    };
    let ended: std::io::Result<()> = tokio::select! {
        copied = requests => copied.map(|_| ()),
        answered = answers => answered,
    };
    if let Err(error) = ended {
        tracing::debug!(%endpoint, %error, "RTSP source relay ended");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_local_url_keeps_path_and_query() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let local = listener.local_addr().unwrap();
        let relay = SourceRelay {
            local,
            task: tokio::spawn(async {}),
            broken: Arc::default(),
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
        match SourceRelay::open(&url).await {
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
