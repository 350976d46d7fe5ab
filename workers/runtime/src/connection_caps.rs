//! Caps on the connections a listener holds open: at most `total` in all and at most
//! `per_ip` from one client address, so one client (a flood, a slowloris) cannot take
//! every place. A place is an RAII [`CapPlace`], given back however the connection ends.

use crate::sync::locked;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

#[derive(Debug)]
pub struct ConnectionCaps {
    total: usize,
    per_ip: u32,
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    all: usize,
    by_ip: HashMap<IpAddr, u32>,
}

/// Which cap refused a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapReached {
    Total,
    PerIp,
}

impl std::fmt::Display for CapReached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CapReached::Total => "too many open connections",
            CapReached::PerIp => "too many open connections from this address",
        })
    }
}

/// A connection's place; dropping it gives the place back.
#[derive(Debug)]
pub struct CapPlace {
    caps: Arc<ConnectionCaps>,
    ip: IpAddr,
}

impl ConnectionCaps {
    pub fn new(total: usize, per_ip: u32) -> Arc<Self> {
        Arc::new(Self {
            total: total.max(1),
            per_ip: per_ip.max(1),
            open: Mutex::default(),
        })
    }

    /// Takes a place for a connection from `ip`.
    pub fn take(self: &Arc<Self>, ip: IpAddr) -> Result<CapPlace, CapReached> {
        let mut open = locked(&self.open);
        if open.all >= self.total {
            return Err(CapReached::Total);
        }
        let from_ip = open.by_ip.entry(ip).or_insert(0);
        if *from_ip >= self.per_ip {
            return Err(CapReached::PerIp);
        }
        *from_ip += 1;
        open.all += 1;
        Ok(CapPlace {
            caps: Arc::clone(self),
            ip,
        })
    }

    /// The cap per client address.
    pub fn per_ip_limit(&self) -> u32 {
        self.per_ip
    }

    /// The cap on all connections.
    pub fn total_limit(&self) -> usize {
        self.total
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        locked(&self.open).all
    }
}

impl Drop for CapPlace {
    fn drop(&mut self) {
        let mut open = locked(&self.caps.open);
        open.all = open.all.saturating_sub(1);
        if let Some(count) = open.by_ip.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                open.by_ip.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_capped_in_all_and_per_address_and_given_back() {
        let caps = ConnectionCaps::new(3, 2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let first = caps.take(a).unwrap();
        let _second = caps.take(a).unwrap();
        assert_eq!(caps.take(a).unwrap_err(), CapReached::PerIp);
        let _third = caps.take(b).unwrap();
        assert_eq!(caps.take(b).unwrap_err(), CapReached::Total);
        drop(first);
        assert_eq!(caps.open(), 2);
        let _again = caps.take(a).unwrap();
        assert_eq!(caps.take(b).unwrap_err(), CapReached::Total);
    }
}
