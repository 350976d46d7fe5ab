//! A pulled source's hold on its local stream: taken at the first media the source sends
//! (a source that answers `play` but has nothing to send is not live here), released when
//! dropped, with the supervisor told both times (its registry feeds the packager).

use crate::hub::{PublisherInfo, Stream, StreamKey};
use crate::sessions::unix_now;
use crate::shared::Shared;
use std::sync::Arc;
use strom_ipc::messages::WorkerEvent;

pub struct Claim {
    shared: Arc<Shared>,
    key: StreamKey,
    session_id: u64,
    pub stream: Arc<Stream>,
}

/// Someone else publishes the stream.
#[derive(Debug, thiserror::Error)]
#[error("{0} is already being published")]
pub struct Taken(pub StreamKey);

impl Claim {
    pub fn take(shared: &Arc<Shared>, key: &StreamKey, url: &str) -> Result<Self, Taken> {
        let session_id = shared.ids.next_id();
        let publisher = PublisherInfo {
            session_id,
            ip: String::new(),
            publish_time: unix_now(),
            query: String::new(),
            source_url: Some(url.to_owned()),
        };
        let stream = shared
            .streams
            .claim(key, publisher)
            .map_err(|_| Taken(key.clone()))?;
        shared.events.send(WorkerEvent::StreamPublished {
            app: key.app.clone(),
            stream: key.stream.clone(),
        });
        tracing::info!(stream = %key, %url, "pulled stream live");
        Ok(Self {
            shared: Arc::clone(shared),
            key: key.clone(),
            session_id,
            stream,
        })
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.shared.streams.release(&self.key, self.session_id) {
            self.shared.events.send(WorkerEvent::StreamUnpublished {
                app: self.key.app.clone(),
                stream: self.key.stream.clone(),
            });
            tracing::info!(stream = %self.key, "pulled stream ended");
        }
    }
}
