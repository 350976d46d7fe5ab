//! Every worker process runs behind its gate: [`Gated`] wraps a worker's service and
//! answers the stream-scoped management requests ([`Gate::answer`]: cues, titles, stream
//! and publisher lists), the session requests from the worker's session registry
//! ([`super::sessions`]: lists, pages, deletes, the closing of denied ids' sessions), and
//! records denied ids, before the worker sees any request, so a new worker cannot forget
//! one (the rtsp worker once answered `scte35_out` with a 500 because it had no copy of
//! the handler). A worker that still keeps sessions of its own
//! ([`GatedService::own_sessions`]) is asked too, and the two answers are merged.

use super::Gate;
use std::sync::Arc;
use strom_ipc::messages::{WorkerReply, WorkerRequest};
use strom_worker_runtime::{InheritedListener, InheritedUdpSocket, WorkerService};

/// A worker service with a gate in front.
pub trait GatedService: WorkerService {
    fn gate(&self) -> &Gate;

    /// A worker's own answer to a stream-scoped request, asked before the gate's; the
    /// packager answers titles of streams it only relays for its own listeners here.
    fn answer_first(&self, request: &WorkerRequest) -> Option<WorkerReply> {
        let _ = request;
        None
    }

    /// Whether the worker keeps sessions outside the gate's registry (the delivery
    /// worker's HLS/DASH and listener sessions, the ingest worker's SRT and RIST ones)
    /// and answers session requests for them itself.
    fn own_sessions(&self) -> bool {
        false
    }
}

/// `S` behind its gate; what `strom worker <kind>` serves.
pub struct Gated<S>(Arc<S>);

impl<S: GatedService> Gated<S> {
    pub fn new(service: Arc<S>) -> Arc<Self> {
        Arc::new(Self(service))
    }
}

impl<S: GatedService> WorkerService for Gated<S> {
    async fn handle(&self, request: WorkerRequest) -> WorkerReply {
        if let Some(reply) = self.0.answer_first(&request) {
            return reply;
        }
        if let Some(reply) = self.0.gate().answer(&request) {
            return reply;
        }
        let gate = self.0.gate();
        let registry = gate.sessions();
        let own = self.0.own_sessions();
        match request {
            WorkerRequest::ListSessions => {
                let mut sessions = registry.list();
                if own && let WorkerReply::Sessions(theirs) = self.0.handle(request).await {
                    sessions.extend(theirs);
                    sessions.sort_by_key(|s| s.id);
                }
                WorkerReply::Sessions(sessions)
            }
            WorkerRequest::ListSessionsPage { after_id, limit } => {
                let ours = registry.page(after_id, limit);
                if !own {
                    return ours;
                }
                let theirs = self.0.handle(request).await;
                strom_ipc::paging::merge_pages(ours, theirs, limit)
            }
            WorkerRequest::DeleteSessions(ids) => {
                let mut found = registry.kill(&ids);
                let mut protocols: Vec<&str> = (found.iter())
                    .filter_map(|id| registry.get(*id).map(|entry| entry.protocol))
                    .collect();
                protocols.sort_unstable();
                protocols.dedup();
                for protocol in protocols {
                    let protocol = protocol.to_ascii_lowercase();
                    tracing::info!(sessions = ?found, "{protocol} sessions ended by request");
                }
                if own
                    && let WorkerReply::SessionsDeleted(theirs) =
                        self.0.handle(WorkerRequest::DeleteSessions(ids)).await
                {
                    found.extend(theirs);
                }
                WorkerReply::SessionsDeleted(found)
            }
            WorkerRequest::DenyPublishers(ids) => {
                // The deny list is the gate's; the registry's sessions of these ids
                // (publishers, pay-per-view viewers) close, and the worker closes those of
                // its own.
                gate.deny(&ids);
                let closed = registry.kill_publishers(&ids);
                if closed > 0 {
                    tracing::info!(?ids, disconnected = closed, "denied ids' sessions closed");
                }
                self.0.handle(WorkerRequest::DenyPublishers(ids)).await
            }
            request => self.0.handle(request).await,
        }
    }

    fn replace_listeners(&self, listeners: Vec<InheritedListener>) {
        self.0.replace_listeners(listeners);
    }

    fn replace_udp_sockets(&self, sockets: Vec<InheritedUdpSocket>) {
        self.0.replace_udp_sockets(sockets);
    }

    async fn drain(&self) {
        self.0.drain().await;
    }
}
