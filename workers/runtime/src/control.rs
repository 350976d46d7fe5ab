//! The worker side of the control channel: hello, ready, requests, events, shutdown.

use crate::bootstrap::inherited_control_channel;
use crate::counters::WorkerCounters;
use crate::listeners::adopt;
use crate::service::{EVENT_QUEUE, EventSender, WorkerContext, WorkerService};
use crate::session_ids::SessionIds;
use std::sync::Arc;
use std::time::Duration;
use strom_ipc::channel::{ControlReader, ControlWriter};
use strom_ipc::messages::{
    RequestId, SupervisorToWorker, WorkerReply, WorkerRequest, WorkerToSupervisor,
};
use strom_ipc::{ControlChannel, FailureKind, IpcError, Received, WorkerKind};
use thiserror::Error;
use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;

/// How long open connections may take to finish after a shutdown request.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

#[derive(Debug, Error)]
pub enum RuntimeError {
    #[error("taking the control socket failed: {0}")]
    Bootstrap(#[source] std::io::Error),
    #[error("control channel failed: {0}")]
    Ipc(#[from] IpcError),
    #[error("expected a hello as the first control frame")]
    NoHello,
    #[error("the supervisor started a {got} worker as {expected}")]
    WrongKind {
        expected: WorkerKind,
        got: WorkerKind,
    },
    #[error("inherited listeners are unusable: {0}")]
    Listeners(#[source] std::io::Error),
    #[error("the worker could not start: {0}")]
    Start(String),
}

type SharedWriter = Arc<Mutex<ControlWriter>>;

/// Runs a worker process of `kind` until the supervisor asks it to stop or goes away.
pub async fn serve<S, F>(kind: WorkerKind, build: F) -> Result<(), RuntimeError>
where
    S: WorkerService,
    F: FnOnce(WorkerContext) -> Result<Arc<S>, String>,
{
    let channel = inherited_control_channel().map_err(RuntimeError::Bootstrap)?;
    serve_on(channel, kind, build).await
}

/// [`serve`] on an already-open channel (tests use a socketpair).
pub async fn serve_on<S, F>(
    channel: ControlChannel,
    kind: WorkerKind,
    build: F,
) -> Result<(), RuntimeError>
where
    S: WorkerService,
    F: FnOnce(WorkerContext) -> Result<Arc<S>, String>,
{
    let (mut reader, writer) = channel.split();
    let Received { message, fds } = reader.recv::<SupervisorToWorker>().await?;
    let SupervisorToWorker::Hello(hello) = message else {
        return Err(RuntimeError::NoHello);
    };
    if hello.kind != kind {
        return Err(RuntimeError::WrongKind {
            expected: kind,
            got: hello.kind,
        });
    }
    let adopted = adopt(hello.listeners.clone(), fds).map_err(RuntimeError::Listeners)?;
    let (event_tx, event_rx) = mpsc::channel(EVENT_QUEUE);
    let shutdown = CancellationToken::new();
    let counters = Arc::new(WorkerCounters::default());
    let context = WorkerContext {
        session_ids: Arc::new(SessionIds::new(hello.generation)),
        hello: *hello,
        listeners: adopted.listeners,
        udp_sockets: adopted.udp_sockets,
        counters: Arc::clone(&counters),
        events: EventSender::new(event_tx),
        shutdown: shutdown.clone(),
    };
    let service = build(context).map_err(RuntimeError::Start)?;
    let writer: SharedWriter = Arc::new(Mutex::new(writer));
    writer
        .lock()
        .await
        .send(
            &WorkerToSupervisor::Ready {
                pid: std::process::id(),
            },
            &[],
        )
        .await?;
    tracing::info!(%kind, pid = std::process::id(), "worker ready");

    let events = tokio::spawn(forward_events(event_rx, Arc::clone(&writer)));
    let result = control_loop(&mut reader, &writer, &service, &counters).await;
    shutdown.cancel();
    if tokio::time::timeout(DRAIN_LIMIT, service.drain())
        .await
        .is_err()
    {
        tracing::warn!("drain did not finish in time; exiting anyway");
    }
    events.abort();
    tracing::info!(%kind, "worker stopped");
    result
}

async fn control_loop<S: WorkerService>(
    reader: &mut ControlReader,
    writer: &SharedWriter,
    service: &Arc<S>,
    counters: &Arc<WorkerCounters>,
) -> Result<(), RuntimeError> {
    loop {
        let Received { message, fds } = match reader.recv::<SupervisorToWorker>().await {
            Ok(received) => received,
            Err(IpcError::Closed) => {
                tracing::warn!("supervisor closed the control channel; shutting down");
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let (id, request) = match message {
            SupervisorToWorker::Request { id, request } => (id, request),
            SupervisorToWorker::Hello(_) => {
                tracing::warn!("ignoring a second hello");
                continue;
            }
        };
        match request {
            // Answered inline so that a worker whose control task is stuck misses
            // heartbeats and gets restarted.
            WorkerRequest::Heartbeat => {
                let answer = match counters.accept_health.problem() {
                    // Typed so the supervisor restarts the worker; the API would call it 503.
                    Some(problem) => WorkerReply::error(
                        FailureKind::Unavailable,
                        format!("unhealthy: {problem}"),
                    ),
                    None => WorkerReply::Counters(counters.snapshot()),
                };
                reply(writer, id, answer).await?;
            }
            WorkerRequest::Shutdown => {
                tracing::info!("shutdown requested; draining");
                reply(writer, id, WorkerReply::Done).await?;
                return Ok(());
            }
            WorkerRequest::SetListeners(specs) => {
                let answer = match adopt(specs, fds) {
                    Ok(adopted) => {
                        service.replace_listeners(adopted.listeners);
                        service.replace_udp_sockets(adopted.udp_sockets);
                        WorkerReply::Done
                    }
                    Err(e) => WorkerReply::error(FailureKind::Internal, e.to_string()),
                };
                reply(writer, id, answer).await?;
            }
            other => {
                let service = Arc::clone(service);
                let writer = Arc::clone(writer);
                tokio::spawn(async move {
                    let answer = service.handle(other).await;
                    if let Err(e) = reply(&writer, id, answer).await {
                        tracing::debug!(error = %e, "reply not delivered");
                    }
                });
            }
        }
    }
}

async fn reply(writer: &SharedWriter, id: RequestId, reply: WorkerReply) -> Result<(), IpcError> {
    writer
        .lock()
        .await
        .send(&WorkerToSupervisor::Reply { id, reply }, &[])
        .await
}

async fn forward_events(
    mut events: mpsc::Receiver<strom_ipc::messages::WorkerEvent>,
    writer: SharedWriter,
) {
    while let Some(event) = events.recv().await {
        if writer
            .lock()
            .await
            .send(&WorkerToSupervisor::Event(event), &[])
            .await
            .is_err()
        {
            return;
        }
    }
}
