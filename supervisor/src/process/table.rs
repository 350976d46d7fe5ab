//! The set of workers, and what the rest of the supervisor may ask of each.

use crate::process::link::{REQUEST_TIMEOUT, RequestError, WorkerLink};
use crate::process::state::WorkerState;
use std::os::fd::BorrowedFd;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use strom_ipc::WorkerKind;
use strom_ipc::messages::{WorkerReply, WorkerRequest};
use strom_ipc::status::Counters;
use strom_ipc::sync::locked;
use tokio_util::sync::CancellationToken;

/// What the API shows about one worker.
#[derive(Debug, Clone)]
pub struct WorkerStatus {
    pub state: WorkerState,
    pub pid: Option<u32>,
    pub restarts: u32,
    /// When the current process reported ready.
    pub ready_since: Option<Instant>,
    pub counters: Counters,
    /// Bits per second sent to clients, averaged over `out_rate::WINDOW` of heartbeats.
    pub out_rate_bps: u64,
}

/// One worker slot: survives the processes that fill it.
#[derive(Debug)]
pub struct WorkerHandle {
    pub kind: WorkerKind,
    status: Mutex<WorkerStatus>,
    link: RwLock<Option<Arc<WorkerLink>>>,
    /// Cancelled when the supervisor shuts down: the worker is stopped, not restarted.
    pub stop: CancellationToken,
}

impl WorkerHandle {
    pub fn new(kind: WorkerKind, stop: CancellationToken) -> Self {
        Self {
            kind,
            status: Mutex::new(WorkerStatus {
                state: WorkerState::Starting,
                pid: None,
                restarts: 0,
                ready_since: None,
                counters: Counters::default(),
                out_rate_bps: 0,
            }),
            link: RwLock::new(None),
            stop,
        }
    }

    pub fn status(&self) -> WorkerStatus {
        locked(&self.status).clone()
    }

    pub(crate) fn update_status(&self, update: impl FnOnce(&mut WorkerStatus)) {
        update(&mut locked(&self.status));
    }

    pub fn link(&self) -> Option<Arc<WorkerLink>> {
        match self.link.read() {
            Ok(link) => link.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub(crate) fn set_link(&self, link: Option<Arc<WorkerLink>>) {
        match self.link.write() {
            Ok(mut current) => *current = link,
            Err(poisoned) => *poisoned.into_inner() = link,
        }
    }

    /// Asks the current process, with the default timeout.
    pub async fn request(&self, request: WorkerRequest) -> Result<WorkerReply, RequestError> {
        self.request_with(request, &[], REQUEST_TIMEOUT).await
    }

    pub async fn request_with(
        &self,
        request: WorkerRequest,
        fds: &[BorrowedFd<'_>],
        timeout: Duration,
    ) -> Result<WorkerReply, RequestError> {
        let link = self
            .link()
            .ok_or(RequestError::Unavailable(self.kind.as_str()))?;
        link.request(request, fds, timeout).await
    }
}

/// Every worker the supervisor runs.
#[derive(Debug, Clone)]
pub struct WorkerTable {
    workers: Vec<Arc<WorkerHandle>>,
    /// How long the management API waits for each worker (`management_worker_timeout`).
    api_timeout: Duration,
}

impl WorkerTable {
    pub fn new(stop: &CancellationToken) -> Self {
        Self {
            workers: WorkerKind::ALL
                .into_iter()
                .map(|kind| Arc::new(WorkerHandle::new(kind, stop.child_token())))
                .collect(),
            api_timeout: REQUEST_TIMEOUT,
        }
    }

    /// The same table with another API request timeout.
    pub fn with_api_timeout(mut self, timeout: Duration) -> Self {
        self.api_timeout = timeout;
        self
    }

    /// How long the management API waits for a worker's answer.
    pub fn api_timeout(&self) -> Duration {
        self.api_timeout
    }

    pub fn all(&self) -> &[Arc<WorkerHandle>] {
        &self.workers
    }

    pub fn get(&self, kind: WorkerKind) -> &Arc<WorkerHandle> {
        // WorkerKind::ALL built the table, so every kind is present; index by position.
        let index = WorkerKind::ALL
            .iter()
            .position(|k| *k == kind)
            .unwrap_or_default();
        &self.workers[index]
    }

    /// Sends `request` to every running worker at once, each with the API timeout; each
    /// answer or error is returned with its kind. Workers that are restarting answer
    /// `Unavailable` immediately.
    pub async fn fan_out(
        &self,
        request: WorkerRequest,
    ) -> Vec<(WorkerKind, Result<WorkerReply, RequestError>)> {
        let timeout = self.api_timeout;
        let asks = self.workers.iter().map(|worker| {
            let request = request.clone();
            async move {
                (
                    worker.kind,
                    worker.request_with(request, &[], timeout).await,
                )
            }
        });
        futures_util::future::join_all(asks).await
    }
}
