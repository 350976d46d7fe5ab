//! The public listening sockets: planned from the config, bound by the supervisor, kept
//! for the supervisor's whole life, and lent to the workers that serve them.
//!
//! Because the supervisor holds every listening socket, a port keeps accepting into the
//! kernel backlog while its worker restarts. A reload binds what is new, keeps what is
//! unchanged (same socket, no gap) and closes what is gone.
//!
//! UDP inputs (`Cameras` that listen: `udp`, and `srt`/`rist` in `listen` mode) are lent
//! the same way as bound UDP sockets: datagrams queue in the socket's receive buffer
//! while the ingest worker restarts, and a multicast group stays joined because the
//! supervisor's copy of the socket holds the membership. SRT outputs in `listen` mode
//! (`TsOutputs`) are lent to the ingest worker the same way as SRT inputs.

use crate::config::instance::{InstanceConfig, ListenAddress, socket_addrs};
use socket2::{Domain, Protocol, Socket, Type};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, UdpSocket};
use std::os::fd::OwnedFd;
use strom_ipc::WorkerKind;
use strom_ipc::messages::{ListenerRole, ListenerSpec};
use strom_ipc::rules::Rules;
use thiserror::Error;

/// Queue of fully established connections per listening socket: this is what absorbs a
/// worker restart. The kernel caps it at `net.core.somaxconn`.
const BACKLOG: i32 = 4096;

/// The cause is part of the message and deliberately not an error `source`: logs print
/// the message alone, and `strom`'s exit message prints the chain, which would say the
/// cause twice.
#[derive(Debug, Error)]
#[error("cannot listen on {addr} ({role:?}): {cause}")]
pub struct BindError {
    pub addr: SocketAddr,
    pub role: ListenerRole,
    pub cause: io::Error,
}

/// The worker that serves a listener role.
pub fn owner(role: ListenerRole) -> WorkerKind {
    match role {
        ListenerRole::Rtmp => WorkerKind::Rtmp,
        ListenerRole::Http | ListenerRole::Https => WorkerKind::Packager,
        ListenerRole::Udp | ListenerRole::Srt | ListenerRole::Rist => WorkerKind::Ingest,
        ListenerRole::Rtsp | ListenerRole::Rtsps => WorkerKind::Rtsp,
        ListenerRole::WebRtcUdp | ListenerRole::WebRtcTcp => WorkerKind::WebRtc,
    }
}

/// The datagram role of an input that receives on a socket the supervisor binds and
/// lends; `None` for inputs the ingest worker dials out to (`receive_mode` `pull`) and
/// for every `rist` input: librist binds its own sockets and cannot adopt a lent one, so
/// the ingest worker binds listening RIST ports itself (README, `Cameras`).
fn camera_role(protocol: &str, receive_mode: &str) -> Option<ListenerRole> {
    match (protocol, receive_mode) {
        ("udp", _) => Some(ListenerRole::Udp),
        ("srt", "listen") => Some(ListenerRole::Srt),
        _ => None,
    }
}

