//! What the MPEG-TS outputs show the API: their SRT connections (`srt_sender_stats`,
//! callers per output; their sessions are in the gate's registry) and RIST stats. A leaf the worker's shared
//! state holds.

use crate::rist::StatsSlot;
use crate::srt::SrtSocket;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use strom_stream::StreamKey;
use strom_worker_runtime::sync::locked;
use tokio_util::sync::CancellationToken;

/// One SRT connection of an output (a caller of a listener, or a push).
pub struct SrtSender {
    pub session_id: u64,
    pub output: String,
    pub key: StreamKey,
    pub peer: SocketAddr,
    pub socket: Arc<SrtSocket>,
    /// Ends the connection: the output's end, or its session's (`sessions/delete`, the
    /// deny list), whose kill token this is.
    pub stop: CancellationToken,
}

/// What the outputs show the API.
#[derive(Default)]
pub struct OutputState {
    srt: Mutex<HashMap<u64, Arc<SrtSender>>>,
    /// Stats of RIST outputs with `rist-stats-interval`, by output id.
    pub(crate) rist: Mutex<HashMap<String, Arc<StatsSlot>>>,
}

impl OutputState {
    pub(crate) fn add_srt(&self, sender: Arc<SrtSender>) {
        locked(&self.srt).insert(sender.session_id, sender);
    }

    pub(crate) fn remove_srt(&self, session_id: u64) {
        locked(&self.srt).remove(&session_id);
    }

    pub(crate) fn callers_of(&self, output: &str) -> usize {
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
            .filter_map(|(id, slot)| slot.latest_named(&id))
            .collect()
    }
}
