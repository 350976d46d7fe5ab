//! The contract between strom's processes.
//!
//! Everything that crosses a process boundary is typed here: the control messages between
//! the supervisor and a worker ([`messages`]), the shared status records the API renders
//! ([`status`]), the run-time rules every worker receives ([`rules`]), the wire framing
//! ([`frame`]), the constants both sides must agree on ([`contract`]), descriptor passing ([`fd_passing`]) and the async channel that combines
//! them ([`channel`]). This crate depends on nothing else in the workspace.

pub mod access_rules;
pub mod bus;
pub mod channel;
pub mod cluster;
pub mod contract;
pub mod dvr_export;
pub mod dvr_rules;
pub mod error;
pub mod failure;
pub mod fd_passing;
pub mod frame;
pub mod interface;
pub mod kind;
pub mod messages;
pub mod names;
pub mod paging;
pub mod playlist_rules;
pub mod rtsp_rules;
pub mod rules;
pub mod scoped;
pub mod status;
pub mod sync;
pub mod transcode_rules;
pub mod webrtc_rules;

pub use channel::{ControlChannel, Received};
pub use error::IpcError;
pub use failure::FailureKind;
pub use kind::WorkerKind;
