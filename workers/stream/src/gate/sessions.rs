//! The session registry of a worker, held by its gate: one entry per playing or
//! publishing client of every protocol (RTMP, RTSP, WebRTC, SRT, HLS/DASH viewers, HTTP
//! listeners, Icecast sources), read by the API's session list (`/manage/sessions`, and
//! through it `/metrics`), `sessions/delete`, the deny list's closing of live sessions and
//! the pay-per-view counts. The gate answers those requests from here ([`super::Gated`]);
//! no worker keeps a session table of its own.
//!
//! A protocol opens its client's [`Session`] ([`Sessions::open`]) and hands it to the
//! handle it reads or publishes with ([`crate::Gate::read`], [`crate::Gate::publish`]):
//! the session lasts exactly as long as that handle, so no path can forget to remove it.
//! A connection closes when its entry's `kill` token is cancelled (the one callback the
//! registry has); a connectionless session (an HLS viewer) ends at its owner's next look.

use super::{Admission, Reading};
use crate::StreamKey;
use crate::reader::DropCounter;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use strom_ipc::status::SessionInfo;
use strom_worker_runtime::clock::unix_now;
use strom_worker_runtime::sync::locked;
use tokio_util::sync::CancellationToken;

/// Bytes of User-Agent kept with a session: a client cannot make the registry hold more.
pub const MAX_USER_AGENT_BYTES: usize = 256;

/// Byte counts a transport keeps itself (libsrt's), read when the session is listed
/// instead of the entry's counters.
pub trait Meter: Send + Sync {
    /// Bytes received from and sent to the client so far.
    fn bytes(&self) -> (u64, u64);
}

/// One playing or publishing session.
pub struct SessionEntry {
    pub id: u64,
    /// The protocol as the API names it (`RTMP`, `RTSP`, `WebRTC`, `SRT`, `HLS`, ...).
    pub protocol: &'static str,
    /// A publisher rather than a player.
    pub publisher: bool,
    /// Whether the API lists it (and `sessions/delete` finds it): RTMP has never listed
    /// its publishers, and the API's answers keep their shape; an RTSP player is listed
    /// once it plays.
    listed: AtomicBool,
    /// Publish-control id of a signed publisher.
    pub control_id: Option<String>,
    /// Pay-per-view id of a signed player (`PlaybackProtection`).
    pub ppv_id: Option<String>,
    pub app: String,
    pub stream: String,
    pub client_ip: String,
    pub user_agent: String,
    pub created: i64,
    pub last_access: AtomicI64,
    pub bytes_sent: AtomicU64,
    pub bytes_recv: AtomicU64,
    /// Cancelling it closes the connection.
    pub kill: CancellationToken,
    /// Frames lost to a player's hub queue (see `strom_stream::reader`), once it reads.
    pub dropped: OnceLock<DropCounter>,
    meter: Option<Arc<dyn Meter>>,
    /// Seconds without a touch after which a connectionless session is over: lists leave
    /// it out until its owner forgets it.
    idle_limit: Option<i64>,
}

impl std::fmt::Debug for SessionEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionEntry")
            .field("id", &self.id)
            .field("protocol", &self.protocol)
            .field("app", &self.app)
            .field("stream", &self.stream)
            .field("client_ip", &self.client_ip)
            .finish_non_exhaustive()
    }
}

impl SessionEntry {
    /// A listed player session of `key`, started now; the builder methods below say
    /// what else it is.
    pub fn new(
        id: u64,
        protocol: &'static str,
        key: &StreamKey,
        client_ip: impl ToString,
        kill: CancellationToken,
    ) -> Self {
        let now = unix_now();
        Self {
            id,
            protocol,
            publisher: false,
            listed: AtomicBool::new(true),
            control_id: None,
            ppv_id: None,
            app: key.app.clone(),
            stream: key.stream.clone(),
            client_ip: client_ip.to_string(),
            user_agent: String::new(),
            created: now,
            last_access: AtomicI64::new(now),
            bytes_sent: AtomicU64::new(0),
            bytes_recv: AtomicU64::new(0),
            kill,
            dropped: OnceLock::new(),
            meter: None,
            idle_limit: None,
        }
    }

    /// The session of an admitted reader: its stream and pay-per-view id.
    pub fn reader(
        id: u64,
        protocol: &'static str,
        reading: &Reading,
        client_ip: impl ToString,
        kill: CancellationToken,
    ) -> Self {
        Self {
            ppv_id: reading.ppv_id.clone(),
            ..Self::new(id, protocol, reading.key(), client_ip, kill)
        }
    }

    /// The session of an admitted publisher: its stream and publish-control id.
    pub fn publisher(
        id: u64,
        protocol: &'static str,
        admission: &Admission,
        client_ip: impl ToString,
        kill: CancellationToken,
    ) -> Self {
        Self {
            publisher: true,
            control_id: admission.control_id.clone(),
            ..Self::new(id, protocol, admission.key(), client_ip, kill)
        }
    }

