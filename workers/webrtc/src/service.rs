//! Worker-wide state of the webrtc worker and its answers to the supervisor.
//!
//! The worker produces the streams WHIP publishers send (announced to the supervisor,
//! served to other workers over its media bus) and plays every other stream relayed in
//! from the worker that produces it ([`Relays`]) while it has viewers here.

use crate::feed::Feeds;
use crate::ice_udp::UdpCounters;
use crate::shared::{IcePort, Shared};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strom_ipc::messages::{ListenerSpec, WorkerReply, WorkerRequest};
use strom_ipc::{FailureKind, WorkerKind};
use strom_stream::bus::relays::Relays;
use strom_stream::{Gate, Hub};
use strom_worker_runtime::accept::ConnectionHandler;
use strom_worker_runtime::connection_caps::ConnectionCaps;
use strom_worker_runtime::counters::ConnectionGuard;
use strom_worker_runtime::login_throttle::client_key;
use strom_worker_runtime::sync::locked;
use strom_worker_runtime::{
    AcceptLoops, InheritedListener, InheritedUdpSocket, WorkerContext, WorkerService,
};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

struct IceTcpConnections {
    shared: Arc<Shared>,
    /// Connections per client address, with the cap they were made for (rebuilt when a
    /// reload changes `max_sessions_per_ip`; places in the old ones are given back there).
    caps: Mutex<(u32, Arc<ConnectionCaps>)>,
}

impl IceTcpConnections {
    fn new(shared: Arc<Shared>) -> Self {
        let cap = crate::ice_tcp::per_address_cap(&shared.settings().limits);
        Self {
            shared,
            caps: Mutex::new((cap, ConnectionCaps::new(usize::MAX, cap))),
        }
    }

    fn caps(&self) -> Arc<ConnectionCaps> {
        let cap = crate::ice_tcp::per_address_cap(&self.shared.settings().limits);
        let mut caps = locked(&self.caps);
        if caps.0 != cap {
            *caps = (cap, ConnectionCaps::new(usize::MAX, cap));
        }
        Arc::clone(&caps.1)
    }
}

impl ConnectionHandler for IceTcpConnections {
    async fn handle(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        _listener: &ListenerSpec,
        _guard: ConnectionGuard,
        shutdown: CancellationToken,
    ) {
        let _place = match self.caps().take(client_key(peer.ip())) {
            Ok(place) => place,
            Err(reached) => {
                strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); %peer, %reached, "ice-tcp connection refused");
                return;
            }
        };
        crate::ice_tcp::serve(stream, peer, Arc::clone(&self.shared.routes), shutdown).await;
    }
}

pub struct WebRtcWorker {
    shared: Arc<Shared>,
    accept: AcceptLoops<IceTcpConnections>,
    relays: Arc<Relays>,
    udp: Mutex<CancellationToken>,
    udp_counters: Arc<UdpCounters>,
    /// The shared ICE UDP sockets in use, whose buffers follow `socket_buffer_bytes`.
    udp_sockets: Mutex<Vec<Arc<tokio::net::UdpSocket>>>,
    shutdown: CancellationToken,
}

