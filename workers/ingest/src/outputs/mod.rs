//! MPEG-TS outputs (`TsOutputs` in `rules.conf`): live streams sent out over SRT
//! ([`srt_out`]: a listener that callers choose streams from, or a push to a remote
//! listener), RIST ([`rist_out`]) and UDP ([`udp_out`], optionally at a constant mux
//! rate). Every output reads its stream from the worker's hub as MPEG-TS (`TsFeed`:
//! frames rendered once, continuity counters per receiver); streams that other workers
//! produce (an RTMP publish) are relayed into the hub over the media bus while an output
//! reads them (`strom_stream::bus::relays`).
//!
//! Streams of `Edge` apps are relayed from the rtmp worker while outputs read them, even
//! before the registry lists them ([`edge_source`]): that bus subscription is a reader in
//! the rtmp worker, which pulls the stream from the origins on that demand. SRT callers of
//! such a stream wait for it (up to [`srt_out::EDGE_WAIT`]).
//!
//! SRT connections of outputs are listed as sessions (type `SRT`) and in
//! `srt_sender_stats`; RIST outputs with `rist-stats-interval` in `rist_sender_stats`.

mod caller_watch;
mod follow;
mod rist_out;
mod srt_out;
mod udp_out;

use crate::rist::StatsSlot;
use crate::srt::SrtSocket;
use crate::udp::IngestShared;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use strom_ipc::messages::ListenerRole;
use strom_ipc::rules::{Rules, TsOutputSettings};
use strom_ipc::status::SessionInfo;
use strom_stream::StreamKey;
use strom_worker_runtime::InheritedUdpSocket;
use strom_worker_runtime::clock::unix_now;
use strom_worker_runtime::sync::locked;
use tokio_util::sync::CancellationToken;

/// One SRT connection of an output (a caller of a listener, or a push).
pub struct SrtSender {
    pub session_id: u64,
    pub output: String,
    pub key: StreamKey,
    pub peer: SocketAddr,
    pub created: i64,
    pub socket: Arc<SrtSocket>,
    /// Cancelled by `sessions/delete`.
    pub stop: CancellationToken,
    /// Frames the connection lost by falling behind, once it reads the stream.
    pub dropped: std::sync::OnceLock<strom_stream::DropCounter>,
    /// The pay-per-view id of a signed caller.
    pub ppv_id: Option<String>,
}

/// What the outputs show the API.
#[derive(Default)]
pub struct OutputState {
    srt: Mutex<HashMap<u64, Arc<SrtSender>>>,
    /// Stats of RIST outputs with `rist-stats-interval`, by output id.
    rist: Mutex<HashMap<String, Arc<StatsSlot>>>,
}

impl OutputState {
    fn add_srt(&self, sender: Arc<SrtSender>) {
        locked(&self.srt).insert(sender.session_id, sender);
    }

    fn remove_srt(&self, session_id: u64) {
        locked(&self.srt).remove(&session_id);
    }

    fn callers_of(&self, output: &str) -> usize {
        locked(&self.srt)
            .values()
            .filter(|s| s.output == output)
            .count()
    }

    /// `SrtSenders` entries: libsrt's statistics of every output connection.
    pub fn srt_sender_stats(&self) -> Vec<String> {
        let senders: Vec<_> = locked(&self.srt).values().cloned().collect();
        senders
            .iter()
            .filter_map(|s| {
                let stats = s.socket.stats().ok()?;
                Some(
                    stats
                        .sender_json(&s.peer.to_string(), s.socket.state())
                        .to_string(),
                )
            })
            .collect()
    }

    /// librist's latest sender stats of each RIST output that has them.
    pub fn rist_sender_stats(&self) -> Vec<String> {
        let mut outputs: Vec<_> = locked(&self.rist)
            .iter()
            .map(|(id, slot)| (id.clone(), Arc::clone(slot)))
            .collect();
        outputs.sort_by(|a, b| a.0.cmp(&b.0));
        outputs
            .into_iter()
            .filter_map(|(_, slot)| slot.latest())
            .collect()
    }

