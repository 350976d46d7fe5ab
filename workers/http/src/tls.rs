//! The delivery worker's HTTPS certificate handling; the implementation is shared with the
//! supervisor's management API in the `strom-tls` crate.

pub use strom_tls::{SwappableCertificate, certified_key, server_config};
