//! The MPEG-TS worker (process kind `ingest`): MPEG-TS in and out over UDP, SRT and
//! RIST, and the NDI source list.
//!
//! Owns the configured inputs (`Cameras`): each `udp` input's datagrams ([`udp`]), each
//! SRT connection's messages ([`srt_input`], over libsrt in [`srt`]) and each RIST
//! input's blocks ([`rist_input`], over librist in [`rist`]) are demuxed ([`ts_input`])
//! into the worker's stream hub as their `app/stream`, which the worker serves on the
//! media bus, so RTMP players, HLS and re-publishing take them like an RTMP publish.
//! Answers the MPEG-TS status with each input's live state, the SRT receiver
//! statistics and sessions, librist's receiver stats, and the NDI sources mDNS finds
//! ([`ndi`]). Plays server playlists out as live streams of its hub ([`playout`]), and
//! pulls the streams of edge apps with SRT origins while they are read ([`srt_edges`]).

mod input_status;
#[cfg(test)]
mod layout_table;
mod ndi;
mod outputs;
mod playout;
pub mod rist;
mod rist_input;
mod shared;
pub mod srt;
mod srt_connections;
mod srt_edges;
mod srt_input;
mod threads;
mod ts_input;
mod udp;

use shared::MpegTsShared;
use std::sync::{Arc, Mutex};
use strom_ipc::messages::{StatsDirection, WorkerReply, WorkerRequest};
use strom_ipc::rules::Rules;
use strom_ipc::status::CameraStatus;
use strom_ipc::{FailureKind, WorkerKind};
use strom_stream::Hub;
use strom_stream::bus::relays::Relays;
use strom_worker_runtime::{InheritedListener, InheritedUdpSocket, WorkerContext, WorkerService};
use udp::UdpReceivers;

pub struct MpegTsWorker {
    shared: Arc<MpegTsShared>,
    udp: UdpReceivers,
    rist: rist_input::RistInputs,
    ndi: ndi::NdiSources,
    /// Feeds streams of other workers into the hub while TS outputs read them (and streams
    /// of edge apps from the rtmp worker, which pulls them on that demand).
    relays: Arc<Relays>,
    /// Streams of edge apps with SRT origins, pulled while read.
    edges: Arc<strom_stream::pulls::EdgePulls>,
    playouts: Arc<playout::Playouts>,
}

pub fn start(context: WorkerContext) -> Result<Arc<MpegTsWorker>, String> {
    if !context.listeners.is_empty() {
        return Err(format!(
            "the ingest worker takes no TCP listeners, got {}",
            context.listeners.len()
        ));
    }
    let hub = Hub::for_worker(context.events.clone(), &context.hello.settings.run_dir)
        .map_err(|e| format!("stream name claims in the run directory: {e}"))?;
    strom_stream::bus::producer::start(
        &context.hello.settings.run_dir,
        WorkerKind::Ingest,
        hub.clone(),
        Arc::clone(&context.session_ids),
        context.shutdown.clone(),
    )?;
    let shared = Arc::new(MpegTsShared {
        hub: hub.clone(),
        ids: context.session_ids,
        counters: context.counters,
        status: Mutex::default(),
        srt: Default::default(),
        outputs: Default::default(),
        gate: Arc::new(strom_stream::Gate::new(
            hub.clone(),
            Arc::new(context.hello.rules.clone()),
            context.hello.denied_publishers.clone(),
        )),
    });
    let relays = Relays::start_with_unlisted(
        shared.hub.clone(),
        Arc::clone(&shared.ids),
        WorkerKind::Ingest,
        Box::new(|_| false),
        Some({
            let gate = Arc::clone(&shared.gate);
            strom_stream::gate::on_demand::unlisted(
                move || gate.rules(),
                context.hello.settings.run_dir.clone(),
            )
        }),
        context.shutdown.clone(),
    );
    let edges = srt_edges::start(Arc::clone(&shared), context.shutdown.clone());
    let playouts = playout::Playouts::start(
        shared.hub.clone(),
        Arc::clone(&shared.ids),
        context.hello.rules.server_playlists.as_ref(),
        context.shutdown.clone(),
    );
    let rist = rist_input::RistInputs::new(Arc::clone(&shared), context.shutdown.clone());
    rist.restart(&context.hello.rules);
    let udp = UdpReceivers::new(Arc::clone(&shared), context.shutdown);
    udp.replace(context.udp_sockets, &context.hello.rules);
    Ok(Arc::new(MpegTsWorker {
        shared,
        udp,
        rist,
        ndi: ndi::NdiSources::start(&context.hello.settings.ndi_discovery_interfaces),
        relays,
        edges,
        playouts,
    }))
}

