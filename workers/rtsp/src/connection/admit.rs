//! The RTSP side of the gate: a player's signature travels in the query of the URL it
//! asks for (`rtsp://host/app/stream?wmsAuthSign=...`, as on RTMP and HLS URLs), and a
//! refusal is `403 Forbidden`.

use super::Connection;
use crate::message::Request;
use strom_stream::{Access, Intent, Protocol, Reading, StreamKey};

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
        let players = self.shared.gate.sessions();
        match self
            .shared
            .gate
            .admit_reader(&access, |id| players.ppv_sessions(id))
        {
            Ok(reading) => {
                self.ppv_id.clone_from(&reading.ppv_id);
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
}
