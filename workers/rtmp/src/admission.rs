//! Who may take a place in the rtmp worker: connections per IP address, publishers and
//! players, each counted apart from `max_connections` so that one kind of client (silent
//! players of made-up streams, one busy address) cannot take every place.
//!
//! Places are held by RAII [`Place`]s and given back when the connection ends, however
//! it ends.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use strom_worker_runtime::sync::locked;

#[derive(Debug, Default)]
pub struct Admission {
    per_ip: Mutex<HashMap<IpAddr, u32>>,
    publishers: AtomicU32,
    players: AtomicU32,
}

/// What a place was taken for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaceKind {
    Ip(IpAddr),
    Publisher,
    Player,
}

/// A taken place; dropping it gives the place back.
#[derive(Debug)]
pub struct Place {
    admission: Arc<Admission>,
    kind: PlaceKind,
}

impl Drop for Place {
    fn drop(&mut self) {
        match self.kind {
            PlaceKind::Ip(ip) => {
                let mut per_ip = locked(&self.admission.per_ip);
                if let Some(count) = per_ip.get_mut(&ip) {
                    *count -= 1;
                    if *count == 0 {
                        per_ip.remove(&ip);
                    }
                }
            }
            PlaceKind::Publisher => {
                self.admission.publishers.fetch_sub(1, Ordering::Relaxed);
            }
            PlaceKind::Player => {
                self.admission.players.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

impl Admission {
    /// Takes a place of `kind` if fewer than `limit` are taken.
    pub fn take(self: &Arc<Self>, kind: PlaceKind, limit: u32) -> Option<Place> {
        let taken = match kind {
            PlaceKind::Ip(ip) => {
                let mut per_ip = locked(&self.per_ip);
                let count = per_ip.entry(ip).or_insert(0);
                let free = *count < limit;
                if free {
                    *count += 1;
                } else if *count == 0 {
                    per_ip.remove(&ip);
                }
                free
            }
            PlaceKind::Publisher => take_counted(&self.publishers, limit),
            PlaceKind::Player => take_counted(&self.players, limit),
        };
        taken.then(|| Place {
            admission: Arc::clone(self),
            kind,
        })
    }
}

fn take_counted(counter: &AtomicU32, limit: u32) -> bool {
    counter
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |taken| {
            (taken < limit).then_some(taken + 1)
        })
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_limited_per_kind_and_given_back_on_drop() {
        let admission = Arc::new(Admission::default());
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        let other: IpAddr = "192.0.2.8".parse().unwrap();
        let first = admission.take(PlaceKind::Ip(ip), 2).unwrap();
        let _second = admission.take(PlaceKind::Ip(ip), 2).unwrap();
        assert!(admission.take(PlaceKind::Ip(ip), 2).is_none());
        assert!(admission.take(PlaceKind::Ip(other), 2).is_some());
        drop(first);
        assert!(admission.take(PlaceKind::Ip(ip), 2).is_some());

        let player = admission.take(PlaceKind::Player, 1).unwrap();
        assert!(admission.take(PlaceKind::Player, 1).is_none());
        assert!(
            admission.take(PlaceKind::Publisher, 1).is_some(),
            "players do not take publishers' places"
        );
        drop(player);
        assert!(admission.take(PlaceKind::Player, 1).is_some());
        assert!(
            locked(&admission.per_ip).len() <= 2,
            "no entry kept for gone addresses"
        );
    }
}
