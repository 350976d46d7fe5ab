//! Worker processes: starting them, talking to them, keeping them alive.
//!
//! [`spawn`] execs `strom worker <kind>` with its control socket placed by `pre_exec`;
//! [`link`] is the request/reply side of one live control channel; [`supervision`] is the
//! per-worker state machine (starting, ready, backing off, stopping) with restarts and
//! heartbeats; [`table`] is the set of all workers that the API and reload talk to.

pub mod link;
pub mod spawn;
pub mod supervision;
pub mod table;

pub use link::RequestError;
pub use table::WorkerTable;
