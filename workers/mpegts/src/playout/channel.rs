//! One playout task at run time: the output stream it publishes, what plays in it now
//! (the scheduled source, else the default stream), switching between them, the
//! SCTE-35 markers it inserts, and the status the API reports.
//!
//! A scheduled file plays from its start when its slot begins; a live source plays from
//! its latest keyframe once it is up. When the scheduled source is missing (a file that
//! cannot be played, one that ended before its slot, a live source that is not
//! published or dropped) the default stream plays, and a live source that comes back
//! takes over again at its next keyframe. The live source of the next slot is
//! subscribed a few seconds early so that it is there when its slot begins.

use super::feed::{Feed, Item, Role, take_over};
use super::file_feed::FileFeed;
use super::live_feed::LiveFeed;
use super::output::Output;
use super::schedule::{Plan, Slot, Source, Task};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strom_ipc::status::ServerPlaylistEntry;
use strom_stream::{Cue, Hub, PublisherInfo};
use strom_worker_runtime::SessionIds;
use strom_worker_runtime::clock::{unix_now, unix_now_ms};
use strom_worker_runtime::sync::locked;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The live source of the next slot is read this long before the slot begins.
const WARM_AHEAD: Duration = Duration::from_secs(3);
/// A default file is started again no sooner than this (a file of a few frames must
/// not spin).
const MIN_LOOP: Duration = Duration::from_millis(500);
/// A default stream that could not be opened is tried again after this.
const DEFAULT_RETRY: Duration = Duration::from_secs(5);

/// The running task as the worker keeps it.
pub struct ChannelHandle {
    pub schedule: watch::Sender<Arc<Task>>,
    pub status: Arc<Mutex<Option<ServerPlaylistEntry>>>,
    pub stop: CancellationToken,
}

/// Starts playing `task` out.
pub fn spawn(
    hub: Hub,
    ids: Arc<SessionIds>,
    task: Arc<Task>,
    stop: CancellationToken,
) -> ChannelHandle {
    let (schedule, receiver) = watch::channel(task);
    let status = Arc::new(Mutex::new(None));
    let channel = Channel {
        hub,
        ids,
        status: Arc::clone(&status),
        warm: None,
        carried: None,
        markers_after: unix_now_ms(),
        stop: stop.clone(),
    };
    tokio::spawn(channel.run(receiver));
    ChannelHandle {
        schedule,
        status,
        stop,
    }
}

enum Event {
    Stop,
    Deadline,
    Schedule(bool),
    Marker,
    Warm,
    /// The default stream may be opened again.
    Retry,
    Main(Item),
    Default(Item),
}

enum Flow {
    Replan,
    Stop,
}

struct Channel {
    hub: Hub,
    ids: Arc<SessionIds>,
    status: Arc<Mutex<Option<ServerPlaylistEntry>>>,
    /// The next slot's live source, read ahead of its slot.
    warm: Option<LiveFeed>,
    /// The live source that played when the last plan ended, for the next one.
    carried: Option<(Source, Feed)>,
    /// Markers at or after this time (Unix ms) are still to be inserted.
    markers_after: i64,
    stop: CancellationToken,
}

/// `at_ms` (Unix ms) as an instant of the runtime's clock.
fn instant_of(at_ms: i64) -> Instant {
    let ahead = at_ms.saturating_sub(unix_now_ms()).max(0) as u64;
    Instant::now() + Duration::from_millis(ahead)
}

async fn sleep_until_ms(at_ms: Option<i64>) {
    match at_ms {
        Some(at) => tokio::time::sleep_until(instant_of(at)).await,
        None => std::future::pending().await,
    }
}

