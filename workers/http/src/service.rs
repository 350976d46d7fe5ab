//! The delivery worker's state and its answers to the supervisor.

use crate::edge_demand::EdgeDemand;
use crate::http::Delivery;
use crate::icecast::Titles;
use crate::packaging::Packaging;
use crate::source::Sources;
use crate::store::{Limits, Store};
use crate::tls::{SwappableCertificate, certified_key, server_config};
use crate::ts_viewers::TsViewers;
use crate::viewers::Viewers;
use hyper::header::HeaderValue;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strom_ipc::bus::StreamLocation;
use strom_ipc::messages::{DrmSettings, WorkerReply, WorkerRequest};
use strom_ipc::{FailureKind, WorkerKind};
use strom_stream::StreamKey;
use strom_worker_runtime::connection_caps::ConnectionCaps;
use strom_worker_runtime::sync::locked;
use strom_worker_runtime::{
    AcceptLoops, InheritedListener, WorkerContext, WorkerCounters, WorkerService,
};

/// How often ended streams are freed, the memory limit enforced and the caches reported.
const HOUSEKEEPING: Duration = Duration::from_secs(1);
/// Idle viewer sessions are swept every this many housekeeping ticks.
const SWEEP_EVERY: u32 = 5;

pub struct DeliveryWorker {
    accept: AcceptLoops<Delivery>,
    certificate: Arc<SwappableCertificate>,
    packaging: Arc<Packaging>,
    /// Icecast titles (`icecast_metadata`).
    titles: Arc<Titles>,
    /// The front door (playback protection, Icecast sources, the deny list).
    gate: Arc<strom_stream::Gate>,
    drm: Mutex<Option<DrmSettings>>,
    /// The last registry, re-evaluated when the rules change which apps get HLS; Icecast
    /// sources read it too (a mount another worker publishes is in use).
    registry: Arc<Mutex<Vec<StreamLocation>>>,
    /// Icecast sources publishing here.
    sources: Arc<Sources>,
    /// Streams pushed to other Icecast servers (`IcecastPush`).
    pushes: crate::icecast_push::IcecastPushes,
    /// Edge apps: packaged while HLS viewers ask for them.
    edge: Arc<EdgeDemand>,
    /// Draining (`SetDraining`): new viewers are refused.
    draining: Arc<AtomicBool>,
    /// DVR playback: learns from the registry which archives may still grow.
    dvr: Arc<crate::dvr_playback::DvrPlayback>,
}

