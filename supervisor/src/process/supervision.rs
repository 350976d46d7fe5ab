//! The per-worker state machine: start, serve, watch, restart with backoff, stop.
//!
//! ```text
//!   Starting --ready--> Ready --exit--------------------> BackingOff --delay--> Starting
//!       |               |   ^                                 ^
//!       |    heartbeat  |   | answers again                   | silent for the deadline:
//!       |       missed  v   |                                 | killed
//!       |             Unresponsive ---------------------------+
//!       |                 |                                   |
//!       +-----------------+--------- stop requested ----------+--> Stopping --> Stopped
//! ```
//! A heartbeat goes out every [`HEARTBEAT_INTERVAL`]; one not answered within
//! [`HEARTBEAT_TIMEOUT`] shows the worker as `unresponsive` in `/manage/workers`, and a
//! worker that answers nothing for [`HEARTBEAT_DEADLINE`] is killed and replaced.
//! The first restart after a crash is immediate (the port never stops answering: the
//! supervisor keeps its copy of every listening socket and the kernel queues new
//! connections meanwhile); repeated crashes back off exponentially up to a cap, and a
//! worker that stayed up long enough starts from the beginning again.

use crate::process::link::{RequestError, WorkerLink};
use crate::process::out_rate::OutRateWindow;
use crate::process::spawn::{SpawnedWorker, spawn_worker};
use crate::process::state::WorkerState;
use crate::process::table::WorkerHandle;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use strom_ipc::channel::ControlReader;
use strom_ipc::contract::generation_from_counter;
use strom_ipc::messages::{
    SupervisorToWorker, WorkerEvent, WorkerHello, WorkerReply, WorkerRequest, WorkerToSupervisor,
};
use strom_ipc::{IpcError, WorkerKind};
use tokio::sync::Notify;

const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a worker is asked for its counters (and so proves it is alive).
const HEARTBEAT_INTERVAL: Duration = Duration::from_millis(500);
/// A heartbeat not answered within this is missed: the worker shows as `unresponsive`.
const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(1);
/// A worker silent this long is considered hung and is killed (then restarted at once).
/// The control loop answers heartbeats inline, so a live worker answers in milliseconds;
/// 2.5 s leaves room for a loaded machine and replaces a hung worker within about 3 s.
const HEARTBEAT_DEADLINE: Duration = Duration::from_millis(2500);
/// Time a worker gets to drain after a shutdown request before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(8);
/// A worker that ran this long resets the backoff.
const STABLE_AFTER: Duration = Duration::from_secs(30);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// Largest message (all fragments) the supervisor accepts from a worker.
const MAX_WORKER_MESSAGE: usize = 64 * 1024 * 1024;

/// What supervision needs from the rest of the supervisor.
pub trait SupervisorHooks: Send + Sync + 'static {
    /// Builds the hello (and the listener descriptors) for a new worker process from the
    /// supervisor's current state, so a restarted worker gets today's rules and sockets.
    fn hello(&self, kind: WorkerKind, generation: u32) -> io::Result<(WorkerHello, Vec<OwnedFd>)>;

    /// An event a worker reported.
    fn event(&self, kind: WorkerKind, event: WorkerEvent);

    /// A worker process reported ready.
    fn worker_ready(&self, kind: WorkerKind);

    /// A worker process is gone (crashed, killed or stopped).
    fn worker_exited(&self, kind: WorkerKind);
}

/// Delay before restart number `consecutive + 1` of a crash series.
pub fn backoff(consecutive: u32) -> Duration {
    if consecutive == 0 {
        return Duration::ZERO;
    }
    let exponent = (consecutive - 1).min(16);
    (Duration::from_millis(100) * 2u32.pow(exponent)).min(MAX_BACKOFF)
}

/// Everything a supervision loop needs besides its handle.
#[derive(Clone)]
pub struct SupervisionContext {
    pub exe: PathBuf,
    pub log_filter: String,
    pub hooks: Arc<dyn SupervisorHooks>,
    pub generations: Arc<AtomicU32>,
}

enum Outcome {
    Stopped,
    Crashed(String),
}

