//! What one scrape knows: the supervisor's cached worker status (as `/manage/workers` and
//! `/manage/server_status` show it) plus the workers' answers to the questions behind
//! `rtmp_status`, `sessions`, `srt_receiver_stats` and `dvr_status`, asked at once
//! through the API's [`WorkerGateway`] with its timeout.
//!
//! A source that a running worker did not answer completely is `None`: its metrics are
//! left out of the scrape (never shown as zero) and `strom_metrics_source_complete` says
//! which. A worker without a process (restarting) holds nothing, as for the API's lists.

use crate::api::ApiState;
use crate::api::gateway::{WorkerGateway, all_live_streams, all_sessions};
use crate::process::RequestError;
use serde_json::Value;
use strom_ipc::WorkerKind;
use strom_ipc::messages::{StatsDirection, WorkerReply, WorkerRequest};
use strom_ipc::status::{Counters, DvrArchive, LiveStream, SessionInfo};

/// One worker slot, from the supervisor's cache (no request).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerFacts {
    pub kind: &'static str,
    /// `starting`, `ready`, `unresponsive`, `backing_off`, `stopping` or `stopped`.
    pub state: &'static str,
    /// Restarts since the supervisor started.
    pub restarts: u32,
    /// Seconds since the current process reported ready; 0 while not ready.
    pub uptime_secs: u64,
    /// From the current process's last heartbeat (they restart at 0 with the process).
    pub counters: Counters,
    /// `OutRate`'s share of this worker: bits per second over the last 10 s.
    pub out_rate_bps: u64,
}

/// One SRT input connection, from `srt_receiver_stats`.
#[derive(Debug, Clone, PartialEq)]
pub struct SrtLink {
    /// `<ip>:<port>` of the input (its listener's address).
    pub id: String,
    /// `<app>/<stream>` the connection carries.
    pub stream: String,
    /// `<ip>:<port>` of the caller (several callers may share one listener).
    pub peer: String,
    pub connected: bool,
    pub rtt_ms: f64,
    pub packets_received: u64,
    pub packets_lost: u64,
}

/// Everything one scrape renders.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    pub workers: Vec<WorkerFacts>,
    pub streams: Option<Vec<LiveStream>>,
    pub sessions: Option<Vec<SessionInfo>>,
    pub srt_receivers: Option<Vec<SrtLink>>,
    pub dvr_archives: Option<Vec<DvrArchive>>,
    /// As `GET /manage/transcodes` lists them.
    pub transcodes: Option<Vec<Value>>,
    /// The cluster registry, when `rules.conf` has a `Cluster` block.
    pub cluster: Option<ClusterFacts>,
}

/// The cluster registry's state, as `GET /manage/cluster` shows it.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ClusterFacts {
    pub connected: bool,
    pub claims: u64,
    pub registered_streams: u64,
    pub servers: u64,
    pub lost_claims: u64,
    pub refused_publishes: u64,
    pub watch_lag_seconds: f64,
}

/// Asks the workers (all questions at once) and reads the cached status.
pub async fn take(api: &ApiState) -> Snapshot {
    let gateway = api.workers.as_ref();
    let (streams, sessions, srt_receivers, dvr_archives, transcodes) = tokio::join!(
        live_streams(gateway),
        sessions(gateway),
        srt_receivers(gateway),
        dvr_archives(gateway),
        transcodes(gateway),
    );
    let workers = api
        .supervisor
        .workers
        .all()
        .iter()
        .map(|worker| {
            let status = worker.status();
            WorkerFacts {
                kind: worker.kind.as_str(),
                state: status.state.as_str(),
                restarts: status.restarts,
                uptime_secs: status
                    .ready_since
                    .map(|t| t.elapsed().as_secs())
                    .unwrap_or_default(),
                counters: status.counters,
                out_rate_bps: status.out_rate_bps,
            }
        })
        .collect();
    let cluster = &api.supervisor.cluster;
    let cluster = cluster.settings().map(|_| {
        let status = cluster.status();
        let copy = cluster.copy();
        ClusterFacts {
            connected: status.connected,
            claims: status.claims as u64,
            registered_streams: copy.streams.len() as u64,
            servers: copy.servers.len() as u64,
            lost_claims: status.lost_claims,
            refused_publishes: status.refused_publishes,
            watch_lag_seconds: status.watch_lag_ms.last() / 1000.0,
        }
    });
    Snapshot {
        workers,
        streams,
        sessions,
        srt_receivers,
        dvr_archives,
        transcodes,
        cluster,
    }
}

/// The transcoder worker's transcodes, as `GET /manage/transcodes` has them.
async fn transcodes(gateway: &dyn WorkerGateway) -> Option<Vec<Value>> {
    match ask_one(gateway, WorkerKind::Transcoder, WorkerRequest::Transcodes).await? {
        None => Some(Vec::new()),
        Some(WorkerReply::JsonItems(items)) => Some(
            items
                .iter()
                .filter_map(|item| serde_json::from_str(item).ok())
                .collect(),
        ),
        Some(_) => None,
    }
}