pub fn start(context: WorkerContext) -> Result<Arc<DeliveryWorker>, String> {
    let certificate = Arc::new(SwappableCertificate::default());
    if let Some(material) = &context.hello.tls {
        certificate.replace(certified_key(material)?);
    }
    let settings = &context.hello.settings;
    let store = Arc::new(Store::new(
        &settings.run_dir,
        Limits {
            max_ram_bytes: settings.max_ram_cache_bytes,
            grace: Duration::from_secs(u64::from(settings.hls_stream_grace_secs)),
        },
    ));
    store.restore_all();
    // Icecast sources publish into this hub: it announces them to the supervisor and
    // serves them on the media bus like the rtmp and ingest workers' hubs.
    let hub = strom_stream::Hub::for_worker(context.events.clone(), &settings.run_dir)
        .map_err(|e| format!("stream name claims in the run directory: {e}"))?;
    let gate = Arc::new(strom_stream::Gate::new(
        hub.clone(),
        Arc::new(context.hello.rules.clone()),
        context.hello.denied_publishers.clone(),
    ));
    strom_stream::bus::producer::start(
        &settings.run_dir,
        WorkerKind::Packager,
        hub.clone(),
        Arc::clone(&context.session_ids),
        context.shutdown.clone(),
    )?;
    let packaging = Arc::new(Packaging::new(
        Arc::clone(&gate),
        Arc::clone(&store),
        Arc::clone(&context.session_ids),
        context.shutdown.clone(),
    ));
    let idle = Duration::from_secs(u64::from(context.hello.settings.hls_session_timeout_secs));
    let edge = Arc::new(EdgeDemand::new(
        Arc::clone(&packaging),
        settings.run_dir.clone(),
        idle,
    ));
    tokio::spawn(crate::edge_demand::expire_loop(
        Arc::clone(&edge),
        context.shutdown.clone(),
    ));
    let draining = Arc::new(AtomicBool::new(false));
    let viewers = Arc::new(Viewers::new(
        Arc::clone(&context.session_ids),
        gate.sessions().clone(),
        idle,
    ));
    let ts_viewers = Arc::new(TsViewers::new(
        Arc::clone(&context.session_ids),
        Arc::clone(&gate),
    ));
    let titles = Arc::new(Titles::with_hub(packaging.hub().clone()));
    let registry = Arc::new(Mutex::new(Vec::new()));
    let sources = Arc::new(Sources::new(
        Arc::clone(&gate),
        Arc::clone(&context.session_ids),
        Arc::clone(&context.counters),
    ));
    let pushes = crate::icecast_push::IcecastPushes::new(
        packaging.hub().clone(),
        Arc::clone(&context.session_ids),
        Arc::clone(&titles),
        context.shutdown.clone(),
    );
    pushes.apply(&context.hello.rules);
    let dvr = Arc::new(crate::dvr_playback::DvrPlayback::new(
        settings.data_dir.clone(),
    ));
    let cors_origin = HeaderValue::from_str(&context.hello.settings.cors_origin)
        .map_err(|e| format!("access_control_allow_origin: {e}"))?;
    let header_timeout = Duration::from_secs(u64::from(
        context.hello.settings.http_limits.header_timeout_secs,
    ));
    let handler = Delivery {
        counters: Arc::clone(&context.counters),
        certificate: Arc::clone(&certificate),
        tls: delivery_tls(Arc::clone(&certificate))?,
        packaging: Arc::clone(&packaging),
        edge: Arc::clone(&edge),
        draining: Arc::clone(&draining),
        viewers: Arc::clone(&viewers),
        ts_viewers,
        titles: Arc::clone(&titles),
        gate: Arc::clone(&gate),
        cors_origin,
        sources: Arc::clone(&sources),
        caps: {
            let limits = context.hello.settings.http_limits;
            ConnectionCaps::new(
                usize::try_from(limits.max_connections).unwrap_or(usize::MAX),
                limits.max_connections_per_ip,
            )
        },
        icecast_burst_bytes: usize::try_from(context.hello.settings.icecast_burst_bytes)
            .unwrap_or(usize::MAX),
        header_timeout,
        dvr: Arc::clone(&dvr),
        signaling: Arc::new(crate::webrtc_proxy::SignalingProxy::new(
            &strom_ipc::contract::webrtc_signaling_path(&context.hello.settings.run_dir),
            Arc::clone(&context.counters),
            header_timeout,
        )),
    };
    let accept = AcceptLoops::new(
        Arc::new(handler),
        Arc::clone(&context.counters),
        context.shutdown.clone(),
    );
    accept.replace(context.listeners);
    tokio::spawn(housekeeping(
        Arc::clone(&store),
        viewers,
        Arc::clone(&context.counters),
        context.shutdown.clone(),
    ));
    Ok(Arc::new(DeliveryWorker {
        accept,
        certificate,
        packaging,
        titles,
        gate,
        drm: Mutex::new(context.hello.drm),
        registry,
        sources,
        pushes,
        edge,
        draining,
        dvr,
    }))
}

/// Frees ended streams, keeps segment memory within its limit, expires idle viewers and
/// reports the caches (`RamCacheSize`, `FileCacheSize`).
async fn housekeeping(
    store: Arc<Store>,
    viewers: Arc<Viewers>,
    counters: Arc<WorkerCounters>,
    shutdown: tokio_util::sync::CancellationToken,
) {
    let mut tick = tokio::time::interval(HOUSEKEEPING);
    let mut ticks: u32 = 0;
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = tick.tick() => {
                ticks = ticks.wrapping_add(1);
                if ticks.is_multiple_of(SWEEP_EVERY) {
                    viewers.sweep();
                }
                let maintained = Arc::clone(&store);
                // Deleting directories blocks: off the async threads.
                let _ = tokio::task::spawn_blocking(move || maintained.maintain()).await;
                counters.set_ram_cache_bytes(store.ram_bytes());
                counters.set_file_cache_bytes(store.disk_bytes());
            }
        }
    }
}

