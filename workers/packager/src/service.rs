//! The packager's answers to the supervisor.

use crate::http::DeliveryConnections;
use crate::tls::{SwappableCertificate, certified_key, server_config};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strom_ipc::messages::{DrmSettings, WorkerReply, WorkerRequest};
use strom_worker_runtime::sync::locked;
use strom_worker_runtime::{AcceptLoops, InheritedListener, WorkerContext, WorkerService};

pub struct PackagerWorker {
    accept: AcceptLoops<DeliveryConnections>,
    certificate: Arc<SwappableCertificate>,
    drm: Mutex<Option<DrmSettings>>,
}

pub fn start(context: WorkerContext) -> Result<Arc<PackagerWorker>, String> {
    let certificate = Arc::new(SwappableCertificate::default());
    if let Some(material) = &context.hello.tls {
        certificate.replace(certified_key(material)?);
    }
    let handler = DeliveryConnections {
        counters: Arc::clone(&context.counters),
        certificate: Arc::clone(&certificate),
        tls: server_config(Arc::clone(&certificate))?,
    };
    let accept = AcceptLoops::new(
        Arc::new(handler),
        Arc::clone(&context.counters),
        context.shutdown.clone(),
    );
    accept.replace(context.listeners);
    Ok(Arc::new(PackagerWorker {
        accept,
        certificate,
        drm: Mutex::new(context.hello.drm),
    }))
}

impl WorkerService for PackagerWorker {
    async fn handle(&self, request: WorkerRequest) -> WorkerReply {
        match request {
            WorkerRequest::ListSessions => WorkerReply::Sessions(Vec::new()),
            WorkerRequest::DeleteSessions(_) => WorkerReply::SessionsDeleted(Vec::new()),
            WorkerRequest::IcecastInfo { .. }
            | WorkerRequest::IcecastMetadata { .. }
            | WorkerRequest::Scte35 { .. } => WorkerReply::NotFound,
            WorkerRequest::SetTls(material) => match certified_key(&material) {
                Ok(key) => {
                    self.certificate.replace(key);
                    tracing::info!("tls certificate replaced for new connections");
                    WorkerReply::Done
                }
                Err(e) => WorkerReply::Failed(e),
            },
            WorkerRequest::SetDrm(settings) => {
                tracing::info!(keys = settings.hls_aes128.len(), "drm settings replaced");
                *locked(&self.drm) = Some(settings);
                WorkerReply::Done
            }
            WorkerRequest::ApplyRules(_) => WorkerReply::Done,
            other => WorkerReply::Failed(format!("the packager does not handle {other:?}")),
        }
    }

    fn replace_listeners(&self, listeners: Vec<InheritedListener>) {
        self.accept.replace(listeners);
    }

    async fn drain(&self) {
        self.accept.drain(Duration::from_secs(5)).await;
    }
}
