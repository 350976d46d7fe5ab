//! A worker's hub of live streams keyed by `app/stream`: one publisher per stream (held
//! through a [`Publishing`] guard), any number of readers, and [`HubEvents`] for the
//! parts of the worker that react to publishes and demand.
//!
//! A stream exists while it has a publisher or a reader and leaves the map with the last
//! of them. An optional announcer tells the world outside the worker (the supervisor's
//! registry of live streams) about every publish and release, whoever ends it. A worker's
//! hub also holds every announced claim's name across the server's workers
//! ([`crate::gate::ownership`]), so a name has one producer whatever protocol asks.

pub mod publishing;

use crate::cluster::ClusterView;
use crate::cursor::Cursor;
use crate::events::{HubEvent, HubEvents};
use crate::gate::ownership::{ClaimError, NameClaims};
use crate::key::StreamKey;
use crate::publisher_info::{AlreadyPublishing, PublisherInfo};
use crate::reader::{DropCounter, FrameReceiver};
use crate::stream::Stream;
pub use publishing::Publishing;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use strom_worker_runtime::sync::locked;
use tokio::sync::watch;

/// Told `(stream, true)` when a stream is published and `(stream, false)` when released
/// (not for streams relayed from another worker, whose producer announces them).
pub type Announcer = Arc<dyn Fn(&StreamKey, bool) + Send + Sync>;

#[derive(Default)]
struct Inner {
    map: Mutex<HashMap<StreamKey, Arc<Stream>>>,
    events: HubEvents,
    announcer: Option<Announcer>,
    /// The server's name claims: set in worker processes, absent in tests of one hub.
    claims: Option<NameClaims>,
    /// The cluster registry's copy (who holds each name across servers).
    cluster: ClusterView,
    /// The supervisor, for what the hub's users report beside publishes (worker
    /// processes only).
    supervisor: Option<strom_worker_runtime::EventSender>,
}

/// Every live stream of the worker; cheap to clone (a handle).
#[derive(Clone, Default)]
pub struct Hub {
    inner: Arc<Inner>,
}

impl Hub {
    /// A hub that calls `announcer` on every publish and release.
    pub fn with_announcer(announcer: Announcer) -> Self {
        Self::build(Some(announcer), None, None)
    }

