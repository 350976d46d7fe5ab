//! The current server certificate, swappable while connections stay open.
//!
//! Shared by the packager's HTTPS listeners, the rtsp worker's rtsps listeners and the
//! supervisor's management API, so the supervisor need not reach into a worker crate for
//! it. Also the configuration strom's TLS clients verify servers with
//! ([`platform_client_config`]).
//!
//! New TLS handshakes pick up the certificate in force at that moment; established
//! connections keep the one they negotiated.

mod client;

pub use client::platform_client_config;

use rustls::crypto::ring::sign::any_supported_type;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::{Arc, RwLock};
use strom_ipc::messages::TlsMaterial;

/// Parses PEM material into a key rustls can sign with.
pub fn certified_key(material: &TlsMaterial) -> Result<Arc<CertifiedKey>, String> {
    let chain = CertificateDer::pem_slice_iter(&material.certificate_chain_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("certificate PEM: {e}"))?;
    if chain.is_empty() {
        return Err("certificate PEM contains no certificate".to_owned());
    }
    let key = PrivateKeyDer::from_pem_slice(&material.private_key_pem)
        .map_err(|e| format!("private key PEM: {e}"))?;
    let signing_key = any_supported_type(&key).map_err(|e| format!("private key: {e}"))?;
    Ok(Arc::new(CertifiedKey::new(chain, signing_key)))
}

/// Resolves every handshake to the current certificate.
#[derive(Debug, Default)]
pub struct SwappableCertificate {
    current: RwLock<Option<Arc<CertifiedKey>>>,
}

impl SwappableCertificate {
    pub fn replace(&self, key: Arc<CertifiedKey>) {
        match self.current.write() {
            Ok(mut current) => *current = Some(key),
            Err(poisoned) => *poisoned.into_inner() = Some(key),
        }
    }

    pub fn is_loaded(&self) -> bool {
        match self.current.read() {
            Ok(current) => current.is_some(),
            Err(poisoned) => poisoned.into_inner().is_some(),
        }
    }
}

impl ResolvesServerCert for SwappableCertificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        match self.current.read() {
            Ok(current) => current.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

/// A rustls server configuration that asks `certificate` on every handshake.
pub fn server_config(
    certificate: Arc<SwappableCertificate>,
) -> Result<Arc<rustls::ServerConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_cert_resolver(certificate);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
