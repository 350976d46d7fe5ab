//! A worker as a media bus subscriber: one bus connection per stream feeds the stream of
//! the same name in the worker's own hub, which every reader of that worker (players,
//! packagers, pushes, recorders) then reads like a local publish.
//!
//! The local stream is claimed at the first frame (a producer stream with no publisher
//! is not live here) and claimed anew when the producer's publisher changes (its
//! generation), so readers see the same publisher boundaries as the producer's readers.
//! Relayed publishes are not announced to the supervisor: the producer already was.

use crate::bus::wire::frame_from;
use crate::{Hub, PublisherInfo, Publishing, StreamKey};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use strom_ipc::IpcError;
use strom_worker_runtime::SessionIds;
use strom_worker_runtime::bus::Subscription;
use strom_worker_runtime::clock::unix_now;
use tokio_util::sync::CancellationToken;

const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Where a relayed stream comes from.
#[derive(Debug, Clone)]
pub struct Relay {
    pub key: StreamKey,
    /// The producer worker's bus socket.
    pub bus_path: PathBuf,
    /// The producer's name, for status and logs (`ingest`, `rtmp`).
    pub producer: String,
}

impl Relay {
    /// The relay of `key` from where the registry `location` says it is produced.
    pub fn of(key: StreamKey, location: &strom_ipc::bus::StreamLocation) -> Self {
        Self {
            key,
            bus_path: location.bus_path.clone(),
            producer: location.producer.to_string(),
        }
    }
}

/// Feeds `relay.key` of `hub` from the producer until `stop`, reconnecting with backoff
/// when the producer goes away (a restarted producer worker).
pub async fn feed(hub: Hub, relay: Relay, ids: Arc<SessionIds>, stop: CancellationToken) {
    let mut backoff = FIRST_BACKOFF;
    while !stop.is_cancelled() {
        let connected =
            Subscription::connect(&relay.bus_path, &relay.key.app, &relay.key.stream).await;
        match connected {
            Ok(subscription) => {
                backoff = FIRST_BACKOFF;
                tracing::info!(stream = %relay.key, producer = %relay.producer, "bus subscription attached");
                match relay_frames(&hub, &relay, &ids, subscription, &stop).await {
                    Ok(()) => return,
                    Err(e) => {
                        tracing::info!(stream = %relay.key, error = %e, "bus subscription ended; resubscribing")
                    }
                }
            }
            Err(e) => {
                tracing::debug!(stream = %relay.key, error = %e, "producer bus not reachable yet")
            }
        }
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            () = stop.cancelled() => return,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Publishes what one bus connection delivers; `Ok` when stopped.
async fn relay_frames(
    hub: &Hub,
    relay: &Relay,
    ids: &SessionIds,
    mut subscription: Subscription,
    stop: &CancellationToken,
) -> Result<(), IpcError> {
    // The local claim and the producer generation it stands for.
    let mut claim: Option<(Publishing, u32)> = None;
    loop {
        let (header, payload) = tokio::select! {
            () = stop.cancelled() => return Ok(()),
            next = subscription.next() => next?,
        };
        if claim
            .as_ref()
            .is_none_or(|(_, generation)| *generation != header.generation)
        {
            // Release the previous publisher's claim before taking the new one.
            claim = None;
            let publisher = PublisherInfo {
                session_id: ids.next_id(),
                ip: String::new(),
                publish_time: unix_now(),
                query: String::new(),
                source_url: None,
                relayed_from: Some(relay.producer.clone()),
                protocol: "BUS",
                admitted_id: None,
            };
            match hub.claim(&relay.key, publisher) {
                Ok(publishing) => claim = Some((publishing, header.generation)),
                Err(_) => {
                    // A local publisher has the name: it wins, the relay waits.
                    strom_worker_runtime::limited_log!(warn, 3, Duration::from_secs(10); stream = %relay.key, producer = %relay.producer, "stream published locally too; relay not played here");
                    continue;
                }
            }
        }
        if let Some((publishing, _)) = &claim {
            publishing.publish(frame_from(&header, payload));
        }
    }
}