    fn build(
        announcer: Option<Announcer>,
        claims: Option<NameClaims>,
        supervisor: Option<strom_worker_runtime::EventSender>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                announcer,
                claims,
                supervisor,
                ..Inner::default()
            }),
        }
    }

    /// A hub that tells the supervisor about every publish and release of its streams
    /// (`StreamPublished`/`StreamUnpublished`), which feeds the registry of live streams.
    pub fn announcing_to(events: strom_worker_runtime::EventSender) -> Self {
        Self::with_announcer(Self::announcer(events))
    }

    /// Tells the supervisor through `events`.
    fn announcer(events: strom_worker_runtime::EventSender) -> Announcer {
        use strom_ipc::messages::WorkerEvent;
        Arc::new(move |key: &StreamKey, live| {
            let (app, stream) = (key.app.clone(), key.stream.clone());
            events.send(if live {
                WorkerEvent::StreamPublished { app, stream }
            } else {
                WorkerEvent::StreamUnpublished { app, stream }
            });
        })
    }

    /// The hub of a worker process: it announces publishes to the supervisor and owns
    /// the names it publishes across every worker of the server, through the claims in
    /// `run_dir`. A run directory that cannot hold claims is an error: without it a name
    /// could have two producers.
    pub fn for_worker(
        events: strom_worker_runtime::EventSender,
        run_dir: &std::path::Path,
    ) -> std::io::Result<Self> {
        let claims = NameClaims::in_run_dir(run_dir)?;
        let announcer = Self::announcer(events.clone());
        Ok(Self::build(Some(announcer), Some(claims), Some(events)))
    }

    /// The cluster registry's copy.
    pub fn cluster(&self) -> &ClusterView {
        &self.inner.cluster
    }

    /// Tells the supervisor `event` (nothing in a hub without one).
    pub fn tell_supervisor(&self, event: strom_ipc::messages::WorkerEvent) {
        if let Some(supervisor) = &self.inner.supervisor {
            supervisor.send(event);
        }
    }

    pub fn events(&self) -> &HubEvents {
        &self.inner.events
    }

    fn entry(&self, map: &mut HashMap<StreamKey, Arc<Stream>>, key: &StreamKey) -> Arc<Stream> {
        Arc::clone(
            map.entry(key.clone())
                .or_insert_with(|| Arc::new(Stream::new(key.clone(), self.inner.events.clone()))),
        )
    }

    /// The operator's own producer of `key`: a pull, a server playlist, a configured UDP,
    /// RIST or SRT-caller input, a test. Nobody asked, so nothing is checked but the name's
    /// one owner; a client's publisher gets its guard from [`crate::Gate::publish`]. (The
    /// operator's own readers: `Hub::own_reader`, in [`crate::gate::handles`].)
    pub fn own_publisher(
        &self,
        key: &StreamKey,
        publisher: PublisherInfo,
    ) -> Result<Publishing, AlreadyPublishing> {
        self.claim(key, publisher)
    }

    /// Makes `publisher` the publisher of `key`. The map stays locked until the stream is
    /// claimed: otherwise the last reader leaving in between would remove the stream from
    /// the map and the publisher would publish into a stream nobody can find.
    pub(crate) fn claim(
        &self,
        key: &StreamKey,
        publisher: PublisherInfo,
    ) -> Result<Publishing, AlreadyPublishing> {
        let session_id = publisher.session_id;
        let announced = publisher.relayed_from.is_none();
        // The server-wide claim first (a relay's producer holds it already): a name taken
        // in another worker is refused before this hub changes.
        let name = match self.inner.claims.as_ref().filter(|_| announced) {
            Some(claims) => match claims.claim(key) {
                Ok(name) => Some(name),
                Err(ClaimError::Busy) => return Err(AlreadyPublishing),
                Err(ClaimError::Io(e)) => {
                    tracing::error!(stream = %key, error = %e, "stream name claim failed: publish refused");
                    return Err(AlreadyPublishing);
                }
            },
            None => None,
        };
        let mut map = locked(&self.inner.map);
        let stream = self.entry(&mut map, key);
        if let Err(busy) = stream.claim(publisher) {
            if stream.is_idle() {
                map.remove(key);
            }
            return Err(busy);
        }
        drop(map);
        self.inner.events.send(HubEvent::Published(key.clone()));
        if let Some(announce) = self.inner.announcer.as_ref().filter(|_| announced) {
            announce(key, true);
        }
        Ok(Publishing::new(
            self.clone(),
            stream,
            session_id,
            announced,
            name,
        ))
    }

    /// Adds reader `id` to `key` (created if needed), under the map lock for the same
    /// reason as [`Hub::claim`].
    pub(crate) fn subscribe(&self, key: &StreamKey, id: u64) -> (FrameReceiver, DropCounter) {
        self.add_reader(key, |stream| stream.subscribe(id, 0))
    }

    /// [`Hub::subscribe`] for a listener that wants a burst: on an audio-only stream it
    /// starts with the latest `bytes` of audio (at most
    /// [`crate::audio_history::MAX_AUDIO_BURST_BYTES`]) instead of at the live edge.
    pub(crate) fn subscribe_with_audio_burst(
        &self,
        key: &StreamKey,
        id: u64,
        bytes: usize,
    ) -> (FrameReceiver, DropCounter) {
        self.add_reader(key, |stream| stream.subscribe(id, bytes))
    }

    /// Adds cursor reader `id` to `key` (created if needed): a reader among many that read
    /// the same frames ([`crate::Cursor`]); it leaves like any reader.
    pub(crate) fn subscribe_cursor(&self, key: &StreamKey, id: u64) -> (Cursor, DropCounter) {
        self.add_reader(key, |stream| {
            let (start, state) = stream.subscribe_cursor(id);
            let dropped = Arc::clone(&state.dropped);
            (Cursor::new(Arc::clone(stream), id, start, state), dropped)
        })
    }

    /// Adds a reader to `key` with `subscribe`; the first reader is demand for the stream.
    fn add_reader<R>(&self, key: &StreamKey, subscribe: impl FnOnce(&Arc<Stream>) -> R) -> R {
        let mut map = locked(&self.inner.map);
        let stream = self.entry(&mut map, key);
        let subscribed = subscribe(&stream);
        if stream.reader_count() == 1 {
            self.inner.events.send(HubEvent::Demand(key.clone()));
        }
        subscribed
    }

    /// Follows whether `key` has a publisher; `None` when nobody publishes or reads it.
    pub fn watch_live(&self, key: &StreamKey) -> Option<watch::Receiver<bool>> {
        locked(&self.inner.map)
            .get(key)
            .map(|stream| stream.watch_live())
    }

    /// Changes each time the frames of a publish of `key` reached every reader's queue
    /// ([`Stream::watch_delivered`]); `None` when nobody publishes or reads it.
    pub fn watch_delivered(&self, key: &StreamKey) -> Option<watch::Receiver<u64>> {
        locked(&self.inner.map)
            .get(key)
            .map(|stream| stream.watch_delivered())
    }

    /// Schedules an SCTE-35 cue on the live stream `key` ([`crate::cues`]).
    pub fn cue(&self, key: &StreamKey, cue: crate::Cue) -> Result<(), crate::CueError> {
        let stream = self.get(key).ok_or(crate::CueError::NotLive)?;
        stream.cue(cue)
    }

    /// The stream of `key` if anyone publishes or reads it.
    pub fn get(&self, key: &StreamKey) -> Option<Arc<Stream>> {
        locked(&self.inner.map).get(key).cloned()
    }

    /// Whether `key` may be produced on this server: published in this hub, or claimed
    /// by a producer of any worker (see [`NameClaims::may_be_claimed`]).
    pub fn may_be_produced_here(&self, key: &StreamKey) -> bool {
        let published = self
            .get(key)
            .is_some_and(|stream| stream.publisher().is_some());
        published || (self.inner.claims.as_ref()).is_some_and(|claims| claims.may_be_claimed(key))
    }

    /// Streams known to the hub (with a publisher or readers) right now.
    pub fn count(&self) -> usize {
        locked(&self.inner.map).len()
    }

    /// Readers (players, bus subscribers, pushes, packagers) of `key` right now.
    pub fn reader_count(&self, key: &StreamKey) -> usize {
        locked(&self.inner.map)
            .get(key)
            .map_or(0, |stream| stream.reader_count())
    }

    /// Streams that have readers right now.
    pub fn read(&self) -> Vec<StreamKey> {
        locked(&self.inner.map)
            .iter()
            .filter(|(_, stream)| stream.reader_count() > 0)
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// Ends `session_id`'s publish of `key` (what dropping its [`Publishing`] does);
    /// returns whether it was the publisher.
    pub(crate) fn release(&self, key: &StreamKey, session_id: u64, announced: bool) -> bool {
        let mut map = locked(&self.inner.map);
        let Some(stream) = map.get(key).cloned() else {
            return false;
        };
        let released = stream.release(session_id);
        if stream.is_idle() {
            map.remove(key);
        }
        drop(map);
        if released {
            self.inner.events.send(HubEvent::Unpublished(key.clone()));
            if let Some(announce) = self.inner.announcer.as_ref().filter(|_| announced) {
                announce(key, false);
            }
        }
        released
    }

    /// Removes reader `id` from `key` (what dropping its [`crate::ReaderPlace`] does).
    /// `NoDemand` goes out whenever no reader is left, even when `id` was gone already: a
    /// publish drops a reader whose queue closed without telling anyone, and its leave
    /// must still say the demand ended (a second `NoDemand` is harmless).
    pub(crate) fn leave(&self, key: &StreamKey, id: u64) {
        let mut map = locked(&self.inner.map);
        if let Some(stream) = map.get(key).cloned() {
            stream.unsubscribe(id);
            if stream.reader_count() == 0 {
                self.inner.events.send(HubEvent::NoDemand(key.clone()));
            }
            if stream.is_idle() {
                map.remove(key);
            }
        }
    }

    /// Streams that have a publisher right now.
    pub fn live(&self) -> Vec<Arc<Stream>> {
        locked(&self.inner.map)
            .values()
            .filter(|stream| stream.publisher().is_some())
            .cloned()
            .collect()
    }
}
