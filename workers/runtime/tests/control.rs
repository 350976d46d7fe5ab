//! The worker runtime's control loop over a real socketpair: hello with a real listening
//! socket, ready, heartbeat, a request the service answers, shutdown; and the hellos it
//! must refuse.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strom_ipc::channel::{ControlReader, ControlWriter};
use strom_ipc::messages::{
    ListenerRole, ListenerSpec, SupervisorToWorker, WorkerHello, WorkerReply, WorkerRequest,
    WorkerSettings, WorkerToSupervisor,
};
use strom_ipc::rules::Rules;
use strom_ipc::status::SessionInfo;
use strom_ipc::{ControlChannel, WorkerKind};
use strom_worker_runtime::{
    InheritedListener, RuntimeError, SessionIds, WorkerContext, WorkerService, serve_on,
};

/// Every wait in this file is bounded: a broken runtime fails the test instead of hanging.
const LIMIT: Duration = Duration::from_secs(10);

const GENERATION: u32 = 7;

/// Answers `ListSessions` with one session whose id comes from the runtime's generator.
struct FakeService {
    session_ids: Arc<SessionIds>,
    /// Addresses of the listeners the runtime handed over, as the sockets report them.
    adopted: Arc<Mutex<Vec<SocketAddr>>>,
}

impl WorkerService for FakeService {
    async fn handle(&self, request: WorkerRequest) -> WorkerReply {
        match request {
            WorkerRequest::ListSessions => WorkerReply::Sessions(vec![SessionInfo {
                id: self.session_ids.next_id(),
                app: "live".into(),
                stream: "cam".into(),
                protocol: "RTMP".into(),
                bytes_recv: 0,
                bytes_sent: 0,
                created: 0,
                last_access: 0,
                client_ip: "127.0.0.1".into(),
                user_agent: String::new(),
                ppv_id: None,
                dropped_frames: None,
            }]),
            other => WorkerReply::Failed(format!("fake service does not handle {other:?}")),
        }
    }

    fn replace_listeners(&self, listeners: Vec<InheritedListener>) {
        *self.adopted.lock().unwrap() = listeners
            .iter()
            .map(|l| l.listener.local_addr().unwrap())
            .collect();
    }

    async fn drain(&self) {}
}

fn hello(kind: WorkerKind, listeners: Vec<ListenerSpec>) -> SupervisorToWorker {
    let dir = std::env::temp_dir();
    SupervisorToWorker::Hello(Box::new(WorkerHello {
        kind,
        generation: GENERATION,
        listeners,
        settings: WorkerSettings {
            data_dir: dir.clone(),
            run_dir: dir,
            max_ram_cache_bytes: 1 << 20,
            max_file_cache_bytes: 1 << 20,
            cors_origin: "*".to_owned(),
            hls_session_timeout_secs: 60,
            hls_stream_grace_secs: 30,
            icecast_burst_bytes: 65_536,
            ndi_discovery_interfaces: Vec::new(),
            http_limits: Default::default(),
        },
        rules: Rules::default(),
        tls: None,
        drm: None,
        denied_publishers: Vec::new(),
    }))
}

type Served = tokio::task::JoinHandle<Result<(), RuntimeError>>;

/// Starts `serve_on` for a Dvr worker on one end of a socketpair; returns the other end.
fn start_worker(adopted: Arc<Mutex<Vec<SocketAddr>>>) -> (ControlReader, ControlWriter, Served) {
    let (supervisor_end, worker_end) = UnixStream::pair().unwrap();
    let worker_channel = ControlChannel::from_std(worker_end).unwrap();
    let served = tokio::spawn(serve_on(
        worker_channel,
        WorkerKind::Dvr,
        move |ctx: WorkerContext| {
            let addrs = ctx
                .listeners
                .iter()
                .map(|l| l.listener.local_addr().unwrap())
                .collect();
            *adopted.lock().unwrap() = addrs;
            Ok(Arc::new(FakeService {
                session_ids: Arc::clone(&ctx.session_ids),
                adopted,
            }))
        },
    ));
    let (reader, writer) = ControlChannel::from_std(supervisor_end).unwrap().split();
    (reader, writer, served)
}

async fn recv(reader: &mut ControlReader) -> WorkerToSupervisor {
    let received = tokio::time::timeout(LIMIT, reader.recv::<WorkerToSupervisor>())
        .await
        .expect("the worker answers in time")
        .expect("a well-formed frame from the worker");
    assert!(received.fds.is_empty(), "workers send no descriptors");
    received.message
}

async fn request(
    reader: &mut ControlReader,
    writer: &mut ControlWriter,
    id: u64,
    request: WorkerRequest,
) -> WorkerReply {
    writer
        .send(&SupervisorToWorker::Request { id, request }, &[])
        .await
        .unwrap();
    match recv(reader).await {
        WorkerToSupervisor::Reply { id: got, reply } => {
            assert_eq!(got, id, "the reply echoes the request id");
            reply
        }
        other => panic!("expected a reply to request {id}, got {other:?}"),
    }
}

