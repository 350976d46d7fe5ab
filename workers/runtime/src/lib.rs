//! The harness every worker process runs in.
//!
//! A worker is started by the supervisor as `strom worker <kind>` with its control socket
//! at [`bootstrap::CONTROL_FD`]. The runtime takes that socket, receives the hello (settings,
//! rules and listening sockets), builds the worker's service, reports ready and then serves
//! the control channel until the supervisor says stop or goes away. Worker crates only
//! implement [`WorkerService`]; they never know whether a socket was inherited.

pub mod accept;
pub mod backoff;
pub mod bootstrap;
pub mod bus;
pub mod clock;
pub mod connection_caps;
pub mod control;
pub mod counters;
pub mod fd_budget;
pub mod health;
pub mod listeners;
pub mod log_limit;
pub mod login_throttle;
pub mod play_signature;
pub mod publish_sign;
pub mod service;
pub mod session_ids;
pub mod sync;

pub use accept::AcceptLoops;
pub use control::{RuntimeError, serve, serve_on};
pub use counters::WorkerCounters;
pub use listeners::{InheritedListener, InheritedUdpSocket};
pub use service::{EventSender, WorkerContext, WorkerService};
pub use session_ids::SessionIds;
