//! What reading an absent stream starts, decided once for every protocol: the worker
//! that can produce `app/stream` on demand (an on-demand pull source of the stream, else
//! an edge pull for a stream of an `Edge` app). A worker whose readers ask for such a
//! stream subscribes to that worker's media bus as for any live stream
//! ([`crate::bus::relays::Unlisted`]); the subscription is a reader there, which starts
//! the pull. So an RTMP player, an HLS request, an SRT viewer or an RTSP player all start
//! an RTSP camera's on-demand pull or an edge pull alike.

use super::Gate;
use crate::key::StreamKey;
use std::path::{Path, PathBuf};
use strom_ipc::WorkerKind;
use strom_ipc::bus::StreamLocation;
use strom_ipc::contract::bus_path;
use strom_ipc::rules::{PullMode, Rules};

/// The worker that starts `key` when it is read: the rtsp worker for an on-demand
/// `rtsp://` pull, the rtmp worker for an on-demand `rtmp://` pull or an edge app pulled
/// over RTMP, the ingest worker for an edge app pulled over SRT.
pub fn producer_on_demand(rules: &Rules, key: &StreamKey) -> Option<WorkerKind> {
    if strom_ipc::names::check_pair(&key.app, &key.stream).is_err() {
        return None;
    }
    let pull = rules.pull_sources.iter().find(|pull| {
        pull.mode == PullMode::OnDemand && pull.app == key.app && pull.stream == key.stream
    });
    match pull {
        Some(pull) if pull.is_rtsp() => Some(WorkerKind::Rtsp),
        Some(_) => Some(WorkerKind::Rtmp),
        None => rules.edge_for(&key.app).map(|rule| {
            if rule.is_srt() {
                WorkerKind::Ingest
            } else {
                WorkerKind::Rtmp
            }
        }),
    }
}

impl Gate {
    /// Whether `key` is nowhere on this server and reading it would start nothing: no
    /// worker produces it and no on-demand or edge pull covers it. Another server's pull
    /// asking for it (an edge trying its origins) is then told "not found" at once, so it
    /// moves on to the next origin instead of waiting for media that will not come.
    pub fn cannot_start(&self, key: &StreamKey) -> bool {
        !self.hub().may_be_produced_here(key) && producer_on_demand(&self.rules(), key).is_none()
    }
}

/// Where to subscribe to `key` before it is live, when reading it starts it.
pub fn location_on_demand(
    rules: &Rules,
    run_dir: &Path,
    key: &StreamKey,
) -> Option<StreamLocation> {
    let producer = producer_on_demand(rules, key)?;
    Some(StreamLocation {
        app: key.app.clone(),
        stream: key.stream.clone(),
        producer,
        bus_path: bus_path(run_dir, producer),
    })
}

/// [`location_on_demand`] as the relays of a worker ask it, with the rules in force.
pub fn unlisted(
    rules: impl Fn() -> std::sync::Arc<Rules> + Send + Sync + 'static,
    run_dir: PathBuf,
) -> crate::bus::relays::Unlisted {
    Box::new(move |key: &StreamKey| location_on_demand(&rules(), &run_dir, key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use strom_ipc::rules::{EdgeRule, PullSource, RtspTransport};

    fn pull(stream: &str, url: &str, mode: PullMode) -> PullSource {
        PullSource {
            app: "cams".into(),
            stream: stream.into(),
            url: url.into(),
            mode,
            idle_grace_secs: 10,
            rtsp_transport: RtspTransport::Tcp,
        }
    }

    #[test]
    fn on_demand_pulls_and_edges_name_their_worker() {
        let rules = Rules {
            pull_sources: vec![
                pull("door", "rtsp://10.0.0.5/stream1", PullMode::OnDemand),
                pull("yard", "rtmp://10.0.0.6/live/yard", PullMode::OnDemand),
                pull("gate", "rtsp://10.0.0.7/stream1", PullMode::Always),
            ],
            edges: vec![
                EdgeRule {
                    apps: vec!["edge".into()],
                    origins: vec!["rtmp://origin".into()],
                    idle_grace_secs: 10,
                },
                EdgeRule {
                    apps: vec!["srtedge".into()],
                    origins: vec!["srt://origin:9000".into()],
                    idle_grace_secs: 10,
                },
            ],
            ..Rules::default()
        };
        let of = |app: &str, stream: &str| producer_on_demand(&rules, &StreamKey::new(app, stream));
        assert_eq!(of("cams", "door"), Some(WorkerKind::Rtsp));
        assert_eq!(of("cams", "yard"), Some(WorkerKind::Rtmp));
        assert_eq!(
            of("cams", "gate"),
            None,
            "an always-on pull is live or failing"
        );
        assert_eq!(of("edge", "any"), Some(WorkerKind::Rtmp));
        assert_eq!(of("srtedge", "any"), Some(WorkerKind::Ingest));
        assert_eq!(of("live", "any"), None);
        assert_eq!(of("edge", "../x"), None);
        let location = location_on_demand(
            &rules,
            Path::new("/run/strom"),
            &StreamKey::new("cams", "door"),
        )
        .unwrap();
        assert_eq!(
            location.bus_path,
            bus_path(Path::new("/run/strom"), WorkerKind::Rtsp)
        );
    }
}