impl DeliveryWorker {
    /// The live stream `app/stream` when it is delivered as Icecast and has an audio
    /// track Icecast carries.
    fn icecast_stream(&self, app: &str, stream: &str) -> Option<Arc<strom_stream::Stream>> {
        let rules = self.packaging.rules();
        if !rules
            .delivery
            .for_stream(app, stream)
            .has(strom_ipc::rules::DeliveryOutput::Icecast)
        {
            return None;
        }
        self.packaging
            .hub()
            .get(&StreamKey::new(app, stream))
            .filter(|s| s.publisher().is_some())
            .filter(|s| crate::icecast::content_type(&s.codecs().acodec).is_some())
    }
}

impl strom_stream::GatedService for DeliveryWorker {
    fn gate(&self) -> &strom_stream::Gate {
        &self.gate
    }

    /// The title of a stream relayed here (produced by another worker) is this worker's
    /// listeners' and pushes' only; a stream produced here (an Icecast source) takes it
    /// through the gate like every producer's.
    fn answer_first(&self, request: &WorkerRequest) -> Option<WorkerReply> {
        let WorkerRequest::IcecastMetadata {
            app,
            stream,
            title,
            url,
        } = request
        else {
            return None;
        };
        let key = StreamKey::new(app.as_str(), stream.as_str());
        let produced_here = self
            .packaging
            .hub()
            .get(&key)
            .and_then(|live| live.publisher())
            .is_some_and(|p| p.relayed_from.is_none());
        if produced_here {
            return None;
        }
        Some(match self.icecast_stream(app, stream) {
            Some(_) => {
                tracing::info!(stream = %key, %title, "icecast title set for this worker's listeners");
                self.titles.set(&key, title, url);
                WorkerReply::Done
            }
            None => WorkerReply::error(FailureKind::NotFound, "no such stream"),
        })
    }
}

impl WorkerService for DeliveryWorker {
    async fn handle(&self, request: WorkerRequest) -> WorkerReply {
        match request {
            WorkerRequest::IcecastInfo { app, stream } => {
                let key = StreamKey::new(app, stream);
                let source = self.sources.of_stream(&key);
                let live = self
                    .icecast_stream(&key.app, &key.stream)
                    .or_else(|| source.as_ref().and_then(|_| self.packaging.hub().get(&key)));
                match live {
                    Some(live) => {
                        let title = self.titles.get(&key);
                        let mut info = crate::icecast::info(&key, live.bandwidth_bps(), &title);
                        if let Some(source) = source {
                            source.info.describe(&mut info);
                        }
                        WorkerReply::Icecast(info)
                    }
                    None => WorkerReply::error(FailureKind::NotFound, "no such stream"),
                }
            }
            WorkerRequest::StreamRegistry(locations) => {
                self.dvr.apply_registry(&locations);
                *locked(&self.registry) = locations.clone();
                self.edge.apply_registry(Some(locations));
                WorkerReply::Done
            }
            WorkerRequest::SetDraining(draining) => {
                if self.draining.swap(draining, Ordering::Relaxed) != draining {
                    tracing::info!(draining, "packager: drain state changed");
                }
                WorkerReply::Done
            }
            WorkerRequest::SetTls(material) => match certified_key(&material) {
                Ok(key) => {
                    self.certificate.replace(key);
                    tracing::info!("tls certificate replaced for new connections");
                    WorkerReply::Done
                }
                Err(e) => WorkerReply::error(FailureKind::Invalid, e),
            },
            WorkerRequest::SetDrm(settings) => {
                tracing::info!(keys = settings.hls_aes128.len(), "drm settings replaced");
                *locked(&self.drm) = Some(settings);
                WorkerReply::Done
            }
            WorkerRequest::ApplyRules(rules) => {
                self.packaging.set_rules(*rules);
                self.pushes.apply(&self.packaging.rules());
                self.edge
                    .apply_registry(Some(locked(&self.registry).clone()));
                WorkerReply::Done
            }
            other => WorkerReply::error(
                FailureKind::Unsupported,
                format!("the packager does not handle {other:?}"),
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

/// The HTTPS delivery port's TLS: HTTP/2 offered first by ALPN, then HTTP/1.1
/// ([`crate::http2`]).
fn delivery_tls(
    certificate: Arc<crate::tls::SwappableCertificate>,
) -> Result<Arc<rustls::ServerConfig>, String> {
    let mut config = (*server_config(certificate)?).clone();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
