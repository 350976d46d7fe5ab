//! Requests to one live worker process and the routing of its replies.

use std::collections::HashMap;
use std::os::fd::BorrowedFd;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use strom_ipc::IpcError;
use strom_ipc::channel::ControlWriter;
use strom_ipc::messages::{RequestId, SupervisorToWorker, WorkerReply, WorkerRequest};
use strom_ipc::sync::locked;
use thiserror::Error;
use tokio::sync::oneshot;

/// How long the API waits for a worker by default: a stuck worker must not hang it.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug, Error)]
pub enum RequestError {
    #[error("the {0} worker is not running (restarting)")]
    Unavailable(&'static str),
    #[error("the {kind} worker did not answer within {timeout:?}")]
    Timeout {
        kind: &'static str,
        timeout: Duration,
    },
    #[error("the {kind} worker's control channel failed: {source}")]
    Channel {
        kind: &'static str,
        #[source]
        source: IpcError,
    },
    #[error("the {0} worker exited before answering")]
    Gone(&'static str),
}

/// The supervisor's side of one worker process's control channel.
#[derive(Debug)]
pub struct WorkerLink {
    kind: &'static str,
    writer: tokio::sync::Mutex<ControlWriter>,
    pending: Mutex<HashMap<RequestId, oneshot::Sender<WorkerReply>>>,
    next_id: AtomicU64,
}

impl WorkerLink {
    pub fn new(kind: &'static str, writer: ControlWriter) -> Self {
        Self {
            kind,
            writer: tokio::sync::Mutex::new(writer),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
        }
    }

    /// Sends `request` (with `fds` attached) and waits up to `timeout` for the reply.
    pub async fn request(
        &self,
        request: WorkerRequest,
        fds: &[BorrowedFd<'_>],
        timeout: Duration,
    ) -> Result<WorkerReply, RequestError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        locked(&self.pending).insert(id, tx);
        let exchange = async {
            self.writer
                .lock()
                .await
                .send(&SupervisorToWorker::Request { id, request }, fds)
                .await
                .map_err(|source| RequestError::Channel {
                    kind: self.kind,
                    source,
                })?;
            rx.await.map_err(|_| RequestError::Gone(self.kind))
        };
        let result = match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(RequestError::Timeout {
                kind: self.kind,
                timeout,
            }),
        };
        locked(&self.pending).remove(&id);
        result
    }

    /// Routes a reply to whoever waits for it; late replies are dropped.
    pub fn complete(&self, id: RequestId, reply: WorkerReply) {
        if let Some(waiter) = locked(&self.pending).remove(&id) {
            let _ = waiter.send(reply);
        }
    }

    /// Fails every outstanding request (the process is gone).
    pub fn fail_all(&self) {
        locked(&self.pending).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strom_ipc::ControlChannel;

    #[tokio::test]
    async fn replies_are_matched_by_id_and_silence_times_out() {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let (_, writer) = ControlChannel::from_std(ours).unwrap().split();
        let link = std::sync::Arc::new(WorkerLink::new("test", writer));
        let (mut worker_reader, _worker_writer) = ControlChannel::from_std(theirs).unwrap().split();

        let answering = std::sync::Arc::clone(&link);
        let worker = tokio::spawn(async move {
            let received = worker_reader.recv::<SupervisorToWorker>().await.unwrap();
            let SupervisorToWorker::Request { id, .. } = received.message else {
                panic!("expected a request");
            };
            answering.complete(id + 100, WorkerReply::Done); // a stray id is ignored
            answering.complete(id, WorkerReply::NotFound);
            // Read the second request and never answer it.
            let _ = worker_reader.recv::<SupervisorToWorker>().await;
            worker_reader
        });
        let reply = link
            .request(WorkerRequest::ListStreams, &[], Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(reply, WorkerReply::NotFound);
        let silent = link
            .request(WorkerRequest::ListStreams, &[], Duration::from_millis(100))
            .await;
        assert!(matches!(silent, Err(RequestError::Timeout { .. })));
        assert!(locked(&link.pending).is_empty());
        drop(worker.await.unwrap());
    }
}
