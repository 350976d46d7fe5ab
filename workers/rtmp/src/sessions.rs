//! Players and publishers of this worker, for status queries, session deletion and
//! publish-control denial.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use strom_ipc::status::SessionInfo;
use strom_stream::DropCounter;
use strom_worker_runtime::sync::locked;
use tokio_util::sync::CancellationToken;

pub use strom_worker_runtime::clock::unix_now;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Player,
    Publisher,
}

/// One RTMP connection that plays or publishes.
#[derive(Debug)]
pub struct SessionEntry {
    pub id: u64,
    pub role: Role,
    pub app: String,
    pub stream: String,
    pub client_ip: String,
    pub user_agent: String,
    pub created: i64,
    pub last_access: AtomicI64,
    pub bytes_sent: AtomicU64,
    pub bytes_recv: AtomicU64,
    /// Publish-control id of a signed publisher.
    pub control_id: Option<String>,
    /// Cancelling it closes the connection.
    pub kill: CancellationToken,
    /// A player's frames lost to its hub queue (see `strom_stream::reader`).
    pub dropped: Option<DropCounter>,
    /// The pay-per-view id of a signed player.
    pub ppv_id: Option<String>,
}

impl SessionEntry {
    pub fn touch(&self) {
        self.last_access.store(unix_now(), Ordering::Relaxed);
    }

    /// The session as the API lists it.
    fn info(&self) -> SessionInfo {
        SessionInfo {
            id: self.id,
            app: self.app.clone(),
            stream: self.stream.clone(),
            protocol: "RTMP".to_owned(),
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
}

#[derive(Debug, Default)]
pub struct SessionTable {
    entries: Mutex<HashMap<u64, Arc<SessionEntry>>>,
}

impl SessionTable {
    /// Sessions of pay-per-view id `id`.
    pub fn ppv_sessions(&self, id: &str) -> usize {
        locked(&self.entries)
            .values()
            .filter(|e| e.ppv_id.as_deref() == Some(id))
            .count()
    }

    pub fn insert(&self, entry: Arc<SessionEntry>) {
        locked(&self.entries).insert(entry.id, entry);
    }

    pub fn remove(&self, id: u64) {
        locked(&self.entries).remove(&id);
    }

    pub fn players(&self) -> Vec<SessionInfo> {
        let mut players: Vec<SessionInfo> = locked(&self.entries)
            .values()
            .filter(|e| e.role == Role::Player)
            .map(|e| e.info())
            .collect();
        players.sort_by_key(|p| p.id);
        players
    }

    /// One page of [`Self::players`] (see `strom_ipc::paging`): only the page's entries
    /// are copied, so walking a large table page by page stays cheap.
    pub fn players_page(&self, after_id: u64, limit: u32) -> strom_ipc::messages::WorkerReply {
        let entries = locked(&self.entries);
        let players = entries
            .values()
            .filter(|e| e.role == Role::Player)
            .map(|e| (e.id, e));
        strom_ipc::paging::sessions_page(players, after_id, limit, |e| e.info())
    }

    /// Closes the players with these ids; returns the ids found here.
    pub fn kill_players(&self, ids: &[u64]) -> Vec<u64> {
        let entries = locked(&self.entries);
        ids.iter()
            .filter_map(|id| entries.get(id).filter(|e| e.role == Role::Player))
            .map(|e| {
                e.kill.cancel();
                e.id
            })
            .collect()
    }

    /// Closes players whose pay-per-view id is in `ids`.
    pub fn kill_ppv_players(&self, ids: &[String]) -> usize {
        let entries = locked(&self.entries);
        let mut killed = 0;
        for entry in entries.values().filter(|e| e.role == Role::Player) {
            if entry.ppv_id.as_ref().is_some_and(|id| ids.contains(id)) {
                entry.kill.cancel();
                killed += 1;
            }
        }
        killed
    }

    /// Closes publishers whose publish-control id is in `ids`.
    pub fn kill_publishers(&self, ids: &[String]) -> usize {
        let entries = locked(&self.entries);
        let mut killed = 0;
        for entry in entries.values().filter(|e| e.role == Role::Publisher) {
            if entry.control_id.as_ref().is_some_and(|id| ids.contains(id)) {
                entry.kill.cancel();
                killed += 1;
            }
        }
        killed
    }
}
