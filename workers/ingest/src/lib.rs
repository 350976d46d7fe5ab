//! The `ingest` worker: MPEG-TS inputs over UDP, SRT and RIST.
//!
//! Owns the configured inputs (`Cameras`) and answers the MPEG-TS, SRT, RIST and NDI
//! status queries. Receiving media arrives with the ingest issue; until then every
//! configured input reports offline and the stats lists are empty because no SRT or RIST
//! peer exists.

mod udp;

use std::sync::{Arc, Mutex};
use strom_ipc::FailureKind;
use strom_ipc::messages::{WorkerReply, WorkerRequest};
use strom_ipc::rules::Rules;
use strom_ipc::status::CameraStatus;
use strom_worker_runtime::sync::locked;
use strom_worker_runtime::{InheritedListener, InheritedUdpSocket, WorkerContext, WorkerService};
use udp::UdpReceivers;

pub struct IngestWorker {
    rules: Mutex<Arc<Rules>>,
    udp: UdpReceivers,
}

pub fn start(context: WorkerContext) -> Result<Arc<IngestWorker>, String> {
    if !context.listeners.is_empty() {
        return Err(format!(
            "the ingest worker takes no TCP listeners, got {}",
            context.listeners.len()
        ));
    }
    let udp = UdpReceivers::new(context.counters, context.shutdown);
    udp.replace(context.udp_sockets);
    Ok(Arc::new(IngestWorker {
        rules: Mutex::new(Arc::new(context.hello.rules)),
        udp,
    }))
}

impl IngestWorker {
    fn cameras(&self) -> Vec<CameraStatus> {
        let rules = Arc::clone(&locked(&self.rules));
        rules
            .cameras
            .iter()
            .map(|camera| CameraStatus {
                id: camera.id.clone(),
                ip: camera.ip.clone(),
                port: camera.port,
                protocol: camera.protocol.clone(),
                receive_mode: camera.receive_mode.clone(),
                parameters: camera.parameters.clone(),
                online: false,
            })
            .collect()
    }
}

impl WorkerService for IngestWorker {
    async fn handle(&self, request: WorkerRequest) -> WorkerReply {
        match request {
            WorkerRequest::ListSessions => WorkerReply::Sessions(Vec::new()),
            WorkerRequest::ListSessionsPage { .. } => WorkerReply::SessionsPage {
                sessions: Vec::new(),
                more: false,
            },
            WorkerRequest::DeleteSessions(_) => WorkerReply::SessionsDeleted(Vec::new()),
            WorkerRequest::ListStreams => WorkerReply::Streams(Vec::new()),
            WorkerRequest::MpegtsStatus => WorkerReply::Cameras(self.cameras()),
            WorkerRequest::SrtStats(_) | WorkerRequest::RistStats(_) | WorkerRequest::NdiList => {
                WorkerReply::JsonItems(Vec::new())
            }
            WorkerRequest::ApplyRules(rules) => {
                tracing::info!(inputs = rules.cameras.len(), "rules applied");
                *locked(&self.rules) = Arc::from(rules);
                WorkerReply::Done
            }
            other => WorkerReply::error(
                FailureKind::Unsupported,
                format!("the ingest worker does not handle {other:?}"),
            ),
        }
    }

    fn replace_listeners(&self, listeners: Vec<InheritedListener>) {
        if !listeners.is_empty() {
            tracing::warn!(
                count = listeners.len(),
                "ingest worker ignores TCP listeners"
            );
        }
    }

    fn replace_udp_sockets(&self, sockets: Vec<InheritedUdpSocket>) {
        self.udp.replace(sockets);
    }

    async fn drain(&self) {}
}