    /// With the client's User-Agent (or RTMP flash version), cut to
    /// [`MAX_USER_AGENT_BYTES`] at a character boundary.
    pub fn with_user_agent(mut self, user_agent: &str) -> Self {
        let mut end = user_agent.len().min(MAX_USER_AGENT_BYTES);
        while !user_agent.is_char_boundary(end) {
            end -= 1;
        }
        self.user_agent = user_agent[..end].to_owned();
        self
    }

    /// With a pay-per-view id (a reader admitted before its stream was known).
    pub fn with_ppv_id(mut self, ppv_id: Option<String>) -> Self {
        self.ppv_id = ppv_id;
        self
    }

    /// Left out of the API's lists (RTMP publishers).
    pub fn unlisted(self) -> Self {
        self.listed.store(false, Ordering::Relaxed);
        self
    }

    /// Listed from now on.
    pub fn set_listed(&self) {
        self.listed.store(true, Ordering::Relaxed);
    }

    pub fn is_listed(&self) -> bool {
        self.listed.load(Ordering::Relaxed)
    }

    /// With byte counts the transport keeps itself.
    pub fn metered(mut self, meter: Arc<dyn Meter>) -> Self {
        self.meter = Some(meter);
        self
    }

    /// Over after `seconds` without a touch (a connectionless session).
    pub fn idle_after(mut self, seconds: i64) -> Self {
        self.idle_limit = Some(seconds);
        self
    }

    fn info(&self) -> SessionInfo {
        let (bytes_recv, bytes_sent, last_access) = match &self.meter {
            // A metered transport is connected while it is listed.
            Some(meter) => {
                let (recv, sent) = meter.bytes();
                (recv, sent, unix_now())
            }
            None => (
                self.bytes_recv.load(Ordering::Relaxed),
                self.bytes_sent.load(Ordering::Relaxed),
                self.last_access.load(Ordering::Relaxed),
            ),
        };
        SessionInfo {
            id: self.id,
            app: self.app.clone(),
            stream: self.stream.clone(),
            protocol: self.protocol.to_owned(),
            bytes_recv,
            bytes_sent,
            created: self.created,
            last_access,
            client_ip: self.client_ip.clone(),
            user_agent: self.user_agent.clone(),
            ppv_id: self.ppv_id.clone(),
            dropped_frames: self.dropped.get().map(|d| d.load(Ordering::Relaxed)),
        }
    }

    pub fn touch(&self) {
        self.last_access.store(unix_now(), Ordering::Relaxed);
    }

    /// Counts `bytes` sent to the client, now.
    pub fn sent(&self, bytes: usize) {
        self.bytes_sent.fetch_add(bytes as u64, Ordering::Relaxed);
        self.touch();
    }

    /// Counts `bytes` received from the client, now.
    pub fn received(&self, bytes: usize) {
        self.bytes_recv.fetch_add(bytes as u64, Ordering::Relaxed);
        self.touch();
    }

    /// Seconds since the last touch.
    pub fn idle_secs(&self) -> i64 {
        unix_now().saturating_sub(self.last_access.load(Ordering::Relaxed))
    }

    /// Whether the session is still on: not ended by request, not idled out.
    pub fn is_on(&self) -> bool {
        !self.kill.is_cancelled() && self.idle_limit.is_none_or(|limit| self.idle_secs() < limit)
    }
}

/// The registry; cheap to clone (one shared table).
#[derive(Debug, Default, Clone)]
pub struct Sessions {
    /// By id: ids grow, so a page is a range and the table shrinks as sessions go.
    table: Arc<Mutex<Table>>,
}

/// The entries, and how many there are of each kind (protocol and role) and of each kind
/// per client, so that a capped open counts without walking every session (an HLS
/// worker may hold hundreds of thousands).
#[derive(Debug, Default)]
struct Table {
    entries: BTreeMap<u64, Arc<SessionEntry>>,
    of_kind: BTreeMap<Kind, usize>,
    of_client: BTreeMap<(Kind, String), usize>,
}

type Kind = (&'static str, bool);

impl Table {
    fn kind(entry: &SessionEntry) -> Kind {
        (entry.protocol, entry.publisher)
    }

    fn insert(&mut self, entry: Arc<SessionEntry>) {
        let kind = Self::kind(&entry);
        *self.of_kind.entry(kind).or_default() += 1;
        *(self.of_client)
            .entry((kind, entry.client_ip.clone()))
            .or_default() += 1;
        if let Some(replaced) = self.entries.insert(entry.id, entry) {
            self.uncount(&replaced);
        }
    }

    /// Removes `entry` if it is the one registered under its id.
    fn remove(&mut self, entry: &Arc<SessionEntry>) {
        let registered = self.entries.get(&entry.id);
        if registered.is_some_and(|e| Arc::ptr_eq(e, entry)) {
            self.entries.remove(&entry.id);
            self.uncount(entry);
        }
    }

    fn uncount(&mut self, entry: &SessionEntry) {
        let kind = Self::kind(entry);
        if let Some(count) = self.of_kind.get_mut(&kind) {
            *count -= 1;
            if *count == 0 {
                self.of_kind.remove(&kind);
            }
        }
        let client = (kind, entry.client_ip.clone());
        if let Some(count) = self.of_client.get_mut(&client) {
            *count -= 1;
            if *count == 0 {
                self.of_client.remove(&client);
            }
        }
    }
}

/// Caps on the sessions of one protocol, checked under the registry's lock as the new
/// one is added.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub total: usize,
    pub per_client: usize,
}

