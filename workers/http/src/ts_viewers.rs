//! Viewers of MPEG-TS over HTTP (`mpegts.stream`) and Icecast listeners
//! (`icecast.stream`): one session per open response in the gate's session registry
//! (`strom_stream::gate::sessions`), which lists them with type `MPEGTS` or `ICECAST`,
//! the bytes sent and the frames lost to falling behind, ends one on `sessions/delete`
//! (its `kill` token ends the response) and counts them for pay-per-view limits.
//!
//! Bounded like HLS sessions: at most [`MAX_TS_VIEWERS`] of each type in all and
//! [`MAX_TS_VIEWERS_PER_CLIENT`] per client address (a client past a cap gets 503).

use std::net::IpAddr;
use std::sync::Arc;
use strom_stream::{Caps, Gate, Reading, Session, SessionEntry};
use strom_worker_runtime::SessionIds;
use tokio_util::sync::CancellationToken;

/// Open `mpegts.stream` responses at most, all clients together.
pub const MAX_TS_VIEWERS: usize = 10_000;
/// Open responses at most per client address.
pub const MAX_TS_VIEWERS_PER_CLIENT: usize = 64;

/// Opens the worker's HTTP listeners' sessions in its gate's registry.
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

    /// The session of an admitted listener of type `protocol` (`MPEGTS`, `ICECAST`);
    /// `TooManyViewers` past a cap of that type.
    pub fn open(
        &self,
        protocol: &'static str,
        reading: &Reading,
        client_ip: IpAddr,
        user_agent: &str,
        stop: CancellationToken,
    ) -> Result<Session, TooManyViewers> {
        let entry = SessionEntry::reader(self.ids.next_id(), protocol, reading, client_ip, stop)
            .with_user_agent(user_agent);
        let caps = Caps {
            total: MAX_TS_VIEWERS,
            per_client: MAX_TS_VIEWERS_PER_CLIENT,
        };
        self.gate
            .sessions()
            .open_capped(entry, caps)
            .ok_or(TooManyViewers)
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
            let access = strom_stream::Access::new(
                strom_stream::Protocol::MpegTs,
                strom_stream::StreamKey::new("live", stream),
                ip,
            );
            let reading = gate.admit_reader(&access).unwrap();
            viewers.open("MPEGTS", &reading, ip, "vlc", CancellationToken::new())
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
        let killed: Vec<u64> = (gate.sessions().kill(&[open[3].id, 999_999]).iter())
            .map(|e| e.id)
            .collect();
        assert_eq!(killed, [open[3].id]);
        assert!(open[3].kill.is_cancelled() && !open[4].kill.is_cancelled());
        // An ended session is no longer listed, and its place is free once it drops.
        assert_eq!(gate.sessions().list().len(), MAX_TS_VIEWERS_PER_CLIENT);
        assert_eq!(open_from("10.0.0.1", "a").unwrap_err(), TooManyViewers);
        drop(open);
        assert!(open_from("10.0.0.1", "a").is_ok());
    }
}