/// Every listener the instance and rules ask for.
pub fn plan(instance: &InstanceConfig, rules: &Rules) -> BTreeSet<ListenerKey> {
    let mut wanted = BTreeSet::new();
    for interface in &rules.rtmp.interfaces {
        let ip = if interface.ip == "*" {
            Some(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
        } else {
            interface.ip.parse().ok()
        };
        if let Some(ip) = ip {
            wanted.insert(ListenerKey {
                role: ListenerRole::Rtmp,
                addr: SocketAddr::new(ip, interface.port),
            });
        }
    }
    let rtsp = [
        (ListenerRole::Rtsp, &rules.rtsp.interfaces),
        (ListenerRole::Rtsps, &rules.rtsp.tls_interfaces),
    ];
    let webrtc_tcp: &[_] = if rules.webrtc.tcp {
        &rules.webrtc.interfaces
    } else {
        &[]
    };
    let webrtc_udp: &[_] = if rules.webrtc.udp {
        &rules.webrtc.interfaces
    } else {
        &[]
    };
    let webrtc = [
        (ListenerRole::WebRtcUdp, webrtc_udp),
        (ListenerRole::WebRtcTcp, webrtc_tcp),
    ];
    let rtsp = rtsp.map(|(role, list)| (role, &list[..]));
    for (role, interfaces) in rtsp.into_iter().chain(webrtc) {
        for interface in interfaces {
            let ip = if interface.ip == "*" {
                Some(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
            } else {
                interface.ip.parse().ok()
            };
            if let Some(ip) = ip {
                wanted.insert(ListenerKey {
                    role,
                    addr: SocketAddr::new(ip, interface.port),
                });
            }
        }
    }
    for camera in &rules.cameras {
        // Validation made `ip` an address for every input that listens.
        let (Some(role), Ok(ip)) = (
            camera_role(&camera.protocol, &camera.receive_mode),
            camera.ip.parse::<IpAddr>(),
        ) else {
            continue;
        };
        wanted.insert(ListenerKey {
            role,
            addr: SocketAddr::new(ip, camera.port),
        });
    }
    // MPEG-TS outputs that listen: SRT the same way as SRT inputs; RIST is bound by the
    // ingest worker (see `camera_role`); UDP outputs only push.
    for output in &rules.ts_outputs {
        let (true, Ok(ip)) = (
            output.protocol == "srt" && output.mode == "listen",
            output.ip.parse::<IpAddr>(),
        ) else {
            continue;
        };
        wanted.insert(ListenerKey {
            role: ListenerRole::Srt,
            addr: SocketAddr::new(ip, output.port),
        });
    }
    let http: &[ListenAddress] = &instance.listen_interfaces;
    for addr in socket_addrs(http, instance.port) {
        wanted.insert(ListenerKey {
            role: ListenerRole::Http,
            addr,
        });
    }
    if let Some(ssl_port) = instance.ssl_port {
        for addr in socket_addrs(http, ssl_port) {
            wanted.insert(ListenerKey {
                role: ListenerRole::Https,
                addr,
            });
        }
    }
    wanted
}

/// A listener's identity: what it is for and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ListenerKey {
    pub role: ListenerRole,
    pub addr: SocketAddr,
}

impl ListenerKey {
    fn spec(self) -> ListenerSpec {
        ListenerSpec {
            role: self.role,
            addr: self.addr,
        }
    }
}

/// A socket the supervisor keeps: listening TCP or bound UDP, by the key's role.
#[derive(Debug)]
enum Bound {
    Tcp(TcpListener),
    Udp(UdpSocket),
}

impl Bound {
    fn bind(key: ListenerKey) -> io::Result<Self> {
        if key.role.is_datagram() {
            bind_udp(key.addr).map(Bound::Udp)
        } else {
            bind_tcp(key.addr).map(Bound::Tcp)
        }
    }

    /// A descriptor of the same socket to lend.
    fn lend(&self) -> io::Result<OwnedFd> {
        Ok(match self {
            Bound::Tcp(listener) => OwnedFd::from(listener.try_clone()?),
            Bound::Udp(socket) => OwnedFd::from(socket.try_clone()?),
        })
    }
}

/// The bound sockets, by identity.
#[derive(Debug, Default)]
pub struct ListenerTable {
    bound: BTreeMap<ListenerKey, Bound>,
}

impl ListenerTable {
    /// Makes the table match `wanted`. Binds everything new first: if any bind fails,
    /// nothing changes. Returns the workers whose set of listeners changed.
    pub fn reconcile(
        &mut self,
        wanted: &BTreeSet<ListenerKey>,
    ) -> Result<BTreeSet<WorkerKind>, BindError> {
        let mut fresh = BTreeMap::new();
        for key in wanted.iter().filter(|key| !self.bound.contains_key(key)) {
            let listener = Bound::bind(*key).map_err(|cause| BindError {
                addr: key.addr,
                role: key.role,
                cause,
            })?;
            tracing::info!(role = ?key.role, addr = %key.addr, "listening");
            fresh.insert(*key, listener);
        }
        let mut changed: BTreeSet<WorkerKind> = fresh.keys().map(|key| owner(key.role)).collect();
        let gone: Vec<ListenerKey> = self
            .bound
            .keys()
            .filter(|key| !wanted.contains(key))
            .copied()
            .collect();
        for key in gone {
            tracing::info!(role = ?key.role, addr = %key.addr, "no longer listening");
            self.bound.remove(&key);
            changed.insert(owner(key.role));
        }
        self.bound.extend(fresh);
        Ok(changed)
    }

    /// The listeners `kind` serves, as specs plus duplicated descriptors to send.
    pub fn for_worker(&self, kind: WorkerKind) -> io::Result<(Vec<ListenerSpec>, Vec<OwnedFd>)> {
        let mut specs = Vec::new();
        let mut fds = Vec::new();
        for (key, listener) in &self.bound {
            if owner(key.role) == kind {
                specs.push(key.spec());
                fds.push(listener.lend()?);
            }
        }
        Ok((specs, fds))
    }
}

/// Binds a TCP listening socket with a deep backlog.
pub fn bind_tcp(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    // A restarted supervisor must be able to bind while old connections sit in TIME_WAIT.
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    Ok(socket.into())
}

/// Binds a UDP socket for an input. A multicast address is joined on the default
/// interface and bound with the group's port, so several inputs (or other programs) can
/// receive the same group; a unicast address is bound exclusively so that two inputs on
/// one port fail loudly instead of splitting the datagrams.
pub fn bind_udp(addr: SocketAddr) -> io::Result<UdpSocket> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    match addr.ip() {
        IpAddr::V4(group) if group.is_multicast() => {
            socket.set_reuse_address(true)?;
            // Bound to the group address, the socket receives only that group's datagrams
            // on this port.
            socket.bind(&addr.into())?;
            socket.join_multicast_v4(&group, &Ipv4Addr::UNSPECIFIED)?;
        }
        IpAddr::V6(group) if group.is_multicast() => {
            socket.set_reuse_address(true)?;
            socket.bind(&SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), addr.port()).into())?;
            socket.join_multicast_v6(&group, 0)?;
        }
        _ => socket.bind(&addr.into())?,
    }
    Ok(socket.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(port: u16) -> ListenerKey {
        ListenerKey {
            role: ListenerRole::Rtmp,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        }
    }

    #[test]
    fn reconcile_keeps_unchanged_sockets_and_reports_owners() {
        let free = bind_tcp(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
        let port = free.local_addr().unwrap().port();
        drop(free);
        let mut table = ListenerTable::default();
        let wanted: BTreeSet<_> = [key(port)].into();
        assert_eq!(table.reconcile(&wanted).unwrap(), [WorkerKind::Rtmp].into());
        assert!(table.reconcile(&wanted).unwrap().is_empty());
        let (specs, fds) = table.for_worker(WorkerKind::Rtmp).unwrap();
        assert_eq!(specs.len(), 1);
        assert_eq!(fds.len(), 1);
        assert!(table.for_worker(WorkerKind::Packager).unwrap().0.is_empty());
        // Copies lent to a worker keep the socket open until the worker lets go.
        drop(fds);
        // The same port is still bound by the table: binding it again must fail.
        assert!(bind_tcp(SocketAddr::from(([127, 0, 0, 1], port))).is_err());
        assert_eq!(
            table.reconcile(&BTreeSet::new()).unwrap(),
            [WorkerKind::Rtmp].into()
        );
        assert!(bind_tcp(SocketAddr::from(([127, 0, 0, 1], port))).is_ok());
    }

    #[test]
    fn udp_inputs_are_bound_and_lent_to_the_ingest_worker() {
        let free = bind_udp(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
        let addr = free.local_addr().unwrap();
        drop(free);
        let mut table = ListenerTable::default();
        let wanted: BTreeSet<_> = [ListenerKey {
            role: ListenerRole::Udp,
            addr,
        }]
        .into();
        assert_eq!(
            table.reconcile(&wanted).unwrap(),
            [WorkerKind::Ingest].into()
        );
        let (specs, fds) = table.for_worker(WorkerKind::Ingest).unwrap();
        assert_eq!(specs[0].role, ListenerRole::Udp);
        let lent = UdpSocket::from(fds.into_iter().next().unwrap());
        UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .send_to(b"ts", addr)
            .unwrap();
        let mut buffer = [0u8; 8];
        assert_eq!(lent.recv(&mut buffer).unwrap(), 2);
        drop(lent);
        // The table keeps the port after the worker's copy is gone.
        assert!(bind_udp(addr).is_err());
        table.reconcile(&BTreeSet::new()).unwrap();
        assert!(bind_udp(addr).is_ok());
    }

    #[test]
    fn cameras_that_listen_are_planned_for_the_ingest_worker() {
        let text = r#"{"RtmpSettings": {"interfaces": []}, "Cameras": [
            {"id": "u", "ip": "127.0.0.1", "port": 5000, "protocol": "udp"},
            {"id": "m", "ip": "239.1.1.1", "port": 5001, "protocol": "udp"},
            {"id": "s", "ip": "0.0.0.0", "port": 9000, "protocol": "srt"},
            {"id": "r", "ip": "::", "port": 9002, "protocol": "rist", "receive_mode": "listen"},
            {"id": "p", "ip": "src.example.com", "port": 9004, "protocol": "srt",
             "receive_mode": "pull"}]}"#;
        let rules = crate::config::rules::parse(text, std::path::Path::new("rules.conf")).unwrap();
        let instance =
            crate::config::instance::parse("", std::path::Path::new("/etc/strom/strom.conf"))
                .unwrap();
        let planned: Vec<_> = plan(&instance, &rules)
            .into_iter()
            .filter(|key| owner(key.role) == WorkerKind::Ingest)
            .map(|key| (key.role, key.addr.to_string()))
            .collect();
        assert_eq!(
            planned,
            [
                (ListenerRole::Udp, "127.0.0.1:5000".to_owned()),
                (ListenerRole::Udp, "239.1.1.1:5001".to_owned()),
                (ListenerRole::Srt, "0.0.0.0:9000".to_owned()),
            ],
            "a listening rist input is bound by the ingest worker, not lent"
        );
    }

    #[test]
    fn srt_outputs_that_listen_are_planned_for_the_ingest_worker() {
        let text = r#"{"RtmpSettings": {"interfaces": []},
            "Cameras": [{"id": "s", "ip": "0.0.0.0", "port": 9000, "protocol": "srt"}],
            "TsOutputs": [
            {"protocol": "srt", "mode": "listen", "ip": "0.0.0.0", "port": 9100},
            {"protocol": "srt", "mode": "listen", "ip": "::1", "port": 9101,
             "app": "live", "stream": "tv"},
            {"protocol": "rist", "mode": "listen", "ip": "0.0.0.0", "port": 9102,
             "app": "live", "stream": "tv"},
            {"protocol": "srt", "ip": "dest.example.com", "port": 9103,
             "app": "live", "stream": "tv"},
            {"protocol": "rist", "ip": "10.0.0.1", "port": 9104, "app": "live", "stream": "tv"},
            {"protocol": "udp", "ip": "239.1.1.1", "port": 5000, "app": "live", "stream": "tv"}
            ]}"#;
        let rules = crate::config::rules::parse(text, std::path::Path::new("rules.conf")).unwrap();
        let instance =
            crate::config::instance::parse("", std::path::Path::new("/etc/strom/strom.conf"))
                .unwrap();
        let planned: Vec<_> = plan(&instance, &rules)
            .into_iter()
            .filter(|key| owner(key.role) == WorkerKind::Ingest)
            .map(|key| (key.role, key.addr.to_string()))
            .collect();
        assert_eq!(
            planned,
            [
                (ListenerRole::Srt, "0.0.0.0:9000".to_owned()),
                (ListenerRole::Srt, "0.0.0.0:9100".to_owned()),
                (ListenerRole::Srt, "[::1]:9101".to_owned()),
            ],
            "only srt listeners are lent: the worker binds rist itself, pushers bind nothing"
        );
    }

    #[test]
    fn a_failed_bind_changes_nothing() {
        let taken = bind_tcp(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
        let taken_port = taken.local_addr().unwrap().port();
        let mut table = ListenerTable::default();
        let wanted: BTreeSet<_> = [key(taken_port)].into();
        assert!(table.reconcile(&wanted).is_err());
        assert!(table.for_worker(WorkerKind::Rtmp).unwrap().0.is_empty());
    }
}
