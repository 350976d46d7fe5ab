//! Which session a packet on the shared ICE port belongs to.
//!
//! Every session of the worker receives on the same UDP port (and ICE-TCP port). A
//! packet from an address a session has already heard from goes to that session; a
//! STUN binding request from a new address goes to the session whose local ufrag its
//! USERNAME names (ICE connectivity checks always come first), which adopts the address
//! from then on. Anything else is dropped: nothing reaches a session that its ICE
//! credentials did not let in.
//!
//! An address can come back for another session: a client behind NAT whose new peer
//! connection gets the external port of one that just went away, before that session's
//! silence timeout (15 s) ends it. A binding request naming another live session takes
//! the address over once the session holding it has heard nothing authentic from its
//! peer for [`TAKEOVER_SILENCE`]; a peer that is alive (RTCP every second or so, consent
//! checks every few) keeps its address against spoofed binding requests naming other
//! sessions.

use crate::stun;
use bytes::Bytes;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, RwLock};
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

/// Packets a session may have waiting; past it new ones are dropped (as a full socket
/// buffer would), never queued without bound.
pub const INBOX_PACKETS: usize = 1024;

/// How a session answers the peer a packet came from.
#[derive(Debug, Clone)]
pub enum ReplyPath {
    /// The shared UDP socket the packet arrived on.
    Udp(Arc<UdpSocket>),
    /// The ICE-TCP connection's writer: whole packets, framed by the writer (RFC 4571).
    Tcp(mpsc::Sender<Bytes>),
}

/// One packet for a session.
#[derive(Debug)]
pub struct Inbound {
    pub tcp: bool,
    pub source: SocketAddr,
    /// The local port it arrived on: the session maps it to the candidate it advertised.
    pub local_port: u16,
    pub data: Bytes,
    pub reply: ReplyPath,
}

pub type Inbox = mpsc::Sender<Inbound>;

/// ICE-TCP connections one session may hold: a peer needs one per candidate pair it
/// tries over TCP (a few interfaces and families), never more.
pub const MAX_TCP_PER_SESSION: usize = 4;

/// How long the session holding an address must have heard nothing authentic from its
/// peer before a binding request for another session takes the address over.
pub const TAKEOVER_SILENCE: Duration = Duration::from_secs(3);

/// The worker's clock for [`PeerHeard`].
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

/// When a session last heard something authentic from its peer (its session marks it).
#[derive(Debug, Default)]
pub struct PeerHeard(AtomicU64);

impl PeerHeard {
    pub fn mark(&self) {
        self.0.store(millis_since_epoch(), Ordering::Relaxed);
    }

    fn silent_for(&self) -> Duration {
        Duration::from_millis(millis_since_epoch().saturating_sub(self.0.load(Ordering::Relaxed)))
    }
}

/// Readings start an hour in, so that any silence up to an hour fits below them.
fn millis_since_epoch() -> u64 {
    3_600_000 + EPOCH.elapsed().as_millis() as u64
}

/// A session as the table knows it: its inbox, its ICE-TCP connections and when it last
/// heard its peer.
struct Route {
    inbox: Inbox,
    tcp_connections: Arc<AtomicUsize>,
    heard: Arc<PeerHeard>,
}

/// An ICE-TCP connection's place among its session's [`MAX_TCP_PER_SESSION`]; given
/// back when the connection ends.
#[derive(Debug)]
pub struct TcpPlace {
    held: Arc<AtomicUsize>,
}

impl Drop for TcpPlace {
    fn drop(&mut self) {
        self.held.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Why an ICE-TCP connection's first packet found no session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpRefusal {
    /// Not a binding request naming a live session.
    NoSession,
    /// Its session holds [`MAX_TCP_PER_SESSION`] connections already.
    SessionFull,
}

#[derive(Default)]
struct Table {
    by_ufrag: HashMap<String, Route>,
    /// An adopted address's session: its inbox and its ufrag.
    by_address: HashMap<(bool, SocketAddr), (Inbox, String)>,
    /// The addresses each ufrag adopted, to forget them with the session.
    addresses_of: HashMap<String, Vec<(bool, SocketAddr)>>,
}

/// Every session's inbox by ufrag and by the addresses it adopted.
#[derive(Default)]
pub struct Routes {
    table: RwLock<Table>,
}

/// Adopted addresses a session keeps at most (ICE candidates pairs of one peer).
const MAX_ADDRESSES_PER_SESSION: usize = 16;

impl Routes {
    pub fn register(&self, ufrag: &str, inbox: Inbox, heard: Arc<PeerHeard>) {
        heard.mark();
        let mut table = self.table.write().unwrap_or_else(|e| e.into_inner());
        table.by_ufrag.insert(
            ufrag.to_owned(),
            Route {
                inbox,
                tcp_connections: Arc::default(),
                heard,
            },
        );
    }

