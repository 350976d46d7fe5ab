//! The RTSP side of the gate: a player's signature travels in the query of the URL it
//! asks for (`rtsp://host/app/stream?wmsAuthSign=...`, as on RTMP and HLS URLs), and a
//! refusal is `403 Forbidden`.

use super::Connection;
use crate::message::Request;
use strom_stream::{
    Access, FrameReceiver, Intent, Protocol, Queue, Reader, Reading, SessionEntry, StreamKey,
};

impl Connection {
    /// The gate's playback check of a player of `key`: its admission when it may read
    /// (its pay-per-view id kept for its session), `None` when refused (answered 403). A
    /// connection admitted to `key` is not asked again for the same stream (a SETUP URL
    /// built from the Content-Base carries no query).
    pub(super) fn admit_player(&mut self, request: &Request, key: &StreamKey) -> Option<Reading> {
        if let Some(reading) = self.admitted.as_ref().filter(|r| r.key() == key) {
            return Some(reading.clone());
        }
        let query = request.uri.split_once('?').map_or("", |(_, q)| q);
        let access = Access::from_query(
            Protocol::Rtsp,
            key.clone(),
            self.peer.ip(),
            Intent::Read,
            query,
        );
        match self.shared.gate.admit_reader(&access) {
            Ok(reading) => {
                self.admitted = Some(reading.clone());
                Some(reading)
            }
            Err(refusal) => {
                tracing::warn!(peer = %self.peer, stream = %key, reason = %refusal, "rtsp play refused");
                self.reply(403, request, &[], b"");
                None
            }
        }
    }

    /// The admitted player's reader of its stream, as a session of type RTSP that the
    /// API lists once it plays ([`Connection::become_player`]); its id is the RTSP
    /// session's.
    pub(super) fn read_as_player(&self, reading: &Reading) -> Reader<FrameReceiver> {
        let id = self.shared.ids.next_id();
        let session = SessionEntry::reader(id, "RTSP", reading, self.peer.ip(), self.kill.clone())
            .with_user_agent(&self.user_agent)
            .unlisted();
        let session = self.shared.gate.sessions().open(session);
        self.shared.gate.read(reading, Queue, session)
    }
}
