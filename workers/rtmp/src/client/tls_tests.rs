//! Component test of RTMPS: the client publishes over TLS (a test CA and a `localhost`
//! certificate made with the openssl tool) through a TLS-terminating proxy into the real
//! connection code and hub, and refuses a server its roots do not vouch for.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::client::endpoint::Endpoint;
use crate::client::error::ClientError;
use crate::client::session::{PUBLISHER_FLASH_VERSION, RtmpClient, Setup};
use crate::client::traffic::Traffic;
use crate::client::transport::open_with;
use crate::frame::RtmpFrame;
use crate::shared::Shared;
use bytes::Bytes;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use strom_ipc::rules::Rules;
use strom_stream::{SharedFrame, StreamKey};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

const WAIT: Duration = Duration::from_secs(30);

fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the openssl tool (Debian package `openssl`) is needed");
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A CA and a certificate for `localhost` and 127.0.0.1 signed by it.
fn make_certificates(dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509", "-days", "2", "-subj", "/CN=strom test CA"];
    ca.extend(ec);
    ca.extend(["-keyout", "ca-key.pem", "-out", "ca.pem"]);
    openssl(dir, &ca);
    let mut request = vec!["req", "-subj", "/CN=localhost"];
    request.extend(ec);
    request.extend(["-keyout", "key.pem", "-out", "req.pem"]);
    openssl(dir, &request);
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "req.pem",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca-key.pem",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
            "-out",
            "cert.pem",
        ],
    );
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn client_config(ca_pem: &Path) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca_pem).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    Arc::new(
        ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// The real connection code on a plain port, and a TLS port that forwards to it.
async fn rtmps_server(dir: &Path, shared: Arc<Shared>) -> u16 {
    let plain = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let plain_addr = plain.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, peer) = plain.accept().await.unwrap();
            let guard = shared.counters.open_connection();
            tokio::spawn(crate::connection::serve(
                stream,
                peer,
                Arc::clone(&shared),
                guard,
                tokio_util::sync::CancellationToken::new(),
            ));
        }
    });
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(dir.join("cert.pem"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(dir.join("key.pem")).unwrap();
    let config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let tls = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = tls.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let (stream, _) = tls.accept().await.unwrap();
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut secure) = acceptor.accept(stream).await else {
                    return;
                };
                let mut inner = TcpStream::connect(plain_addr).await.unwrap();
                let _ = tokio::io::copy_bidirectional(&mut secure, &mut inner).await;
            });
        }
    });
    port
}

#[tokio::test]
async fn publishes_over_rtmps_and_refuses_an_unknown_server() {
    let dir = tempfile::tempdir().unwrap();
    make_certificates(dir.path());
    let (shared, _events) = Shared::for_tests(Rules::default());
    let port = rtmps_server(dir.path(), Arc::clone(&shared)).await;
    let endpoint = Endpoint {
        host: "localhost".into(),
        port,
        tls: true,
    };
    let setup = Setup {
        limit: WAIT,
        flash_version: PUBLISHER_FLASH_VERSION,
        traffic: Arc::new(Traffic::default()),
        counters: Arc::clone(&shared.counters),
    };
    let io = open_with(
        &endpoint,
        WAIT,
        Some(client_config(&dir.path().join("ca.pem"))),
    )
    .await
    .unwrap();
    let mut client = RtmpClient::start(io, endpoint.tc_url("live"), setup.clone())
        .await
        .unwrap();
    client.connect("live").await.unwrap();
    client.publish("secure?k=v").await.unwrap();
    let key = StreamKey {
        app: "live".into(),
        stream: "secure".into(),
    };
    let stream = shared
        .streams
        .live()
        .into_iter()
        .find(|s| s.key == key)
        .expect("published over RTMPS");
    assert_eq!(stream.publisher().unwrap().query, "k=v");
    let mut reader = shared.streams.own_reader(&key, strom_stream::Queue, 77);
    let frames = &mut reader.frames;
    let body = Bytes::from_static(&[0xAF, 0x00, 0x12, 0x10]);
    let header = SharedFrame::with_container(
        strom_media::flv_adapter::audio_frame(&body, 0).unwrap(),
        0,
        body,
    );
    client.send(&header, 0).await.unwrap();
    let received = tokio::time::timeout(WAIT, frames.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(received.frame.config);
    assert_eq!(&received.flv_body().unwrap()[..], &[0xAF, 0x00, 0x12, 0x10]);
    assert!(setup.traffic.sent() > 0 && setup.traffic.received() > 0);
    client.close().await;

    // Roots that do not include the test CA: the handshake fails, nothing is sent.
    let strangers = {
        let other = tempfile::tempdir().unwrap();
        make_certificates(other.path());
        client_config(&other.path().join("ca.pem"))
    };
    match open_with(&endpoint, WAIT, Some(strangers)).await {
        Err(ClientError::Tls(why)) => assert!(why.contains("certificate"), "{why}"),
        Err(other) => panic!("expected a TLS error, got {other}"),
        Ok(_) => panic!("an unknown server was trusted"),
    }
}
