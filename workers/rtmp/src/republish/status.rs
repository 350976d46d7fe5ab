//! The live state of one push, written by its task and read by `RepublishStats`.
//!
//! `state` is `connecting` (TCP, handshake, authentication, publish), `connected`
//! (publishing) or `disconnected` (waiting to retry after a failure). `session_duration`
//! is the age of the current connected session (0 when not connected); byte counts and
//! `retry_count` cover the push's whole life, across reconnections.

use crate::client::traffic::Traffic;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use strom_ipc::rules::RepublishRule;
use strom_ipc::status::RepublishStatus;
use strom_stream::StreamKey;
use strom_worker_runtime::sync::locked;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushState {
    Connecting,
    Connected { since: Instant },
    Disconnected,
}

impl PushState {
    fn name(self) -> &'static str {
        match self {
            PushState::Connecting => "connecting",
            PushState::Connected { .. } => "connected",
            PushState::Disconnected => "disconnected",
        }
    }
}

#[derive(Debug)]
pub struct PushStatus {
    pub rule: RepublishRule,
    pub source: StreamKey,
    /// The destination stream name (without its query).
    pub dest_stream: String,
    pub traffic: Arc<Traffic>,
    state: Mutex<PushState>,
    retries: AtomicU64,
}

impl PushStatus {
    pub fn new(rule: RepublishRule, source: StreamKey, dest_stream: String) -> Self {
        Self {
            rule,
            source,
            dest_stream,
            traffic: Arc::new(Traffic::default()),
            state: Mutex::new(PushState::Connecting),
            retries: AtomicU64::new(0),
        }
    }

    pub fn set(&self, state: PushState) {
        *locked(&self.state) = state;
    }

    /// Counts one more retry; returns the new count.
    pub fn retried(&self) -> u64 {
        self.retries.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub fn report(&self) -> RepublishStatus {
        let state = *locked(&self.state);
        let (session_duration_secs, bandwidth_bps) = match state {
            PushState::Connected { since } => {
                (since.elapsed().as_secs(), self.traffic.send_rate_bps())
            }
            _ => (0, 0),
        };
        RepublishStatus {
            rule_id: self.rule.id.clone(),
            state: state.name().to_owned(),
            session_duration_secs,
            bandwidth_bps,
            bytes_recv: self.traffic.received(),
            bytes_sent: self.traffic.sent(),
            retry_count: self.retries.load(Ordering::Relaxed),
            owner: self.rule.owner,
            src_app: self.source.app.clone(),
            src_stream: self.source.stream.clone(),
            dest_addr: self.rule.dest_addr.clone(),
            dest_port: self.rule.dest_port,
            dest_app: self.rule.dest_app.clone(),
            dest_stream: self.dest_stream.clone(),
        }
    }
}
