//! What the MPEG-TS outputs show the API: their SRT connections (sessions,
//! `srt_sender_stats`, pay-per-view counts) and RIST stats. A leaf the worker's shared
//! state holds.

use crate::rist::StatsSlot;
use crate::srt::SrtSocket;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use strom_ipc::status::SessionInfo;
use strom_stream::StreamKey;
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
