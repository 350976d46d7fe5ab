//! The public listening sockets: planned from the config, bound by the supervisor, kept
//! for the supervisor's whole life, and lent to the workers that serve them.
//!
//! Because the supervisor holds every listening socket, a port keeps accepting into the
//! kernel backlog while its worker restarts. A reload binds what is new, keeps what is
//! unchanged (same socket, no gap) and closes what is gone.

use crate::config::instance::{InstanceConfig, ListenAddress, socket_addrs};
use socket2::{Domain, Protocol, Socket, Type};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::os::fd::OwnedFd;
use strom_ipc::WorkerKind;
use strom_ipc::messages::{ListenerRole, ListenerSpec};
use strom_ipc::rules::Rules;
use thiserror::Error;

/// Queue of fully established connections per listening socket: this is what absorbs a
/// worker restart. The kernel caps it at `net.core.somaxconn`.
const BACKLOG: i32 = 4096;

#[derive(Debug, Error)]
#[error("cannot listen on {addr} ({role:?}): {source}")]
pub struct BindError {
    pub addr: SocketAddr,
    pub role: ListenerRole,
    #[source]
    pub source: io::Error,
}

/// The worker that serves a listener role.
pub fn owner(role: ListenerRole) -> WorkerKind {
    match role {
        ListenerRole::Rtmp => WorkerKind::Rtmp,
        ListenerRole::Http | ListenerRole::Https => WorkerKind::Packager,
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

/// The bound sockets, by identity.
#[derive(Debug, Default)]
pub struct ListenerTable {
    bound: BTreeMap<ListenerKey, TcpListener>,
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
            let listener = bind_tcp(key.addr).map_err(|source| BindError {
                addr: key.addr,
                role: key.role,
                source,
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
                fds.push(OwnedFd::from(listener.try_clone()?));
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
    fn a_failed_bind_changes_nothing() {
        let taken = bind_tcp(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
        let taken_port = taken.local_addr().unwrap().port();
        let mut table = ListenerTable::default();
        let wanted: BTreeSet<_> = [key(taken_port)].into();
        assert!(table.reconcile(&wanted).is_err());
        assert!(table.for_worker(WorkerKind::Rtmp).unwrap().0.is_empty());
    }
}