impl MpegTsWorker {
    fn cameras(&self) -> Vec<CameraStatus> {
        let rules = self.shared.rules();
        rules
            .cameras
            .iter()
            .map(|camera| {
                let status = self.shared.status_of(&camera.id);
                CameraStatus {
                    id: camera.id.clone(),
                    ip: camera.ip.clone(),
                    port: camera.port,
                    protocol: camera.protocol.clone(),
                    receive_mode: camera.receive_mode.clone(),
                    parameters: camera.parameters.clone(),
                    online: status.online(),
                    bytes_received: status.total_bytes(),
                    bitrate_bps: status.bits_per_second(),
                    programs: status.programs(),
                }
            })
            .collect()
    }
}

impl strom_stream::GatedService for MpegTsWorker {
    fn gate(&self) -> &strom_stream::Gate {
        &self.shared.gate
    }
}

impl WorkerService for MpegTsWorker {
    async fn handle(&self, request: WorkerRequest) -> WorkerReply {
        match request {
            WorkerRequest::StreamRegistry(locations) => {
                self.edges.apply_registry(&locations);
                self.relays.apply_registry(locations);
                WorkerReply::Done
            }
            WorkerRequest::MpegtsStatus => WorkerReply::Cameras(self.cameras()),
            WorkerRequest::SrtStats(StatsDirection::Receivers) => {
                WorkerReply::JsonItems(self.shared.srt.receiver_stats())
            }
            WorkerRequest::RistStats(StatsDirection::Receivers) => {
                WorkerReply::JsonItems(self.rist.receiver_stats())
            }
            WorkerRequest::SrtStats(StatsDirection::Senders) => {
                WorkerReply::JsonItems(self.shared.outputs.srt_sender_stats())
            }
            WorkerRequest::RistStats(StatsDirection::Senders) => {
                WorkerReply::JsonItems(self.shared.outputs.rist_sender_stats())
            }
            WorkerRequest::NdiList => WorkerReply::JsonItems(self.ndi.list()),
            WorkerRequest::ServerPlaylists => WorkerReply::ServerPlaylists(self.playouts.status()),
            WorkerRequest::ApplyRules(rules) => {
                tracing::info!(
                    inputs = rules.cameras.len(),
                    outputs = rules.ts_outputs.len(),
                    "rules applied"
                );
                let rules: Arc<Rules> = Arc::from(rules);
                let old = self.shared.rules();
                self.shared.gate.set_rules(Arc::clone(&rules));
                // Inputs and outputs restart only when they changed (an ad-insertion
                // change alone must not interrupt them).
                if old.cameras != rules.cameras || old.ts_outputs != rules.ts_outputs {
                    self.udp.restart(&rules);
                    self.rist.restart(&rules);
                }
                if old.edges != rules.edges {
                    self.edges.apply();
                    self.relays.reconcile();
                }
                // Also a re-read of the playlist file (a reload asks for one).
                self.playouts.apply(rules.server_playlists.as_ref());
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
        let rules = self.shared.rules();
        self.udp.replace(sockets, &rules);
    }

    async fn drain(&self) {}
}
