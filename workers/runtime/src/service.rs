//! What a worker crate implements, and what the runtime gives it.

use crate::counters::WorkerCounters;
use crate::listeners::{InheritedListener, InheritedUdpSocket};
use crate::session_ids::SessionIds;
use std::future::Future;
use std::sync::Arc;
use strom_ipc::messages::{WorkerEvent, WorkerHello, WorkerReply, WorkerRequest};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Bounded queue of events to the supervisor (publish/unpublish, about a hundred bytes
/// each): deep enough for thousands of publishers that leave at once; what is dropped
/// past it the supervisor's registry audit corrects.
pub const EVENT_QUEUE: usize = 8192;

/// Sends events to the supervisor without blocking the sender.
#[derive(Debug, Clone)]
pub struct EventSender {
    tx: mpsc::Sender<WorkerEvent>,
}

impl EventSender {
    pub(crate) fn new(tx: mpsc::Sender<WorkerEvent>) -> Self {
        Self { tx }
    }

    /// A sender with no supervisor behind it, and the queue's receiving end: for worker
    /// crates' tests, which run connections without a control channel.
    pub fn detached() -> (Self, mpsc::Receiver<WorkerEvent>) {
        let (tx, rx) = mpsc::channel(EVENT_QUEUE);
        (Self::new(tx), rx)
    }

    /// Queues an event; if the supervisor is so far behind that the queue is full the
    /// event is dropped and logged rather than stalling media work.
    pub fn send(&self, event: WorkerEvent) {
        if let Err(e) = self.tx.try_send(event) {
            tracing::warn!(error = %e, "event to supervisor dropped");
        }
    }
}

/// Everything a worker service is built from.
#[derive(Debug)]
pub struct WorkerContext {
    pub hello: WorkerHello,
    pub listeners: Vec<InheritedListener>,
    /// UDP sockets lent for the worker's datagram roles (`Udp`, `Srt`, `Rist`).
    pub udp_sockets: Vec<InheritedUdpSocket>,
    pub counters: Arc<WorkerCounters>,
    pub session_ids: Arc<SessionIds>,
    pub events: EventSender,
    /// Cancelled when the worker must stop accepting and drain.
    pub shutdown: CancellationToken,
}

/// A worker's media logic, driven by the runtime's control loop.
pub trait WorkerService: Send + Sync + 'static {
    /// Answers a request the runtime does not handle itself (everything but heartbeats,
    /// listener changes and shutdown).
    fn handle(&self, request: WorkerRequest) -> impl Future<Output = WorkerReply> + Send;

    /// Starts serving this complete set of listeners instead of the current one. Open
    /// connections stay open.
    fn replace_listeners(&self, listeners: Vec<InheritedListener>);

    /// Starts receiving on this complete set of UDP sockets instead of the current one.
    /// Workers without datagram roles are never lent any; the default only logs.
    fn replace_udp_sockets(&self, sockets: Vec<InheritedUdpSocket>) {
        if !sockets.is_empty() {
            tracing::warn!(count = sockets.len(), "this worker ignores UDP sockets");
        }
    }

    /// Waits for open connections to finish after shutdown was signalled. The runtime
    /// bounds the wait.
    fn drain(&self) -> impl Future<Output = ()> + Send;
}
