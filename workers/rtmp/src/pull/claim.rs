//! A pulled source's hold on its local stream: taken at the first media the source sends
//! (a source that answers `play` but has nothing to send is not live here), released when
//! dropped; the hub announces both to the supervisor (its registry feeds the packager).

use crate::publish_frames::PublishClock;
use crate::shared::Shared;
use bytes::Bytes;
use std::sync::Arc;
use strom_media::frame::Frame;
use strom_stream::{PublisherInfo, Publishing, StreamKey};
use strom_worker_runtime::clock::unix_now;

pub struct Claim {
    publishing: Publishing,
    /// The source's RTMP timestamps, unwrapped.
    pub clock: PublishClock,
}

/// Someone else publishes the stream.
#[derive(Debug, thiserror::Error)]
#[error("{0} is already being published")]
pub struct Taken(pub StreamKey);

impl Claim {
    pub fn take(shared: &Arc<Shared>, key: &StreamKey, url: &str) -> Result<Self, Taken> {
        let publisher = PublisherInfo {
            session_id: shared.ids.next_id(),
            ip: String::new(),
            publish_time: unix_now(),
            query: String::new(),
            source_url: Some(url.to_owned()),
            relayed_from: None,
            protocol: "RTMP",
            admitted_id: None,
        };
        let publishing = shared
            .streams
            .own_publisher(key, publisher)
            .map_err(|_| Taken(key.clone()))?;
        tracing::info!(stream = %key, %url, "pulled stream live");
        Ok(Self {
            publishing,
            clock: PublishClock::default(),
        })
    }

    /// Publishes a frame parsed from `body` (kept as its FLV form), or built (`None`).
    pub fn publish(&self, frame: Frame, body: Option<Bytes>) {
        match body {
            Some(body) => self.publishing.publish_with_container(frame, body),
            None => self.publishing.publish(frame),
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.publishing.release() {
            tracing::info!(stream = %self.publishing.key(), "pulled stream ended");
        }
    }
}