/// As `rtmp_status` gathers them: every worker's `ListStreams`.
async fn live_streams(gateway: &dyn WorkerGateway) -> Option<Vec<LiveStream>> {
    match all_live_streams(gateway).await {
        Ok(gathered) => Some(gathered.items),
        Err(incomplete) => {
            tracing::debug!(missing = ?incomplete.missing, "metrics: streams incomplete");
            None
        }
    }
}

/// As `/manage/sessions` gathers them: page by page from every worker.
async fn sessions(gateway: &dyn WorkerGateway) -> Option<Vec<SessionInfo>> {
    match all_sessions(gateway).await {
        Ok(gathered) => Some(gathered.items),
        Err(incomplete) => {
            tracing::debug!(missing = ?incomplete.missing, "metrics: sessions incomplete");
            None
        }
    }
}

/// One worker's answer: `Some(empty)` when it has no process (it holds nothing).
async fn ask_one(
    gateway: &dyn WorkerGateway,
    kind: WorkerKind,
    request: WorkerRequest,
) -> Option<Option<WorkerReply>> {
    match gateway.ask(kind, request).await {
        Ok(reply) => Some(Some(reply)),
        Err(RequestError::Unavailable(_)) => Some(None),
        Err(e) => {
            tracing::debug!(worker = %kind, error = %e, "metrics: no answer");
            None
        }
    }
}

/// As `srt_receiver_stats` asks for them: the ingest worker's JSON items.
async fn srt_receivers(gateway: &dyn WorkerGateway) -> Option<Vec<SrtLink>> {
    let request = WorkerRequest::SrtStats(StatsDirection::Receivers);
    match ask_one(gateway, WorkerKind::Ingest, request).await? {
        None => Some(Vec::new()),
        Some(WorkerReply::JsonItems(items)) => Some(
            items
                .iter()
                .filter_map(|item| serde_json::from_str::<Value>(item).ok())
                .filter_map(|item| srt_link(&item))
                .collect(),
        ),
        Some(_) => None,
    }
}

/// An `SrtReceivers` entry (`{"id","stream","peer","state","stats":{"link":{"rtt"},
/// "recv":{...}}}`); `None` without an id.
pub fn srt_link(item: &Value) -> Option<SrtLink> {
    let id = item.get("id")?.as_str()?.to_owned();
    let text = |field: &str| {
        item.get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let stats = item.get("stats");
    let recv = |field: &str| {
        stats
            .and_then(|s| s.get("recv"))
            .and_then(|r| r.get(field))
            .and_then(Value::as_u64)
            .unwrap_or_default()
    };
    Some(SrtLink {
        connected: item.get("state").and_then(Value::as_str) == Some("connected"),
        rtt_ms: stats
            .and_then(|s| s.get("link"))
            .and_then(|l| l.get("rtt"))
            .and_then(Value::as_f64)
            .unwrap_or_default(),
        packets_received: recv("packetsReceived"),
        packets_lost: recv("packetsLost"),
        stream: text("stream"),
        peer: text("peer"),
        id,
    })
}

/// As `dvr_status` asks for them: the dvr worker's archives (sizes on disk).
async fn dvr_archives(gateway: &dyn WorkerGateway) -> Option<Vec<DvrArchive>> {
    let request = WorkerRequest::DvrStatus {
        stream: None,
        timeline: false,
    };
    match ask_one(gateway, WorkerKind::Dvr, request).await? {
        None => Some(Vec::new()),
        Some(WorkerReply::DvrArchives(archives)) => Some(archives),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn srt_entries_are_read_leniently() {
        let entry = json!({"id": "0.0.0.0:4000", "stream": "live/cam",
            "peer": "10.0.0.7:5000", "state": "connected", "stats": {
            "time": 1200, "link": {"rtt": 12.5, "mbpsBandwidth": 10.0},
            "recv": {"packetsReceived": 900, "packetsLost": 3, "NAKsSent": 1}}});
        assert_eq!(
            srt_link(&entry),
            Some(SrtLink {
                id: "0.0.0.0:4000".into(),
                stream: "live/cam".into(),
                peer: "10.0.0.7:5000".into(),
                connected: true,
                rtt_ms: 12.5,
                packets_received: 900,
                packets_lost: 3,
            })
        );
        let bare = srt_link(&json!({"id": "x", "state": "disconnected"}));
        assert_eq!(
            bare.map(|l| (l.connected, l.packets_received)),
            Some((false, 0))
        );
        assert_eq!(srt_link(&json!({"state": "connected"})), None);
    }
}
