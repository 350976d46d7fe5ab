//! The narrow interface through which API handlers reach workers, so handlers can be
//! tested against fakes.

use crate::process::{RequestError, WorkerTable};
use futures_util::future::BoxFuture;
use strom_ipc::WorkerKind;
use strom_ipc::messages::{WorkerReply, WorkerRequest};

pub type Answers = Vec<(WorkerKind, Result<WorkerReply, RequestError>)>;

pub trait WorkerGateway: Send + Sync + 'static {
    /// Asks one worker.
    fn ask(
        &self,
        kind: WorkerKind,
        request: WorkerRequest,
    ) -> BoxFuture<'_, Result<WorkerReply, RequestError>>;
    /// Asks every worker at once.
    fn ask_all(&self, request: WorkerRequest) -> BoxFuture<'_, Answers>;
}

impl WorkerGateway for WorkerTable {
    fn ask(
        &self,
        kind: WorkerKind,
        request: WorkerRequest,
    ) -> BoxFuture<'_, Result<WorkerReply, RequestError>> {
        Box::pin(async move { self.get(kind).request(request).await })
    }

    fn ask_all(&self, request: WorkerRequest) -> BoxFuture<'_, Answers> {
        Box::pin(self.fan_out(request))
    }
}

/// Collects the successful answers of a fan-out; workers that could not answer are
/// logged and left out, so one restarting worker does not blank the whole list.
pub fn gather<T>(answers: Answers, mut pick: impl FnMut(WorkerReply) -> Option<Vec<T>>) -> Vec<T> {
    let mut items = Vec::new();
    for (kind, answer) in answers {
        match answer {
            Ok(reply) => match pick(reply) {
                Some(found) => items.extend(found),
                None => tracing::warn!(worker = %kind, "unexpected reply to a list request"),
            },
            Err(e) => tracing::warn!(worker = %kind, error = %e, "worker left out of a list"),
        }
    }
    items
}