/// An open session: its entry is in the registry until this drops.
#[derive(Debug)]
pub struct Session {
    entry: Arc<SessionEntry>,
    registry: Sessions,
}

impl Session {
    /// The entry, for code that counts bytes into it after the session is handed on.
    pub fn entry(&self) -> &Arc<SessionEntry> {
        &self.entry
    }
}

impl std::ops::Deref for Session {
    type Target = SessionEntry;
    fn deref(&self) -> &SessionEntry {
        &self.entry
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        locked(&self.registry.table).remove(&self.entry);
    }
}

impl Sessions {
    /// Opens `entry`'s session.
    pub fn open(&self, entry: SessionEntry) -> Session {
        let entry = Arc::new(entry);
        locked(&self.table).insert(Arc::clone(&entry));
        Session {
            entry,
            registry: self.clone(),
        }
    }

    /// [`Self::open`] unless `caps.total` sessions of the entry's protocol and role
    /// (player or publisher), or `caps.per_client` of them from its client, are open
    /// already; `None` then.
    pub fn open_capped(&self, entry: SessionEntry, caps: Caps) -> Option<Session> {
        let mut table = locked(&self.table);
        let kind = Table::kind(&entry);
        let total = table.of_kind.get(&kind).copied().unwrap_or_default();
        let from_client = (table.of_client)
            .get(&(kind, entry.client_ip.clone()))
            .copied()
            .unwrap_or_default();
        if total >= caps.total || from_client >= caps.per_client {
            return None;
        }
        let entry = Arc::new(entry);
        table.insert(Arc::clone(&entry));
        drop(table);
        Some(Session {
            entry,
            registry: self.clone(),
        })
    }

    /// The sessions the API lists, by id.
    pub fn list(&self) -> Vec<SessionInfo> {
        (locked(&self.table).entries.values())
            .filter(|e| e.is_listed() && e.is_on())
            .map(|e| e.info())
            .collect()
    }

    /// One page of [`Self::list`] (see `strom_ipc::paging`).
    pub fn page(&self, after_id: u64, limit: u32) -> strom_ipc::messages::WorkerReply {
        let table = locked(&self.table);
        let listed = (table
            .entries
            .range((Bound::Excluded(after_id), Bound::Unbounded)))
        .filter(|(_, e)| e.is_listed() && e.is_on())
        .take(limit.clamp(1, strom_ipc::paging::MAX_PAGE_SESSIONS) as usize + 1)
        .map(|(id, e)| (*id, e));
        strom_ipc::paging::sessions_page(listed, after_id, limit, |e| e.info())
    }

    /// The session `id`.
    pub fn get(&self, id: u64) -> Option<Arc<SessionEntry>> {
        locked(&self.table).entries.get(&id).cloned()
    }

    /// Players on under pay-per-view id `id`.
    pub fn ppv_sessions(&self, id: &str) -> usize {
        (locked(&self.table).entries.values())
            .filter(|e| e.ppv_id.as_deref() == Some(id) && e.is_on())
            .count()
    }

    /// Closes publishers whose publish-control id and players whose pay-per-view id is
    /// in `ids`; returns the entries closed.
    pub fn kill_publishers(&self, ids: &[String]) -> Vec<Arc<SessionEntry>> {
        let table = locked(&self.table);
        let closed: Vec<_> = (table.entries.values())
            .filter(|entry| {
                let id = match entry.publisher {
                    true => &entry.control_id,
                    false => &entry.ppv_id,
                };
                id.as_ref().is_some_and(|id| ids.contains(id))
            })
            .cloned()
            .collect();
        drop(table);
        for entry in &closed {
            entry.kill.cancel();
        }
        closed
    }

    /// Closes the session `id`, listed or not (an RTMP publisher is not listed), for the
    /// gate's own decisions; the entry, when it was open.
    pub fn end(&self, id: u64) -> Option<Arc<SessionEntry>> {
        let entry = locked(&self.table)
            .entries
            .get(&id)
            .filter(|e| e.is_on())
            .cloned()?;
        entry.kill.cancel();
        Some(entry)
    }

    /// Closes the listed sessions with these ids (the API's requests); returns the
    /// entries found.
    pub fn kill(&self, ids: &[u64]) -> Vec<Arc<SessionEntry>> {
        let table = locked(&self.table);
        let found: Vec<_> = (ids.iter())
            .filter_map(|id| table.entries.get(id).filter(|e| e.is_listed() && e.is_on()))
            .cloned()
            .collect();
        drop(table);
        for entry in &found {
            entry.kill.cancel();
        }
        found
    }
}
