//! The connected SRT publishers of the worker (callers of listener inputs and the
//! connections of pull inputs): sessions, publish-control entries, stats. A leaf: the
//! worker's shared state holds it and the SRT input code fills it.

use crate::srt::SrtSocket;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strom_ipc::status::SessionInfo;
use strom_stream::StreamKey;
use strom_worker_runtime::clock::unix_now;
use strom_worker_runtime::sync::locked;

/// One connected SRT peer.
pub struct Connection {
    pub session_id: u64,
    pub camera: String,
    pub key: StreamKey,
    /// The input's own SRT address: where its listener listens (`0.0.0.0:1234`), or
    /// the remote listener a pull input calls. Stats clients (NOALBS) find a feed by it,
    /// as the commercial server reports it.
    pub input_addr: String,
    pub peer: SocketAddr,
    pub created: i64,
    pub socket: Arc<SrtSocket>,
    /// The publish-control id of a signed publisher (`publishsign` in the streamid).
    pub control_id: Option<String>,
    /// How long the connection may send nothing before it is closed.
    pub idle_timeout: Duration,
}

/// Every connected SRT peer of the worker.
#[derive(Default)]
pub struct Connections {
    by_session: Mutex<HashMap<u64, Arc<Connection>>>,
}

impl Connections {
    pub(crate) fn add(&self, connection: Arc<Connection>) {
        locked(&self.by_session).insert(connection.session_id, connection);
    }

    pub(crate) fn remove(&self, session_id: u64) {
        locked(&self.by_session).remove(&session_id);
    }

    pub(crate) fn count_for(&self, camera: &str) -> usize {
        locked(&self.by_session)
            .values()
            .filter(|c| c.camera == camera)
            .count()
    }

    /// `SrtReceivers` entries: libsrt's statistics of every connection, under the
    /// input's address (`id`), with the stream it carries (`stream`, `<app>/<stream>` as
    /// in `publish_control/status`) and the caller's address (`peer`), so that several
    /// callers of one listener can be told apart.
    pub fn receiver_stats(&self) -> Vec<String> {
        let mut connections: Vec<_> = locked(&self.by_session).values().cloned().collect();
        connections.sort_by_key(|c| c.session_id);
        connections
            .iter()
            .filter_map(|c| {
                let stats = c.socket.stats().ok()?;
                let mut entry = stats.receiver_json(&c.input_addr, c.socket.state());
                entry["stream"] = c.key.to_string().into();
                entry["peer"] = c.peer.to_string().into();
                Some(entry.to_string())
            })
            .collect()
    }

    /// Connections as API sessions (type `SRT`).
    pub fn sessions(&self) -> Vec<SessionInfo> {
        let mut sessions: Vec<SessionInfo> = locked(&self.by_session)
            .values()
            .map(|c| {
                let stats = c.socket.stats().unwrap_or_default();
                SessionInfo {
                    id: c.session_id,
                    app: c.key.app.clone(),
                    stream: c.key.stream.clone(),
                    protocol: "SRT".to_owned(),
                    bytes_recv: stats.byte_recv_total,
                    bytes_sent: stats.byte_sent_total,
                    created: c.created,
                    last_access: unix_now(),
                    client_ip: c.peer.ip().to_string(),
                    user_agent: String::new(),
                    ppv_id: None,
                    dropped_frames: None,
                }
            })
            .collect();
        sessions.sort_by_key(|s| s.id);
        sessions
    }

    /// Closes the connections of publishers whose publish-control id is in `ids`.
    pub fn close_publishers(&self, ids: &[String]) -> usize {
        let map = locked(&self.by_session);
        let denied: Vec<_> = map
            .values()
            .filter(|c| c.control_id.as_ref().is_some_and(|id| ids.contains(id)))
            .collect();
        for connection in &denied {
            tracing::info!(peer = %connection.peer, stream = %connection.key, "SRT publisher denied: disconnected");
            connection.socket.close();
        }
        denied.len()
    }

    /// Closes the connections among `ids`; returns the ids that were connected.
    pub fn close(&self, ids: &[u64]) -> Vec<u64> {
        let map = locked(&self.by_session);
        ids.iter()
            .filter_map(|id| {
                let connection = map.get(id)?;
                connection.socket.close();
                Some(*id)
            })
            .collect()
    }
}
