//! The UDP sockets the supervisor lends the MPEG-TS worker (listening `Cameras`: `udp`,
//! and `srt` in `listen` mode; RIST inputs bind their own, see [`crate::rist_input`]).
//! Each `udp` socket feeds the MPEG-TS input whose `Cameras` entry names its address:
//! one receive task per socket, which joins the multicast group when the address is
//! one, counts what arrives, and ends the input's stream when its sender stops. SRT
//! sockets are handed to libsrt ([`crate::srt_input`]).
//!
//! The set of sockets is replaced when the supervisor lends a new one; the inputs are
//! rebuilt when the rules change (same sockets, new mapping).

use crate::input_status::OFFLINE_AFTER;
use crate::shared::MpegTsShared;
use crate::threads::{spawn_thread, wait_for};
use crate::ts_input::TsInput;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strom_ipc::messages::ListenerRole;
use strom_ipc::rules::{CameraSettings, Rules};
use strom_stream::StreamKey;
use strom_worker_runtime::sync::locked;
use strom_worker_runtime::{InheritedUdpSocket, WorkerCounters};
use tokio_util::sync::CancellationToken;

/// Largest UDP payload: one buffer this size per socket holds any datagram whole.
const DATAGRAM_BUFFER: usize = 65_536;
/// Pause after a receive error (an ICMP error reported on the socket, say), so a socket
/// that keeps failing does not spin.
const ERROR_PAUSE: Duration = Duration::from_millis(100);

pub struct UdpReceivers {
    shared: Arc<MpegTsShared>,
    shutdown: CancellationToken,
    sockets: Mutex<Vec<Arc<InheritedUdpSocket>>>,
    /// The SRT threads of the current set: the next set's listeners wait for them to
    /// end, so two libsrt listeners never read one socket at the same time.
    srt_threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
    /// Stops the tasks of the current socket set.
    current: Mutex<CancellationToken>,
}

impl UdpReceivers {
    pub fn new(shared: Arc<MpegTsShared>, shutdown: CancellationToken) -> Self {
        let current = Mutex::new(shutdown.child_token());
        Self {
            shared,
            shutdown,
            sockets: Mutex::default(),
            srt_threads: Mutex::default(),
            current,
        }
    }

    /// Receives on `sockets` instead of the current set. The supervisor keeps its own
    /// copy of every socket, so datagrams that arrive in between wait in the kernel.
    pub fn replace(&self, sockets: Vec<InheritedUdpSocket>, rules: &Rules) {
        let sockets: Vec<_> = sockets.into_iter().map(Arc::new).collect();
        for inherited in &sockets {
            tracing::info!(role = ?inherited.spec.role, addr = %inherited.spec.addr, "udp socket adopted");
        }
        *locked(&self.sockets) = sockets;
        self.restart(rules);
    }

    fn keep(&self, thread: Option<std::thread::JoinHandle<()>>) {
        locked(&self.srt_threads).extend(thread);
    }

    /// Restarts every receive task with the inputs `rules` describe, after joining the
    /// multicast groups as they ask. Joins happen here, not when the sockets arrive: a
    /// reload sends the new sockets before the rules that name their `interface`, and a
    /// group joined on the default interface instead of the named one receives nothing
    /// (loopback multicast, a second NIC).
    pub fn restart(&self, rules: &Rules) {
        for inherited in locked(&self.sockets).iter() {
            join_multicast(inherited, rules);
        }
        let next = self.shutdown.child_token();
        let previous = std::mem::replace(&mut *locked(&self.current), next.clone());
        previous.cancel();
        // Taken once: every new SRT thread waits until all of the previous set ended.
        let previous_srt = Arc::new(Mutex::new(std::mem::take(&mut *locked(&self.srt_threads))));
        for camera in rules.cameras.iter().filter(|c| {
            c.protocol == "srt" && matches!(c.receive_mode.as_str(), "pull" | "rendezvous")
        }) {
            let (camera, shared, stop) = (camera.clone(), Arc::clone(&self.shared), next.clone());
            let previous_srt = Arc::clone(&previous_srt);
            self.keep(spawn_thread("srt-caller", move || {
                wait_for(&previous_srt);
                crate::srt_input::call(camera, shared, stop)
            }));
        }
        let sockets = locked(&self.sockets).clone();
        let outputs = crate::outputs::start(rules, &self.shared, &sockets, &next, &previous_srt);
        locked(&self.srt_threads).extend(outputs);
        for inherited in &sockets {
            if inherited.spec.role == ListenerRole::Srt {
                let camera = camera_at(rules, "srt", inherited.spec.addr);
                if let Some(camera) = camera {
                    let (inherited, camera) = (Arc::clone(inherited), camera.clone());
                    let (shared, stop) = (Arc::clone(&self.shared), next.clone());
                    let previous_srt = Arc::clone(&previous_srt);
                    self.keep(spawn_thread("srt-listener", move || {
                        wait_for(&previous_srt);
                        crate::srt_input::listen(inherited, camera, shared, stop)
                    }));
                }
                // libsrt owns what arrives on an SRT socket: nothing else may read it.
                continue;
            }
            let input = match inherited.spec.role {
                ListenerRole::Udp => camera_at(rules, "udp", inherited.spec.addr).map(|camera| {
                    TsInput::new(
                        camera.id.clone(),
                        StreamKey::new(camera.app.clone(), camera.stream.clone()),
                        "MPEGTS",
                        self.shared.status_of(&camera.id),
                        self.shared.hub.clone(),
                        Arc::clone(&self.shared.ids),
                    )
                    .listing_contributors(self.shared.gate.sessions().clone())
                }),
                _ => None,
            };
            tokio::spawn(receive(
                Arc::clone(inherited),
                input,
                Arc::clone(&self.shared.counters),
                next.clone(),
            ));
        }
    }
}