/// Keeps one worker running until its handle's stop token is cancelled.
pub async fn supervise(handle: Arc<WorkerHandle>, context: SupervisionContext) {
    let kind = handle.kind;
    let mut consecutive = 0u32;
    loop {
        handle.update_status(|s| s.state = WorkerState::Starting);
        let started = Instant::now();
        match run_once(&handle, &context).await {
            Outcome::Stopped => break,
            Outcome::Crashed(reason) => {
                tracing::error!(worker = %kind, %reason, "worker failed");
            }
        }
        if handle.stop.is_cancelled() {
            break;
        }
        if started.elapsed() >= STABLE_AFTER {
            consecutive = 0;
        }
        let delay = backoff(consecutive);
        consecutive = consecutive.saturating_add(1);
        let mut restarts = 0;
        handle.update_status(|s| {
            s.state = WorkerState::BackingOff;
            s.pid = None;
            s.ready_since = None;
            s.out_rate_bps = 0;
            s.restarts += 1;
            restarts = s.restarts;
        });
        tracing::warn!(worker = %kind, restarts, delay_ms = delay.as_millis() as u64, "restarting worker");
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = handle.stop.cancelled() => break,
        }
    }
    handle.update_status(|s| {
        s.state = WorkerState::Stopped;
        s.pid = None;
        s.ready_since = None;
    });
    tracing::info!(worker = %kind, "worker stopped");
}

fn next_generation(generations: &AtomicU32) -> u32 {
    generation_from_counter(generations.fetch_add(1, Ordering::Relaxed))
}

async fn run_once(handle: &Arc<WorkerHandle>, context: &SupervisionContext) -> Outcome {
    let kind = handle.kind;
    let generation = next_generation(&context.generations);
    let (hello, fds) = match context.hooks.hello(kind, generation) {
        Ok(hello) => hello,
        Err(e) => return Outcome::Crashed(format!("preparing the hello failed: {e}")),
    };
    let SpawnedWorker { mut child, channel } =
        match spawn_worker(&context.exe, kind, &context.log_filter) {
            Ok(spawned) => spawned,
            Err(e) => return Outcome::Crashed(format!("exec failed: {e}")),
        };
    let pid = child.id();
    handle.update_status(|s| s.pid = pid);
    let (mut reader, mut writer) = channel.split();
    // Replies are paged and small; a worker (which parses untrusted input) gets less room
    // than the supervisor's own messages to it.
    reader.set_max_message(MAX_WORKER_MESSAGE);
    let borrowed: Vec<BorrowedFd<'_>> = fds.iter().map(|fd| fd.as_fd()).collect();
    let started = async {
        writer
            .send(&SupervisorToWorker::Hello(Box::new(hello)), &borrowed)
            .await?;
        loop {
            match reader.recv::<WorkerToSupervisor>().await?.message {
                WorkerToSupervisor::Ready { .. } => return Ok::<(), IpcError>(()),
                other => tracing::debug!(worker = %kind, ?other, "message before ready ignored"),
            }
        }
    };
    let ready = tokio::select! {
        ready = tokio::time::timeout(READY_TIMEOUT, started) => match ready {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("did not start: {e}")),
            Err(_) => Err(format!("not ready within {READY_TIMEOUT:?}")),
        },
        status = child.wait() => Err(format!("exited during start: {}", describe_exit(status))),
        () = handle.stop.cancelled() => Err("stopped during start".to_owned()),
    };
    drop(borrowed);
    drop(fds);
    if let Err(reason) = ready {
        reap(&mut child).await;
        return if handle.stop.is_cancelled() {
            Outcome::Stopped
        } else {
            Outcome::Crashed(reason)
        };
    }

    let link = Arc::new(WorkerLink::new(kind.as_str(), writer));
    handle.set_link(Some(Arc::clone(&link)));
    handle.update_status(|s| {
        s.state = WorkerState::Ready;
        s.ready_since = Some(Instant::now());
    });
    tracing::info!(worker = %kind, pid = pid.unwrap_or_default(), generation, "worker ready");
    context.hooks.worker_ready(kind);

    let hung = Arc::new(Notify::new());
    let mut reader_task = tokio::spawn(read_replies(
        reader,
        Arc::clone(&link),
        kind,
        Arc::clone(&context.hooks),
    ));
    let heartbeat_task = tokio::spawn(heartbeat(
        Arc::clone(handle),
        Arc::clone(&link),
        Arc::clone(&hung),
    ));

    let outcome = tokio::select! {
        status = child.wait() => Outcome::Crashed(format!("exited: {}", describe_exit(status))),
        _ = &mut reader_task => {
            // The channel closed: the process is exiting or has lost its way.
            match tokio::time::timeout(Duration::from_secs(1), child.wait()).await {
                Ok(status) => Outcome::Crashed(format!("exited: {}", describe_exit(status))),
                Err(_) => Outcome::Crashed("closed its control channel".to_owned()),
            }
        }
        () = hung.notified() => {
            Outcome::Crashed(format!("unhealthy or silent for {HEARTBEAT_DEADLINE:?}; killed"))
        }
        () = handle.stop.cancelled() => {
            handle.update_status(|s| s.state = WorkerState::Stopping);
            let _ = link.request(WorkerRequest::Shutdown, &[], Duration::from_secs(2)).await;
            match tokio::time::timeout(STOP_GRACE, child.wait()).await {
                Ok(_) => tracing::info!(worker = %kind, "worker exited after drain"),
                Err(_) => tracing::warn!(worker = %kind, "worker did not exit in time; killing"),
            }
            Outcome::Stopped
        }
    };
    handle.set_link(None);
    heartbeat_task.abort();
    reader_task.abort();
    link.fail_all();
    reap(&mut child).await;
    context.hooks.worker_exited(kind);
    outcome
}

