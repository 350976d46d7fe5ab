//! The state every session and signaling request of the webrtc worker shares.

use crate::admission::Admissions;
use crate::feed::Feeds;
use crate::routing::Routes;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use strom_ipc::rules::Rules;
use strom_ipc::webrtc_rules::WebRtcSettings;
use strom_stream::StreamKey;
use strom_stream::{Gate, Hub};
use strom_worker_runtime::sync::locked;
use strom_worker_runtime::{SessionIds, WorkerCounters};

/// A lent ICE socket's local address, by transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IcePort {
    pub tcp: bool,
    pub local: SocketAddr,
}

/// A session's resource: what PATCH and DELETE of its URL reach.
#[derive(Debug, Clone)]
pub struct Resource {
    pub key: StreamKey,
    pub publish: bool,
    pub session: u64,
}

pub struct Shared {
    /// The front door: who may publish and play, the rules in force, the deny list.
    pub gate: Arc<Gate>,
    pub hub: Hub,
    /// The places sessions hold against the limits, from admission to their end.
    pub admissions: Arc<Admissions>,
    pub routes: Arc<Routes>,
    pub feeds: Arc<Feeds>,
    pub counters: Arc<WorkerCounters>,
    pub ids: Arc<SessionIds>,
    /// Session resources (`.../whep.stream/<resource>`) by name.
    pub resources: Mutex<HashMap<String, Resource>>,
    /// The ICE sockets lent now (replaced with the listeners).
    pub ports: Mutex<Vec<IcePort>>,
    draining: AtomicBool,
}

impl Shared {
    pub fn new(
        gate: Arc<Gate>,
        feeds: Arc<Feeds>,
        counters: Arc<WorkerCounters>,
        ids: Arc<SessionIds>,
    ) -> Self {
        Self {
            hub: gate.hub().clone(),
            gate,
            admissions: Arc::default(),
            routes: Arc::new(Routes::default()),
            feeds,
            counters,
            ids,
            resources: Mutex::new(HashMap::new()),
            ports: Mutex::new(Vec::new()),
            draining: AtomicBool::new(false),
        }
    }

    pub fn rules(&self) -> Arc<Rules> {
        self.gate.rules()
    }

    pub fn settings(&self) -> WebRtcSettings {
        self.rules().webrtc.clone()
    }

    pub fn ports(&self) -> Vec<IcePort> {
        locked(&self.ports).clone()
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// Sets the drain state; returns the previous one.
    pub fn set_draining(&self, draining: bool) -> bool {
        self.draining.swap(draining, Ordering::Relaxed)
    }
}