    pub fn unregister(&self, ufrag: &str) {
        let mut table = self.table.write().unwrap_or_else(|e| e.into_inner());
        table.by_ufrag.remove(ufrag);
        for address in table.addresses_of.remove(ufrag).unwrap_or_default() {
            table.by_address.remove(&address);
        }
    }

    /// The session `packet` belongs to, adopting its source address for the session a
    /// binding request names.
    pub fn route(&self, tcp: bool, source: SocketAddr, packet: &[u8]) -> Option<Inbox> {
        let named = stun::local_ufrag(packet);
        {
            let table = self.table.read().unwrap_or_else(|e| e.into_inner());
            if let Some((inbox, holder)) = table.by_address.get(&(tcp, source)) {
                match named {
                    Some(named) if named != holder => {
                        // Not for the session holding the address (it would refuse it,
                        // and must not count it as its peer's): the named session's, if
                        // the holder's peer has gone silent; else nobody's.
                        let holder_silent = table
                            .by_ufrag
                            .get(holder)
                            .is_none_or(|route| route.heard.silent_for() >= TAKEOVER_SILENCE);
                        if !holder_silent || !table.by_ufrag.contains_key(named) {
                            return None;
                        }
                    }
                    _ => return Some(inbox.clone()),
                }
            }
        }
        let ufrag = named?;
        let mut table = self.table.write().unwrap_or_else(|e| e.into_inner());
        let inbox = table.by_ufrag.get(ufrag)?.inbox.clone();
        if let Some((_, holder)) = table.by_address.remove(&(tcp, source))
            && let Some(adopted) = table.addresses_of.get_mut(&holder)
        {
            adopted.retain(|address| *address != (tcp, source));
            tracing::info!(%source, "webrtc: a binding request for another session took over an address whose session went silent");
        }
        Self::adopt(&mut table, ufrag, tcp, source, &inbox);
        Some(inbox)
    }

    /// The session a new ICE-TCP connection's first packet (a binding request) names,
    /// with the connection's place among the session's own; a session holds at most
    /// [`MAX_TCP_PER_SESSION`], so one offer cannot pin down the worker's connections.
    pub fn route_tcp(
        &self,
        source: SocketAddr,
        packet: &[u8],
    ) -> Result<(Inbox, TcpPlace), TcpRefusal> {
        let ufrag = stun::local_ufrag(packet).ok_or(TcpRefusal::NoSession)?;
        let mut table = self.table.write().unwrap_or_else(|e| e.into_inner());
        let route = table.by_ufrag.get(ufrag).ok_or(TcpRefusal::NoSession)?;
        let inbox = route.inbox.clone();
        let held = Arc::clone(&route.tcp_connections);
        if held.fetch_add(1, Ordering::Relaxed) >= MAX_TCP_PER_SESSION {
            held.fetch_sub(1, Ordering::Relaxed);
            return Err(TcpRefusal::SessionFull);
        }
        Self::adopt(&mut table, ufrag, true, source, &inbox);
        Ok((inbox, TcpPlace { held }))
    }

    fn adopt(table: &mut Table, ufrag: &str, tcp: bool, source: SocketAddr, inbox: &Inbox) {
        let adopted = table.addresses_of.entry(ufrag.to_owned()).or_default();
        if adopted.len() < MAX_ADDRESSES_PER_SESSION {
            adopted.push((tcp, source));
            table
                .by_address
                .insert((tcp, source), (inbox.clone(), ufrag.to_owned()));
        }
    }

