//! HLS and DASH viewer sessions: created by a master playlist (or DASH manifest)
//! request, carried in chunklist, manifest and segment URLs (`?sid=`), kept in the gate's
//! session registry (type `HLS` or `DASH`), which lists them and ends them on
//! `sessions/delete` (the viewer's next request gets 403); they end too by idling out.
//! This file keeps what only these connectionless sessions need: the URL tokens, the
//! deleted tokens, and the caps.
//!
//! The `sid` in URLs is not the API's session id (a counter, easy to guess) but a token of
//! 128 random bits: on a protected stream the session is what lets chunklist and segment
//! requests through, so a guessable one would let anybody read a signed viewer's stream.
//! A session opened with a signature bound to the client's address (no pay-per-view id)
//! is also bound to that address: from another one its token is unknown.
//!
//! What a client can make the delivery worker hold is bounded: a session stores at most
//! [`strom_stream::gate::sessions::MAX_USER_AGENT_BYTES`] of User-Agent; one client address (an IPv4 address, an IPv6
//! /64) holds at most [`MAX_SESSIONS_PER_CLIENT`] sessions and all clients together
//! [`MAX_VIEWERS`]. A viewer who would pass a cap still plays: its playlist is served
//! without a session id (it is not listed, cannot be ended through the API, and counts
//! no bytes). Refusing with 429 instead would stop the player, and evicting the client's
//! older sessions would let one address churn the list; at [`MAX_VIEWERS`] only
//! sessions idle for [`EVICTABLE_IDLE`] or longer are evicted, one per new session. A
//! deleted session's place is given back at its next request or the next sweep.

mod revoked;

use revoked::Revoked;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use strom_stream::{Reading, Session, SessionEntry, Sessions};
use strom_worker_runtime::SessionIds;
use strom_worker_runtime::sync::locked;
use tokio_util::sync::CancellationToken;

/// Deleted ids are remembered this long, so their requests keep getting 403.
const REVOKED_MEMORY: Duration = Duration::from_secs(600);
/// Deleted ids remembered at most (those of the oldest sessions are forgotten first).
const MAX_REVOKED: usize = 100_000;
/// Live viewer sessions at most, all clients together.
pub const MAX_VIEWERS: usize = 200_000;
/// Live viewer sessions at most per client address (IPv4 address or IPv6 /64).
pub const MAX_SESSIONS_PER_CLIENT: usize = 64;
/// At [`MAX_VIEWERS`], a session idle this long may be evicted for a new one (a
/// playing viewer asks for its chunklist at least every target duration).
const EVICTABLE_IDLE: Duration = Duration::from_secs(30);
/// Sessions looked at for an evictable one, per new session at [`MAX_VIEWERS`].
const EVICTION_SCAN: usize = 64;

/// A viewer's session (its entry in the registry, which derefs to it) and its URL token.
#[derive(Debug)]
pub struct Viewer {
    /// The `sid` of the viewer's URLs: 128 random bits, unguessable.
    pub token: u128,
    /// The only address the token works from, when the signature that opened the session
    /// bound the client's address.
    pub bound_ip: Option<IpAddr>,
    /// The client's address as the caps count it.
    pub client_ip: IpAddr,
    session: Session,
}

impl std::ops::Deref for Viewer {
    type Target = SessionEntry;
    fn deref(&self) -> &SessionEntry {
        &self.session
    }
}

impl Viewer {
    pub fn touch(&self, bytes: u64) {
        self.session.sent(bytes as usize);
    }

    fn idle_for(&self) -> Duration {
        Duration::from_secs(self.session.idle_secs().max(0) as u64)
    }
}

/// What a request's session id resolves to.
pub enum Lookup {
    Live(Arc<Viewer>),
    /// Deleted through the API: answer 403.
    Revoked,
    /// Unknown or expired: the request is served without a session.
    Unknown,
}

/// The key sessions are counted under: the address, or for IPv6 its /64 (one
/// subscriber's network).
fn client_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(bits.into())
        }
        v4 => v4,
    }
}

/// B-trees give their memory back as entries go, so the maps shrink after a flood.
#[derive(Debug, Default)]
struct Live {
    by_id: BTreeMap<u64, Arc<Viewer>>,
    /// Session ids by URL token.
    by_token: BTreeMap<u128, u64>,
    per_client: BTreeMap<IpAddr, usize>,
    /// Where the next eviction scan starts (ids are handed out in increasing order).
    cursor: u64,
}

