//! Demand in this worker: an HLS viewer asking for a stream that is not live but that
//! another worker starts on demand (an `Edge` app's pull, an on-demand RTSP or RTMP pull:
//! [`strom_stream::gate::on_demand`]) makes the demand known by packaging it anyway. The packaging task's bus
//! subscription to the rtmp worker is a reader there, which starts the rtmp worker's
//! on-demand pull from the origins (`strom_rtmp::pull::edge`); the stream then flows back
//! over that same subscription, and the viewer's playlist request waits for the first
//! segment ([`EdgeDemand::wait_for_segments`]) instead of failing.
//!
//! Streams of edge apps are packaged only while HLS viewers ask for them (a request in the
//! last `hls_session_timeout`): then the packaging stops, the rtmp worker loses its reader
//! and drops the pull after the edge rule's grace. Streams of other apps are packaged as
//! the registry announces them, as before.

use crate::packaging::Packaging;
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use strom_ipc::bus::StreamLocation;
use strom_stream::StreamKey;
use strom_stream::gate::on_demand::{location_on_demand, producer_on_demand};
use strom_worker_runtime::sync::locked;
use tokio_util::sync::CancellationToken;

/// How long a playlist request of an edge stream waits for its first segment.
pub const EDGE_WAIT: Duration = Duration::from_secs(15);
/// Edge streams HLS and HTTP listeners may keep demanded at once.
pub const MAX_DEMANDED_STREAMS: usize = 256;
/// Streams one client address may have demanded that are not live (yet): a client
/// naming made-up streams holds at most this share of [`MAX_DEMANDED_STREAMS`].
pub const MAX_PENDING_PER_CLIENT: usize = 16;
/// A demanded stream that did not come within [`EDGE_WAIT`] is not asked for again for
/// this long: requests for it are answered 404 at once instead of holding a place.
pub const ABSENT_FOR: Duration = Duration::from_secs(10);
/// Streams remembered as absent at most (oldest forgotten first).
const MAX_ABSENT: usize = 4096;
/// How often the wait looks at the store.
const WAIT_STEP: Duration = Duration::from_millis(100);

/// One demanded stream.
struct Demand {
    /// When it was first asked for (a stream not live [`EDGE_WAIT`] later is not coming).
    since: Instant,
    last: Instant,
    /// The client whose request demanded it first (its share, while not live).
    client: IpAddr,
}

pub struct EdgeDemand {
    packaging: Arc<Packaging>,
    /// The server's run directory, where the workers' media bus sockets are.
    run_dir: PathBuf,
    /// Streams HLS viewers asked for: when they last did, and who asked first.
    demanded: Mutex<HashMap<(String, String), Demand>>,
    /// Streams that did not come when demanded, and until when they are not asked for.
    absent: Mutex<HashMap<(String, String), Instant>>,
    /// The supervisor's last registry of live streams.
    registry: Mutex<Vec<StreamLocation>>,
    /// A demanded stream with no request for this long is no longer packaged.
    idle: Duration,
}

impl EdgeDemand {
    pub fn new(packaging: Arc<Packaging>, run_dir: PathBuf, idle: Duration) -> Self {
        Self {
            packaging,
            run_dir,
            demanded: Mutex::default(),
            absent: Mutex::default(),
            registry: Mutex::default(),
            idle,
        }
    }

    /// A new registry from the supervisor (or new rules: `None` keeps the last one).
    pub fn apply_registry(&self, locations: Option<Vec<StreamLocation>>) {
        let locations = match locations {
            Some(locations) => {
                *locked(&self.registry) = locations.clone();
                locations
            }
            None => locked(&self.registry).clone(),
        };
        self.packaging.apply_registry(self.with_demand(locations));
    }

    /// The registry as the packager should follow it: streams of edge apps only while
    /// viewers ask for them, and then also before they are live (pulled from the rtmp
    /// worker, which starts pulling them when the packager subscribes).
    fn with_demand(&self, mut locations: Vec<StreamLocation>) -> Vec<StreamLocation> {
        let rules = self.packaging.rules();
        let demanded = locked(&self.demanded);
        // A stream started on demand is packaged only while asked for: packaging it for
        // good would be a reader that keeps its pull running for good.
        locations.retain(|l| {
            let key = StreamKey::new(l.app.clone(), l.stream.clone());
            producer_on_demand(&rules, &key).is_none()
                || demanded.contains_key(&(l.app.clone(), l.stream.clone()))
        });
        for (app, stream) in demanded.keys() {
            let listed = locations
                .iter()
                .any(|l| &l.app == app && &l.stream == stream);
            let key = StreamKey::new(app.clone(), stream.clone());
            if !listed && let Some(location) = location_on_demand(&rules, &self.run_dir, &key) {
                locations.push(location);
            }
        }
        locations
    }

