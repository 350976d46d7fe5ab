//! Whether an on-demand producer (a pulled source) should stop: its stream has had no
//! reader for the whole grace period. The pull supervisor races every pull against it
//! (`pulls::attempt`), whatever the protocol.

use crate::events::HubEvent;
use crate::hub::Hub;
use crate::key::StreamKey;
use std::time::Duration;
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;

/// How [`Unwatched::wait`] ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Unwatched {
    /// Nobody read the stream for the whole grace period.
    Idle,
    /// The hub's events ended (the worker is stopping).
    Closed,
}

/// Follows the readers of one stream through the hub's demand events.
pub struct DemandWatch<'a> {
    hub: &'a Hub,
    key: &'a StreamKey,
    events: &'a mut Receiver<HubEvent>,
    on_demand: bool,
    grace: Duration,
    /// When the last reader left; `None` while there are readers.
    idle_since: Option<Instant>,
}

impl<'a> DemandWatch<'a> {
    /// Watches `key`; a source that is not `on_demand` never becomes idle.
    pub fn new(
        hub: &'a Hub,
        key: &'a StreamKey,
        events: &'a mut Receiver<HubEvent>,
        on_demand: bool,
        grace: Duration,
    ) -> Self {
        let mut watch = Self {
            hub,
            key,
            events,
            on_demand,
            grace,
            idle_since: None,
        };
        watch.idle_since = watch.unwatched().then(Instant::now);
        watch
    }

    fn unwatched(&self) -> bool {
        self.on_demand && self.hub.reader_count(self.key) == 0
    }

    /// Resolves once the stream has been unwatched for the grace period, or the hub's
    /// events end; never for a source that is not on demand. Cancel-safe: it keeps its
    /// state between calls, so it can wait in a `select!` beside the media.
    pub async fn wait(&mut self) -> Unwatched {
        if !self.on_demand {
            return std::future::pending().await;
        }
        loop {
            let grace_over = self.idle_since.map(|since| since + self.grace);
            tokio::select! {
                () = sleep_or_never(grace_over) => {
                    if self.unwatched() {
                        return Unwatched::Idle;
                    }
                    self.idle_since = None;
                }
                event = self.events.recv() => {
                    let concerns_us = match &event {
                        Ok(HubEvent::Demand(k) | HubEvent::NoDemand(k)) => k == self.key,
                        Ok(_) => false,
                        Err(RecvError::Lagged(_)) => true,
                        Err(RecvError::Closed) => return Unwatched::Closed,
                    };
                    if concerns_us {
                        self.idle_since = match (self.unwatched(), self.idle_since) {
                            (false, _) => None,
                            (true, since) => since.or_else(|| Some(Instant::now())),
                        };
                    }
                }
            }
        }
    }
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_or_never(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: Duration = Duration::from_millis(200);
    /// Bound on waiting for what must happen; never a speed assertion.
    const WAIT: Duration = Duration::from_secs(30);

    fn key() -> StreamKey {
        StreamKey::new("live", "pulled")
    }

    #[tokio::test]
    async fn an_unwatched_on_demand_stream_is_idle_after_the_grace() {
        let hub = Hub::default();
        let key = key();
        let mut events = hub.events().listen();
        let (frames, _) = hub.subscribe(&key, 1);
        let mut watch = DemandWatch::new(&hub, &key, &mut events, true, GRACE);
        assert!(
            tokio::time::timeout(GRACE * 5, watch.wait()).await.is_err(),
            "a watched stream is not idle"
        );
        drop(frames);
        hub.leave(&key, 1);
        assert_eq!(
            tokio::time::timeout(WAIT, watch.wait()).await,
            Ok(Unwatched::Idle)
        );
    }

    #[tokio::test]
    async fn a_reader_within_the_grace_keeps_it_and_always_on_never_idles() {
        let hub = Hub::default();
        let key = key();
        let mut events = hub.events().listen();
        let mut watch = DemandWatch::new(&hub, &key, &mut events, true, Duration::from_secs(3));
        let (_frames, _) = hub.subscribe(&key, 1);
        assert!(
            tokio::time::timeout(Duration::from_secs(6), watch.wait())
                .await
                .is_err(),
            "a reader came within the grace"
        );
        let mut always_events = hub.events().listen();
        let other = StreamKey::new("live", "always");
        let mut always = DemandWatch::new(&hub, &other, &mut always_events, false, Duration::ZERO);
        assert!(
            tokio::time::timeout(GRACE * 5, always.wait())
                .await
                .is_err()
        );
    }
}