impl Live {
    fn insert(&mut self, viewer: Arc<Viewer>) {
        *self
            .per_client
            .entry(client_key(viewer.client_ip))
            .or_default() += 1;
        self.by_token.insert(viewer.token, viewer.id);
        self.by_id.insert(viewer.id, viewer);
    }

    fn remove(&mut self, id: u64) -> Option<Arc<Viewer>> {
        let viewer = self.by_id.remove(&id)?;
        self.by_token.remove(&viewer.token);
        let key = client_key(viewer.client_ip);
        if let Some(count) = self.per_client.get_mut(&key) {
            *count -= 1;
            if *count == 0 {
                self.per_client.remove(&key);
            }
        }
        Some(viewer)
    }

    /// A token no live session has (128 random bits from the thread's CSPRNG; a
    /// collision is all but impossible, but costs nothing to rule out).
    fn new_token(&self) -> u128 {
        loop {
            let token: u128 = rand::random();
            if token != 0 && !self.by_token.contains_key(&token) {
                return token;
            }
        }
    }

    fn sessions_of(&self, ip: IpAddr) -> usize {
        self.per_client
            .get(&client_key(ip))
            .copied()
            .unwrap_or_default()
    }

    /// Removes the sessions that are over (idled out, or ended by request: those go to
    /// `revoked`).
    fn expire(&mut self, revoked: &mut Revoked, now: Instant) {
        let over: Vec<u64> = (self.by_id.values())
            .filter(|viewer| !viewer.is_on())
            .map(|viewer| viewer.id)
            .collect();
        for id in over {
            if let Some(viewer) = self.remove(id)
                && viewer.kill.is_cancelled()
            {
                revoked.insert(viewer.token, now);
            }
        }
    }

    /// Evicts the longest-idle session among the next [`EVICTION_SCAN`] from the
    /// cursor (wrapping around), if it has been idle for `evictable` or longer.
    fn evict_one_idle(&mut self, evictable: Duration) -> bool {
        let scanned: Vec<(u64, Duration)> = self
            .by_id
            .range(self.cursor..)
            .chain(self.by_id.range(..self.cursor))
            .take(EVICTION_SCAN)
            .map(|(id, viewer)| (*id, viewer.idle_for()))
            .collect();
        if let Some((last, _)) = scanned.last() {
            self.cursor = last.wrapping_add(1);
        }
        match scanned.into_iter().max_by_key(|(_, idle)| *idle) {
            Some((id, idle)) if idle >= evictable => self.remove(id).is_some(),
            _ => false,
        }
    }
}

#[derive(Debug)]
pub struct Viewers {
    ids: Arc<SessionIds>,
    /// The gate's registry, where the sessions are listed.
    registry: Sessions,
    /// A viewer that asks for nothing for this long is forgotten (`hls_session_timeout`).
    idle: Duration,
    live: Mutex<Live>,
    /// Tokens of deleted sessions, with when they were deleted.
    revoked: Mutex<Revoked>,
    /// Master playlists served without a session since the last sweep (for the log).
    refused: AtomicU64,
    max_viewers: usize,
    max_per_client: usize,
}

impl Viewers {
    pub fn new(ids: Arc<SessionIds>, registry: Sessions, idle: Duration) -> Self {
        Self::with_caps(ids, registry, idle, MAX_VIEWERS, MAX_SESSIONS_PER_CLIENT)
    }

    fn with_caps(
        ids: Arc<SessionIds>,
        registry: Sessions,
        idle: Duration,
        max_viewers: usize,
        max_per_client: usize,
    ) -> Self {
        Self {
            ids,
            registry,
            idle,
            live: Mutex::new(Live::default()),
            revoked: Mutex::new(Revoked::default()),
            refused: AtomicU64::new(0),
            max_viewers,
            max_per_client,
        }
    }

