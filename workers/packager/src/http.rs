//! HTTP(S) connections on the delivery ports.

use crate::tls::SwappableCertificate;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use strom_ipc::messages::{ListenerRole, ListenerSpec};
use strom_worker_runtime::accept::ConnectionHandler;
use strom_worker_runtime::counters::{ConnectionGuard, WorkerCounters};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// A client that has not finished its TLS handshake by then is dropped.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

pub struct DeliveryConnections {
    pub counters: Arc<WorkerCounters>,
    pub certificate: Arc<SwappableCertificate>,
    pub tls: Arc<rustls::ServerConfig>,
}

impl ConnectionHandler for DeliveryConnections {
    async fn handle(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        listener: &ListenerSpec,
        _guard: ConnectionGuard,
        shutdown: CancellationToken,
    ) {
        let _ = stream.set_nodelay(true);
        match listener.role {
            ListenerRole::Https => {
                if !self.certificate.is_loaded() {
                    tracing::warn!(%peer, "https connection closed: no certificate loaded");
                    return;
                }
                let acceptor = TlsAcceptor::from(Arc::clone(&self.tls));
                match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                    Ok(Ok(tls)) => self.serve(TokioIo::new(tls), peer, shutdown).await,
                    Ok(Err(e)) => tracing::debug!(%peer, error = %e, "tls handshake failed"),
                    Err(_) => tracing::debug!(%peer, "tls handshake timed out"),
                }
            }
            _ => self.serve(TokioIo::new(stream), peer, shutdown).await,
        }
    }
}

impl DeliveryConnections {
    async fn serve<I>(&self, io: I, peer: SocketAddr, shutdown: CancellationToken)
    where
        I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    {
        let counters = Arc::clone(&self.counters);
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            let counters = Arc::clone(&counters);
            async move { Ok::<_, Infallible>(respond(&request, &counters)) }
        });
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(Duration::from_secs(30))
            .serve_connection(io, service);
        tokio::pin!(connection);
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(%peer, error = %e, "http connection ended with an error");
                }
            }
            () = shutdown.cancelled() => {
                connection.as_mut().graceful_shutdown();
                let _ = connection.await;
            }
        }
    }
}

fn respond(request: &Request<Incoming>, counters: &WorkerCounters) -> Response<Full<Bytes>> {
    tracing::debug!(method = %request.method(), path = request.uri().path(), "no such stream");
    let body = Bytes::from_static(br#"{"status":"NotFound","error":"no such stream"}"#);
    counters.add_sent(body.len() as u64);
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = StatusCode::NOT_FOUND;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}