    /// Sessions registered (for tests and the log).
    pub fn sessions(&self) -> usize {
        self.table
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .by_ufrag
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding_request(username: &str) -> Vec<u8> {
        let mut message = vec![0x00, 0x01];
        let padded = username.len().div_ceil(4) * 4;
        message.extend_from_slice(&((4 + padded) as u16).to_be_bytes());
        message.extend_from_slice(&[0x21, 0x12, 0xa4, 0x42]);
        message.extend_from_slice(&[1; 12]);
        message.extend_from_slice(&6u16.to_be_bytes());
        message.extend_from_slice(&(username.len() as u16).to_be_bytes());
        message.extend_from_slice(username.as_bytes());
        message.resize(20 + 4 + padded, 0);
        message
    }

    #[test]
    fn a_binding_request_opens_the_way_for_its_address() {
        let routes = Routes::default();
        let (inbox, _rx) = mpsc::channel(1);
        routes.register("srv1", inbox, Arc::default());
        let peer: SocketAddr = "192.0.2.7:5000".parse().unwrap();
        assert!(
            routes.route(false, peer, b"\x80dtls-or-rtp").is_none(),
            "unknown address, not STUN"
        );
        assert!(
            routes
                .route(false, peer, &binding_request("other:x"))
                .is_none(),
            "someone else's ufrag"
        );
        assert!(
            routes
                .route(false, peer, &binding_request("srv1:cli"))
                .is_some()
        );
        assert!(
            routes.route(false, peer, b"\x80rtp").is_some(),
            "the address is adopted"
        );
        assert!(
            routes.route(true, peer, b"\x80rtp").is_none(),
            "per transport"
        );
        routes.unregister("srv1");
        assert!(
            routes.route(false, peer, b"\x80rtp").is_none(),
            "forgotten with the session"
        );
        assert_eq!(routes.sessions(), 0);
    }

    #[test]
    fn an_address_whose_session_went_silent_is_taken_over_by_another_session() {
        let routes = Routes::default();
        let (old_inbox, mut old_rx) = mpsc::channel(8);
        let (new_inbox, mut new_rx) = mpsc::channel(8);
        let old_heard = Arc::new(PeerHeard::default());
        routes.register("old", old_inbox, Arc::clone(&old_heard));
        routes.register("new", new_inbox, Arc::default());
        let peer: SocketAddr = "192.0.2.7:5000".parse().unwrap();
        routes
            .route(false, peer, &binding_request("old:cli"))
            .unwrap();
        // While the old session hears its peer, a binding request naming another
        // session from its address (a spoofer, say) goes nowhere, and does not count
        // as the old peer's.
        assert!(
            routes
                .route(false, peer, &binding_request("new:cli"))
                .is_none()
        );
        assert!(
            routes
                .route(false, peer, &binding_request("nobody:cli"))
                .is_none()
        );
        let old = routes.route(false, peer, b"\x80rtp").unwrap();
        old.try_send(inbound(peer)).unwrap();
        assert!(old_rx.try_recv().is_ok());
        // Once it has heard nothing for the takeover silence, the address moves.
        old_heard.0.store(
            millis_since_epoch() - TAKEOVER_SILENCE.as_millis() as u64 - 1,
            Ordering::Relaxed,
        );
        let taken = routes
            .route(false, peer, &binding_request("new:cli"))
            .unwrap();
        taken.try_send(inbound(peer)).unwrap();
        assert!(new_rx.try_recv().is_ok());
        routes
            .route(false, peer, b"\x80rtp")
            .unwrap()
            .try_send(inbound(peer))
            .unwrap();
        assert!(
            new_rx.try_recv().is_ok(),
            "the address is the new session's"
        );
        // The old session's end does not take the address from the new one.
        routes.unregister("old");
        assert!(routes.route(false, peer, b"\x80rtp").is_some());
        routes.unregister("new");
        assert!(routes.route(false, peer, b"\x80rtp").is_none());
    }

    fn inbound(source: SocketAddr) -> Inbound {
        let (queue, _) = mpsc::channel(1);
        Inbound {
            tcp: false,
            source,
            local_port: 1,
            data: Bytes::from_static(b"x"),
            reply: ReplyPath::Tcp(queue),
        }
    }

    #[test]
    fn a_session_holds_a_few_ice_tcp_connections_at_most() {
        let routes = Routes::default();
        let (inbox, _rx) = mpsc::channel(1);
        routes.register("srv1", inbox, Arc::default());
        let request = binding_request("srv1:cli");
        let peer = |port| SocketAddr::from(([192, 0, 2, 7], port));
        let mut places = Vec::new();
        for port in 0..MAX_TCP_PER_SESSION as u16 {
            places.push(routes.route_tcp(peer(5000 + port), &request).unwrap().1);
        }
        assert_eq!(
            routes.route_tcp(peer(6000), &request).unwrap_err(),
            TcpRefusal::SessionFull
        );
        assert_eq!(
            routes
                .route_tcp(peer(6001), &binding_request("other:cli"))
                .unwrap_err(),
            TcpRefusal::NoSession
        );
        places.pop();
        assert!(
            routes.route_tcp(peer(6002), &request).is_ok(),
            "a place is given back"
        );
    }
}