    /// A new session of type `protocol` (`HLS`, `DASH`) for the admitted `reading`; with
    /// `bind_to_ip` (a signature bound to the client's address) usable from `client_ip`
    /// only; `None` when a cap is reached (the viewer plays without one).
    pub fn open(
        &self,
        protocol: &'static str,
        reading: &Reading,
        client_ip: IpAddr,
        user_agent: &str,
        bind_to_ip: bool,
    ) -> Option<Arc<Viewer>> {
        let mut live = locked(&self.live);
        let full = live.sessions_of(client_ip) >= self.max_per_client
            || (live.by_id.len() >= self.max_viewers
                && !live.evict_one_idle(EVICTABLE_IDLE.min(self.idle)));
        if full {
            drop(live);
            self.refused.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let client_ip = client_ip.to_canonical();
        let id = self.ids.next_id();
        let entry =
            SessionEntry::reader(id, protocol, reading, client_ip, CancellationToken::new())
                .with_user_agent(user_agent)
                .idle_after(self.idle.as_secs().max(1) as i64);
        let viewer = Arc::new(Viewer {
            token: live.new_token(),
            bound_ip: bind_to_ip.then_some(client_ip),
            client_ip,
            session: self.registry.open(entry),
        });
        live.insert(Arc::clone(&viewer));
        Some(viewer)
    }

    /// The session of URL token `token` as seen from `peer`: a session bound to another
    /// address is unknown there; one ended by request is revoked from now on.
    pub fn lookup(&self, token: u128, peer: IpAddr) -> Lookup {
        let mut revoked = locked(&self.revoked);
        if revoked.tokens.contains(&token) {
            return Lookup::Revoked;
        }
        let mut live = locked(&self.live);
        let Some(viewer) = live.by_token.get(&token).and_then(|id| live.by_id.get(id)) else {
            return Lookup::Unknown;
        };
        if viewer.kill.is_cancelled() {
            let id = viewer.id;
            live.remove(id);
            revoked.insert(token, Instant::now());
            return Lookup::Revoked;
        }
        match viewer.bound_ip {
            Some(ip) if ip != peer.to_canonical() => Lookup::Unknown,
            _ => Lookup::Live(Arc::clone(viewer)),
        }
    }

    /// Ends idle sessions, gives deleted sessions' places back and forgets old deletions.
    pub fn sweep(&self) {
        let now = Instant::now();
        let mut revoked = locked(&self.revoked);
        locked(&self.live).expire(&mut revoked, now);
        revoked.forget_older(now);
        drop(revoked);
        let refused = self.refused.swap(0, Ordering::Relaxed);
        if refused > 0 {
            tracing::info!(
                refused,
                per_client = self.max_per_client,
                total = self.max_viewers,
                "hls viewers served without a session: session caps reached"
            );
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        locked(&self.live).by_id.len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use strom_stream::gate::sessions::MAX_USER_AGENT_BYTES;
    use strom_worker_runtime::clock::unix_now;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    use strom_ipc::messages::WorkerReply;

    fn viewers(max_viewers: usize, max_per_client: usize) -> Viewers {
        Viewers::with_caps(
            Arc::new(SessionIds::new(1)),
            Sessions::default(),
            Duration::from_secs(60),
            max_viewers,
            max_per_client,
        )
    }

    /// An admitted reading of `live/s` (no protection: every reader is admitted).
    fn reading() -> Reading {
        let gate = strom_stream::Gate::new(strom_stream::Hub::default(), Arc::default(), vec![]);
        let key = strom_stream::StreamKey::new("live", "s");
        let access = strom_stream::Access::new(strom_stream::Protocol::Hls, key, ip("10.0.0.1"));
        gate.admit_reader(&access).unwrap()
    }

    impl Viewers {
        fn open_plain(&self, client_ip: IpAddr, user_agent: &str) -> Option<Arc<Viewer>> {
            self.open("HLS", &reading(), client_ip, user_agent, false)
        }

        fn list(&self) -> Vec<strom_ipc::status::SessionInfo> {
            self.registry.list()
        }
    }

    fn age(viewer: &Viewer, by: Duration) {
        let then = unix_now() - by.as_secs() as i64;
        viewer.last_access.store(then, Ordering::Relaxed);
    }

    #[test]
    fn user_agents_are_cut_at_a_character_boundary() {
        let viewers = viewers(10, 10);
        let long = "é".repeat(40_000);
        let viewer = viewers.open_plain(ip("10.0.0.1"), &long).unwrap();
        assert_eq!(viewer.user_agent.len(), MAX_USER_AGENT_BYTES);
        assert!(long.starts_with(&viewer.user_agent));
        let listed = viewers.list();
        assert_eq!(listed[0].user_agent.len(), MAX_USER_AGENT_BYTES);
        assert_eq!(
            SessionEntry::new(
                1,
                "HLS",
                &strom_stream::StreamKey::new("a", "b"),
                "x",
                CancellationToken::new()
            )
            .with_user_agent("aé")
            .user_agent,
            "aé"
        );
    }

    #[test]
    fn one_client_gets_its_cap_and_others_are_unaffected() {
        let viewers = viewers(1_000, 4);
        let first = viewers.open_plain(ip("10.0.0.2"), "other").unwrap();
        for _ in 0..4 {
            assert!(viewers.open_plain(ip("10.0.0.1"), "a").is_some());
        }
        for _ in 0..100 {
            assert!(viewers.open_plain(ip("10.0.0.1"), "a").is_none());
        }
        // The same IPv4 address seen through a dual-stack socket counts as itself.
        assert!(viewers.open_plain(ip("::ffff:10.0.0.1"), "a").is_none());
        // An IPv6 /64 is one client.
        for host in 1..=4 {
            assert!(
                viewers
                    .open_plain(ip(&format!("2001:db8::{host}")), "a")
                    .is_some()
            );
        }
        assert!(viewers.open_plain(ip("2001:db8::ffff"), "a").is_none());
        assert!(viewers.open_plain(ip("2001:db8:0:1::1"), "a").is_some());
        assert_eq!(viewers.len(), 10);
        assert!(matches!(
            viewers.lookup(first.token, first.client_ip),
            Lookup::Live(_)
        ));
        let listed = viewers.list();
        assert_eq!(
            listed.iter().filter(|s| s.client_ip == "10.0.0.1").count(),
            4
        );
        assert!(
            listed
                .iter()
                .any(|s| s.id == first.id && s.client_ip == "10.0.0.2")
        );
        // Ending sessions frees the client's places.
        let ids: Vec<u64> = listed
            .iter()
            .filter(|s| s.client_ip == "10.0.0.1")
            .map(|s| s.id)
            .collect();
        assert_eq!(viewers.registry.kill(&ids[..2]).len(), 2);
        viewers.sweep();
        assert!(viewers.open_plain(ip("10.0.0.1"), "a").is_some());
        assert!(viewers.open_plain(ip("10.0.0.1"), "a").is_some());
        assert!(viewers.open_plain(ip("10.0.0.1"), "a").is_none());
    }

    #[test]
    fn at_the_total_cap_only_idle_sessions_are_evicted_one_at_a_time() {
        let viewers = viewers(10, 100);
        let all: Vec<Arc<Viewer>> = (0..10)
            .map(|i| viewers.open_plain(ip(&format!("10.0.1.{i}")), "a").unwrap())
            .collect();
        // Nobody idle: the newcomer plays without a session, nobody is dropped.
        assert!(viewers.open_plain(ip("10.0.2.1"), "a").is_none());
        assert_eq!(viewers.len(), 10);
        // Two idle ones: each newcomer replaces one, the longest idle first.
        age(&all[3], Duration::from_secs(40));
        age(&all[7], Duration::from_secs(50));
        let newcomer = viewers.open_plain(ip("10.0.2.1"), "a").unwrap();
        assert_eq!(viewers.len(), 10);
        assert!(matches!(
            viewers.lookup(all[7].token, all[7].client_ip),
            Lookup::Unknown
        ));
        assert!(matches!(
            viewers.lookup(all[3].token, all[3].client_ip),
            Lookup::Live(_)
        ));
        assert!(viewers.open_plain(ip("10.0.2.2"), "a").is_some());
        assert!(matches!(
            viewers.lookup(all[3].token, all[3].client_ip),
            Lookup::Unknown
        ));
        assert!(viewers.open_plain(ip("10.0.2.3"), "a").is_none());
        assert_eq!(viewers.len(), 10);
        for (i, viewer) in all.iter().enumerate() {
            if i != 3 && i != 7 {
                assert!(
                    matches!(
                        viewers.lookup(viewer.token, viewer.client_ip),
                        Lookup::Live(_)
                    ),
                    "{i}"
                );
            }
        }
        assert!(matches!(
            viewers.lookup(newcomer.token, newcomer.client_ip),
            Lookup::Live(_)
        ));
        // The evicted ones' places per client were given back.
        let live = locked(&viewers.live);
        assert_eq!(live.sessions_of(ip("10.0.1.7")), 0);
        assert_eq!(live.per_client.len(), 10);
    }

    #[test]
    fn expired_sessions_give_their_memory_back() {
        let viewers = viewers(100_000, 100_000);
        let mut opened = Vec::new();
        for i in 0..20_000u32 {
            let address = IpAddr::V4(std::net::Ipv4Addr::from(0x0A00_0000 + i));
            opened.push(viewers.open_plain(address, "agent").unwrap());
        }
        for viewer in &opened {
            age(viewer, Duration::from_secs(120));
        }
        drop(opened);
        viewers.sweep();
        let live = locked(&viewers.live);
        assert!(live.by_id.is_empty());
        assert!(live.per_client.is_empty());
    }

    #[test]
    fn pages_walk_the_sessions_in_order() {
        let viewers = viewers(100, 100);
        let ids: Vec<u64> = (0..5)
            .map(|_| viewers.open_plain(ip("10.0.0.1"), "a").unwrap().id)
            .collect();
        let page = |after, limit| match viewers.registry.page(after, limit) {
            WorkerReply::SessionsPage { sessions, more } => {
                (sessions.iter().map(|s| s.id).collect::<Vec<_>>(), more)
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(page(0, 2), (ids[..2].to_vec(), true));
        assert_eq!(page(ids[1], 2), (ids[2..4].to_vec(), true));
        assert_eq!(page(ids[3], 2), (ids[4..].to_vec(), false));
        assert_eq!(page(ids[4], 2), (vec![], false));
    }

    #[test]
    fn revoked_sessions_get_403_and_are_remembered_within_bounds() {
        let viewers = viewers(100, 100);
        let viewer = viewers.open_plain(ip("10.0.0.1"), "a").unwrap();
        let killed: Vec<u64> = (viewers.registry.kill(&[viewer.id, 12345]).iter())
            .map(|e| e.id)
            .collect();
        assert_eq!(killed, vec![viewer.id]);
        // Gone from the list at once.
        assert!(viewers.list().is_empty());
        assert!(matches!(
            viewers.lookup(viewer.token, viewer.client_ip),
            Lookup::Revoked
        ));
        assert!(matches!(
            viewers.lookup(12345, ip("10.0.0.1")),
            Lookup::Unknown
        ));
        assert_eq!(locked(&viewers.live).sessions_of(ip("10.0.0.1")), 0);
    }

    #[test]
    fn url_tokens_are_random_and_not_the_api_ids() {
        let viewers = viewers(1_000, 1_000);
        let opened: Vec<Arc<Viewer>> = (0..100)
            .map(|_| viewers.open_plain(ip("10.0.0.1"), "a").unwrap())
            .collect();
        let tokens: std::collections::BTreeSet<u128> = opened.iter().map(|v| v.token).collect();
        assert_eq!(tokens.len(), opened.len());
        // Neighbouring sessions' tokens are far apart: no counter to step along.
        for pair in opened.windows(2) {
            assert_eq!(pair[1].id, pair[0].id + 1);
            assert!(pair[0].token.abs_diff(pair[1].token) > u128::from(u64::MAX));
        }
        // The API id is no token.
        for viewer in &opened {
            assert!(matches!(
                viewers.lookup(u128::from(viewer.id), viewer.client_ip),
                Lookup::Unknown
            ));
        }
    }

    #[test]
    fn a_session_bound_to_an_address_is_unknown_from_another() {
        let viewers = viewers(100, 100);
        let bound = viewers
            .open("HLS", &reading(), ip("10.0.0.1"), "a", true)
            .unwrap();
        assert!(matches!(
            viewers.lookup(bound.token, ip("10.0.0.1")),
            Lookup::Live(_)
        ));
        assert!(matches!(
            viewers.lookup(bound.token, ip("::ffff:10.0.0.1")),
            Lookup::Live(_)
        ));
        assert!(matches!(
            viewers.lookup(bound.token, ip("10.0.0.2")),
            Lookup::Unknown
        ));
        // A session not bound (a pay-per-view one) works from anywhere.
        let ppv = viewers
            .open("HLS", &reading(), ip("10.0.0.1"), "a", false)
            .unwrap();
        assert!(matches!(
            viewers.lookup(ppv.token, ip("10.9.9.9")),
            Lookup::Live(_)
        ));
    }

    #[test]
    fn deletions_are_forgotten_oldest_first() {
        let mut revoked = Revoked::default();
        let start = Instant::now();
        for token in 0..(MAX_REVOKED as u128 + 2) {
            revoked.insert(u128::MAX - token, start);
        }
        assert_eq!(revoked.tokens.len(), MAX_REVOKED);
        assert!(!revoked.tokens.contains(&u128::MAX));
        assert!(!revoked.tokens.contains(&(u128::MAX - 1)));
        assert!(revoked.tokens.contains(&(u128::MAX - 2)));
        revoked.forget_older(start + REVOKED_MEMORY);
        assert!(revoked.tokens.is_empty());
    }
}
