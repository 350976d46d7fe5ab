//! The `rtmp` worker: RTMP listeners, publishers and players, publish control state.
//!
//! The RTMP protocol itself arrives with the RTMP issue; this crate already owns the RTMP
//! listening sockets (so a restart keeps the port answering), the rules, the deny list
//! that publish control keeps across restarts, and the status queries about live
//! streams and players.

mod connection;
mod service;

pub use service::{RtmpWorker, start};
