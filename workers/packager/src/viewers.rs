//! HLS viewer sessions: created by a master playlist request, carried in chunklist and
//! segment URLs (`?sid=`), listed by the API, ended by `sessions/delete` (the viewer's
//! next request gets 403) or by idling out.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use strom_ipc::status::SessionInfo;
use strom_worker_runtime::SessionIds;
use strom_worker_runtime::sync::locked;

/// Deleted ids are remembered this long, so their requests keep getting 403.
const REVOKED_MEMORY: Duration = Duration::from_secs(600);
/// Live viewer sessions at most; past that the oldest idle ones go first.
const MAX_VIEWERS: usize = 200_000;

pub use strom_worker_runtime::clock::unix_now;

#[derive(Debug)]
pub struct Viewer {
    pub id: u64,
    pub app: String,
    pub stream: String,
    pub client_ip: String,
    pub user_agent: String,
    pub created: i64,
    pub last_access: AtomicI64,
    pub bytes_sent: AtomicU64,
    touched: Mutex<Instant>,
}

impl Viewer {
    pub fn touch(&self, bytes: u64) {
        self.last_access.store(unix_now(), Ordering::Relaxed);
        self.bytes_sent.fetch_add(bytes, Ordering::Relaxed);
        *locked(&self.touched) = Instant::now();
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

#[derive(Debug)]
pub struct Viewers {
    ids: Arc<SessionIds>,
    /// A viewer that asks for nothing for this long is forgotten (`hls_session_timeout`).
    idle: Duration,
    live: Mutex<HashMap<u64, Arc<Viewer>>>,
    revoked: Mutex<HashMap<u64, Instant>>,
}

impl Viewers {
    pub fn new(ids: Arc<SessionIds>, idle: Duration) -> Self {
        Self {
            ids,
            idle,
            live: Mutex::new(HashMap::new()),
            revoked: Mutex::new(HashMap::new()),
        }
    }

    pub fn open(
        &self,
        app: &str,
        stream: &str,
        client_ip: String,
        user_agent: String,
    ) -> Arc<Viewer> {
        let viewer = Arc::new(Viewer {
            id: self.ids.next_id(),
            app: app.to_owned(),
            stream: stream.to_owned(),
            client_ip,
            user_agent,
            created: unix_now(),
            last_access: AtomicI64::new(unix_now()),
            bytes_sent: AtomicU64::new(0),
            touched: Mutex::new(Instant::now()),
        });
        let mut live = locked(&self.live);
        if live.len() >= MAX_VIEWERS {
            Self::expire(&mut live, Duration::ZERO);
        }
        live.insert(viewer.id, Arc::clone(&viewer));
        viewer
    }

    pub fn lookup(&self, id: u64) -> Lookup {
        if locked(&self.revoked).contains_key(&id) {
            return Lookup::Revoked;
        }
        match locked(&self.live).get(&id) {
            Some(viewer) => Lookup::Live(Arc::clone(viewer)),
            None => Lookup::Unknown,
        }
    }

    /// Ends these sessions; returns the ids that were live here.
    pub fn revoke(&self, ids: &[u64]) -> Vec<u64> {
        let mut live = locked(&self.live);
        let mut revoked = locked(&self.revoked);
        let now = Instant::now();
        revoked.retain(|_, at| now.duration_since(*at) < REVOKED_MEMORY);
        ids.iter()
            .filter(|id| live.remove(id).is_some())
            .map(|id| {
                revoked.insert(*id, now);
                *id
            })
            .collect()
    }

    pub fn list(&self) -> Vec<SessionInfo> {
        let mut live = locked(&self.live);
        Self::expire(&mut live, self.idle);
        let mut sessions: Vec<SessionInfo> = live
            .values()
            .map(|v| SessionInfo {
                id: v.id,
                app: v.app.clone(),
                stream: v.stream.clone(),
                protocol: "HLS".to_owned(),
                bytes_recv: 0,
                bytes_sent: v.bytes_sent.load(Ordering::Relaxed),
                created: v.created,
                last_access: v.last_access.load(Ordering::Relaxed),
                client_ip: v.client_ip.clone(),
                user_agent: v.user_agent.clone(),
                ppv_id: None,
            })
            .collect();
        sessions.sort_by_key(|s| s.id);
        sessions
    }

    pub fn sweep(&self) {
        Self::expire(&mut locked(&self.live), self.idle);
    }

    fn expire(live: &mut HashMap<u64, Arc<Viewer>>, idle: Duration) {
        live.retain(|_, viewer| locked(&viewer.touched).elapsed() < idle);
    }
}
