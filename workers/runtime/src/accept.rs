//! Accept loops over a replaceable set of listeners, with connection tracking for drain.

use crate::counters::{ConnectionGuard, WorkerCounters};
use crate::listeners::InheritedListener;
use crate::sync::locked;
use futures_util::FutureExt;
use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strom_ipc::messages::ListenerSpec;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// What an accept loop hands each new connection to.
pub trait ConnectionHandler: Send + Sync + 'static {
    fn handle(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        listener: &ListenerSpec,
        guard: ConnectionGuard,
        shutdown: CancellationToken,
    ) -> impl Future<Output = ()> + Send;
}

/// One accept task per listener; replacing the set stops the old tasks (their sockets
/// close in this process; the supervisor's copies keep the ports bound).
pub struct AcceptLoops<H> {
    handler: Arc<H>,
    /// Connections accepted at most at once ([`crate::fd_budget`]).
    budget: u64,
    counters: Arc<WorkerCounters>,
    shutdown: CancellationToken,
    connections: TaskTracker,
    current: Mutex<Vec<CancellationToken>>,
}

impl<H: ConnectionHandler> AcceptLoops<H> {
    pub fn new(
        handler: Arc<H>,
        counters: Arc<WorkerCounters>,
        shutdown: CancellationToken,
    ) -> Self {
        Self {
            handler,
            budget: crate::fd_budget::this_process(),
            counters,
            shutdown,
            connections: TaskTracker::new(),
            current: Mutex::new(Vec::new()),
        }
    }

    pub fn replace(&self, listeners: Vec<InheritedListener>) {
        let mut tokens = Vec::with_capacity(listeners.len());
        for inherited in listeners {
            let token = self.shutdown.child_token();
            tokens.push(token.clone());
            tracing::info!(role = ?inherited.spec.role, addr = %inherited.spec.addr, "accepting");
            tokio::spawn(accept_loop(
                inherited,
                self.budget,
                Arc::clone(&self.handler),
                Arc::clone(&self.counters),
                self.connections.clone(),
                token,
                self.shutdown.clone(),
            ));
        }
        let old = std::mem::replace(&mut *locked(&self.current), tokens);
        for token in old {
            token.cancel();
        }
    }

    /// Waits up to `limit` for open connections to end.
    pub async fn drain(&self, limit: Duration) {
        self.connections.close();
        if tokio::time::timeout(limit, self.connections.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                open = self.connections.len(),
                "connections still open after drain time"
            );
        }
    }
}

async fn accept_loop<H: ConnectionHandler>(
    inherited: InheritedListener,
    budget: u64,
    handler: Arc<H>,
    counters: Arc<WorkerCounters>,
    connections: TaskTracker,
    stop_accepting: CancellationToken,
    shutdown: CancellationToken,
) {
    let InheritedListener { spec, listener } = inherited;
    loop {
        let accepted = tokio::select! {
            () = stop_accepting.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                counters.accept_health.accepted();
                // Descriptors that requests hold (a proxy's socket) count too.
                if counters.descriptors_in_use() >= budget {
                    // Closed at once: the descriptors left are the worker's own work's.
                    drop(stream);
                    crate::limited_log!(warn, 5, Duration::from_secs(10); addr = %spec.addr, %peer, max = budget, "connection refused: the descriptor budget for connections is used up");
                    continue;
                }
                let guard = counters.open_connection();
                let handler = Arc::clone(&handler);
                let spec = spec.clone();
                let shutdown = shutdown.clone();
                connections.spawn(async move {
                    // A panic in one connection's handler ends that connection only (its
                    // guard is dropped while unwinding) and is logged; accepting goes on.
                    let handled =
                        AssertUnwindSafe(handler.handle(stream, peer, &spec, guard, shutdown))
                            .catch_unwind()
                            .await;
                    if let Err(panic) = handled {
                        tracing::error!(%peer, addr = %spec.addr, panic = panic_message(&*panic), "connection handler panicked; connection closed");
                    }
                });
            }
            Err(e) => {
                // EMFILE and friends: back off instead of spinning. A worker serving at
                // least half its budget is full, not broken: it keeps serving. Otherwise
                // (descriptors going somewhere else) the heartbeat reports it unhealthy
                // if it lasts.
                let serving = counters.descriptors_in_use();
                if crate::fd_budget::is_exhaustion(&e) && serving >= budget / 2 {
                    crate::limited_log!(warn, 5, Duration::from_secs(10); addr = %spec.addr, error = %e, serving, "accept failed: descriptors exhausted while serving; backing off");
                    tokio::time::sleep(Duration::from_millis(250)).await;
                    continue;
                }
                counters.accept_health.failed(&e);
                crate::limited_log!(warn, 5, Duration::from_secs(10); addr = %spec.addr, error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    tracing::debug!(addr = %spec.addr, "stopped accepting");
}

/// The text a panic was raised with (`panic!` with a literal or with formatting).
fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

// Connection handlers are contained by unwinding (see `accept_loop`); with panic=abort a
// panic in one connection would take the whole worker down.
#[cfg(panic = "abort")]
compile_error!("strom workers must be built with panic = \"unwind\" (the default)");
