//! The client side of RTMP, shared by re-publishing (pushes) and pulled sources (pulls):
//! where to connect ([`endpoint`]), the byte stream (TCP or TLS, [`transport`]), the
//! handshake, the `rml_rtmp` client session driver ([`session`]), answers to ingest
//! servers' authentication challenges ([`auth`]) and byte counts and rates ([`traffic`]).
//! Reconnection delays are `strom_worker_runtime::backoff`'s.

pub mod auth;
pub mod endpoint;
pub mod error;
mod handshake;
pub mod session;
#[cfg(test)]
mod tls_tests;
pub mod traffic;
pub mod transport;
