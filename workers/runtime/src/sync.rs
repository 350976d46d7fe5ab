//! Mutex access that survives poisoning; the helper lives in `strom_ipc::sync` so the
//! supervisor shares it without depending on the worker runtime.

pub use strom_ipc::sync::locked;