/// Builds the worker from the hello and starts serving.
pub fn start(context: WorkerContext) -> Result<Arc<WebRtcWorker>, String> {
    let hub = Hub::for_worker(context.events.clone(), &context.hello.settings.run_dir)
        .map_err(|e| format!("stream name claims in the run directory: {e}"))?;
    let gate = Arc::new(Gate::new(
        hub.clone(),
        Arc::new(context.hello.rules),
        context.hello.denied_publishers,
    ));
    let feeds = Feeds::new(
        hub.clone(),
        Arc::clone(&context.session_ids),
        context.shutdown.clone(),
    );
    let shared = Arc::new(Shared::new(
        Arc::clone(&gate),
        feeds,
        Arc::clone(&context.counters),
        Arc::clone(&context.session_ids),
    ));
    let run_dir = &context.hello.settings.run_dir;
    strom_stream::bus::producer::start(
        run_dir,
        WorkerKind::WebRtc,
        hub.clone(),
        Arc::clone(&context.session_ids),
        context.shutdown.clone(),
    )?;
    // Streams other workers start on demand (edge pulls, on-demand pulls) are read from
    // them as soon as a viewer asks.
    let rules_of = Arc::clone(&gate);
    let relays = Relays::start_with_unlisted(
        hub,
        Arc::clone(&context.session_ids),
        WorkerKind::WebRtc,
        Box::new(|_| false),
        Some(strom_stream::gate::on_demand::unlisted(
            move || rules_of.rules(),
            run_dir.clone(),
        )),
        context.shutdown.clone(),
    );
    crate::signaling::start(
        &strom_ipc::contract::webrtc_signaling_path(run_dir),
        Arc::clone(&shared),
        context.shutdown.clone(),
    )?;
    let accept = AcceptLoops::new(
        Arc::new(IceTcpConnections::new(Arc::clone(&shared))),
        Arc::clone(&context.counters),
        context.shutdown.clone(),
    );
    let worker = Arc::new(WebRtcWorker {
        shared,
        accept,
        relays,
        udp: Mutex::new(context.shutdown.child_token()),
        udp_counters: Arc::new(UdpCounters::default()),
        udp_sockets: Mutex::default(),
        shutdown: context.shutdown.clone(),
    });
    worker.replace_listeners(context.listeners);
    worker.replace_udp_sockets(context.udp_sockets);
    Ok(worker)
}

impl WebRtcWorker {
    fn set_ports(&self, tcp: bool, ports: impl Iterator<Item = SocketAddr>) {
        let mut known = locked(&self.shared.ports);
        known.retain(|p| p.tcp != tcp);
        known.extend(ports.map(|local| IcePort { tcp, local }));
    }
}

impl strom_stream::GatedService for WebRtcWorker {
    fn gate(&self) -> &Gate {
        &self.shared.gate
    }
}

impl WorkerService for WebRtcWorker {
    async fn handle(&self, request: WorkerRequest) -> WorkerReply {
        match request {
            WorkerRequest::ServerPlaylists => WorkerReply::ServerPlaylists(Vec::new()),
            WorkerRequest::ApplyRules(rules) => {
                let buffer = rules.webrtc.limits.socket_buffer_bytes;
                if buffer != self.shared.settings().limits.socket_buffer_bytes {
                    for socket in locked(&self.udp_sockets).iter() {
                        crate::socket_buffers::size(socket, buffer);
                    }
                }
                self.shared.gate.set_rules(Arc::from(rules));
                self.relays.reconcile();
                WorkerReply::Done
            }
            WorkerRequest::StreamRegistry(locations) => {
                self.relays.apply_registry(locations);
                WorkerReply::Done
            }
            WorkerRequest::SetDraining(draining) => {
                if self.shared.set_draining(draining) != draining {
                    tracing::info!(draining, "webrtc: drain state changed");
                }
                WorkerReply::Done
            }
            other => WorkerReply::error(
                FailureKind::Unsupported,
                format!("the webrtc worker does not handle {other:?}"),
            ),
        }
    }

    fn replace_listeners(&self, listeners: Vec<InheritedListener>) {
        self.set_ports(
            true,
            listeners
                .iter()
                .filter_map(|l| l.listener.local_addr().ok()),
        );
        self.accept.replace(listeners);
    }

    fn replace_udp_sockets(&self, sockets: Vec<InheritedUdpSocket>) {
        let stop = self.shutdown.child_token();
        locked(&self.udp).cancel();
        *locked(&self.udp) = stop.clone();
        self.set_ports(
            false,
            sockets.iter().filter_map(|s| s.socket.local_addr().ok()),
        );
        let buffer = self.shared.settings().limits.socket_buffer_bytes;
        let sockets: Vec<Arc<tokio::net::UdpSocket>> = sockets
            .into_iter()
            .map(|lent| Arc::new(lent.socket))
            .collect();
        for socket in &sockets {
            crate::socket_buffers::size(socket, buffer);
        }
        *locked(&self.udp_sockets) = sockets.clone();
        for socket in sockets {
            tracing::info!(address = ?socket.local_addr().ok(), "webrtc ice port (udp)");
            tokio::spawn(crate::ice_udp::receive(
                socket,
                Arc::clone(&self.shared.routes),
                Arc::clone(&self.udp_counters),
                stop.clone(),
            ));
        }
    }

    async fn drain(&self) {
        self.accept.drain(Duration::from_secs(5)).await;
    }
}
