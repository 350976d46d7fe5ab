//! The cluster registry's contract: its settings (`Cluster` in `rules.conf`) and the
//! updates of the registry's watched copy that the supervisor sends every worker.
//!
//! The supervisor alone talks to etcd; a worker only reads the copy it is sent: the
//! gate refuses a publish of a name another live server holds, and an edge pull tries
//! the holder's advertised URL first.

use serde::{Deserialize, Serialize};

/// `Cluster`: this server's membership in a cluster registry on etcd.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterSettings {
    /// This server's name in the registry (`servers/<id>`, the value of its claims).
    pub server_id: String,
    /// etcd client URLs (`http://host:port`), any member of one etcd cluster.
    pub etcd_endpoints: Vec<String>,
    /// Pull URL bases edges use to reach this server (`rtmp://host:port`,
    /// `srt://host:port[?..]`), the syntax of an `Edge` rule's origins.
    pub advertise: Vec<String>,
    /// The lease every key of this server lives under; a dead server's keys vanish
    /// this long after its last keep-alive.
    pub lease_ttl_secs: u32,
    /// Every key of the registry starts with this.
    pub key_prefix: String,
}

/// A change of the registry's copy, from the supervisor to a worker. `reset`: the
/// copy is replaced (the first update, and after a reconnection to etcd); otherwise the
/// entries change the copy one by one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterUpdate {
    /// `None`: no `Cluster` block; the copy is empty and nothing consults it.
    pub own_id: Option<String>,
    /// Whether the supervisor's watch is current. While it is not, the copy is the last
    /// one seen: edges still use it, and the gate refuses nothing for it.
    pub connected: bool,
    pub reset: bool,
    pub servers: Vec<ServerEntry>,
    pub streams: Vec<StreamEntry>,
}

/// `servers/<id>`: a live server and its advertised pull URLs; `urls: None` when its
/// key went away.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerEntry {
    pub id: String,
    pub urls: Option<Vec<String>>,
}

/// `streams/<app>/<stream>`: the server that holds the name; `server: None` when it
/// was released (or its holder's lease expired).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamEntry {
    pub app: String,
    pub stream: String,
    pub server: Option<String>,
}

/// Entries one update carries at most: a registry of thousands of streams is sent in
/// several updates, each far below the control channel's frame limit.
pub const MAX_ENTRIES_PER_UPDATE: usize = 1_000;