    /// SRT output connections as API sessions (type `SRT`).
    pub fn sessions(&self) -> Vec<SessionInfo> {
        locked(&self.srt)
            .values()
            .map(|s| {
                let stats = s.socket.stats().unwrap_or_default();
                SessionInfo {
                    id: s.session_id,
                    app: s.key.app.clone(),
                    stream: s.key.stream.clone(),
                    protocol: "SRT".to_owned(),
                    bytes_recv: stats.byte_recv_total,
                    bytes_sent: stats.byte_sent_total,
                    created: s.created,
                    last_access: unix_now(),
                    client_ip: s.peer.ip().to_string(),
                    user_agent: String::new(),
                    ppv_id: s.ppv_id.clone(),
                    dropped_frames: s
                        .dropped
                        .get()
                        .map(|d| d.load(std::sync::atomic::Ordering::Relaxed)),
                }
            })
            .collect()
    }

    /// SRT viewers open under pay-per-view id `id` (its `ppv_max_sessions`).
    pub fn ppv_sessions(&self, id: &str) -> usize {
        locked(&self.srt)
            .values()
            .filter(|sender| sender.ppv_id.as_deref() == Some(id))
            .count()
    }

    /// Ends the output connections of pay-per-view ids in `ids`; how many.
    pub fn close_ppv(&self, ids: &[String]) -> usize {
        let senders = locked(&self.srt);
        let mut closed = 0;
        for sender in senders.values() {
            if sender.ppv_id.as_ref().is_some_and(|id| ids.contains(id)) {
                sender.stop.cancel();
                sender.socket.close();
                closed += 1;
            }
        }
        closed
    }

    /// Ends the output connections among `ids`; returns those that were open.
    pub fn close(&self, ids: &[u64]) -> Vec<u64> {
        let senders = locked(&self.srt);
        ids.iter()
            .filter_map(|id| {
                let sender = senders.get(id)?;
                sender.stop.cancel();
                sender.socket.close();
                Some(*id)
            })
            .collect()
    }
}

/// The stream an output sends: its `app/stream`.
fn source(output: &TsOutputSettings) -> StreamKey {
    StreamKey::new(output.app.clone(), output.stream.clone())
}

/// Starts every output of `rules` under `stop`. SRT listeners take the socket the
/// supervisor lent for their address; threads that bind or read a port wait for
/// `previous` (the threads of the outputs and inputs being replaced) to end first.
/// Returns the threads started.
pub fn start(
    rules: &Rules,
    shared: &Arc<IngestShared>,
    sockets: &[Arc<InheritedUdpSocket>],
    stop: &CancellationToken,
    previous: &Arc<Mutex<Vec<JoinHandle<()>>>>,
) -> Vec<JoinHandle<()>> {
    locked(&shared.outputs.rist).clear();
    let runtime = tokio::runtime::Handle::current();
    let mut threads = Vec::new();
    for output in &rules.ts_outputs {
        let (output, shared, stop) = (output.clone(), Arc::clone(shared), stop.clone());
        let previous = Arc::clone(previous);
        let runtime = runtime.clone();
        match (output.protocol.as_str(), output.mode.as_str()) {
            ("srt", "listen") => {
                let lent = sockets
                    .iter()
                    .find(|s| s.spec.role == ListenerRole::Srt && listens_at(&output, s.spec.addr));
                let Some(lent) = lent.map(Arc::clone) else {
                    tracing::error!(output = %output.id, "SRT output not started: no socket lent for its address");
                    continue;
                };
                threads.extend(crate::udp::spawn_thread("srt-out-listen", move || {
                    crate::udp::wait_for(&previous);
                    srt_out::listen(lent, output, shared, stop, runtime)
                }));
            }
            ("srt", _) => {
                threads.extend(crate::udp::spawn_thread("srt-out-push", move || {
                    srt_out::push(output, shared, stop, runtime)
                }));
            }
            ("rist", _) => {
                threads.extend(crate::udp::spawn_thread("rist-out", move || {
                    crate::udp::wait_for(&previous);
                    rist_out::run(output, shared, stop, runtime)
                }));
            }
            ("udp", _) => {
                tokio::spawn(udp_out::run(output, shared, stop));
            }
            (protocol, mode) => {
                tracing::error!(output = %output.id, protocol, mode, "unknown TS output")
            }
        }
    }
    threads
}

/// Whether a listening output is configured at `addr`.
fn listens_at(output: &TsOutputSettings, addr: SocketAddr) -> bool {
    output.port == addr.port() && output.ip.parse::<IpAddr>().ok() == Some(addr.ip())
}
