//! The client side: the configuration strom's TLS clients verify servers with.
//!
//! Servers are verified against the operating system's trust store through
//! `rustls-platform-verifier` (on Linux the CA bundle under `/etc/ssl/certs`, or
//! `SSL_CERT_FILE`/`SSL_CERT_DIR`), with the ring provider: an operator whose sources sit
//! behind a private CA adds it the way it is added for every other program
//! (`update-ca-certificates`), and the roots follow the system's security updates. Used
//! by `rtsps://` pulls and by the RTMPS client (pushes and pulls).

use rustls::ClientConfig;
use rustls_platform_verifier::BuilderVerifierExt;
use std::sync::{Arc, OnceLock};

/// The process-wide client configuration, built once it succeeds (it reads the system's
/// roots; a failure is retried by the next caller).
pub fn platform_client_config() -> Result<Arc<ClientConfig>, String> {
    static CONFIG: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    if let Some(config) = CONFIG.get() {
        return Ok(Arc::clone(config));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_platform_verifier()
        .map_err(|e| format!("system trust store: {e}"))?
        .with_no_client_auth();
    Ok(Arc::clone(CONFIG.get_or_init(|| Arc::new(config))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_trust_store_is_usable() {
        let config = platform_client_config().unwrap_or_else(|e| {
            panic!(
                "{e}: TLS clients need the system's CA bundle (Debian package `ca-certificates`)"
            )
        });
        assert!(
            Arc::ptr_eq(&config, &platform_client_config().unwrap()),
            "built once"
        );
    }
}
