//! Reading and validating the configuration files: `strom.conf` (instance settings,
//! [`instance`]), `rules.conf` (run-time rules, [`rules`]) and the DRM settings file
//! ([`drm`]). Each parser turns text into the typed settings the rest of the supervisor
//! and the workers trust, or into a [`ConfigError`] that names the file, the line or JSON
//! path, and the key.
//!
//! The fuzz target `config_files` compiles this module by path: it may use only `serde`,
//! `serde_json`, `hex`, `thiserror` and `strom_ipc`, nothing else of the supervisor.

pub mod drm;
pub mod error;
pub mod instance;
pub mod origin;
pub mod redact;
pub mod rules;

// The supervisor is a binary crate, so a re-export its modules do not use yet would warn.
#[allow(unused_imports, reason = "short paths for callers")]
pub use error::ConfigError;
#[allow(unused_imports, reason = "short paths for callers")]
pub use instance::{InstanceConfig, ListenAddress, socket_addrs};
