//! RIST outputs: a librist sender that calls a receiver at `ip:port` (`push`) or
//! listens there for one (`listen`, bound by librist itself like RIST inputs), sending
//! the output's stream as MPEG-TS in payloads of 7 packets. Stats with
//! `rist-stats-interval` go to `rist_sender_stats`.

use super::follow::Follower;
use super::source;
use crate::rist::{RistOptions, RistSender};
use crate::shared::MpegTsShared;
use bytes::BytesMut;
use std::sync::Arc;
use std::time::Duration;
use strom_ipc::rules::TsOutputSettings;
use strom_stream::Queue;
use strom_worker_runtime::sync::locked;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

const PAYLOAD: usize = 7 * 188;
/// Between attempts to start a sender that failed (a port that is taken).
const RETRY: Duration = Duration::from_secs(2);

/// Runs the output until `stop`.
pub fn run(
    output: TsOutputSettings,
    shared: Arc<MpegTsShared>,
    stop: CancellationToken,
    runtime: Handle,
) {
    crate::rist::startup();
    let options = match RistOptions::from_parameters(&output.parameters) {
        Ok(options) => options,
        Err(e) => {
            tracing::error!(output = %output.id, error = %e, "RIST output not started");
            return;
        }
    };
    let listen = output.mode == "listen";
    let url = options.url(&output.ip, output.port, listen);
    let sender = loop {
        match RistSender::start(&output.id, &url, &options) {
            Ok(sender) => break sender,
            Err(e) => {
                tracing::warn!(output = %output.id, error = %e, "RIST output failed to start; retrying");
                let deadline = std::time::Instant::now() + RETRY;
                while std::time::Instant::now() < deadline {
                    if stop.is_cancelled() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    };
    if let Some(slot) = sender.stats() {
        locked(&shared.outputs.rist).insert(output.id.clone(), slot);
    }
    tracing::info!(output = %output.id, ip = %output.ip, port = output.port, mode = %output.mode, "RIST output started");
    let reader = (shared.hub).own_reader(&source(&output), Queue, shared.ids.next_id());
    let mut follower = Follower::start(reader, &stop, &runtime);
    let mut packets = BytesMut::with_capacity(64 * 1024);
    while follower.next_packets(&mut packets) {
        for payload in packets.chunks(PAYLOAD) {
            if let Err(e) = sender.write(payload) {
                tracing::warn!(output = %output.id, error = %e, "RIST write failed");
            }
        }
        shared.counters.add_sent(packets.len() as u64);
        packets.clear();
    }
    tracing::info!(output = %output.id, "RIST output stopped");
}
