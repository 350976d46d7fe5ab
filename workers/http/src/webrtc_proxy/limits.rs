//! What pending WHEP/WHIP requests may hold in the packager: how many are pending at
//! once, the body bytes they may hold in all and per client address, and a descriptor
//! slot for each socket to the webrtc worker. A request that does not fit is refused
//! (503 with `Retry-After`) before its body is read, so slow or numerous signaling
//! clients cost a bounded amount of memory and descriptors and never take the ones HLS
//! needs for its clients and files.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use strom_worker_runtime::counters::{DescriptorGuard, WorkerCounters};
use strom_worker_runtime::sync::locked;

/// Body bytes all pending signaling requests may hold together (at least one request of
/// the largest `max_sdp_bytes`, 1 MiB, fits 32 times).
pub const GLOBAL_BYTES: u64 = 32 * 1024 * 1024;
/// Body bytes the pending signaling requests of one client address (an IPv6 client: its
/// /64) may hold together (raised to one `max_sdp_bytes` when that is larger, so one
/// offer always fits).
pub const PER_ADDRESS_BYTES: u64 = 1024 * 1024;
/// What a request is charged at least, whatever its body: its connection's buffers and
/// the forwarded request and answer cost about this much, so a flood of empty bodies is
/// bounded as well.
pub const MIN_CHARGE: u64 = 16 * 1024;
/// Bounds of the pending-request cap, which is a quarter of the descriptor budget: each
/// pending request holds its client's socket and one to the webrtc worker, and the rest
/// of the budget is for HLS and the other clients.
const MIN_PENDING: u64 = 16;
const MAX_PENDING: u64 = 4096;

/// The cap on pending signaling requests for a descriptor budget of `budget`.
pub fn max_pending(budget: u64) -> usize {
    let pending = (budget / 4).clamp(MIN_PENDING, MAX_PENDING);
    usize::try_from(pending).unwrap_or(usize::MAX)
}

#[derive(Debug)]
pub struct SignalingLimits {
    max_pending: usize,
    /// The worker's descriptor budget ([`strom_worker_runtime::fd_budget`]).
    descriptor_budget: u64,
    counters: Arc<WorkerCounters>,
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    pending: usize,
    bytes: u64,
    by_address: HashMap<IpAddr, u64>,
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// [`max_pending`] requests are pending.
    Pending,
    /// [`GLOBAL_BYTES`] are held.
    Bytes,
    /// The client's address holds [`PER_ADDRESS_BYTES`].
    AddressBytes,
}

impl Refusal {
    /// The answer's text.
    pub fn text(self) -> &'static str {
        match self {
            Refusal::Pending => "too many signaling requests are pending; retry later",
            Refusal::Bytes => "too many signaling bytes are pending; retry later",
            Refusal::AddressBytes => {
                "too many signaling requests from this address are pending; retry later"
            }
        }
    }
}

/// A pending request's share; dropping it gives the share back.
#[derive(Debug)]
pub struct Admitted {
    limits: Arc<SignalingLimits>,
    address: IpAddr,
    charge: u64,
}

impl SignalingLimits {
    pub fn new(descriptor_budget: u64, counters: Arc<WorkerCounters>) -> Arc<Self> {
        let max_pending = max_pending(descriptor_budget);
        tracing::info!(
            max_pending,
            global_bytes = GLOBAL_BYTES,
            per_address_bytes = PER_ADDRESS_BYTES,
            "WHEP/WHIP signaling requests capped"
        );
        Arc::new(Self {
            max_pending,
            descriptor_budget,
            counters,
            held: Mutex::default(),
        })
    }

    /// Admits a request from `address` charged `charge` bytes, when the caps leave room;
    /// `largest` is the largest body a request may have (`max_sdp_bytes`).
    pub fn admit(
        self: &Arc<Self>,
        address: IpAddr,
        charge: u64,
        largest: u64,
    ) -> Result<Admitted, Refusal> {
        // An IPv6 client counts by its /64, as every per-address cap does.
        let address = strom_worker_runtime::login_throttle::client_key(address);
        let charge = charge.max(MIN_CHARGE);
        let mut held = locked(&self.held);
        if held.pending >= self.max_pending {
            return Err(Refusal::Pending);
        }
        if held.bytes.saturating_add(charge) > GLOBAL_BYTES {
            return Err(Refusal::Bytes);
        }
        let per_address = PER_ADDRESS_BYTES.max(largest);
        let from_address = held.by_address.get(&address).copied().unwrap_or(0);
        if from_address.saturating_add(charge) > per_address {
            return Err(Refusal::AddressBytes);
        }
        held.pending += 1;
        held.bytes += charge;
        held.by_address.insert(address, from_address + charge);
        Ok(Admitted {
            limits: Arc::clone(self),
            address,
            charge,
        })
    }

