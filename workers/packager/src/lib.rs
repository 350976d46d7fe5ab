//! The `packager` worker: HLS (MPEG-TS and fMP4) delivery over HTTP and HTTPS.
//!
//! Streams announced by the supervisor's registry are subscribed on the media bus and
//! packaged ([`packaging`]); segments live in the [`store`] (mirrored to disk for
//! restarts); [`http`] serves them with viewer sessions ([`viewers`]); [`tls`] holds the
//! swappable certificate.

mod http;
mod icecast;
mod packaging;
mod service;
mod store;
pub mod tls;
mod ts_http;
mod ts_viewers;
mod viewers;

pub use service::{PackagerWorker, start};
