//! Stream-scoped management requests, answered by the same code in every worker: the
//! supervisor asks the worker that produces a stream, whatever protocol brought it in,
//! and that worker's gate puts the cue or the title into the stream, lists the streams
//! its hub produces and the publishers it admitted.

use super::Gate;
use strom_ipc::messages::{WorkerReply, WorkerRequest};
use strom_ipc::status::Publisher;

impl Gate {
    /// The answer to a stream-scoped request (`Scte35`, `IcecastMetadata`,
    /// `ListStreams`, `ListPublishers`); `None` for any other request, which the worker
    /// answers itself.
    pub fn answer(&self, request: &WorkerRequest) -> Option<WorkerReply> {
        match request {
            WorkerRequest::ListStreams => Some(WorkerReply::Streams(
                self.hub
                    .live()
                    .into_iter()
                    .filter_map(|stream| stream.live_status())
                    .collect(),
            )),
            WorkerRequest::ListPublishers => Some(WorkerReply::Publishers(self.publishers())),
            WorkerRequest::Scte35 { app, stream, cue } => Some(crate::cues::answer(
                &self.hub,
                &self.rules(),
                app,
                stream,
                *cue,
            )),
            WorkerRequest::IcecastMetadata {
                app,
                stream,
                title,
                url,
            } => Some(crate::titles::answer(&self.hub, app, stream, title, url)),
            _ => None,
        }
    }
}

impl Gate {
    /// The publishers this gate admitted whose streams are live, by session id.
    fn publishers(&self) -> Vec<Publisher> {
        let mut publishers: Vec<(u64, Publisher)> = self
            .hub
            .live()
            .into_iter()
            .filter_map(|stream| {
                let publisher = stream.publisher()?;
                let id = publisher.admitted_id?;
                Some((
                    publisher.session_id,
                    Publisher {
                        key: publisher.session_id.to_string(),
                        id,
                        ip: publisher.ip,
                        stream: stream.key.to_string(),
                    },
                ))
            })
            .collect();
        publishers.sort_by_key(|(session_id, _)| *session_id);
        publishers.into_iter().map(|(_, p)| p).collect()
    }
}
