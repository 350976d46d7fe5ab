//! A connection handler that panics ends only its own connection: the panic is logged as
//! an error naming the peer, the connection's guard is released, and the next connection
//! on the same listener is served.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strom_ipc::messages::{ListenerRole, ListenerSpec};
use strom_worker_runtime::accept::ConnectionHandler;
use strom_worker_runtime::counters::ConnectionGuard;
use strom_worker_runtime::{AcceptLoops, InheritedListener, WorkerCounters};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(10);

/// Panics on the first connection, answers `served` on the others.
struct FirstOnePanics {
    calls: AtomicUsize,
}

impl ConnectionHandler for FirstOnePanics {
    fn handle(
        &self,
        mut stream: TcpStream,
        peer: SocketAddr,
        _listener: &ListenerSpec,
        guard: ConnectionGuard,
        _shutdown: CancellationToken,
    ) -> impl Future<Output = ()> + Send {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        async move {
            let _guard = guard;
            // Await once first, as a real handler would.
            tokio::task::yield_now().await;
            if call == 0 {
                panic!("handler bug on the connection from {peer}");
            }
            let _ = stream.write_all(b"served").await;
        }
    }
}

/// Log lines, for the test to read.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

async fn read_all(addr: SocketAddr) -> Vec<u8> {
    let mut client = TcpStream::connect(addr).await.unwrap();
    let mut received = Vec::new();
    tokio::time::timeout(LIMIT, client.read_to_end(&mut received))
        .await
        .expect("the connection ends")
        .unwrap_or_default();
    received
}

// One thread: the log subscriber below is the test thread's, and every task runs there.
#[tokio::test]
async fn a_panicking_handler_ends_only_its_connection() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _log = tracing::subscriber::set_default(subscriber);

    let counters = Arc::new(WorkerCounters::default());
    let shutdown = CancellationToken::new();
    let loops = AcceptLoops::new(
        Arc::new(FirstOnePanics {
            calls: AtomicUsize::new(0),
        }),
        Arc::clone(&counters),
        shutdown.clone(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    loops.replace(vec![InheritedListener {
        spec: ListenerSpec {
            role: ListenerRole::Rtmp,
            addr,
        },
        listener,
    }]);

    assert_eq!(
        read_all(addr).await,
        b"",
        "the panicking handler's connection is closed"
    );
    assert_eq!(
        read_all(addr).await,
        b"served",
        "the next connection is served"
    );
    assert_eq!(read_all(addr).await, b"served");

    tokio::time::timeout(LIMIT, async {
        while counters.snapshot().connections != 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("every connection guard released, the panicked one's too");
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let line = log
        .lines()
        .find(|line| line.contains("connection handler panicked"))
        .unwrap_or_else(|| panic!("the panic is logged; log:\n{log}"));
    assert!(line.contains("ERROR"), "{line}");
    assert!(line.contains("peer=127.0.0.1:"), "{line}");
    assert!(
        line.contains("handler bug on the connection from"),
        "{line}"
    );
    loops.drain(LIMIT).await;
    shutdown.cancel();
}