    /// An HLS request from `client` for `app/stream` (valid names): when another worker
    /// starts the stream on demand (an edge app, an on-demand pull), keeps it demanded and
    /// starts packaging it if it was not; `true` when the stream is demanded. Any client
    /// can name any stream, and each new one costs a packaging task and a pull: a stream
    /// that did not come is not asked for again for [`ABSENT_FOR`], one client may have
    /// at most [`MAX_PENDING_PER_CLIENT`] demanded streams that are not live, and past
    /// [`MAX_DEMANDED_STREAMS`] new names are refused (logged) until demand expires.
    pub fn demand(&self, app: &str, stream: &str, client: IpAddr) -> bool {
        let stream_key = StreamKey::new(app, stream);
        if producer_on_demand(&self.packaging.rules(), &stream_key).is_none() {
            return false;
        }
        let key = (app.to_owned(), stream.to_owned());
        if locked(&self.absent)
            .get(&key)
            .is_some_and(|until| Instant::now() < *until)
        {
            return false;
        }
        let mut demanded = locked(&self.demanded);
        if let Some(demand) = demanded.get_mut(&key) {
            demand.last = Instant::now();
            return true;
        }
        if demanded.len() >= MAX_DEMANDED_STREAMS {
            drop(demanded);
            strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); %app, %stream, max = MAX_DEMANDED_STREAMS, "on-demand stream not pulled: too many streams demanded");
            return false;
        }
        let hub = self.packaging.hub();
        let pending = demanded
            .iter()
            .filter(|((a, s), demand)| {
                demand.client == client
                    && hub
                        .get(&StreamKey::new(a.as_str(), s.as_str()))
                        .is_none_or(|live| live.publisher().is_none())
            })
            .count();
        if pending >= MAX_PENDING_PER_CLIENT {
            drop(demanded);
            strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); %client, %app, %stream, max = MAX_PENDING_PER_CLIENT, "on-demand stream not pulled: the client's share of streams not live is used up");
            return false;
        }
        demanded.insert(
            key,
            Demand {
                since: Instant::now(),
                last: Instant::now(),
                client,
            },
        );
        drop(demanded);
        tracing::info!(%app, %stream, %client, "edge: HLS viewer asks for the stream");
        self.apply_registry(None);
        true
    }

    /// `app/stream` did not come within [`EDGE_WAIT`]: its place is freed now and the
    /// name is not asked for again for [`ABSENT_FOR`].
    fn not_coming(&self, app: &str, stream: &str) {
        if self.give_up(app, stream) {
            self.apply_registry(None);
        }
    }

    /// [`EdgeDemand::not_coming`] without following the registry again; `true` when
    /// `app/stream` was demanded and is given up.
    fn give_up(&self, app: &str, stream: &str) -> bool {
        let key = (app.to_owned(), stream.to_owned());
        let live = self
            .packaging
            .hub()
            .get(&StreamKey::new(app, stream))
            .is_some_and(|s| s.publisher().is_some());
        if live || locked(&self.demanded).remove(&key).is_none() {
            return false;
        }
        let mut absent = locked(&self.absent);
        let now = Instant::now();
        absent.retain(|_, until| now < *until);
        if absent.len() >= MAX_ABSENT
            && let Some(oldest) = absent
                .iter()
                .min_by_key(|(_, until)| **until)
                .map(|(k, _)| k.clone())
        {
            absent.remove(&oldest);
        }
        absent.insert(key, now + ABSENT_FOR);
        drop(absent);
        tracing::info!(%app, %stream, "on-demand stream did not come: not asked for again for a while");
        true
    }

    /// Forgets streams no viewer asked for within the idle time (housekeeping). A stream
    /// with listeners (`mpegts.stream`, `icecast.stream`: one request, then a long
    /// answer) stays demanded while they listen: they read the packager's hub, where the
    /// packaging task itself is the only other reader.
    pub fn expire(&self) {
        let before = locked(&self.demanded).len();
        // Whether or not a request still waits for it (a flood's requests give up early).
        let hub = self.packaging.hub();
        let overdue: Vec<(String, String)> = locked(&self.demanded)
            .iter()
            .filter(|((app, stream), demand)| {
                demand.since.elapsed() > EDGE_WAIT
                    && hub
                        .get(&StreamKey::new(app.as_str(), stream.as_str()))
                        .is_none_or(|live| live.publisher().is_none())
            })
            .map(|(key, _)| key.clone())
            .collect();
        for (app, stream) in overdue {
            self.give_up(&app, &stream);
        }
        let rules = self.packaging.rules();
        locked(&self.demanded).retain(|(app, stream), demand| {
            let packaged = usize::from(crate::packaging::hls_settings(&rules, app, stream).0);
            if hub.reader_count(&strom_stream::StreamKey::new(app.as_str(), stream.as_str()))
                > packaged
            {
                demand.last = Instant::now();
            }
            demand.last.elapsed() < self.idle
        });
        if locked(&self.demanded).len() != before {
            self.apply_registry(None);
        }
    }

    /// Waits (at most [`EDGE_WAIT`]) until the demanded edge stream `app/stream` has
    /// segments; at once for streams of other apps.
    pub async fn wait_for_segments(&self, app: &str, stream: &str, shutdown: &CancellationToken) {
        if producer_on_demand(&self.packaging.rules(), &StreamKey::new(app, stream)).is_none() {
            return;
        }
        let came = self
            .wait_until(shutdown, || {
                self.packaging
                    .store
                    .get(app, stream)
                    .is_some_and(|s| s.has_segments())
            })
            .await;
        if !came {
            self.not_coming(app, stream);
        }
    }

    /// Waits (at most [`EDGE_WAIT`]) until the demanded edge stream `app/stream` is live
    /// in the packager (`mpegts.stream`, `icecast.stream` listeners).
    pub async fn wait_for_live(&self, app: &str, stream: &str, shutdown: &CancellationToken) {
        if producer_on_demand(&self.packaging.rules(), &StreamKey::new(app, stream)).is_none() {
            return;
        }
        let key = strom_stream::StreamKey::new(app, stream);
        let came = self
            .wait_until(shutdown, || {
                self.packaging
                    .hub()
                    .get(&key)
                    .is_some_and(|s| s.publisher().is_some())
            })
            .await;
        if !came {
            self.not_coming(app, stream);
        }
    }

    /// Waits (at most [`EDGE_WAIT`]) while `app/stream` is live but has no segment yet
    /// (the first seconds after a publish): its first playlist request gets the playlist
    /// once there is one, not a 404 that looks like a broken server.
    pub async fn wait_for_first_segment(
        &self,
        app: &str,
        stream: &str,
        shutdown: &CancellationToken,
    ) {
        let key = StreamKey::new(app, stream);
        let live = || {
            self.packaging
                .hub()
                .get(&key)
                .is_some_and(|s| s.publisher().is_some())
        };
        let has_segments = || {
            self.packaging
                .store
                .get(app, stream)
                .is_some_and(|s| s.has_segments())
        };
        if !live() || has_segments() {
            return;
        }
        self.wait_until(shutdown, || has_segments() || !live())
            .await;
    }

    /// `true` when `ready` came true within [`EDGE_WAIT`] (or the worker stops).
    async fn wait_until(&self, shutdown: &CancellationToken, ready: impl Fn() -> bool) -> bool {
        let deadline = Instant::now() + EDGE_WAIT;
        while Instant::now() < deadline {
            if ready() {
                return true;
            }
            tokio::select! {
                () = shutdown.cancelled() => return true,
                () = tokio::time::sleep(WAIT_STEP) => {}
            }
        }
        ready()
    }
}

