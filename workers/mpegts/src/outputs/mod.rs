//! MPEG-TS outputs (`TsOutputs` in `rules.conf`): live streams sent out over SRT
//! ([`srt_out`]: a listener that callers choose streams from, or a push to a remote
//! listener), RIST ([`rist_out`]) and UDP ([`udp_out`], optionally at a constant mux
//! rate). Every output reads its stream from the worker's hub as MPEG-TS (`TsFeed`:
//! frames rendered once, continuity counters per receiver); streams that other workers
//! produce (an RTMP publish) are relayed into the hub over the media bus while an output
//! reads them (`strom_stream::bus::relays`).
//!
//! Streams another worker starts on demand (an `Edge` app's pull, an on-demand RTMP or
//! RTSP pull) are relayed from it while outputs read them, even before the registry lists
//! them (`strom_stream::gate::on_demand`): that bus subscription is a reader there, which
//! starts the pull. SRT callers of
//! such a stream wait for it (up to [`srt_out::EDGE_WAIT`]).
//!
//! SRT connections of outputs are listed as sessions (type `SRT`) and in
//! `srt_sender_stats`; RIST outputs with `rist-stats-interval` in `rist_sender_stats`.

mod caller_watch;
mod follow;
mod rist_out;
mod srt_out;
pub mod state;
mod udp_out;

use crate::shared::MpegTsShared;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use strom_ipc::messages::ListenerRole;
use strom_ipc::rules::{Rules, TsOutputSettings};
use strom_stream::StreamKey;
use strom_worker_runtime::InheritedUdpSocket;
use strom_worker_runtime::sync::locked;
use tokio_util::sync::CancellationToken;

pub use state::SrtSender;

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
    shared: &Arc<MpegTsShared>,
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
                threads.extend(crate::threads::spawn_thread("srt-out-listen", move || {
                    crate::threads::wait_for(&previous);
                    srt_out::listen(lent, output, shared, stop, runtime)
                }));
            }
            ("srt", _) => {
                threads.extend(crate::threads::spawn_thread("srt-out-push", move || {
                    srt_out::push(output, shared, stop, runtime)
                }));
            }
            ("rist", _) => {
                threads.extend(crate::threads::spawn_thread("rist-out", move || {
                    crate::threads::wait_for(&previous);
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
