//! The state every RTSP connection of the worker shares: the hub, the players, the
//! rules in force and the connection caps they set.

use crate::sessions::PlayerTable;
use crate::udp_budget::UdpBudget;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use strom_ipc::rtsp_rules::RtspLimits;
use strom_ipc::rules::Rules;
use strom_stream::Hub;
use strom_worker_runtime::connection_caps::ConnectionCaps;
use strom_worker_runtime::sync::locked;
use strom_worker_runtime::{SessionIds, WorkerCounters};

pub struct Shared {
    pub hub: Hub,
    pub players: PlayerTable,
    pub counters: Arc<WorkerCounters>,
    pub ids: Arc<SessionIds>,
    rules: Mutex<Arc<Rules>>,
    /// Caps of the limits in force; replaced when they change (open connections keep
    /// their places in the old one).
    caps: Mutex<(RtspLimits, Arc<ConnectionCaps>)>,
    draining: AtomicBool,
    /// Publish-control ids `publish_control/deny` blocked (the supervisor keeps the list
    /// and hands it over at start).
    denied: Mutex<BTreeSet<String>>,
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
            hub,
            players: PlayerTable::default(),
            counters,
            ids,
            rules: Mutex::new(Arc::new(rules)),
            caps: Mutex::new((limits, caps_of(&limits))),
            draining: AtomicBool::new(false),
            denied: Mutex::new(denied.into_iter().collect()),
            udp_budget: UdpBudget::default(),
        }
    }

    pub fn rules(&self) -> Arc<Rules> {
        Arc::clone(&locked(&self.rules))
    }

    pub fn set_rules(&self, rules: Arc<Rules>) {
        let limits = rules.rtsp.limits;
        *locked(&self.rules) = rules;
        let mut caps = locked(&self.caps);
        if caps.0 != limits {
            *caps = (limits, caps_of(&limits));
        }
    }

    pub fn caps(&self) -> Arc<ConnectionCaps> {
        Arc::clone(&locked(&self.caps).1)
    }

    pub fn is_denied(&self, id: &str) -> bool {
        locked(&self.denied).contains(id)
    }

    pub fn deny(&self, ids: &[String]) {
        locked(&self.denied).extend(ids.iter().cloned());
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// Sets the drain state; returns the previous one.
    pub fn set_draining(&self, draining: bool) -> bool {
        self.draining.swap(draining, Ordering::Relaxed)
    }
}
