//! `GET /manage/cluster` (strom's own): the cluster registry as this server sees it:
//! whether it is connected to etcd, its lease, its claims and conflicts, how late its
//! watch is, and the registry's servers and stream holders.

use crate::api::ApiState;
use axum::Json;
use axum::extract::State;
use serde::Serialize;

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ClusterState {
    /// Whether `rules.conf` has a `Cluster` block.
    enabled: bool,
    /// This server's id; empty when not enabled.
    server_id: String,
    /// Whether the registry is current (connected to etcd and watching).
    connected: bool,
    /// This server's lease in hex, as etcdctl shows it (a JSON number would lose digits
    /// in JavaScript); empty before the first connection.
    lease_id: String,
    lease_ttl_secs: u32,
    /// Streams this server holds in the registry.
    claims: usize,
    /// Claims of streams produced here that another server held already.
    conflicts: u64,
    /// Publishes the workers refused because another server holds the name.
    refused_publishes: u64,
    /// The last committed claim's arrival through the watch, in milliseconds.
    watch_lag_ms: f64,
    watch_lag_p99_ms: f64,
    /// A claim transaction's round trip, median and 99th percentile of the last 1,024.
    claim_p50_ms: f64,
    claim_p99_ms: f64,
    /// Why etcd was last unreachable.
    last_error: Option<String>,
    servers: Vec<ClusterServer>,
    streams: Vec<ClusterStream>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ClusterServer {
    id: String,
    /// Advertised pull URL bases.
    urls: Vec<String>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ClusterStream {
    app: String,
    stream: String,
    /// The holder's server id.
    server: String,
}

#[utoipa::path(get, path = "/manage/cluster", responses((status = 200, body = ClusterState)))]
pub async fn state(State(state): State<ApiState>) -> Json<ClusterState> {
    let cluster = &state.supervisor.cluster;
    let settings = cluster.settings();
    let status = cluster.status();
    let copy = cluster.copy();
    Json(ClusterState {
        enabled: settings.is_some(),
        server_id: settings
            .as_ref()
            .map(|s| s.server_id.clone())
            .unwrap_or_default(),
        connected: status.connected,
        lease_id: match status.lease_id {
            0 => String::new(),
            id => format!("{id:x}"),
        },
        lease_ttl_secs: settings.as_ref().map_or(0, |s| s.lease_ttl_secs),
        claims: status.claims,
        conflicts: status.lost_claims,
        refused_publishes: status.refused_publishes,
        watch_lag_ms: status.watch_lag_ms.last(),
        watch_lag_p99_ms: status.watch_lag_ms.quantile(0.99),
        claim_p50_ms: status.claim_ms.quantile(0.5),
        claim_p99_ms: status.claim_ms.quantile(0.99),
        last_error: status.last_error,
        servers: (copy.servers.into_iter())
            .map(|(id, urls)| ClusterServer { id, urls })
            .collect(),
        streams: (copy.streams.into_iter())
            .map(|(app, stream, server)| ClusterStream {
                app,
                stream,
                server,
            })
            .collect(),
    })
}
