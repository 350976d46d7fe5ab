//! Every worker process runs behind its gate: [`Gated`] wraps a worker's service and
//! answers the stream-scoped management requests ([`Gate::answer`]: cues, titles, stream
//! and publisher lists) and records denied ids before the worker sees any request, so a
//! new worker cannot forget one (the rtsp worker once answered
//! `scte35_out` with a 500 because it had no copy of the handler).

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
        if let WorkerRequest::DenyPublishers(ids) = &request {
            // The deny list is the gate's; the worker then closes its own sessions of
            // these ids (publishers, pay-per-view viewers).
            self.0.gate().deny(ids);
        }
        self.0.handle(request).await
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
