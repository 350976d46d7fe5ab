//! Every worker process runs behind its gate: [`Gated`] wraps a worker's service and
//! answers the stream-scoped management requests ([`Gate::answer`]: cues, titles, stream
//! and publisher lists), the session requests from the worker's session registry
//! ([`super::sessions`]: lists, pages, deletes, the closing of denied ids' sessions), and
//! records denied ids, before the worker sees any request, so a new worker cannot forget
//! one (the rtsp worker once answered `scte35_out` with a 500 because it had no copy of
//! the handler). No worker sees a session request.

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
        match request {
            WorkerRequest::ListSessions => WorkerReply::Sessions(registry.list()),
            WorkerRequest::ListSessionsPage { after_id, limit } => registry.page(after_id, limit),
            WorkerRequest::DeleteSessions(ids) => {
                let found = registry.kill(&ids);
                let mut protocols: Vec<&str> = found.iter().map(|e| e.protocol).collect();
                protocols.sort_unstable();
                protocols.dedup();
                for protocol in protocols {
                    let sessions: Vec<u64> = (found.iter())
                        .filter(|e| e.protocol == protocol)
                        .map(|e| e.id)
                        .collect();
                    let protocol = protocol.to_ascii_lowercase();
                    tracing::info!(?sessions, "{protocol} sessions ended by request");
                }
                WorkerReply::SessionsDeleted(found.iter().map(|e| e.id).collect())
            }
            WorkerRequest::Cluster(update) => {
                gate.apply_cluster(update);
                WorkerReply::Done
            }
            WorkerRequest::DenyPublishers(ids) => {
                // The deny list is the gate's; the registry's sessions of these ids
                // (publishers, pay-per-view viewers) close.
                gate.deny(&ids);
                for entry in registry.kill_publishers(&ids) {
                    let role = if entry.publisher {
                        "publisher"
                    } else {
                        "player"
                    };
                    tracing::info!(
                        session = entry.id,
                        protocol = entry.protocol,
                        peer = %entry.client_ip,
                        stream = %format_args!("{}/{}", entry.app, entry.stream),
                        "{} {role} denied: disconnected",
                        entry.protocol
                    );
                }
                WorkerReply::Done
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