/// The input of `protocol` configured to receive at `addr`.
fn camera_at<'a>(rules: &'a Rules, protocol: &str, addr: SocketAddr) -> Option<&'a CameraSettings> {
    rules.cameras.iter().find(|camera| {
        camera.protocol == protocol
            && camera.port == addr.port()
            && camera.ip.parse::<IpAddr>().ok() == Some(addr.ip())
    })
}

/// Joins the multicast group a `udp` input listens on again where its parameters ask
/// for more than the supervisor's join on the default interface: on the interface the
/// `interface` parameter names (an IPv4 address), limited to the `source` parameter's
/// sender when given (source-specific multicast).
fn join_multicast(inherited: &InheritedUdpSocket, rules: &Rules) {
    let IpAddr::V4(group) = inherited.spec.addr.ip() else {
        return;
    };
    if !group.is_multicast() {
        return;
    }
    let camera = camera_at(rules, "udp", inherited.spec.addr);
    let address = |name| {
        camera
            .and_then(|camera| camera.parameter(name))
            .and_then(|value| value.parse::<Ipv4Addr>().ok())
    };
    if address("interface").is_none() && address("source").is_none() {
        return;
    }
    let interface = address("interface").unwrap_or(Ipv4Addr::UNSPECIFIED);
    let joined = match address("source") {
        Some(source) => {
            socket2::SockRef::from(&inherited.socket).join_ssm_v4(&source, &group, &interface)
        }
        None => inherited.socket.join_multicast_v4(group, interface),
    };
    match joined {
        Ok(()) => tracing::info!(%group, %interface, "joined multicast group"),
        // Joined at an earlier restart: the membership belongs to the socket, which the
        // supervisor keeps across reloads.
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {}
        Err(e) => tracing::warn!(%group, %interface, error = %e, "multicast join failed"),
    }
}

async fn receive(
    inherited: Arc<InheritedUdpSocket>,
    mut input: Option<TsInput>,
    counters: Arc<WorkerCounters>,
    stop: CancellationToken,
) {
    let mut buffer = vec![0u8; DATAGRAM_BUFFER];
    loop {
        let received = tokio::select! {
            () = stop.cancelled() => break,
            received = tokio::time::timeout(OFFLINE_AFTER, inherited.socket.recv_from(&mut buffer)) => received,
        };
        match received {
            Ok(Ok((len, peer))) => {
                counters.add_received(len as u64);
                if let Some(input) = input.as_mut() {
                    input.status.received(len);
                    input.feed(&buffer[..len], peer);
                }
            }
            Ok(Err(e)) => {
                tracing::debug!(addr = %inherited.spec.addr, error = %e, "udp receive failed");
                tokio::time::sleep(ERROR_PAUSE).await;
            }
            // Nothing for a while: the sender stopped.
            Err(_) => {
                if let Some(input) = input.as_mut() {
                    input.stopped();
                }
            }
        }
    }
    if let Some(input) = input.as_mut() {
        input.stopped();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strom_ipc::messages::ListenerSpec;
    use strom_stream::Hub;
    use strom_worker_runtime::{SessionIds, WorkerCounters};

    fn inherited(socket: std::net::UdpSocket) -> InheritedUdpSocket {
        socket.set_nonblocking(true).unwrap();
        InheritedUdpSocket {
            spec: ListenerSpec {
                role: ListenerRole::Udp,
                addr: socket.local_addr().unwrap(),
            },
            socket: tokio::net::UdpSocket::from_std(socket).unwrap(),
        }
    }

    fn shared() -> Arc<MpegTsShared> {
        let hub = Hub::default();
        Arc::new(MpegTsShared {
            gate: Arc::new(strom_stream::Gate::new(
                hub.clone(),
                Arc::default(),
                Vec::new(),
            )),
            hub,
            ids: Arc::new(SessionIds::new(1)),
            counters: Arc::new(WorkerCounters::default()),
            status: Mutex::default(),
            srt: Default::default(),
            outputs: Default::default(),
        })
    }

    async fn received_reaches(counters: &WorkerCounters, bytes: u64) {
        for _ in 0..200 {
            if counters.snapshot().bytes_received >= bytes {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{:?}", counters.snapshot());
    }

    #[tokio::test]
    async fn datagrams_are_counted_and_a_replaced_set_stops() {
        let shared = shared();
        let receivers = UdpReceivers::new(Arc::clone(&shared), CancellationToken::new());
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = socket.local_addr().unwrap();
        let kept = socket.try_clone().unwrap();
        receivers.replace(vec![inherited(socket)], &Rules::default());
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        sender.send_to(&[0x47; 188 * 7], addr).unwrap();
        received_reaches(&shared.counters, 188 * 7).await;

        receivers.replace(Vec::new(), &Rules::default());
        tokio::time::sleep(Duration::from_millis(50)).await;
        sender.send_to(&[0x47; 188], addr).unwrap();
        // Nobody in the worker reads any more: the datagram waits in the socket.
        kept.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut buffer = [0u8; 512];
        assert_eq!(kept.recv(&mut buffer).unwrap(), 188);
        assert_eq!(shared.counters.snapshot().bytes_received, 188 * 7);
    }
}
