//! Worker-wide state of the rtmp worker and its answers to the supervisor.
//!
//! Besides accepting connections, the worker pushes streams to other servers
//! ([`Republisher`]) and pulls streams from them ([`crate::pull`]); both follow `ApplyRules`.
//! Streams other workers produce are relayed in over the media bus when played or
//! re-published here ([`Relays`], following the supervisor's stream registry).

use crate::republish::Republisher;
use crate::shared::Shared;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use strom_ipc::messages::{ListenerSpec, WorkerReply, WorkerRequest};
use strom_ipc::rules::Rules;
use strom_ipc::{FailureKind, WorkerKind};
use strom_stream::bus::relays::Relays;
use strom_stream::pulls::PullSources;
use strom_worker_runtime::accept::ConnectionHandler;
use strom_worker_runtime::counters::ConnectionGuard;
use strom_worker_runtime::{AcceptLoops, InheritedListener, WorkerContext, WorkerService};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

struct RtmpConnections {
    shared: Arc<Shared>,
}

impl ConnectionHandler for RtmpConnections {
    async fn handle(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        _listener: &ListenerSpec,
        guard: ConnectionGuard,
        shutdown: CancellationToken,
    ) {
        crate::connection::serve(stream, peer, Arc::clone(&self.shared), guard, shutdown).await;
    }
}

pub struct RtmpWorker {
    shared: Arc<Shared>,
    accept: AcceptLoops<RtmpConnections>,
    republisher: Republisher,
    pulls: PullSources,
    /// Edge rules: streams pulled from origins on demand.
    edges: Arc<strom_stream::pulls::EdgePulls>,
    relays: Arc<Relays>,
}

/// Builds the worker from the hello and starts accepting.
pub fn start(context: WorkerContext) -> Result<Arc<RtmpWorker>, String> {
    let http = reqwest::Client::builder()
        .build()
        .map_err(|e| format!("http client: {e}"))?;
    let republish_rules = context.hello.rules.republish.clone();
    let pull_sources = context.hello.rules.pull_sources.clone();
    let hub =
        strom_stream::Hub::for_worker(context.events.clone(), &context.hello.settings.run_dir)
            .map_err(|e| format!("stream name claims in the run directory: {e}"))?;
    let shared = Arc::new(Shared::new(
        context.hello.rules,
        context.hello.denied_publishers,
        Arc::clone(&context.counters),
        Arc::clone(&context.session_ids),
        hub,
        http,
    ));
    let accept = AcceptLoops::new(
        Arc::new(RtmpConnections {
            shared: Arc::clone(&shared),
        }),
        Arc::clone(&context.counters),
        context.shutdown.clone(),
    );
    accept.replace(context.listeners);
    strom_stream::bus::producer::start(
        &context.hello.settings.run_dir,
        WorkerKind::Rtmp,
        shared.streams.clone(),
        Arc::clone(&shared.ids),
        context.shutdown.clone(),
    )?;
    let republisher = Republisher::start(
        Arc::clone(&shared),
        republish_rules,
        context.shutdown.clone(),
    );
    let pulls = crate::pull::start(Arc::clone(&shared), &pull_sources, context.shutdown.clone());
    let edges = crate::pull::edge::start(Arc::clone(&shared), context.shutdown.clone());
    let relays = relays(
        &shared,
        Some(context.hello.settings.run_dir.clone()),
        context.shutdown.clone(),
    );
    Ok(Arc::new(RtmpWorker {
        shared,
        accept,
        republisher,
        pulls,
        edges,
        relays,
    }))
}

/// Relays of other workers' streams into the hub: while they have players here, or a
/// re-publishing rule wants them; with the server's `run_dir`, also streams another
/// worker starts on demand (an RTSP camera's on-demand pull) for players here.
fn relays(
    shared: &Arc<Shared>,
    run_dir: Option<std::path::PathBuf>,
    shutdown: CancellationToken,
) -> Arc<Relays> {
    let rules_of = Arc::clone(shared);
    let gate = Arc::clone(&shared.gate);
    let on_demand =
        run_dir.map(|dir| strom_stream::gate::on_demand::unlisted(move || gate.rules(), dir));
    Relays::start_with_unlisted(
        shared.streams.clone(),
        Arc::clone(&shared.ids),
        strom_ipc::WorkerKind::Rtmp,
        Box::new(move |key| {
            let rules = rules_of.rules();
            rules
                .republish
                .iter()
                .any(|rule| crate::republish::matches(rule, key))
        }),
        on_demand,
        shutdown,
    )
}

impl RtmpWorker {
    /// The worker around `shared`, with no listeners (tests accept connections themselves).
    #[cfg(test)]
    pub(crate) fn for_tests(shared: Arc<Shared>) -> Self {
        let shutdown = CancellationToken::new();
        let accept = AcceptLoops::new(
            Arc::new(RtmpConnections {
                shared: Arc::clone(&shared),
            }),
            Arc::clone(&shared.counters),
            shutdown.clone(),
        );
        let rules = shared.rules();
        let republisher = Republisher::start(
            Arc::clone(&shared),
            rules.republish.clone(),
            shutdown.clone(),
        );
        let pulls = crate::pull::start(Arc::clone(&shared), &rules.pull_sources, shutdown.clone());
        let edges = crate::pull::edge::start(Arc::clone(&shared), shutdown.clone());
        let relays = relays(&shared, None, shutdown);
        Self {
            shared,
            accept,
            republisher,
            pulls,
            edges,
            relays,
        }
    }
}

impl strom_stream::GatedService for RtmpWorker {
    fn gate(&self) -> &strom_stream::Gate {
        &self.shared.gate
    }
}

impl WorkerService for RtmpWorker {
    async fn handle(&self, request: WorkerRequest) -> WorkerReply {
        match request {
            WorkerRequest::ServerPlaylists => WorkerReply::ServerPlaylists(Vec::new()),
            WorkerRequest::RepublishStats => WorkerReply::RepublishStats(self.republisher.stats()),
            WorkerRequest::ApplyRules(rules) => {
                tracing::info!("rules applied");
                let rules: Arc<Rules> = Arc::from(rules);
                self.shared.set_rules(Arc::clone(&rules));
                self.republisher.apply(&rules.republish);
                self.pulls.apply(&rules.pull_sources);
                self.edges.apply();
                self.relays.reconcile();
                WorkerReply::Done
            }
            WorkerRequest::StreamRegistry(locations) => {
                self.edges.apply_registry(&locations);
                self.relays.apply_registry(locations);
                WorkerReply::Done
            }
            WorkerRequest::SetDraining(draining) => {
                if self.shared.set_draining(draining) != draining {
                    tracing::info!(draining, "rtmp: drain state changed");
                }
                WorkerReply::Done
            }
            other => WorkerReply::error(
                FailureKind::Unsupported,
                format!("the rtmp worker does not handle {other:?}"),
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
