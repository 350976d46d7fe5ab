//! The `packager` worker: HLS and Icecast delivery over HTTP and HTTPS.
//!
//! Owns the delivery listeners (`port`, `ssl_port`), the TLS certificate that
//! `reload_ssl_certificates` swaps, and the DRM settings. Packaging itself arrives with the
//! HLS issue; until then every path answers 404 because no stream is packaged.

mod http;
mod service;
pub mod tls;

pub use service::{PackagerWorker, start};
