//! Worker-wide state of the webrtc worker and its answers to the supervisor.

use std::sync::Arc;
use strom_ipc::FailureKind;
use strom_ipc::messages::{WorkerReply, WorkerRequest};
use strom_stream::{Gate, Hub};
use strom_worker_runtime::{InheritedListener, WorkerContext, WorkerService};

pub struct WebRtcWorker {
    gate: Arc<Gate>,
}

/// Builds the worker from the hello and starts serving.
pub fn start(context: WorkerContext) -> Result<Arc<WebRtcWorker>, String> {
    let hub = Hub::for_worker(context.events.clone(), &context.hello.settings.run_dir)
        .map_err(|e| format!("stream name claims in the run directory: {e}"))?;
    let gate = Arc::new(Gate::new(
        hub,
        Arc::new(context.hello.rules),
        context.hello.denied_publishers,
    ));
    Ok(Arc::new(WebRtcWorker { gate }))
}

impl strom_stream::GatedService for WebRtcWorker {
    fn gate(&self) -> &Gate {
        &self.gate
    }
}

impl WorkerService for WebRtcWorker {
    async fn handle(&self, request: WorkerRequest) -> WorkerReply {
        WorkerReply::error(
            FailureKind::Unsupported,
            format!("the webrtc worker does not handle {request:?}"),
        )
    }

    fn replace_listeners(&self, _listeners: Vec<InheritedListener>) {}

    async fn drain(&self) {}
}
