//! The connected SRT publishers of the worker (callers of listener inputs and the
//! connections of pull inputs): their stats and per-input counts (their sessions are in
//! the gate's registry). A leaf: the
//! worker's shared state holds it and the SRT input code fills it.

use crate::srt::SrtSocket;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strom_stream::{Meter, Session, SessionEntry, StreamKey};
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
    pub socket: Arc<SrtSocket>,
    /// How long the connection may send nothing before it is closed.
    pub idle_timeout: Duration,
    /// Its session in the gate's registry (held by its `Publishing` for a caller, by
    /// `held` for a dialled input); cancelled by `sessions/delete` and the deny list.
    pub session: Arc<SessionEntry>,
    pub _held: Option<Session>,
}

/// What libsrt counted on a socket, as its session's bytes.
pub struct SocketBytes(pub Arc<SrtSocket>);

impl Meter for SocketBytes {
    fn bytes(&self) -> (u64, u64) {
        let stats = self.0.stats().unwrap_or_default();
        (stats.byte_recv_total, stats.byte_sent_total)
    }
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
}
