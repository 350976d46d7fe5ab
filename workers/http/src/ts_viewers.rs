//! Viewers of MPEG-TS over HTTP (`mpegts.stream`) and Icecast listeners
//! (`icecast.stream`): one session per open response, listed by the API with type
//! `MPEGTS` or `ICECAST`, the bytes sent and the frames lost to falling
//! behind; `sessions/delete` ends the response.
//!
//! Bounded like HLS sessions: at most [`MAX_TS_VIEWERS`] in all and
//! [`MAX_TS_VIEWERS_PER_CLIENT`] per client address (a client past a cap gets 503).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use strom_ipc::status::SessionInfo;
use strom_stream::DropCounter;
use strom_worker_runtime::SessionIds;
use strom_worker_runtime::clock::unix_now;
use strom_worker_runtime::sync::locked;
use tokio_util::sync::CancellationToken;

/// Open `mpegts.stream` responses at most, all clients together.
pub const MAX_TS_VIEWERS: usize = 10_000;
/// Open `mpegts.stream` responses at most per client address.
pub const MAX_TS_VIEWERS_PER_CLIENT: usize = 64;

#[derive(Debug)]
pub struct TsViewer {
    pub id: u64,
    /// The session `type`: `MPEGTS` or `ICECAST`.
    pub protocol: &'static str,
    pub app: String,
    pub stream: String,
    pub client_ip: IpAddr,
    pub user_agent: String,
    pub created: i64,
    pub last_access: AtomicI64,
    pub bytes_sent: AtomicU64,
    pub dropped: DropCounter,
    /// The pay-per-view id of the viewer's signature.
    pub ppv_id: Option<String>,
    /// Cancelled by `sessions/delete`: the response ends.
    pub stop: CancellationToken,
}

impl TsViewer {
    pub fn sent(&self, bytes: usize) {
        self.bytes_sent.fetch_add(bytes as u64, Ordering::Relaxed);
        self.last_access.store(unix_now(), Ordering::Relaxed);
    }
}

pub struct TsViewers {
    ids: Arc<SessionIds>,
    open: Mutex<HashMap<u64, Arc<TsViewer>>>,
}

/// Why a viewer was not admitted.
#[derive(Debug, PartialEq, Eq)]
pub struct TooManyViewers;

impl TsViewers {
    pub fn new(ids: Arc<SessionIds>) -> Self {
        Self {
            ids,
            open: Mutex::default(),
        }
    }

    /// A new session id.
    pub fn next_id(&self) -> u64 {
        self.ids.next_id()
    }

    /// Admits viewer `id` of `app/stream`, within the caps.
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        &self,
        id: u64,
        protocol: &'static str,
        app: &str,
        stream: &str,
        client_ip: IpAddr,
        user_agent: &str,
        ppv_id: Option<String>,
        dropped: DropCounter,
        stop: CancellationToken,
    ) -> Result<Arc<TsViewer>, TooManyViewers> {
        let mut open = locked(&self.open);
        let from_client = open.values().filter(|v| v.client_ip == client_ip).count();
        if open.len() >= MAX_TS_VIEWERS || from_client >= MAX_TS_VIEWERS_PER_CLIENT {
            return Err(TooManyViewers);
        }
        let now = unix_now();
        let viewer = Arc::new(TsViewer {
            id,
            protocol,
            app: app.to_owned(),
            stream: stream.to_owned(),
            client_ip,
            user_agent: crate::viewers::truncated(user_agent, crate::viewers::MAX_USER_AGENT_BYTES)
                .to_owned(),
            created: now,
            last_access: AtomicI64::new(now),
            bytes_sent: AtomicU64::new(0),
            dropped,
            ppv_id,
            stop,
        });
        open.insert(viewer.id, Arc::clone(&viewer));
        Ok(viewer)
    }

    /// Open responses of pay-per-view id `id`.
    pub fn ppv_sessions(&self, id: &str) -> usize {
        locked(&self.open)
            .values()
            .filter(|v| v.ppv_id.as_deref() == Some(id))
            .count()
    }

    /// Ends the responses of pay-per-view ids in `ids`; returns their session ids.
    pub fn end_ppv(&self, ids: &[String]) -> Vec<u64> {
        let sessions: Vec<u64> = locked(&self.open)
            .values()
            .filter(|v| v.ppv_id.as_ref().is_some_and(|id| ids.contains(id)))
            .map(|v| v.id)
            .collect();
        self.end(&sessions)
    }

    pub fn close(&self, id: u64) {
        locked(&self.open).remove(&id);
    }

    /// Ends the responses among `ids`; returns the ids that were open.
    pub fn end(&self, ids: &[u64]) -> Vec<u64> {
        let open = locked(&self.open);
        ids.iter()
            .filter_map(|id| {
                let viewer = open.get(id)?;
                viewer.stop.cancel();
                Some(*id)
            })
            .collect()
    }

    pub fn list(&self) -> Vec<SessionInfo> {
        locked(&self.open)
            .values()
            .map(|v| SessionInfo {
                id: v.id,
                app: v.app.clone(),
                stream: v.stream.clone(),
                protocol: v.protocol.to_owned(),
                bytes_recv: 0,
                bytes_sent: v.bytes_sent.load(Ordering::Relaxed),
                created: v.created,
                last_access: v.last_access.load(Ordering::Relaxed),
                client_ip: v.client_ip.to_string(),
                user_agent: v.user_agent.clone(),
                ppv_id: v.ppv_id.clone(),
                dropped_frames: Some(v.dropped.load(Ordering::Relaxed)),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viewers_are_capped_per_client_listed_and_ended_by_id() {
        let viewers = TsViewers::new(Arc::new(SessionIds::new(1)));
        let open_from = |ip: &str, stream: &str| {
            let ip: IpAddr = ip.parse().unwrap();
            let (dropped, stop) = (DropCounter::default(), CancellationToken::new());
            viewers.open(
                viewers.next_id(),
                "MPEGTS",
                "live",
                stream,
                ip,
                "vlc",
                None,
                dropped,
                stop,
            )
        };
        let open: Vec<_> = (0..MAX_TS_VIEWERS_PER_CLIENT)
            .map(|_| open_from("10.0.0.1", "a").unwrap())
            .collect();
        assert_eq!(open_from("10.0.0.1", "a").unwrap_err(), TooManyViewers);
        let admitted = open_from("10.0.0.2", "b").unwrap();
        admitted.sent(1316);
        let listed = viewers.list();
        assert_eq!(listed.len(), MAX_TS_VIEWERS_PER_CLIENT + 1);
        let entry = listed.iter().find(|s| s.id == admitted.id).unwrap();
        assert_eq!(
            (
                entry.protocol.as_str(),
                entry.bytes_sent,
                entry.client_ip.as_str()
            ),
            ("MPEGTS", 1316, "10.0.0.2")
        );
        assert_eq!(viewers.end(&[open[3].id, 999_999]), [open[3].id]);
        assert!(open[3].stop.is_cancelled() && !open[4].stop.is_cancelled());
        viewers.close(open[3].id);
        assert_eq!(viewers.list().len(), MAX_TS_VIEWERS_PER_CLIENT);
    }
}