/// Forgets idle demand every second until `shutdown`.
pub async fn expire_loop(edge: Arc<EdgeDemand>, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = tick.tick() => edge.expire(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::store::{Limits, Store};
    use strom_ipc::WorkerKind;
    use strom_ipc::rules::{EdgeRule, Rules};
    use strom_stream::Hub;
    use strom_worker_runtime::SessionIds;

    fn location(
        app: &str,
        stream: &str,
        producer: WorkerKind,
        bus: &std::path::Path,
    ) -> StreamLocation {
        StreamLocation {
            app: app.into(),
            stream: stream.into(),
            producer,
            bus_path: bus.to_path_buf(),
        }
    }

    const CLIENT: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));

    /// A different address for each `i` (spreads a test's names over clients' shares).
    fn client(i: usize) -> IpAddr {
        IpAddr::V4(std::net::Ipv4Addr::new(
            10,
            0,
            (i / 256) as u8,
            (i % 256) as u8,
        ))
    }

    fn names(locations: &[StreamLocation]) -> Vec<String> {
        let mut names: Vec<String> = locations
            .iter()
            .map(|l| format!("{}/{}@{}", l.app, l.stream, l.producer))
            .collect();
        names.sort();
        names
    }

    /// A packager whose rules make `live` an edge app, on a store in a temporary dir.
    fn packaging_with_edge_app() -> (
        tempfile::TempDir,
        CancellationToken,
        Arc<Store>,
        Arc<Packaging>,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let shutdown = CancellationToken::new();
        let store = Arc::new(Store::new(
            dir.path(),
            Limits {
                max_ram_bytes: u64::MAX,
                grace: Duration::from_secs(30),
            },
        ));
        let rules = Rules {
            edges: vec![EdgeRule {
                apps: vec!["live".into()],
                origins: vec!["rtmp://origin".into()],
                idle_grace_secs: 30,
            }],
            ..Rules::default()
        };
        let gate = strom_stream::Gate::new(Hub::default(), Arc::new(rules), Vec::new());
        let packaging = Arc::new(Packaging::new(
            Arc::new(gate),
            Arc::clone(&store),
            Arc::new(SessionIds::new(1)),
            shutdown.clone(),
        ));
        (dir, shutdown, store, packaging)
    }

    #[tokio::test]
    async fn edge_streams_are_packaged_while_viewers_ask() {
        let (dir, shutdown, store, packaging) = packaging_with_edge_app();
        let rtmp_bus = strom_ipc::contract::bus_path(dir.path(), WorkerKind::Rtmp);
        let other_bus = dir.path().join("ingest.sock");
        let edge = EdgeDemand::new(
            Arc::clone(&packaging),
            dir.path().to_path_buf(),
            Duration::ZERO,
        );
        let registry = vec![
            location("live", "a", WorkerKind::Rtmp, &rtmp_bus),
            location("other", "b", WorkerKind::Ingest, &other_bus),
        ];
        // Live on the edge but nobody asks over HTTP: not packaged.
        assert_eq!(
            names(&edge.with_demand(registry.clone())),
            ["other/b@ingest"]
        );
        edge.apply_registry(Some(registry.clone()));
        // An HLS viewer of a stream that is not live yet: packaged from the rtmp worker.
        assert!(edge.demand("live", "c", CLIENT));
        assert!(!edge.demand("other", "x", CLIENT), "not an edge app");
        assert_eq!(
            names(&edge.with_demand(registry.clone())),
            ["live/c@rtmp", "other/b@ingest"]
        );
        assert!(store.get("live", "c").is_some());
        assert!(store.get("other", "x").is_none());
        // Asked for and live: the registry's own entry.
        edge.demand("live", "a", CLIENT);
        assert_eq!(
            names(&edge.with_demand(registry.clone())),
            ["live/a@rtmp", "live/c@rtmp", "other/b@ingest"]
        );
        // Client-chosen names are capped: past the cap a new name is not pulled, a
        // demanded one still is.
        let extra: Vec<String> = (0..MAX_DEMANDED_STREAMS).map(|i| format!("n{i}")).collect();
        let taken = extra
            .iter()
            .enumerate()
            .filter(|(i, name)| edge.demand("live", name, client(*i)))
            .count();
        assert_eq!(taken, MAX_DEMANDED_STREAMS - 2, "a and c hold two places");
        assert!(edge.demand("live", "a", CLIENT));
        assert_eq!(locked(&edge.demanded).len(), MAX_DEMANDED_STREAMS);
        // No requests within the idle time (zero here): forgotten.
        edge.expire();
        assert_eq!(names(&edge.with_demand(registry)), ["other/b@ingest"]);
        assert!(edge.demand("live", "again", CLIENT), "places come back");
        shutdown.cancel();
    }

    #[tokio::test]
    async fn one_client_holds_a_share_and_absent_names_are_not_asked_for_again() {
        let (dir, shutdown, _store, packaging) = packaging_with_edge_app();
        let edge = EdgeDemand::new(packaging, dir.path().to_path_buf(), Duration::from_secs(60));
        // A client naming made-up streams fills its own share, not the table.
        let made_up = (0..100)
            .filter(|i| edge.demand("live", &format!("fake{i}"), CLIENT))
            .count();
        assert_eq!(made_up, MAX_PENDING_PER_CLIENT);
        assert!(
            edge.demand("live", "real", client(1)),
            "another viewer's stream is pulled"
        );
        // A name that did not come within the wait (what `wait_for_segments` finds after
        // EDGE_WAIT) is freed and refused for a while.
        edge.not_coming("live", "fake0");
        assert!(!locked(&edge.demanded).contains_key(&("live".into(), "fake0".into())));
        assert!(
            !edge.demand("live", "fake0", client(2)),
            "answered 404 at once"
        );
        for until in locked(&edge.absent).values_mut() {
            *until = Instant::now();
        }
        assert!(
            edge.demand("live", "fake0", client(2)),
            "asked for again later"
        );
        shutdown.cancel();
    }
}
