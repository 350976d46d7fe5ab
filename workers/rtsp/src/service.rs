//! Worker-wide state of the rtsp worker and its answers to the supervisor.
//!
//! The worker produces the streams RTSP publishers send (announced to the supervisor,
//! served to other workers over its media bus) and plays every other stream relayed in
//! from the worker that produces it ([`Relays`], following the supervisor's registry)
//! while it has players here.

use crate::connection::{Accepted, serve};
use crate::shared::Shared;
use crate::tls::RtspsCertificate;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use strom_ipc::messages::{ListenerRole, ListenerSpec, WorkerReply, WorkerRequest};
use strom_ipc::{FailureKind, WorkerKind};
use strom_stream::Hub;
use strom_stream::bus::relays::Relays;
use strom_stream::pulls::PullSources;
use strom_worker_runtime::accept::ConnectionHandler;
use strom_worker_runtime::counters::ConnectionGuard;
use strom_worker_runtime::{AcceptLoops, InheritedListener, WorkerContext, WorkerService};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

struct RtspConnections {
    shared: Arc<Shared>,
    certificate: Arc<RtspsCertificate>,
}

impl ConnectionHandler for RtspConnections {
    async fn handle(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        listener: &ListenerSpec,
        guard: ConnectionGuard,
        shutdown: CancellationToken,
    ) {
        let _ = stream.set_nodelay(true);
        let secure = listener.role == ListenerRole::Rtsps;
        let accepted = Accepted {
            peer,
            local_ip: stream.local_addr().map(|a| a.ip()).ok(),
            secure,
        };
        let shared = Arc::clone(&self.shared);
        if !secure {
            return serve(stream, accepted, shared, guard, shutdown).await;
        }
        // The handshake holds a connection place too: it is what a flood would cost.
        let handshake_place = match shared.caps().take(peer.ip()) {
            Ok(place) => place,
            Err(reached) => {
                tracing::warn!(%peer, %reached, "rtsps connection refused");
                return;
            }
        };
        let tls = self.certificate.accept(stream).await;
        drop(handshake_place);
        match tls {
            Ok(tls) => serve(tls, accepted, shared, guard, shutdown).await,
            Err(error) => tracing::info!(%peer, %error, "rtsps connection dropped"),
        }
    }
}

pub struct RtspWorker {
    shared: Arc<Shared>,
    certificate: Arc<RtspsCertificate>,
    accept: AcceptLoops<RtspConnections>,
    relays: Arc<Relays>,
    pulls: PullSources,
}

/// Builds the worker from the hello and starts accepting.
pub fn start(context: WorkerContext) -> Result<Arc<RtspWorker>, String> {
    let hub = Hub::for_worker(context.events.clone(), &context.hello.settings.run_dir)
        .map_err(|e| format!("stream name claims in the run directory: {e}"))?;
    let pull_sources = context.hello.rules.pull_sources.clone();
    let shared = Arc::new(Shared::new(
        hub,
        context.hello.rules,
        context.hello.denied_publishers,
        Arc::clone(&context.counters),
        Arc::clone(&context.session_ids),
    ));
    let certificate = Arc::new(RtspsCertificate::new(context.hello.tls.as_ref())?);
    let accept = AcceptLoops::new(
        Arc::new(RtspConnections {
            shared: Arc::clone(&shared),
            certificate: Arc::clone(&certificate),
        }),
        Arc::clone(&context.counters),
        context.shutdown.clone(),
    );
    accept.replace(context.listeners);
    strom_stream::bus::producer::start(
        &context.hello.settings.run_dir,
        WorkerKind::Rtsp,
        shared.hub.clone(),
        Arc::clone(&shared.ids),
        context.shutdown.clone(),
    )?;
    // Streams other workers start on demand (edge pulls, RTMP on-demand pulls) are read
    // from them as soon as RTSP players ask.
    let gate = Arc::clone(&shared.gate);
    let relays = Relays::start_with_unlisted(
        shared.hub.clone(),
        Arc::clone(&shared.ids),
        WorkerKind::Rtsp,
        Box::new(|_| false),
        Some(strom_stream::gate::on_demand::unlisted(
            move || gate.rules(),
            context.hello.settings.run_dir.clone(),
        )),
        context.shutdown.clone(),
    );
    let pulls = crate::pull::start(Arc::clone(&shared), &pull_sources, context.shutdown.clone());
    Ok(Arc::new(RtspWorker {
        shared,
        certificate,
        accept,
        relays,
        pulls,
    }))
}

impl strom_stream::GatedService for RtspWorker {
    fn gate(&self) -> &strom_stream::Gate {
        &self.shared.gate
    }
}

impl WorkerService for RtspWorker {
    async fn handle(&self, request: WorkerRequest) -> WorkerReply {
        match request {
            WorkerRequest::ServerPlaylists => WorkerReply::ServerPlaylists(Vec::new()),
            WorkerRequest::ApplyRules(rules) => {
                let rules: Arc<strom_ipc::rules::Rules> = Arc::from(rules);
                self.shared.set_rules(Arc::clone(&rules));
                self.pulls.apply(&rules.pull_sources);
                self.relays.reconcile();
                WorkerReply::Done
            }
            WorkerRequest::StreamRegistry(locations) => {
                self.relays.apply_registry(locations);
                WorkerReply::Done
            }
            WorkerRequest::SetDraining(draining) => {
                if self.shared.set_draining(draining) != draining {
                    tracing::info!(draining, "rtsp: drain state changed");
                }
                WorkerReply::Done
            }
            WorkerRequest::SetTls(material) => match self.certificate.replace(&material) {
                Ok(()) => {
                    tracing::info!("rtsps certificate replaced for new connections");
                    WorkerReply::Done
                }
                Err(e) => WorkerReply::error(FailureKind::Invalid, e),
            },
            other => WorkerReply::error(
                FailureKind::Unsupported,
                format!("the rtsp worker does not handle {other:?}"),
            ),
        }
    }

    fn replace_listeners(&self, listeners: Vec<InheritedListener>) {
        self.accept.replace(listeners);
    }

    async fn drain(&self) {
        self.accept.drain(Duration::from_secs(5)).await;
    }
}
