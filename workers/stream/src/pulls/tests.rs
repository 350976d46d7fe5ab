//! The pull supervisor with a scripted [`Puller`] (each URL answers as told: fail at
//! once, or pull until stopped): demand, the grace, retries, rule changes and the
//! failover between an edge rule's origins, in a real hub.

use super::*;
use crate::gate::handles::Queue;
use crate::hub::Hub;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use strom_ipc::WorkerKind;
use strom_ipc::rules::{EdgeRule, PullMode, PullSource, Rules};
use tokio::sync::mpsc;

/// Bound on waiting for what must happen; never a speed assertion.
const WAIT: Duration = Duration::from_secs(30);

/// What a scripted pull did: its URL, and whether it ended stopped.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Started(String),
    Stopped(String),
}

/// Pulls that fail at once for the URLs in `failing`, and run until stopped otherwise.
struct Scripted {
    failing: Vec<String>,
    /// The URL scheme of the sources it takes.
    scheme: &'static str,
    seen: mpsc::UnboundedSender<Seen>,
}

impl Puller for Scripted {
    fn protocol(&self) -> &'static str {
        "TEST"
    }

    fn takes(&self, source: &PullSource) -> bool {
        source.url.starts_with(self.scheme)
    }

    fn pull(&self, job: PullJob) -> Pulling {
        let fails = self.failing.contains(&job.source.url);
        let seen = self.seen.clone();
        Box::pin(async move {
            let url = job.source.url.clone();
            let _ = seen.send(Seen::Started(url.clone()));
            if fails {
                return PullEnd::Failed("refused".into());
            }
            job.stop.cancelled().await;
            let _ = seen.send(Seen::Stopped(url));
            PullEnd::Stopped
        })
    }
}

fn scripted(failing: &[&str]) -> (Arc<Scripted>, mpsc::UnboundedReceiver<Seen>) {
    let (seen, events) = mpsc::unbounded_channel();
    let puller = Arc::new(Scripted {
        failing: failing.iter().map(|s| (*s).to_owned()).collect(),
        scheme: "test://",
        seen,
    });
    (puller, events)
}

async fn next(events: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    tokio::time::timeout(WAIT, events.recv())
        .await
        .expect("the supervisor did nothing")
        .expect("the puller is gone")
}

fn source(url: &str, mode: PullMode) -> PullSource {
    PullSource {
        app: "live".into(),
        stream: "cam".into(),
        url: url.into(),
        mode,
        idle_grace_secs: 1,
        rtsp_transport: Default::default(),
    }
}

