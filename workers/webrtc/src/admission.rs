//! The places WebRTC sessions hold against their limits (`max_sessions`,
//! `max_sessions_per_ip` and a pay-per-view id's `ppv_max_sessions`), taken atomically
//! when an offer is admitted, before it waits for its stream: a place counts from then
//! until the session ends, or is given back at once when the offer fails. Checking the
//! limits first and adding the session after the wait let every offer sent before a
//! stream went live through (400 sessions from one address against a limit of 100).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use strom_ipc::webrtc_rules::WebRtcLimits;
use strom_worker_runtime::login_throttle::client_key;
use strom_worker_runtime::sync::locked;

#[derive(Debug, Default)]
struct Held {
    all: usize,
    /// By client address (an IPv6 client by its /64, as every per-address cap counts).
    by_client: HashMap<IpAddr, u32>,
    by_ppv: HashMap<String, u32>,
}

/// Which limit refused a place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Full {
    Sessions(u32),
    PerAddress(u32),
}

/// Every place held in the worker.
#[derive(Debug, Default)]
pub struct Admissions {
    held: Mutex<Held>,
}

/// A session's place; dropping it gives the place back.
#[derive(Debug)]
pub struct Place {
    admissions: Arc<Admissions>,
    client: IpAddr,
    ppv_id: Option<String>,
}

impl Admissions {
    /// Takes a place for a session from `peer` if the limits allow it. `admit` runs
    /// while the places are locked, so its decision and the place are one step: it is
    /// given the number of places each pay-per-view id holds and returns the id this
    /// session will count under (or its refusal, returned as is).
    pub fn take<E>(
        self: &Arc<Self>,
        limits: &WebRtcLimits,
        peer: IpAddr,
        admit: impl FnOnce(&dyn Fn(&str) -> usize) -> Result<Option<String>, E>,
    ) -> Result<Place, Result<Full, E>> {
        let client = client_key(peer);
        let mut held = locked(&self.held);
        if held.all >= limits.max_sessions as usize {
            return Err(Ok(Full::Sessions(limits.max_sessions)));
        }
        if held.by_client.get(&client).copied().unwrap_or(0) >= limits.max_sessions_per_ip {
            return Err(Ok(Full::PerAddress(limits.max_sessions_per_ip)));
        }
        let ppv_id = {
            let by_ppv = &held.by_ppv;
            admit(&|id: &str| by_ppv.get(id).copied().unwrap_or(0) as usize).map_err(Err)?
        };
        held.all += 1;
        *held.by_client.entry(client).or_insert(0) += 1;
        if let Some(id) = &ppv_id {
            *held.by_ppv.entry(id.clone()).or_insert(0) += 1;
        }
        Ok(Place {
            admissions: Arc::clone(self),
            client,
            ppv_id,
        })
    }

    /// Places held now.
    pub fn held(&self) -> usize {
        locked(&self.held).all
    }
}

impl Place {
    /// The pay-per-view id the place counts under.
    pub fn ppv_id(&self) -> Option<&str> {
        self.ppv_id.as_deref()
    }
}

fn give_back<K: std::hash::Hash + Eq>(counts: &mut HashMap<K, u32>, key: &K) {
    if let Some(count) = counts.get_mut(key) {
        *count = count.saturating_sub(1);
        if *count == 0 {
            counts.remove(key);
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut held = locked(&self.admissions.held);
        held.all = held.all.saturating_sub(1);
        give_back(&mut held.by_client, &self.client);
        if let Some(id) = &self.ppv_id {
            give_back(&mut held.by_ppv, id);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn limits(max_sessions: u32, max_sessions_per_ip: u32) -> WebRtcLimits {
        WebRtcLimits {
            max_sessions,
            max_sessions_per_ip,
            ..WebRtcLimits::default()
        }
    }

    fn open(_: &dyn Fn(&str) -> usize) -> Result<Option<String>, ()> {
        Ok(None)
    }

    #[test]
    fn places_count_until_dropped_in_all_and_per_address() {
        let admissions = Arc::new(Admissions::default());
        let three_two = limits(3, 2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "2001:db8::1".parse().unwrap();
        let first = admissions.take(&three_two, a, open).unwrap();
        let _second = admissions.take(&three_two, a, open).unwrap();
        assert_eq!(
            admissions.take(&three_two, a, open).unwrap_err(),
            Ok(Full::PerAddress(2))
        );
        let _third = admissions.take(&three_two, b, open).unwrap();
        assert_eq!(
            admissions
                .take(&three_two, "2001:db8::2".parse().unwrap(), open)
                .unwrap_err(),
            Ok(Full::Sessions(3))
        );
        drop(first);
        assert_eq!(admissions.held(), 2);
        // The same /64 is the same client.
        assert_eq!(
            admissions
                .take(&limits(10, 1), "2001:db8::9".parse().unwrap(), open)
                .unwrap_err(),
            Ok(Full::PerAddress(1))
        );
        assert!(admissions.take(&three_two, a, open).is_ok());
    }

    #[test]
    fn a_pay_per_view_id_counts_its_places_and_a_refusal_takes_none() {
        let admissions = Arc::new(Admissions::default());
        let limits = limits(100, 100);
        let peer: IpAddr = "10.0.0.1".parse().unwrap();
        let max_two = |held: &dyn Fn(&str) -> usize| {
            if held("ticket") >= 2 {
                Err("ppv full")
            } else {
                Ok(Some("ticket".to_owned()))
            }
        };
        let one = admissions.take(&limits, peer, max_two).unwrap();
        assert_eq!(one.ppv_id(), Some("ticket"));
        let _two = admissions.take(&limits, peer, max_two).unwrap();
        assert_eq!(
            admissions.take(&limits, peer, max_two).unwrap_err(),
            Err("ppv full")
        );
        assert_eq!(admissions.held(), 2, "a refused offer holds no place");
        drop(one);
        assert!(admissions.take(&limits, peer, max_two).is_ok());
    }
}
