//! The state every RTSP connection of the worker shares: the hub, the players, the
//! rules in force and the connection caps they set.

use crate::udp_budget::UdpBudget;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use strom_ipc::rtsp_rules::RtspLimits;
use strom_ipc::rules::Rules;
use strom_stream::{Gate, Hub};
use strom_worker_runtime::connection_caps::ConnectionCaps;
use strom_worker_runtime::sync::locked;
use strom_worker_runtime::{SessionIds, WorkerCounters};

pub struct Shared {
    /// The front door: who may publish and play, the rules in force, the deny list.
    pub gate: Arc<Gate>,
    /// The gate's hub.
    pub hub: Hub,
    pub counters: Arc<WorkerCounters>,
    pub ids: Arc<SessionIds>,
    /// Caps of the limits in force; replaced when they change (open connections keep
    /// their places in the old one).
    caps: Mutex<(RtspLimits, Arc<ConnectionCaps>)>,
    draining: AtomicBool,
    /// UDP port pairs all connections hold (`max_udp_pairs`).
    pub udp_budget: UdpBudget,
}

fn caps_of(limits: &RtspLimits) -> Arc<ConnectionCaps> {
    ConnectionCaps::new(
        limits.max_connections as usize,
        limits.max_connections_per_ip,
    )
}

impl Shared {
    pub fn new(
        hub: Hub,
        rules: Rules,
        denied: Vec<String>,
        counters: Arc<WorkerCounters>,
        ids: Arc<SessionIds>,
    ) -> Self {
        let limits = rules.rtsp.limits;
        Self {
            gate: Arc::new(Gate::new(hub.clone(), Arc::new(rules), denied)),
            hub,
            counters,
            ids,
            caps: Mutex::new((limits, caps_of(&limits))),
            draining: AtomicBool::new(false),
            udp_budget: UdpBudget::default(),
        }
    }

    pub fn rules(&self) -> Arc<Rules> {
        self.gate.rules()
    }

    pub fn set_rules(&self, rules: Arc<Rules>) {
        let limits = rules.rtsp.limits;
        self.gate.set_rules(rules);
        let mut caps = locked(&self.caps);
        if caps.0 != limits {
            *caps = (limits, caps_of(&limits));
        }
    }

    pub fn caps(&self) -> Arc<ConnectionCaps> {
        Arc::clone(&locked(&self.caps).1)
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// Sets the drain state; returns the previous one.
    pub fn set_draining(&self, draining: bool) -> bool {
        self.draining.swap(draining, Ordering::Relaxed)
    }
}