#[tokio::test]
async fn an_on_demand_source_is_pulled_while_read_and_dropped_after_the_grace() {
    let hub = Hub::default();
    let (puller, mut seen) = scripted(&[]);
    let stop = CancellationToken::new();
    let sources = [source("test://a", PullMode::OnDemand)];
    let pulls = PullSources::start(hub.clone(), puller, &sources, stop.clone());
    assert_eq!(pulls.count(), 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(seen.try_recv().is_err(), "nobody reads it: no pull");
    let key = StreamKey::new("live", "cam");
    let reader = hub.own_reader(&key, Queue, 1);
    assert_eq!(next(&mut seen).await, Seen::Started("test://a".into()));
    drop(reader);
    assert_eq!(
        next(&mut seen).await,
        Seen::Stopped("test://a".into()),
        "its grace over, the pull is stopped"
    );
    let _again = hub.own_reader(&key, Queue, 2);
    assert_eq!(next(&mut seen).await, Seen::Started("test://a".into()));
    pulls.apply(&[]);
    assert_eq!(
        next(&mut seen).await,
        Seen::Stopped("test://a".into()),
        "a source that left the rules stops"
    );
    stop.cancel();
}

#[tokio::test]
async fn a_failed_source_is_tried_again_and_only_ours_are_pulled() {
    let hub = Hub::default();
    let (puller, mut seen) = scripted(&["test://down"]);
    let stop = CancellationToken::new();
    let mut other = source("other://x", PullMode::Always);
    other.stream = "other".into();
    let sources = [source("test://down", PullMode::Always), other];
    let pulls = PullSources::start(hub, puller, &sources, stop.clone());
    assert_eq!(pulls.count(), 1, "the other protocol's source is not ours");
    assert_eq!(next(&mut seen).await, Seen::Started("test://down".into()));
    assert_eq!(
        next(&mut seen).await,
        Seen::Started("test://down".into()),
        "tried again after the backoff"
    );
    stop.cancel();
}

#[tokio::test]
async fn an_edge_pull_fails_over_to_the_next_origin_and_ends_with_its_readers() {
    let hub = Hub::default();
    let (puller, mut seen) = scripted(&["rtmp://first/live/cam"]);
    let stop = CancellationToken::new();
    let rules = Arc::new(Rules {
        edges: vec![EdgeRule {
            apps: vec!["live".into()],
            origins: vec!["rtmp://first".into(), "rtmp://second".into()],
            idle_grace_secs: 1,
        }],
        ..Rules::default()
    });
    let in_force = Arc::new(Mutex::new(rules));
    let rules_of = Arc::clone(&in_force);
    let edges = EdgePulls::start(
        hub.clone(),
        WorkerKind::Rtmp,
        |_| true,
        10,
        stop.clone(),
        Box::new(move || Arc::clone(&rules_of.lock().unwrap())),
        puller,
    );
    let key = StreamKey::new("live", "cam");
    let reader = hub.own_reader(&key, Queue, 1);
    assert_eq!(
        next(&mut seen).await,
        Seen::Started("rtmp://first/live/cam".into())
    );
    assert_eq!(
        next(&mut seen).await,
        Seen::Started("rtmp://second/live/cam".into()),
        "the next origin after a failure"
    );
    drop(reader);
    assert_eq!(
        next(&mut seen).await,
        Seen::Stopped("rtmp://second/live/cam".into()),
        "no reader for the grace: the pull ends"
    );
    // A rule change stops a running pull; its stream, still read, is pulled again.
    let _reader = hub.own_reader(&key, Queue, 2);
    let mut calls: HashMap<String, usize> = HashMap::new();
    for _ in 0..2 {
        if let Seen::Started(url) = next(&mut seen).await {
            *calls.entry(url).or_default() += 1;
        }
    }
    assert_eq!(calls.get("rtmp://second/live/cam"), Some(&1));
    *in_force.lock().unwrap() = Arc::new(Rules {
        edges: vec![EdgeRule {
            apps: vec!["live".into()],
            origins: vec!["rtmp://third".into()],
            idle_grace_secs: 1,
        }],
        ..Rules::default()
    });
    edges.apply();
    let mut after = Vec::new();
    while after.len() < 2 {
        after.push(next(&mut seen).await);
    }
    assert!(
        after.contains(&Seen::Stopped("rtmp://second/live/cam".into()))
            && after.contains(&Seen::Started("rtmp://third/live/cam".into())),
        "{after:?}"
    );
    stop.cancel();
}

/// With the cluster registry: a name nobody holds is not probed at the origins but waits
/// for its registration; once a server holds it, its advertised URL is pulled first; a
/// new holder (the first one died) is followed.
#[tokio::test]
async fn an_edge_pull_goes_to_the_registry_holder_and_waits_for_unregistered_names() {
    use strom_ipc::cluster::{ClusterUpdate, ServerEntry, StreamEntry};
    let hub = Hub::default();
    // The holder is dead and the listed origin does not have the stream.
    let (puller, mut seen) = scripted(&["rtmp://dead/live/cam", "rtmp://listed/live/cam"]);
    let stop = CancellationToken::new();
    let rules = Arc::new(Rules {
        edges: vec![EdgeRule {
            apps: vec!["live".into()],
            origins: vec!["rtmp://listed".into()],
            idle_grace_secs: 30,
        }],
        ..Rules::default()
    });
    let _edges = EdgePulls::start(
        hub.clone(),
        WorkerKind::Rtmp,
        |_| true,
        10,
        stop.clone(),
        Box::new(move || Arc::clone(&rules)),
        puller,
    );
    let servers = vec![
        ServerEntry {
            id: "o1".into(),
            urls: Some(vec!["srt://dead:9000".into(), "rtmp://dead".into()]),
        },
        ServerEntry {
            id: "o2".into(),
            urls: Some(vec!["rtmp://holder".into()]),
        },
    ];
    hub.cluster().apply(ClusterUpdate {
        own_id: Some("edge".into()),
        connected: true,
        reset: true,
        servers,
        streams: Vec::new(),
    });
    let key = StreamKey::new("live", "cam");
    let _reader = hub.own_reader(&key, Queue, 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        seen.try_recv().is_err(),
        "an unregistered name is not probed at the origins"
    );
    let held_by = |server: Option<&str>| ClusterUpdate {
        own_id: Some("edge".into()),
        connected: true,
        streams: vec![StreamEntry {
            app: "live".into(),
            stream: "cam".into(),
            server: server.map(Into::into),
        }],
        ..ClusterUpdate::default()
    };
    hub.cluster().apply(held_by(Some("o1")));
    assert_eq!(
        next(&mut seen).await,
        Seen::Started("rtmp://dead/live/cam".into()),
        "the holder's URL of the rule's protocol first"
    );
    assert_eq!(
        next(&mut seen).await,
        Seen::Started("rtmp://listed/live/cam".into()),
        "then the rule's origins"
    );
    // The holder died; its key went with its lease, and another server claimed the name.
    hub.cluster().apply(held_by(None));
    hub.cluster().apply(held_by(Some("o2")));
    let mut started = Vec::new();
    while !started.contains(&Seen::Started("rtmp://holder/live/cam".into())) {
        started.push(next(&mut seen).await);
        assert!(
            started.len() < 10,
            "the new holder is never pulled: {started:?}"
        );
    }
    stop.cancel();
}
