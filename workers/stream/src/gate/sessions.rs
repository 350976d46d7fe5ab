//! The session registry of a worker, held by its gate: one entry per playing or
//! publishing connection (RTMP, RTSP, WebRTC, HTTP listeners), read by the API's session list
//! (`/manage/sessions`), `sessions/delete`, the deny list's closing of live sessions and
//! the pay-per-view counts. The gate answers those requests from here ([`super::Gated`]);
//! a protocol adds its connection's entry and closes the connection when the entry's
//! `kill` token is cancelled.
//!
//! The delivery worker's HTTP listeners (`mpegts.stream`, Icecast) are here too; its
//! HLS/DASH viewers and Icecast sources and the ingest worker's SRT and RIST sessions are
//! not yet: those workers answer for their own tables, and the gate merges their answers
//! with the registry's.

use crate::reader::DropCounter;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use strom_ipc::status::SessionInfo;
use strom_worker_runtime::clock::unix_now;
use strom_worker_runtime::sync::locked;
use tokio_util::sync::CancellationToken;

/// One playing or publishing session.
#[derive(Debug)]
pub struct SessionEntry {
    pub id: u64,
    /// The protocol as the API names it (`RTMP`, `RTSP`, `WebRTC`).
    pub protocol: &'static str,
    /// A publisher rather than a player.
    pub publisher: bool,
    /// Whether the API lists it (and `sessions/delete` finds it): RTMP has never listed
    /// its publishers, and the API's answers keep their shape.
    pub listed: bool,
    /// Publish-control id of a signed publisher.
    pub control_id: Option<String>,
    /// Pay-per-view id of a signed player (`PlaybackProtection`).
    pub ppv_id: Option<String>,
    pub app: String,
    pub stream: String,
    pub client_ip: String,
    pub user_agent: String,
    pub created: i64,
    pub last_access: AtomicI64,
    pub bytes_sent: AtomicU64,
    pub bytes_recv: AtomicU64,
    /// Cancelling it closes the connection.
    pub kill: CancellationToken,
    /// Frames lost to a player's hub queue (see `strom_stream::reader`).
    pub dropped: Option<DropCounter>,
}

impl SessionEntry {
    fn info(&self) -> SessionInfo {
        SessionInfo {
            id: self.id,
            app: self.app.clone(),
            stream: self.stream.clone(),
            protocol: self.protocol.to_owned(),
            bytes_recv: self.bytes_recv.load(Ordering::Relaxed),
            bytes_sent: self.bytes_sent.load(Ordering::Relaxed),
            created: self.created,
            last_access: self.last_access.load(Ordering::Relaxed),
            client_ip: self.client_ip.clone(),
            user_agent: self.user_agent.clone(),
            ppv_id: self.ppv_id.clone(),
            dropped_frames: self.dropped.as_ref().map(|d| d.load(Ordering::Relaxed)),
        }
    }

    pub fn touch(&self) {
        self.last_access.store(unix_now(), Ordering::Relaxed);
    }

    /// Counts `bytes` sent to the client, now.
    pub fn sent(&self, bytes: usize) {
        self.bytes_sent.fetch_add(bytes as u64, Ordering::Relaxed);
        self.touch();
    }
}

#[derive(Debug, Default)]
pub struct Sessions {
    entries: Mutex<HashMap<u64, Arc<SessionEntry>>>,
}

impl Sessions {
    pub fn insert(&self, entry: Arc<SessionEntry>) {
        locked(&self.entries).insert(entry.id, entry);
    }

    /// [`Self::insert`] unless the registry holds `max` sessions, or `max_per_client` of
    /// the entry's client, already (checked and inserted under one lock); `false` then.
    pub fn insert_capped(
        &self,
        entry: Arc<SessionEntry>,
        max: usize,
        max_per_client: usize,
    ) -> bool {
        let mut entries = locked(&self.entries);
        let from_client = (entries.values())
            .filter(|e| e.client_ip == entry.client_ip)
            .count();
        if entries.len() >= max || from_client >= max_per_client {
            return false;
        }
        entries.insert(entry.id, entry);
        true
    }

    pub fn remove(&self, id: u64) {
        locked(&self.entries).remove(&id);
    }

    pub fn list(&self) -> Vec<SessionInfo> {
        let mut players: Vec<SessionInfo> = (locked(&self.entries).values())
            .filter(|e| e.listed)
            .map(|e| e.info())
            .collect();
        players.sort_by_key(|p| p.id);
        players
    }

    /// One page of [`Self::list`] (see `strom_ipc::paging`).
    pub fn page(&self, after_id: u64, limit: u32) -> strom_ipc::messages::WorkerReply {
        let entries = locked(&self.entries);
        let players = entries.values().filter(|e| e.listed).map(|e| (e.id, e));
        strom_ipc::paging::sessions_page(players, after_id, limit, |e| e.info())
    }

    /// The session `id`.
    pub fn get(&self, id: u64) -> Option<Arc<SessionEntry>> {
        locked(&self.entries).get(&id).cloned()
    }

    /// Players open under pay-per-view id `id`.
    pub fn ppv_sessions(&self, id: &str) -> usize {
        locked(&self.entries)
            .values()
            .filter(|e| e.ppv_id.as_deref() == Some(id))
            .count()
    }

    /// Closes publishers whose publish-control id and players whose pay-per-view id is
    /// in `ids`; returns how many.
    pub fn kill_publishers(&self, ids: &[String]) -> usize {
        let entries = locked(&self.entries);
        let mut killed = 0;
        for entry in entries.values() {
            let id = if entry.publisher {
                &entry.control_id
            } else {
                &entry.ppv_id
            };
            if id.as_ref().is_some_and(|id| ids.contains(id)) {
                entry.kill.cancel();
                killed += 1;
            }
        }
        killed
    }

    /// Closes the listed sessions with these ids; returns the ids found here.
    pub fn kill(&self, ids: &[u64]) -> Vec<u64> {
        let entries = locked(&self.entries);
        ids.iter()
            .filter_map(|id| entries.get(id).filter(|e| e.listed))
            .map(|e| {
                e.kill.cancel();
                e.id
            })
            .collect()
    }
}
