//! A [`Snapshot`] and the API latencies as OpenMetrics text (what Prometheus asks for
//! first and reads natively; [`super::exposition`] turns it into the older text format
//! for scrapers that ask for that), every name prefixed `strom_`. Rates are in the base
//! unit, bytes per second, as Prometheus's naming rules ask. The `prometheus-client`
//! crate writes the exposition: names, `# TYPE`/`# HELP`, the `_total` suffix of
//! counters, histogram buckets and the escaping of label values (`\`, `"`, newline).
//!
//! Values come from the workers' current processes: the byte counters of a worker start
//! again at 0 when it restarts, which Prometheus's `rate()` and `increase()` treat as a
//! counter reset.

use super::snapshot::Snapshot;
use crate::api_latency::Latencies;
use crate::process::state::WorkerState;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;

/// Worker states, each shown as a 0/1 series of `strom_worker_state`.
const STATES: [WorkerState; 6] = WorkerState::ALL;

/// Session types always shown, 0 when there are none, so dashboards see a zero instead
/// of no data.
const SESSION_TYPES: [&str; 5] = ["RTMP", "HLS", "SRT", "MPEGTS", "WebRTC"];

type Labels = Vec<(&'static str, String)>;

fn label(name: &'static str, value: impl Into<String>) -> Labels {
    vec![(name, value.into())]
}

/// An SRT input connection's series: the input's address, its stream and its caller
/// (one listener takes many callers, so `id` alone would repeat).
fn link_labels(link: &super::snapshot::SrtLink) -> Labels {
    vec![
        ("id", link.id.clone()),
        ("stream", link.stream.clone()),
        ("peer", link.peer.clone()),
    ]
}

/// Saturates instead of wrapping: gauges are `i64` in the client library.
fn signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn gauges(
    registry: &mut Registry,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (Labels, i64)>,
) {
    let family = Family::<Labels, Gauge>::default();
    for (labels, value) in series {
        family.get_or_create(&labels).set(value);
    }
    registry.register(name, help, family);
}

fn float_gauges(
    registry: &mut Registry,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (Labels, f64)>,
) {
    let family = Family::<Labels, Gauge<f64, AtomicU64>>::default();
    for (labels, value) in series {
        family.get_or_create(&labels).set(value);
    }
    registry.register(name, help, family);
}

/// `name` is given without `_total`; the encoder appends it.
fn counters(
    registry: &mut Registry,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (Labels, u64)>,
) {
    let family = Family::<Labels, Counter>::default();
    for (labels, value) in series {
        family.get_or_create(&labels).inc_by(value);
    }
    registry.register(name, help, family);
}

fn total(registry: &mut Registry, name: &str, help: &str, value: u64) {
    let counter = Counter::<u64>::default();
    counter.inc_by(value);
    registry.register(name, help, counter);
}

fn gauge(registry: &mut Registry, name: &str, help: &str, value: u64) {
    let gauge = Gauge::<i64>::default();
    gauge.set(signed(value));
    registry.register(name, help, gauge);
}

/// The exposition of one scrape.
pub fn render(snapshot: &Snapshot, latencies: &Latencies) -> String {
    let mut registry = Registry::with_prefix("strom");
    workers(&mut registry, snapshot);
    if let Some(facts) = &snapshot.cluster {
        cluster(&mut registry, facts);
    }
    if let Some(streams) = &snapshot.streams {
        let mut live: BTreeMap<(&str, &str), (&str, u64)> = BTreeMap::new();
        for stream in streams {
            live.insert(
                (&stream.app, &stream.stream),
                (&stream.protocol, stream.bandwidth_bps),
            );
        }
        gauge(
            &mut registry,
            "streams_live",
            "Live streams (any ingest protocol), as rtmp_status lists them",
            live.len() as u64,
        );
        gauges(
            &mut registry,
            "stream_ingest_bytes_per_second",
            "Incoming rate of each live stream (rtmp_status bandwidth / 8)",
            live.iter().map(|((app, stream), (protocol, bps))| {
                let labels = vec![
                    ("app", (*app).to_owned()),
                    ("stream", (*stream).to_owned()),
                    ("protocol", (*protocol).to_owned()),
                ];
                (labels, signed(*bps / 8))
            }),
        );
    }
    if let Some(sessions) = &snapshot.sessions {
        let mut open: BTreeMap<&str, u64> = SESSION_TYPES.iter().map(|t| (*t, 0)).collect();
        // RTMP players always report drops; other types only when they count them.
        let mut dropped: BTreeMap<&str, u64> = BTreeMap::from([("RTMP", 0)]);
        for session in sessions {
            *open.entry(&session.protocol).or_default() += 1;
            if let Some(frames) = session.dropped_frames {
                let sum = dropped.entry(&session.protocol).or_default();
                *sum = sum.saturating_add(frames);
            }
        }
        gauges(
            &mut registry,
            "sessions",
            "Open viewer and publisher sessions by type, as /manage/sessions lists them",
            open.iter()
                .map(|(kind, count)| (label("type", *kind), signed(*count))),
        );
        gauges(
            &mut registry,
            "session_dropped_frames",
            "Frames dropped by the open sessions of a type for falling behind (sum)",
            dropped
                .iter()
                .map(|(kind, frames)| (label("type", *kind), signed(*frames))),
        );
    }
    if let Some(links) = &snapshot.srt_receivers {
        float_gauges(
            &mut registry,
            "srt_receiver_rtt_seconds",
            "Round-trip time of each SRT input connection",
            links
                .iter()
                .map(|link| (link_labels(link), link.rtt_ms / 1000.0)),
        );
        counters(
            &mut registry,
            "srt_receiver_packets_received",
            "Packets received on each SRT input connection",
            links
                .iter()
                .map(|link| (link_labels(link), link.packets_received)),
        );
        counters(
            &mut registry,
            "srt_receiver_packets_lost",
            "Packets lost on each SRT input connection",
            links
                .iter()
                .map(|link| (link_labels(link), link.packets_lost)),
        );
        gauges(
            &mut registry,
            "srt_receiver_connected",
            "1 while the SRT input connection is connected",
            links
                .iter()
                .map(|link| (link_labels(link), i64::from(link.connected))),
        );
    }
    if let Some(archives) = &snapshot.dvr_archives {
        gauges(
            &mut registry,
            "dvr_archive_bytes",
            "Disk used by each DVR archive",
            archives.iter().map(|archive| {
                let labels = vec![
                    ("app", archive.app.clone()),
                    ("stream", archive.stream.clone()),
                ];
                (labels, signed(archive.size))
            }),
        );
    }
    if let Some(transcodes) = &snapshot.transcodes {
        transcode_metrics(&mut registry, transcodes);
    }
    let sources = [
        ("streams", snapshot.streams.is_some()),
        ("sessions", snapshot.sessions.is_some()),
        ("srt_receivers", snapshot.srt_receivers.is_some()),
        ("dvr", snapshot.dvr_archives.is_some()),
        ("transcodes", snapshot.transcodes.is_some()),
    ];
    gauges(
        &mut registry,
        "metrics_source_complete",
        "1 when every running worker answered this source in time; 0: its metrics are left out of this scrape",
        sources
            .into_iter()
            .map(|(source, complete)| (label("source", source), i64::from(complete))),
    );
    registry.register(
        "api_request_duration_seconds",
        "Management API request latency by method, route and status code",
        latencies.clone(),
    );
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = encode(&mut text, &registry);
    text
}

/// Each transcode's state, CPU, restarts and frames (`GET /manage/transcodes`).
fn transcode_metrics(registry: &mut Registry, transcodes: &[serde_json::Value]) {
    let text = |value: &serde_json::Value| value.as_str().unwrap_or_default().to_owned();
    let source =
        |t: &serde_json::Value| vec![("app", text(&t["app"])), ("stream", text(&t["stream"]))];
    let number = |value: &serde_json::Value| value.as_u64().map_or(0, signed);
    gauges(
        registry,
        "transcode_running",
        "1 while the transcode's ffmpeg makes renditions, 0 while it starts, restarts or is refused",
        transcodes
            .iter()
            .map(|t| (source(t), i64::from(t["state"] == "running"))),
    );
    float_gauges(
        registry,
        "transcode_cpu_percent",
        "CPU of the transcode's ffmpeg in its current run, percent of one core",
        transcodes
            .iter()
            .map(|t| (source(t), t["cpu_percent"].as_f64().unwrap_or_default())),
    );
    gauges(
        registry,
        "transcode_restarts",
        "ffmpeg runs of the transcode that failed and were started again",
        transcodes
            .iter()
            .map(|t| (source(t), number(&t["restarts"]))),
    );
    gauges(
        registry,
        "transcode_input_frames",
        "Source video frames given to the transcode's ffmpeg in its current run",
        transcodes
            .iter()
            .map(|t| (source(t), number(&t["input_frames"]))),
    );
    gauges(
        registry,
        "transcode_rendition_frames",
        "Video frames each rendition published in the transcode's current run",
        transcodes.iter().flat_map(|t| {
            let renditions = t["renditions"].as_array().cloned().unwrap_or_default();
            let base = source(t);
            renditions.into_iter().map(move |r| {
                let mut labels = base.clone();
                labels.push(("rendition", text(&r["name"])));
                (labels, number(&r["frames"]))
            })
        }),
    );
}

/// The cluster registry (`Cluster`).
fn cluster(registry: &mut Registry, facts: &super::snapshot::ClusterFacts) {
    gauge(
        registry,
        "cluster_connected",
        "1 while the cluster registry is connected to etcd and its watch is current",
        u64::from(facts.connected),
    );
    gauge(
        registry,
        "cluster_claims",
        "Streams this server holds in the cluster registry",
        facts.claims,
    );
    gauge(
        registry,
        "cluster_registered_streams",
        "Streams held by any server in the cluster registry, as this server's copy has them",
        facts.registered_streams,
    );
    gauge(
        registry,
        "cluster_servers",
        "Live servers in the cluster registry",
        facts.servers,
    );
    counters(
        registry,
        "cluster_conflicts",
        "Publishes of names another server holds: lost_claim (claimed after the media started, the publisher ended) or refused_publish (refused at once)",
        [
            (vec![("kind", "lost_claim".to_owned())], facts.lost_claims),
            (
                vec![("kind", "refused_publish".to_owned())],
                facts.refused_publishes,
            ),
        ],
    );
    let lag = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
    lag.set(facts.watch_lag_seconds);
    registry.register(
        "cluster_watch_lag_seconds",
        "This server's last committed claim to its arrival through the registry's watch",
        lag,
    );
}

/// Connections, bytes, restarts and state per worker, from the supervisor's cache.
fn workers(registry: &mut Registry, snapshot: &Snapshot) {
    let workers = &snapshot.workers;
    let sum = |field: fn(&super::snapshot::WorkerFacts) -> u64| {
        workers
            .iter()
            .map(field)
            .fold(0u64, |total, value| total.saturating_add(value))
    };
    gauge(
        registry,
        "connections",
        "Open client connections of all workers (publishers, players, viewers)",
        sum(|w| w.counters.connections),
    );
    total(
        registry,
        "bytes_sent",
        "Bytes sent to clients by all workers' current processes",
        sum(|w| w.counters.bytes_sent),
    );
    total(
        registry,
        "bytes_received",
        "Bytes received from clients by all workers' current processes",
        sum(|w| w.counters.bytes_received),
    );
    gauge(
        registry,
        "out_rate_bytes_per_second",
        "Bytes per second sent to clients, averaged over 10 s (server_status OutRate / 8)",
        sum(|w| w.out_rate_bps) / 8,
    );
    let each = |value: fn(&super::snapshot::WorkerFacts) -> u64| {
        workers
            .iter()
            .map(move |w| (label("worker", w.kind), value(w)))
    };
    let each_signed = |value: fn(&super::snapshot::WorkerFacts) -> u64| {
        each(value).map(|(labels, value)| (labels, signed(value)))
    };
    gauges(
        registry,
        "worker_connections",
        "Open client connections per worker",
        each_signed(|w| w.counters.connections),
    );
    counters(
        registry,
        "worker_bytes_sent",
        "Bytes sent to clients by the worker's current process",
        each(|w| w.counters.bytes_sent),
    );
    counters(
        registry,
        "worker_bytes_received",
        "Bytes received by the worker's current process (ingest: UDP datagrams included)",
        each(|w| w.counters.bytes_received),
    );
    counters(
        registry,
        "worker_restarts",
        "Times the supervisor restarted the worker",
        each(|w| u64::from(w.restarts)),
    );
    gauges(
        registry,
        "worker_state",
        "1 for the worker's current supervision state, 0 for the others",
        workers.iter().flat_map(|w| {
            STATES.iter().map(move |state| {
                let labels = vec![
                    ("worker", w.kind.to_owned()),
                    ("state", state.as_str().to_owned()),
                ];
                (labels, i64::from(w.state == state.as_str()))
            })
        }),
    );
    gauges(
        registry,
        "worker_uptime_seconds",
        "Seconds since the worker's current process reported ready; 0 while not ready",
        each_signed(|w| w.uptime_secs),
    );
    gauges(
        registry,
        "worker_ram_cache_bytes",
        "Segment and GOP memory in use per worker",
        each_signed(|w| w.counters.ram_cache_bytes),
    );
    gauges(
        registry,
        "worker_file_cache_bytes",
        "Recording and segment files on disk per worker",
        each_signed(|w| w.counters.file_cache_bytes),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::snapshot::{SrtLink, WorkerFacts};
    use prometheus_client::metrics::histogram::Histogram;
    use strom_ipc::status::{Counters, LiveStream, SessionInfo};

    fn stream(app: &str, name: &str, protocol: &str, bps: u64) -> LiveStream {
        LiveStream {
            app: app.into(),
            stream: name.into(),
            bandwidth_bps: bps,
            width: 320,
            height: 240,
            vcodec: "avc1.64001e".into(),
            acodec: String::new(),
            protocol: protocol.into(),
            publish_time: 0,
            source_url: None,
            publisher_ip: None,
            scte35: Vec::new(),
        }
    }

    fn session(id: u64, protocol: &str, dropped: Option<u64>) -> SessionInfo {
        SessionInfo {
            id,
            app: "live".into(),
            stream: "cam".into(),
            protocol: protocol.into(),
            bytes_recv: 0,
            bytes_sent: 0,
            created: 0,
            last_access: 0,
            client_ip: "10.0.0.1".into(),
            user_agent: "test".into(),
            ppv_id: None,
            dropped_frames: dropped,
        }
    }

    fn snapshot() -> Snapshot {
        Snapshot {
            workers: vec![
                WorkerFacts {
                    kind: "rtmp",
                    state: "ready",
                    restarts: 2,
                    uptime_secs: 40,
                    counters: Counters {
                        connections: 3,
                        bytes_sent: 1000,
                        bytes_received: 5000,
                        ram_cache_bytes: 0,
                        file_cache_bytes: 0,
                    },
                    out_rate_bps: 800,
                },
                WorkerFacts {
                    kind: "packager",
                    state: "backing_off",
                    restarts: 0,
                    uptime_secs: 0,
                    counters: Counters {
                        connections: 1,
                        bytes_sent: 24,
                        ..Counters::default()
                    },
                    out_rate_bps: 200,
                },
            ],
            streams: Some(vec![
                stream("live", "cam", "RTMP", 2_500_000),
                stream("live", "q\"uo\\te\nd", "SRT", 1_000),
            ]),
            sessions: Some(vec![
                session(1, "RTMP", Some(4)),
                session(2, "RTMP", Some(6)),
                session(3, "HLS", None),
            ]),
            srt_receivers: Some(vec![SrtLink {
                id: "0.0.0.0:4000".into(),
                stream: "live/cam".into(),
                peer: "10.0.0.7:5000".into(),
                connected: true,
                rtt_ms: 12.5,
                packets_received: 900,
                packets_lost: 3,
            }]),
            dvr_archives: None,
            transcodes: None,
            cluster: Some(crate::metrics::snapshot::ClusterFacts {
                connected: true,
                claims: 2,
                registered_streams: 5,
                servers: 3,
                lost_claims: 1,
                refused_publishes: 4,
                watch_lag_seconds: 0.002,
            }),
        }
    }

    /// The exact lines dashboards and the e2e test rely on, label escaping included.
    #[test]
    fn renders_openmetrics_text() {
        let latencies: Latencies = Family::new_with_constructor(|| Histogram::new([0.1, 1.0]));
        latencies
            .get_or_create(&vec![
                ("method", "GET".to_owned()),
                ("route", "/manage/workers".to_owned()),
                ("code", "200".to_owned()),
            ])
            .observe(0.05);
        let text = render(&snapshot(), &latencies);
        let expected = [
            "# TYPE strom_streams_live gauge\n",
            "strom_streams_live 2\n",
            "strom_cluster_connected 1\n",
            "strom_cluster_claims 2\n",
            "strom_cluster_registered_streams 5\n",
            "strom_cluster_servers 3\n",
            "strom_cluster_conflicts_total{kind=\"lost_claim\"} 1\n",
            "strom_cluster_conflicts_total{kind=\"refused_publish\"} 4\n",
            "strom_cluster_watch_lag_seconds 0.002\n",
            "strom_stream_ingest_bytes_per_second{app=\"live\",stream=\"cam\",protocol=\"RTMP\"} 312500\n",
            // Label values are escaped: backslash, double quote, newline.
            "strom_stream_ingest_bytes_per_second{app=\"live\",stream=\"q\\\"uo\\\\te\\nd\",protocol=\"SRT\"} 125\n",
            "strom_connections 4\n",
            "# TYPE strom_bytes_sent counter\n",
            "strom_bytes_sent_total 1024\n",
            "strom_bytes_received_total 5000\n",
            "strom_out_rate_bytes_per_second 125\n",
            "strom_worker_connections{worker=\"rtmp\"} 3\n",
            "strom_worker_bytes_sent_total{worker=\"packager\"} 24\n",
            "strom_worker_restarts_total{worker=\"rtmp\"} 2\n",
            "strom_worker_state{worker=\"rtmp\",state=\"ready\"} 1\n",
            "strom_worker_state{worker=\"rtmp\",state=\"backing_off\"} 0\n",
            "strom_worker_state{worker=\"rtmp\",state=\"unresponsive\"} 0\n",
            "strom_worker_state{worker=\"packager\",state=\"backing_off\"} 1\n",
            "strom_sessions{type=\"RTMP\"} 2\n",
            "strom_sessions{type=\"HLS\"} 1\n",
            "strom_sessions{type=\"SRT\"} 0\n",
            "strom_session_dropped_frames{type=\"RTMP\"} 10\n",
            "strom_srt_receiver_rtt_seconds{id=\"0.0.0.0:4000\",stream=\"live/cam\",peer=\"10.0.0.7:5000\"} 0.0125\n",
            "strom_srt_receiver_packets_received_total{id=\"0.0.0.0:4000\",stream=\"live/cam\",peer=\"10.0.0.7:5000\"} 900\n",
            "strom_srt_receiver_packets_lost_total{id=\"0.0.0.0:4000\",stream=\"live/cam\",peer=\"10.0.0.7:5000\"} 3\n",
            "strom_metrics_source_complete{source=\"streams\"} 1\n",
            "strom_metrics_source_complete{source=\"dvr\"} 0\n",
            "# TYPE strom_api_request_duration_seconds histogram\n",
            "strom_api_request_duration_seconds_bucket{le=\"0.1\",method=\"GET\",route=\"/manage/workers\",code=\"200\"} 1\n",
            "strom_api_request_duration_seconds_count{method=\"GET\",route=\"/manage/workers\",code=\"200\"} 1\n",
        ];
        for line in expected {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
        // HLS sessions do not count drops: no series rather than a misleading 0.
        assert!(!text.contains("strom_session_dropped_frames{type=\"HLS\"}"));
        // A source without a complete answer is left out, not shown as zero.
        assert!(!text.contains("strom_dvr_archive_bytes"), "{text}");
    }

    #[test]
    fn incomplete_sources_are_left_out() {
        let latencies: Latencies = Family::new_with_constructor(|| Histogram::new([1.0]));
        let text = render(&Snapshot::default(), &latencies);
        assert!(!text.contains("strom_streams_live"), "{text}");
        assert!(!text.contains("strom_sessions{"), "{text}");
        assert!(text.contains("strom_metrics_source_complete{source=\"sessions\"} 0\n"));
        assert!(text.contains("strom_connections 0\n"));
    }
}
