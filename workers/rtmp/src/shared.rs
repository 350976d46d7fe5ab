//! The state every connection, push and pull of the rtmp worker shares.
//!
//! A leaf below the worker's tasks: connections, pulls, pushes and the bus server take an
//! `Arc<Shared>`, and [`crate::service`] builds it, so none of them needs the service.

use crate::auth::adobe::AdobeAuth;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use strom_ipc::rules::Rules;
use strom_stream::{Gate, Hub};
use strom_worker_runtime::{SessionIds, WorkerCounters};

/// What every connection of the worker shares.
pub struct Shared {
    /// The front door: who may publish and play, the rules in force, the deny list.
    pub gate: Arc<Gate>,
    /// The worker's live streams (the gate's hub); publishes and releases are announced
    /// to the supervisor.
    pub streams: Hub,
    /// Writes the streams' frames to their players as they arrive.
    pub fanouts: crate::fanout::FanOuts,
    pub admission: Arc<crate::admission::Admission>,
    pub adobe: AdobeAuth,
    pub counters: Arc<WorkerCounters>,
    pub ids: Arc<SessionIds>,
    /// For publish-control handler requests.
    pub http: reqwest::Client,
    /// Draining for a rolling upgrade (`SetDraining`): new plays are refused.
    draining: AtomicBool,
}

impl Shared {
    pub(crate) fn new(
        rules: Rules,
        denied_publishers: Vec<String>,
        counters: Arc<WorkerCounters>,
        ids: Arc<SessionIds>,
        streams: Hub,
        http: reqwest::Client,
    ) -> Self {
        let gate = Arc::new(Gate::new(
            streams.clone(),
            Arc::new(rules),
            denied_publishers,
        ));
        Self {
            gate,
            fanouts: crate::fanout::FanOuts::new(streams.clone()),
            streams,
            admission: Arc::default(),
            adobe: AdobeAuth::default(),
            counters,
            ids,
            http,
            draining: AtomicBool::new(false),
        }
    }

    /// Worker state for tests that run connections without a supervisor; the receiver
    /// gets the events the worker would send it.
    #[cfg(test)]
    pub(crate) fn for_tests(
        rules: Rules,
    ) -> (
        Arc<Self>,
        tokio::sync::mpsc::Receiver<strom_ipc::messages::WorkerEvent>,
    ) {
        // `strom worker` installs the provider before starting a worker.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (events, received) = strom_worker_runtime::EventSender::detached();
        let shared = Self::new(
            rules,
            Vec::new(),
            Arc::new(WorkerCounters::default()),
            Arc::new(SessionIds::new(1)),
            Hub::announcing_to(events),
            reqwest::Client::new(),
        );
        (Arc::new(shared), received)
    }

    pub fn rules(&self) -> Arc<Rules> {
        self.gate.rules()
    }

    /// Rules from `ApplyRules`; connections read them through [`Shared::rules`].
    pub(crate) fn set_rules(&self, rules: Arc<Rules>) {
        self.gate.set_rules(rules);
    }

    /// Whether new plays are refused (draining).
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// Starts (`true`) or ends a drain; returns the previous state.
    pub(crate) fn set_draining(&self, draining: bool) -> bool {
        self.draining.swap(draining, Ordering::Relaxed)
    }
}
