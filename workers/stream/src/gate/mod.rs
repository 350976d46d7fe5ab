//! The gate: the stream core's front door, in every worker, for every protocol.
//!
//! Protocol adapters turn what a client showed into an [`Access`] and ask the gate; the
//! gate decides, in one place for every protocol:
//! - who may publish a name: the app's publisher credentials and publish control
//!   (`publishsign`, the deny list) ([`Gate::admit_publisher`]), one owner per name
//!   across every worker process ([`ownership`], enforced by [`Gate::publish`] and by
//!   every other claim of an announcing hub) and across the servers of a cluster (the
//!   registry's copy, [`crate::cluster`]), and hands the admitted publisher its
//!   [`Publishing`] guard ([`Gate::publish`]);
//! - who may read: playback protection (`wmsAuthSign`), the deny list of pay-per-view
//!   ids and their session limit ([`Gate::admit_reader`]), and hands the admitted reader
//!   its [`Reader`] ([`Gate::read`], [`handles`]);
//! - what reading an absent stream starts: the worker with an on-demand pull or an edge
//!   pull for it ([`on_demand`]), whatever the reader's protocol;
//! - the stream-scoped management requests (SCTE-35 cues, stream titles), answered by
//!   the same code in every worker ([`Gate::answer`]), in front of the worker's own
//!   handler ([`Gated`]);
//! - the session requests (`/manage/sessions`, `sessions/delete`, the deny list's closing
//!   of live sessions), answered from the worker's session registry ([`sessions`]).
//!
//! The gate also holds the worker's rules in force and the deny list, so no worker keeps
//! its own copy of either.

pub mod access;
mod cluster;
pub mod handles;
pub mod on_demand;
pub mod ownership;
mod publisher;
mod reader;
mod requests;
pub mod service;
pub mod sessions;
#[cfg(test)]
mod tests;

pub use access::{Access, Credentials, Intent, Protocol, Refusal, query_signature};
pub use handles::{AudioBurst, Fanout, Leave, Queue, ReadMode, Reader, ReaderPlace};
pub use ownership::{ClaimError, NameClaim, NameClaims};
pub use reader::Reading;
pub use service::{Gated, GatedService};
pub use sessions::{Caps, Meter, Session, SessionEntry, Sessions};

use crate::hub::{Hub, Publishing};
use crate::publisher_info::PublisherInfo;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use strom_ipc::messages::WorkerEvent;
use strom_ipc::rules::Rules;
use strom_worker_runtime::sync::locked;

/// Deny-list entries a worker holds at most (the supervisor bounds the list it keeps
/// the same way; this only guards against a runaway sender).
const MAX_DENIED: usize = 100_000;

/// A worker's front door; share it as `Arc<Gate>`.
pub struct Gate {
    hub: Hub,
    rules: Mutex<Arc<Rules>>,
    /// Publisher and pay-per-view ids refused (`publish_control/deny`); the supervisor
    /// keeps the list and hands it over at start, so a restarted worker keeps refusing.
    denied: Mutex<BTreeSet<String>>,
    /// The worker's session registry ([`sessions`]).
    sessions: sessions::Sessions,
}

/// What an admitted publisher brings along; only [`Gate::admit_publisher`] makes one, and
/// [`Gate::publish`] takes it for the [`Publishing`] guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    /// The publish-control id of a signed publisher (`publish_control/status`).
    pub control_id: Option<String>,
    /// The app's approval handler, which a protocol with an HTTP client asks next.
    pub handler: Option<Handler>,
    /// Who was admitted to publish what: the stream [`Gate::publish`] claims.
    admitted: Admitted,
}

/// The client an admission is for (private: an admission cannot be made up).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Admitted {
    key: crate::StreamKey,
    peer: std::net::IpAddr,
    protocol: Protocol,
}

impl Admitted {
    fn of(access: &Access) -> Self {
        Self {
            key: access.key.clone(),
            peer: access.peer,
            protocol: access.protocol,
        }
    }
}

impl Admission {
    /// The stream the publisher was admitted to.
    pub fn key(&self) -> &crate::StreamKey {
        &self.admitted.key
    }
}

/// A publish-control approval handler (`handler_url`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handler {
    pub url: String,
    pub timeout: std::time::Duration,
}

impl Gate {
    pub fn new(hub: Hub, rules: Arc<Rules>, denied: Vec<String>) -> Self {
        Self {
            hub,
            rules: Mutex::new(rules),
            denied: Mutex::new(denied.into_iter().collect()),
            sessions: sessions::Sessions::default(),
        }
    }

    /// The worker's session registry, which answers the API's session requests.
    pub fn sessions(&self) -> &sessions::Sessions {
        &self.sessions
    }

    /// The hub behind the gate.
    pub fn hub(&self) -> &Hub {
        &self.hub
    }

    /// The rules in force.
    pub fn rules(&self) -> Arc<Rules> {
        Arc::clone(&locked(&self.rules))
    }

    /// Rules from `ApplyRules`; every later decision reads them.
    pub fn set_rules(&self, rules: Arc<Rules>) {
        *locked(&self.rules) = rules;
    }

    /// Whether `id` (a publisher or pay-per-view id) is denied.
    pub fn is_denied(&self, id: &str) -> bool {
        locked(&self.denied).contains(id)
    }

    /// Refuses these ids from now on (`DenyPublishers`).
    pub fn deny(&self, ids: &[String]) {
        let mut denied = locked(&self.denied);
        for id in ids {
            if denied.len() >= MAX_DENIED {
                tracing::warn!(max = MAX_DENIED, "deny list full: further ids not added");
                break;
            }
            denied.insert(id.clone());
        }
    }

    /// The guard of an admitted publisher (`admission` from [`Gate::admit_publisher`]),
    /// whose publish-control id publish control lists from then on; `Busy` when any
    /// producer of any worker holds the name. The guard holds the client's `session`
    /// (opened with [`sessions::SessionEntry::publisher`]), which ends with it.
    pub fn publish(
        &self,
        admission: &Admission,
        mut info: PublisherInfo,
        session: Session,
    ) -> Result<Publishing, Refusal> {
        let admitted = &admission.admitted;
        if let Some(holder) = self.hub.cluster().held_elsewhere(&admitted.key) {
            tracing::warn!(stream = %admitted.key, peer = %admitted.peer, protocol = admitted.protocol.as_str(), "publish refused: {holder} holds {} in the cluster", admitted.key);
            self.hub.tell_supervisor(WorkerEvent::ClusterConflict {
                app: admitted.key.app.clone(),
                stream: admitted.key.stream.clone(),
                holder: holder.to_string(),
            });
            return Err(Refusal::Busy(admitted.key.clone()));
        }
        info.admitted_id = Some(admission.control_id.clone().unwrap_or_default());
        info.session_id = session.id;
        let publishing = self.hub.claim(&admitted.key, info).map_err(|_| {
            tracing::warn!(stream = %admitted.key, peer = %admitted.peer, protocol = admitted.protocol.as_str(), "publish refused: the name is taken");
            Refusal::Busy(admitted.key.clone())
        })?;
        Ok(publishing.with_session(session))
    }

    /// The [`Reader`] of an admitted reader (`reading` from [`Gate::admit_reader`]) in
    /// `mode`; it reads as its `session` (opened with [`sessions::SessionEntry::reader`]),
    /// which ends when the reader's place drops.
    pub fn read<M: ReadMode>(
        &self,
        reading: &Reading,
        mode: M,
        session: Session,
    ) -> Reader<M::Frames> {
        Reader::join(&self.hub, reading.key(), mode, session.id, Some(session))
    }
}