    /// A descriptor slot for a socket to the webrtc worker, shared with the worker's
    /// connections ([`WorkerCounters::take_descriptor`]); `None` when none is free.
    pub fn descriptor(&self) -> Option<DescriptorGuard> {
        self.counters.take_descriptor(self.descriptor_budget)
    }

    /// Requests pending now.
    #[cfg(test)]
    fn pending(&self) -> usize {
        locked(&self.held).pending
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut held = locked(&self.limits.held);
        held.pending = held.pending.saturating_sub(1);
        held.bytes = held.bytes.saturating_sub(self.charge);
        if let Some(bytes) = held.by_address.get_mut(&self.address) {
            *bytes = bytes.saturating_sub(self.charge);
            if *bytes == 0 {
                held.by_address.remove(&self.address);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh(budget: u64) -> Arc<SignalingLimits> {
        SignalingLimits::new(budget, Arc::new(WorkerCounters::default()))
    }

    #[test]
    fn the_pending_cap_follows_the_descriptor_budget() {
        assert_eq!(max_pending(192), 48);
        assert_eq!(max_pending(896), 224);
        assert_eq!(max_pending(16), 16);
        assert_eq!(max_pending(u64::MAX), 4096);
    }

    #[test]
    fn one_address_is_refused_past_its_bytes_and_others_still_fit() {
        let limits = fresh(u64::MAX);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let largest = 32 * 1024;
        let mut held = Vec::new();
        while let Ok(admitted) = limits.admit(a, 30_000, largest) {
            held.push(admitted);
        }
        assert_eq!(held.len(), (PER_ADDRESS_BYTES / 30_000) as usize);
        assert_eq!(
            limits.admit(a, 30_000, largest).unwrap_err(),
            Refusal::AddressBytes
        );
        let same_64: IpAddr = "2001:db8::1".parse().unwrap();
        let v6 = limits.admit(same_64, PER_ADDRESS_BYTES, largest).unwrap();
        assert_eq!(
            limits
                .admit("2001:db8::2".parse().unwrap(), 0, largest)
                .unwrap_err(),
            Refusal::AddressBytes,
            "an IPv6 client counts by its /64"
        );
        let other = limits.admit(b, 30_000, largest).unwrap();
        held.pop();
        assert!(
            limits.admit(a, 30_000, largest).is_ok(),
            "a share came back"
        );
        drop((other, v6));
        drop(held);
        assert_eq!(limits.pending(), 0);
    }

    #[test]
    fn the_global_caps_hold_across_addresses() {
        let limits = fresh(64);
        let mut held = Vec::new();
        for i in 0..16u8 {
            held.push(limits.admit(IpAddr::from([10, 0, 1, i]), 0, 4096).unwrap());
        }
        assert_eq!(
            limits
                .admit(IpAddr::from([10, 0, 2, 1]), 0, 4096)
                .unwrap_err(),
            Refusal::Pending
        );
        drop(held);
        let limits = fresh(u64::MAX);
        let mut held = Vec::new();
        let mut refusal = None;
        for i in 0..=255u8 {
            match limits.admit(IpAddr::from([10, 1, 0, i]), 1024 * 1024, 1024 * 1024) {
                Ok(admitted) => held.push(admitted),
                Err(e) => {
                    refusal = Some(e);
                    break;
                }
            }
        }
        assert_eq!(held.len() as u64, GLOBAL_BYTES / (1024 * 1024));
        assert_eq!(refusal, Some(Refusal::Bytes));
    }

    #[test]
    fn worker_sockets_take_slots_of_the_descriptor_budget() {
        let counters = Arc::new(WorkerCounters::default());
        let limits = SignalingLimits::new(2, Arc::clone(&counters));
        let _client = counters.open_connection();
        let slot = limits.descriptor().unwrap();
        assert!(limits.descriptor().is_none());
        drop(slot);
        assert!(limits.descriptor().is_some());
    }
}
