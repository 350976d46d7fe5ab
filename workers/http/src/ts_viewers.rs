//! Viewers of MPEG-TS over HTTP (`mpegts.stream`) and Icecast listeners
//! (`icecast.stream`): one session per open response in the gate's session registry
//! (`strom_stream::gate::sessions`), which lists them with type `MPEGTS` or `ICECAST`,
//! the bytes sent and the frames lost to falling behind, ends one on `sessions/delete`
//! (its `kill` token ends the response) and counts them for pay-per-view limits.
//!
//! Bounded like HLS sessions: at most [`MAX_TS_VIEWERS`] in all and
//! [`MAX_TS_VIEWERS_PER_CLIENT`] per client address (a client past a cap gets 503).

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64};
use strom_stream::DropCounter;
use strom_stream::Gate;
use strom_stream::gate::sessions::SessionEntry;
use strom_worker_runtime::SessionIds;
use strom_worker_runtime::clock::unix_now;
use tokio_util::sync::CancellationToken;

/// Open `mpegts.stream` responses at most, all clients together.
pub const MAX_TS_VIEWERS: usize = 10_000;
/// Open responses at most per client address.
pub const MAX_TS_VIEWERS_PER_CLIENT: usize = 64;

/// The worker's HTTP listeners, in its gate's registry.
pub struct TsViewers {
    ids: Arc<SessionIds>,
    gate: Arc<Gate>,
}

#[derive(Debug, PartialEq, Eq)]
pub struct TooManyViewers;

impl TsViewers {
    pub fn new(ids: Arc<SessionIds>, gate: Arc<Gate>) -> Self {
        Self { ids, gate }
    }

    pub fn next_id(&self) -> u64 {
        self.ids.next_id()
    }

    /// Registers viewer `id`; `TooManyViewers` past a cap.
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
    ) -> Result<Arc<SessionEntry>, TooManyViewers> {
        let now = unix_now();
        let viewer = Arc::new(SessionEntry {
            id,
            protocol,
            publisher: false,
            listed: true,
            control_id: None,
            ppv_id,
            app: app.to_owned(),
            stream: stream.to_owned(),
            client_ip: client_ip.to_string(),
            user_agent: crate::viewers::truncated(user_agent, crate::viewers::MAX_USER_AGENT_BYTES)
                .to_owned(),
            created: now,
            last_access: AtomicI64::new(now),
            bytes_sent: AtomicU64::new(0),
            bytes_recv: AtomicU64::new(0),
            kill: stop,
            dropped: Some(dropped),
        });
        let registry = self.gate.sessions();
        match registry.insert_capped(
            Arc::clone(&viewer),
            MAX_TS_VIEWERS,
            MAX_TS_VIEWERS_PER_CLIENT,
        ) {
            true => Ok(viewer),
            false => Err(TooManyViewers),
        }
    }

    /// Open viewers of pay-per-view id `id`.
    pub fn ppv_sessions(&self, id: &str) -> usize {
        self.gate.sessions().ppv_sessions(id)
    }

    pub fn close(&self, id: u64) {
        self.gate.sessions().remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn viewers_are_capped_per_client_listed_and_ended_by_id() {
        let gate = Arc::new(Gate::new(
            strom_stream::Hub::default(),
            Arc::default(),
            Vec::new(),
        ));
        let viewers = TsViewers::new(Arc::new(SessionIds::new(1)), Arc::clone(&gate));
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
        let listed = gate.sessions().list();
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
        assert_eq!(admitted.bytes_sent.load(Ordering::Relaxed), 1316);
        assert_eq!(gate.sessions().kill(&[open[3].id, 999_999]), [open[3].id]);
        assert!(open[3].kill.is_cancelled() && !open[4].kill.is_cancelled());
        viewers.close(open[3].id);
        assert_eq!(gate.sessions().list().len(), MAX_TS_VIEWERS_PER_CLIENT);
    }
}
