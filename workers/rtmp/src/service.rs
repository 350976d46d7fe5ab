//! The rtmp worker's answers to the supervisor.

use crate::connection::RtmpConnections;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strom_ipc::messages::{WorkerReply, WorkerRequest};
use strom_ipc::rules::Rules;
use strom_worker_runtime::sync::locked;
use strom_worker_runtime::{AcceptLoops, InheritedListener, WorkerContext, WorkerService};

pub struct RtmpWorker {
    accept: AcceptLoops<RtmpConnections>,
    rules: Mutex<Arc<Rules>>,
    denied_publishers: Mutex<BTreeSet<String>>,
}

/// Builds the worker from the hello and starts accepting.
pub fn start(context: WorkerContext) -> Result<Arc<RtmpWorker>, String> {
    let accept = AcceptLoops::new(
        Arc::new(RtmpConnections),
        Arc::clone(&context.counters),
        context.shutdown.clone(),
    );
    accept.replace(context.listeners);
    Ok(Arc::new(RtmpWorker {
        accept,
        rules: Mutex::new(Arc::new(context.hello.rules)),
        denied_publishers: Mutex::new(context.hello.denied_publishers.into_iter().collect()),
    }))
}

impl RtmpWorker {
    pub fn rules(&self) -> Arc<Rules> {
        Arc::clone(&locked(&self.rules))
    }

    pub fn is_denied(&self, publisher_id: &str) -> bool {
        locked(&self.denied_publishers).contains(publisher_id)
    }
}

impl WorkerService for RtmpWorker {
    async fn handle(&self, request: WorkerRequest) -> WorkerReply {
        match request {
            WorkerRequest::ListSessions => WorkerReply::Sessions(Vec::new()),
            WorkerRequest::DeleteSessions(_) => WorkerReply::SessionsDeleted(Vec::new()),
            WorkerRequest::ListStreams => WorkerReply::Streams(Vec::new()),
            WorkerRequest::ListPublishers => WorkerReply::Publishers(Vec::new()),
            WorkerRequest::ServerPlaylists => WorkerReply::ServerPlaylists(Vec::new()),
            WorkerRequest::RepublishStats => WorkerReply::RepublishStats(Vec::new()),
            WorkerRequest::DenyPublishers(ids) => {
                tracing::info!(?ids, "publishers denied");
                locked(&self.denied_publishers).extend(ids);
                WorkerReply::Done
            }
            WorkerRequest::ApplyRules(rules) => {
                tracing::info!("rules applied");
                *locked(&self.rules) = Arc::from(rules);
                WorkerReply::Done
            }
            other => WorkerReply::Failed(format!("the rtmp worker does not handle {other:?}")),
        }
    }

    fn replace_listeners(&self, listeners: Vec<InheritedListener>) {
        self.accept.replace(listeners);
    }

    async fn drain(&self) {
        self.accept.drain(Duration::from_secs(5)).await;
    }
}