async fn finished(served: Served) -> Result<(), RuntimeError> {
    tokio::time::timeout(LIMIT, served)
        .await
        .expect("serve_on returns in time")
        .expect("serve_on did not panic")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_ready_heartbeat_request_and_shutdown() {
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = tcp.local_addr().unwrap();
    let adopted = Arc::new(Mutex::new(Vec::new()));
    let (mut reader, mut writer, served) = start_worker(Arc::clone(&adopted));

    let spec = ListenerSpec {
        role: ListenerRole::Rtmp,
        addr,
    };
    writer
        .send(&hello(WorkerKind::Dvr, vec![spec]), &[tcp.as_fd()])
        .await
        .unwrap();
    match recv(&mut reader).await {
        WorkerToSupervisor::Ready { pid } => assert_eq!(pid, std::process::id()),
        other => panic!("expected Ready, got {other:?}"),
    }
    assert_eq!(
        *adopted.lock().unwrap(),
        [addr],
        "the service got the socket that was sent, still listening on its address"
    );
    // The descriptor is a duplicate of ours: the kernel completes a connection to it.
    std::net::TcpStream::connect_timeout(&addr, LIMIT).expect("the passed listener accepts");

    match request(&mut reader, &mut writer, 1, WorkerRequest::Heartbeat).await {
        WorkerReply::Counters(counters) => assert_eq!(counters.connections, 0),
        other => panic!("expected Counters, got {other:?}"),
    }
    match request(&mut reader, &mut writer, 2, WorkerRequest::ListSessions).await {
        WorkerReply::Sessions(sessions) => {
            assert_eq!(sessions.len(), 1, "{sessions:?}");
            assert_eq!(
                sessions[0].id,
                (u64::from(GENERATION) << 32) | 1,
                "the first id of generation {GENERATION}"
            );
            assert_eq!(sessions[0].stream, "cam");
        }
        other => panic!("expected Sessions, got {other:?}"),
    }
    // A second request gets the next id of the same generator.
    match request(&mut reader, &mut writer, 3, WorkerRequest::ListSessions).await {
        WorkerReply::Sessions(sessions) => {
            assert_eq!(sessions[0].id, (u64::from(GENERATION) << 32) | 2);
        }
        other => panic!("expected Sessions, got {other:?}"),
    }
    assert_eq!(
        request(&mut reader, &mut writer, 4, WorkerRequest::Shutdown).await,
        WorkerReply::Done
    );
    finished(served)
        .await
        .expect("serve_on returns Ok after a shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_channel_stops_the_worker_cleanly() {
    let (mut reader, mut writer, served) = start_worker(Arc::default());
    writer
        .send(&hello(WorkerKind::Dvr, Vec::new()), &[])
        .await
        .unwrap();
    assert!(matches!(
        recv(&mut reader).await,
        WorkerToSupervisor::Ready { .. }
    ));
    drop(reader);
    drop(writer);
    finished(served)
        .await
        .expect("a closed channel is a normal stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hello_for_another_kind_is_refused() {
    let (_reader, mut writer, served) = start_worker(Arc::default());
    writer
        .send(&hello(WorkerKind::Rtmp, Vec::new()), &[])
        .await
        .unwrap();
    match finished(served).await {
        Err(RuntimeError::WrongKind { expected, got }) => {
            assert_eq!((expected, got), (WorkerKind::Dvr, WorkerKind::Rtmp));
        }
        other => panic!("expected WrongKind, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hello_announcing_a_listener_without_its_descriptor_is_refused() {
    let adopted = Arc::new(Mutex::new(Vec::new()));
    let (_reader, mut writer, served) = start_worker(Arc::clone(&adopted));
    let spec = ListenerSpec {
        role: ListenerRole::Rtmp,
        addr: ([127, 0, 0, 1], 1935).into(),
    };
    writer
        .send(&hello(WorkerKind::Dvr, vec![spec]), &[])
        .await
        .unwrap();
    match finished(served).await {
        Err(error @ RuntimeError::Listeners(_)) => {
            let message = error.to_string();
            assert!(
                message.contains("1 sockets but 0 descriptors"),
                "the error says what is missing: {message}"
            );
        }
        other => panic!("expected a listener error, got {other:?}"),
    }
    assert!(
        adopted.lock().unwrap().is_empty(),
        "the service was never built"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_before_the_hello_is_refused() {
    let (_reader, mut writer, served) = start_worker(Arc::default());
    writer
        .send(
            &SupervisorToWorker::Request {
                id: 1,
                request: WorkerRequest::Heartbeat,
            },
            &[],
        )
        .await
        .unwrap();
    assert!(matches!(finished(served).await, Err(RuntimeError::NoHello)));
}