/// Kills the process if it still runs and collects its exit status.
async fn reap(child: &mut tokio::process::Child) {
    if let Ok(None) = child.try_wait() {
        let _ = child.start_kill();
    }
    let _ = child.wait().await;
}

fn describe_exit(status: io::Result<std::process::ExitStatus>) -> String {
    match status {
        Ok(status) => status.to_string(),
        Err(e) => format!("wait failed: {e}"),
    }
}

async fn read_replies(
    mut reader: ControlReader,
    link: Arc<WorkerLink>,
    kind: WorkerKind,
    hooks: Arc<dyn SupervisorHooks>,
) {
    loop {
        match reader.recv::<WorkerToSupervisor>().await {
            Ok(received) => match received.message {
                WorkerToSupervisor::Reply { id, reply } => link.complete(id, reply),
                WorkerToSupervisor::Event(event) => hooks.event(kind, event),
                WorkerToSupervisor::Ready { .. } => {}
            },
            Err(IpcError::Closed) => break,
            // A worker that exits (a stop, a crash) may reset its end of the channel:
            // its exit is reported by the code that waits for it, not as a bad frame.
            Err(IpcError::Io(e))
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionReset
                        | io::ErrorKind::BrokenPipe
                        | io::ErrorKind::UnexpectedEof
                ) =>
            {
                tracing::debug!(worker = %kind, error = %e, "worker control channel closed");
                break;
            }
            Err(e) => {
                tracing::error!(worker = %kind, error = %e, "bad control frame from worker");
                break;
            }
        }
    }
    link.fail_all();
}

