//! Stream-scoped management requests, answered by the same code in every worker: the
//! supervisor asks the worker that produces a stream, whatever protocol brought it in,
//! and that worker's gate puts the cue or the title into the stream.

use super::Gate;
use strom_ipc::messages::{WorkerReply, WorkerRequest};

impl Gate {
    /// The answer to a stream-scoped request (`Scte35`, `IcecastMetadata`); `None` for
    /// any other request, which the worker answers itself.
    pub fn answer(&self, request: &WorkerRequest) -> Option<WorkerReply> {
        match request {
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
