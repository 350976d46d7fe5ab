//! What happens to the streams of a hub, for the parts of the worker that react to it:
//! the re-publisher starts a push when a stream of a rule's app is published, an
//! on-demand pulled source (or a bus subscription to another worker) starts when its
//! stream gets a first reader, and readers learn when a stream's tracks are known.
//!
//! A bounded `broadcast`: the hub never waits for a listener. A listener that falls
//! behind gets `Lagged` and must re-read the hub's state instead of trusting events.

use crate::key::StreamKey;
use tokio::sync::broadcast;

/// Events a listener may hold before it lags.
const HUB_EVENT_QUEUE: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HubEvent {
    /// A publisher (or a pulled source) took the stream.
    Published(StreamKey),
    /// The stream's publisher left.
    Unpublished(StreamKey),
    /// The stream got its first reader (RTMP player, bus subscriber, push, packager).
    Demand(StreamKey),
    /// The stream's last reader left.
    NoDemand(StreamKey),
    /// The publisher's codec configuration (or a change of it) is known: what
    /// `rtmp_status` and the packagers report can now be read from the stream.
    TracksKnown(StreamKey),
}

#[derive(Clone)]
pub struct HubEvents {
    sender: broadcast::Sender<HubEvent>,
}

impl Default for HubEvents {
    fn default() -> Self {
        Self {
            sender: broadcast::channel(HUB_EVENT_QUEUE).0,
        }
    }
}

impl HubEvents {
    /// Tells every listener; nobody listening is fine.
    pub fn send(&self, event: HubEvent) {
        let _ = self.sender.send(event);
    }

    /// A listener that gets every event sent from now on.
    pub fn listen(&self) -> broadcast::Receiver<HubEvent> {
        self.sender.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::Hub;
    use crate::publisher_info::PublisherInfo;

    #[test]
    fn publishes_and_the_first_and_last_player_are_announced() {
        let streams = Hub::default();
        let mut events = streams.events().listen();
        let key = StreamKey {
            app: "live".into(),
            stream: "a".into(),
        };
        let publisher = PublisherInfo {
            session_id: 9,
            ip: String::new(),
            publish_time: 0,
            query: "a=1".into(),
            source_url: None,
            relayed_from: None,
            protocol: "RTMP",
            admitted_id: None,
        };
        let _player_one = streams.subscribe(&key, 1);
        let _player_two = streams.subscribe(&key, 2);
        let publishing = streams.claim(&key, publisher).unwrap();
        assert_eq!(streams.reader_count(&key), 2);
        streams.leave(&key, 1);
        streams.leave(&key, 2);
        assert!(publishing.release());
        let mut seen = Vec::new();
        while let Ok(event) = events.try_recv() {
            seen.push(event);
        }
        assert_eq!(
            seen,
            [
                HubEvent::Demand(key.clone()),
                HubEvent::Published(key.clone()),
                HubEvent::NoDemand(key.clone()),
                HubEvent::Unpublished(key.clone()),
            ]
        );
        assert_eq!(streams.reader_count(&key), 0);
    }
}