/// Collects counters every [`HEARTBEAT_INTERVAL`]; marks the worker `unresponsive` while it
/// misses heartbeats and signals `hung` when it stays silent for [`HEARTBEAT_DEADLINE`].
async fn heartbeat(handle: Arc<WorkerHandle>, link: Arc<WorkerLink>, hung: Arc<Notify>) {
    let mut interval = tokio::time::interval(HEARTBEAT_INTERVAL);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Tokio's clock (the same as std's outside tests) so that tests can run it paused.
    let mut last_answer = tokio::time::Instant::now();
    // Averaged over out_rate::WINDOW: one-second samples swing with segment bursts.
    let mut sent = OutRateWindow::default();
    loop {
        interval.tick().await;
        // Never wait past the deadline: a hung worker is killed on time, not a timeout later.
        let timeout = HEARTBEAT_TIMEOUT
            .min(HEARTBEAT_DEADLINE.saturating_sub(last_answer.elapsed()))
            .max(Duration::from_millis(50));
        match link.request(WorkerRequest::Heartbeat, &[], timeout).await {
            Ok(WorkerReply::Counters(counters)) => {
                let now = Instant::now();
                last_answer = tokio::time::Instant::now();
                let rate = sent.record(now, counters.bytes_sent);
                let mut recovered = false;
                handle.update_status(|s| {
                    s.counters = counters;
                    s.out_rate_bps = rate;
                    if s.state == WorkerState::Unresponsive {
                        s.state = WorkerState::Ready;
                        recovered = true;
                    }
                });
                if recovered {
                    tracing::warn!(worker = %handle.kind, "worker answers heartbeats again");
                }
            }
            // Older workers report with `Failed`, current ones with a typed `Error`.
            Ok(
                WorkerReply::Failed(problem)
                | WorkerReply::Error {
                    message: problem, ..
                },
            ) => {
                // The worker is alive but cannot do its job (e.g. out of descriptors):
                // a restart gives it a clean process.
                tracing::error!(worker = %handle.kind, %problem, "worker reports itself unhealthy; restarting it");
                hung.notify_one();
                return;
            }
            Ok(other) => {
                tracing::warn!(worker = %handle.kind, ?other, "unexpected heartbeat reply")
            }
            Err(e) => {
                tracing::warn!(worker = %handle.kind, error = %e, "heartbeat missed");
                if matches!(e, RequestError::Timeout { .. }) {
                    handle.update_status(|s| {
                        if s.state == WorkerState::Ready {
                            s.state = WorkerState::Unresponsive;
                        }
                    });
                }
            }
        }
        if last_answer.elapsed() >= HEARTBEAT_DEADLINE {
            tracing::error!(worker = %handle.kind, "worker stopped answering heartbeats; killing it");
            hung.notify_one();
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_restart_is_immediate_then_backs_off_to_a_cap() {
        assert_eq!(backoff(0), Duration::ZERO);
        assert_eq!(backoff(1), Duration::from_millis(100));
        assert_eq!(backoff(2), Duration::from_millis(200));
        assert_eq!(backoff(4), Duration::from_millis(800));
        assert_eq!(backoff(50), MAX_BACKOFF);
    }

    /// A worker that stops answering shows as `unresponsive` after one missed heartbeat,
    /// goes back to `ready` when it answers again, and is given up (killed by the caller)
    /// once silent for the deadline, not later.
    #[tokio::test(start_paused = true)]
    async fn a_silent_worker_is_unresponsive_then_given_up_at_the_deadline() {
        use std::sync::atomic::AtomicBool;
        use strom_ipc::ControlChannel;
        use strom_ipc::status::Counters;
        use tokio_util::sync::CancellationToken;

        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let (mut reader, writer) = ControlChannel::from_std(ours).unwrap().split();
        let (mut worker_reader, mut worker_writer) =
            ControlChannel::from_std(theirs).unwrap().split();
        let link = Arc::new(WorkerLink::new("dvr", writer));
        let handle = Arc::new(WorkerHandle::new(WorkerKind::Dvr, CancellationToken::new()));
        handle.update_status(|s| s.state = WorkerState::Ready);
        let answering = Arc::new(AtomicBool::new(true));

        let worker_answers = Arc::clone(&answering);
        let worker = tokio::spawn(async move {
            while let Ok(received) = worker_reader.recv::<SupervisorToWorker>().await {
                let SupervisorToWorker::Request { id, .. } = received.message else {
                    continue;
                };
                // Like SIGSTOP and SIGCONT: a request waits while the worker is stopped.
                while !worker_answers.load(Ordering::Relaxed) {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                let reply = WorkerReply::Counters(Counters::default());
                let message = WorkerToSupervisor::Reply { id, reply };
                if worker_writer.send(&message, &[]).await.is_err() {
                    return;
                }
            }
        });
        let routing = Arc::clone(&link);
        let router = tokio::spawn(async move {
            while let Ok(received) = reader.recv::<WorkerToSupervisor>().await {
                if let WorkerToSupervisor::Reply { id, reply } = received.message {
                    routing.complete(id, reply);
                }
            }
        });
        let hung = Arc::new(Notify::new());
        let beating = tokio::spawn(heartbeat(
            Arc::clone(&handle),
            Arc::clone(&link),
            Arc::clone(&hung),
        ));
        let state_after = |wait: Duration| {
            let handle = Arc::clone(&handle);
            async move {
                tokio::time::sleep(wait).await;
                handle.status().state
            }
        };

        assert_eq!(
            state_after(Duration::from_secs(3)).await,
            WorkerState::Ready
        );
        answering.store(false, Ordering::Relaxed);
        let silent_since = tokio::time::Instant::now();
        let state =
            state_after(HEARTBEAT_INTERVAL + HEARTBEAT_TIMEOUT + HEARTBEAT_INTERVAL / 5).await;
        assert_eq!(state, WorkerState::Unresponsive);
        answering.store(true, Ordering::Relaxed);
        let state = state_after(HEARTBEAT_INTERVAL * 2 + HEARTBEAT_TIMEOUT).await;
        assert_eq!(
            state,
            WorkerState::Ready,
            "recovered {:?}",
            silent_since.elapsed()
        );

        answering.store(false, Ordering::Relaxed);
        let silent_since = tokio::time::Instant::now();
        tokio::time::timeout(Duration::from_secs(30), hung.notified())
            .await
            .expect("a silent worker is given up");
        let given_up = silent_since.elapsed();
        assert!(
            given_up >= HEARTBEAT_DEADLINE - HEARTBEAT_INTERVAL
                && given_up <= HEARTBEAT_DEADLINE + HEARTBEAT_INTERVAL,
            "given up after {given_up:?}"
        );
        assert_eq!(handle.status().state, WorkerState::Unresponsive);
        beating.await.unwrap();
        worker.abort();
        router.abort();
    }

    #[test]
    fn generations_stay_in_range_and_never_zero() {
        let generations = AtomicU32::new(u32::MAX - 1);
        for _ in 0..4 {
            let generation = next_generation(&generations);
            assert!((1..=strom_ipc::contract::MAX_GENERATION).contains(&generation));
        }
    }
}