async fn sleep_until_instant(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl Channel {
    async fn run(mut self, mut schedule: watch::Receiver<Arc<Task>>) {
        let key = schedule.borrow().stream.clone();
        let publishing = loop {
            let publisher = PublisherInfo {
                session_id: self.ids.next_id(),
                ip: String::new(),
                publish_time: unix_now(),
                query: String::new(),
                source_url: None,
                relayed_from: None,
                protocol: "PLAYLIST",
                admitted_id: None,
            };
            match self.hub.own_publisher(&key, publisher) {
                Ok(publishing) => break publishing,
                Err(_) => {
                    strom_worker_runtime::limited_log!(warn, 3, Duration::from_secs(60); stream = %key, "server playlist output is published by someone else; waiting for it to be free");
                    tokio::select! {
                        () = self.stop.cancelled() => return,
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    }
                }
            }
        };
        tracing::info!(stream = %key, "server playlist output published");
        let mut output = Output::new(publishing);
        loop {
            let task = schedule.borrow_and_update().clone();
            match self.play(&mut output, task, &mut schedule).await {
                Flow::Replan => {}
                Flow::Stop => break,
            }
        }
        *locked(&self.status) = None;
        tracing::info!(stream = %key, "server playlist output stopped");
    }

    async fn open(&mut self, source: &Source) -> Result<Feed, String> {
        match source {
            Source::Vod(path) => FileFeed::open(path).await.map(Feed::File),
            Source::Live(key) => {
                let mut live = match self.warm.take() {
                    Some(warm) if warm.key() == key => warm,
                    _ => LiveFeed::subscribe(&self.hub, key, self.ids.next_id()),
                };
                live.catch_up();
                Ok(Feed::Live(live))
            }
        }
    }

    /// Plays `task`'s plan of now until it changes.
    async fn play(
        &mut self,
        out: &mut Output,
        mut task: Arc<Task>,
        schedule: &mut watch::Receiver<Arc<Task>>,
    ) -> Flow {
        let Plan {
            mut slot,
            until_ms: mut deadline,
        } = task.plan(unix_now_ms());
        let mut main = None;
        let mut main_error = None;
        let mut active: Option<Role> = None;
        let carried = self.carried.take();
        let source = slot.as_ref().map(|s| s.entry.source.clone());
        // A read-ahead of another source than the one that plays now is stale.
        if self
            .warm
            .as_ref()
            .is_some_and(|w| source != Some(Source::Live(w.key().clone())))
        {
            self.warm = None;
        }
        if let (Some((from, feed)), Some(source)) = (carried, &source)
            && &from == source
        {
            // The same live source goes on in the next slot: no switch at all.
            main = Some(feed);
            active = Some(Role::Main);
        } else if let Some(slot) = &slot {
            match self.open(&slot.entry.source).await {
                Ok(feed) => main = Some(feed),
                Err(error) => {
                    tracing::warn!(stream = %task.stream, block = %slot.block_id, %error, "scheduled file cannot be played; the default stream plays");
                    main_error = Some(error);
                }
            }
        }
        let mut fallback: Option<Feed> = None;
        // When the default stream may be opened (again).
        let mut fallback_retry: Option<Instant> = None;
        let mut warmed = false;
        let mut reported = None;
        let mut slot_changes = 0u32;
        let flow = loop {
            let main_ready = match &main {
                Some(Feed::File(file)) => !file.ended(),
                // A live source read ahead (or already queued) starts right away.
                Some(Feed::Live(live)) => live.buffered_start(),
                None => false,
            };
            if active != Some(Role::Main)
                && main_ready
                && let Some(feed) = &main
            {
                out.begin(feed.configs());
                active = Some(Role::Main);
                fallback = None;
            }
            if active.is_none()
                && fallback.is_none()
                && let Some(default) = task.default.clone()
                && fallback_retry.is_none_or(|at| Instant::now() >= at)
            {
                match self.open(&default).await {
                    Ok(feed) => {
                        fallback = Some(feed);
                        fallback_retry = Some(Instant::now() + MIN_LOOP);
                    }
                    Err(error) => {
                        strom_worker_runtime::limited_log!(warn, 3, Duration::from_secs(60); stream = %task.stream, %error, "default stream cannot be played");
                        fallback_retry = Some(Instant::now() + DEFAULT_RETRY);
                    }
                }
            }
            if active.is_none()
                && let Some(Feed::File(file)) = &fallback
                && !file.ended()
            {
                out.begin(file.configs());
                active = Some(Role::Default);
            }
            // Cheap to compare at every frame: what the status shows changes with these.
            let now_reported = (active, main_error.is_some(), slot_changes);
            if reported.as_ref() != Some(&now_reported) {
                self.report(
                    &task,
                    slot.as_ref(),
                    active,
                    &fallback,
                    main_error.as_deref(),
                );
                reported = Some(now_reported);
            }

            let next_marker = task
                .markers
                .iter()
                .find(|m| m.at_ms >= self.markers_after)
                .copied();
            let warm_at = deadline
                .filter(|_| !warmed)
                .map(|d| d - WARM_AHEAD.as_millis() as i64);
            let main_polled = main.as_ref().is_some_and(|f| f.polled(Role::Main, active));
            let retry_at = fallback_retry.filter(|_| active.is_none() && fallback.is_none());
            let default_polled = fallback
                .as_ref()
                .is_some_and(|f| f.polled(Role::Default, active));
            let event = tokio::select! {
                biased;
                () = self.stop.cancelled() => Event::Stop,
                () = sleep_until_ms(deadline) => Event::Deadline,
                changed = schedule.changed() => Event::Schedule(changed.is_ok()),
                () = sleep_until_ms(next_marker.map(|m| m.at_ms)) => Event::Marker,
                () = sleep_until_ms(warm_at) => Event::Warm,
                () = sleep_until_instant(retry_at) => Event::Retry,
                item = async { match main.as_mut() { Some(feed) => feed.next().await, None => std::future::pending().await } }, if main_polled => Event::Main(item),
                item = async { match fallback.as_mut() { Some(feed) => feed.next().await, None => std::future::pending().await } }, if default_polled => Event::Default(item),
            };
            match event {
                Event::Stop => break Flow::Stop,
                Event::Deadline => break Flow::Replan,
                Event::Retry => {}
                Event::Schedule(false) => break Flow::Stop,
                Event::Schedule(true) => {
                    let new = schedule.borrow_and_update().clone();
                    let plan = new.plan(unix_now_ms());
                    let same_slot = match (&slot, &plan.slot) {
                        (Some(a), Some(b)) => {
                            a.block_id == b.block_id
                                && a.entry.source == b.entry.source
                                && a.entry.repeat == b.entry.repeat
                                && a.start_ms == b.start_ms
                        }
                        (None, None) => true,
                        _ => false,
                    };
                    if !same_slot || new.default != task.default || new.problem != task.problem {
                        tracing::info!(stream = %new.stream, "schedule changed what plays now");
                        break Flow::Replan;
                    }
                    // What plays now goes on; only times and later blocks changed.
                    task = new;
                    slot = plan.slot;
                    slot_changes = slot_changes.wrapping_add(1);
                    deadline = plan.until_ms;
                    warmed = false;
                }
                Event::Marker => {
                    if let Some(marker) = next_marker {
                        self.markers_after = marker.at_ms + 1;
                        let cue = if marker.out {
                            Cue::Out {
                                duration_secs: marker
                                    .duration_ms
                                    .map(|ms| ms.div_ceil(1000) as u32),
                                time_signal: false,
                            }
                        } else {
                            Cue::In
                        };
                        match out.stream().cue(cue) {
                            Ok(()) => {
                                tracing::info!(stream = %task.stream, ?cue, "scheduled SCTE-35 marker queued")
                            }
                            Err(error) => {
                                tracing::warn!(stream = %task.stream, %error, "scheduled SCTE-35 marker not inserted")
                            }
                        }
                    }
                }
                Event::Warm => {
                    warmed = true;
                    if let Some(at) = deadline
                        && let Some(Slot { entry, .. }) = task.plan(at).slot
                        && let Source::Live(key) = entry.source
                        && self.warm.as_ref().is_none_or(|w| w.key() != &key)
                        // The source that plays now goes on by itself.
                        && !matches!(&main, Some(Feed::Live(live)) if live.key() == &key)
                    {
                        self.warm = Some(LiveFeed::subscribe(&self.hub, &key, self.ids.next_id()));
                    }
                }
                Event::Main(item) => match item {
                    Item::Frame { frame, restarted } => {
                        if active == Some(Role::Main) {
                            if restarted && let Some(Feed::Live(live)) = &main {
                                out.begin(live.configs());
                            }
                            out.push(frame);
                        } else if let Some(Feed::Live(live)) = main.as_mut()
                            && take_over(live, out, frame)
                        {
                            active = Some(Role::Main);
                            fallback = None;
                            tracing::info!(stream = %task.stream, source = %live.key(), "live source up: it plays");
                        }
                    }
                    Item::Down => {
                        if active == Some(Role::Main) {
                            active = None;
                            tracing::info!(stream = %task.stream, "live source down: the default stream plays");
                        }
                    }
                    Item::End(error) => {
                        if let Some(error) = &error {
                            tracing::warn!(stream = %task.stream, %error, "scheduled file failed while playing");
                            main_error = Some(error.clone());
                        }
                        active = None;
                        let repeat = slot.as_ref().filter(|s| s.entry.repeat && error.is_none());
                        if let Some(slot) = repeat {
                            let source = slot.entry.source.clone();
                            main = self.open(&source).await.ok();
                        }
                    }
                },
                Event::Default(item) => match item {
                    Item::Frame { frame, restarted } => {
                        if active == Some(Role::Default) {
                            if restarted && let Some(Feed::Live(live)) = &fallback {
                                out.begin(live.configs());
                            }
                            out.push(frame);
                        } else if active.is_none()
                            && let Some(Feed::Live(live)) = fallback.as_mut()
                            && take_over(live, out, frame)
                        {
                            active = Some(Role::Default);
                        }
                    }
                    Item::Down => {
                        if active == Some(Role::Default) {
                            active = None;
                        }
                    }
                    Item::End(error) => {
                        if let Some(error) = error {
                            tracing::warn!(stream = %task.stream, %error, "default file failed while playing");
                        }
                        // The default file plays again from its start.
                        active = None;
                        fallback = None;
                    }
                },
            }
        };
        // A live source that plays now may go on in the next slot.
        if active == Some(Role::Main)
            && let (Some(source), Some(feed @ Feed::Live(_))) = (source, main)
        {
            self.carried = Some((source, feed));
        }
        flow
    }

    /// Publishes what the API shows for the task.
    fn report(
        &self,
        task: &Task,
        slot: Option<&Slot>,
        active: Option<Role>,
        fallback: &Option<Feed>,
        main_error: Option<&str>,
    ) {
        let default_duration_ms = match fallback {
            Some(Feed::File(file)) => (file.index.duration / 90) as u64,
            _ => 0,
        };
        let entry = super::status::entry(
            task,
            slot,
            active == Some(Role::Default),
            default_duration_ms,
            main_error,
        );
        tracing::info!(
            stream = %entry.stream,
            block = %entry.block_id,
            main = %entry.main_stream,
            default = entry.default_stream.as_deref().unwrap_or(""),
            "server playlist now playing"
        );
        *locked(&self.status) = Some(entry);
    }
}
