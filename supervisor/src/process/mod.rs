//! Worker processes: starting them, talking to them, keeping them alive.
//!
//! [`spawn`] execs `strom worker <kind>` with its control socket placed by `pre_exec`;
//! [`link`] is the request/reply side of one live control channel; [`supervision`] is the
//! per-worker state machine (starting, ready, backing off, stopping) with restarts and
//! heartbeats, whose states ([`state`]) both it and [`table`] name; [`table`] is the set of
//! all workers that the API and reload talk to; [`out_rate`] averages a worker's send rate
//! over a window of heartbeats. Dependencies point one way:
//! `supervision` -> `table` -> `link`, `state` (leaves), so none of them imports its user.

pub mod link;
pub mod out_rate;
pub mod spawn;
pub mod state;
pub mod supervision;
pub mod table;

pub use link::RequestError;
pub use table::WorkerTable;
