//! A player that SETUPs a track (`.../trackID=<n>`) without a DESCRIBE first, knowing
//! the layout from elsewhere: the connection joins and describes the stream for itself,
//! as a DESCRIBE would have (video first, then audio), and goes on with the SETUP.

use super::Connection;
use crate::describe;
use crate::message::Request;
use crate::transport;
use std::time::Duration;
use strom_stream::StreamKey;

impl Connection {
    /// A SETUP of a track on a connection that has no stream yet.
    pub(super) fn sets_up_undescribed(&self, request: &Request) -> bool {
        self.described.is_none()
            && self.announced.is_none()
            && self.player.is_none()
            && transport::target(&request.uri).is_some_and(|t| t.track.is_some())
    }

    pub(super) async fn setup_undescribed(&mut self, request: &Request) {
        if self.shared.is_draining() {
            return self.reply(503, request, &[], b"");
        }
        let Some(target) = transport::target(&request.uri) else {
            return self.reply(404, request, &[], b"");
        };
        let key = StreamKey::new(target.app, target.stream);
        let Some(reading) = self.admit_player(request, &key) else {
            return;
        };
        let wait = Duration::from_secs(u64::from(self.limits.player_wait_timeout_secs));
        let reader = self.read_as_player(&reading);
        let Some(described) = describe::describe(reader, wait).await else {
            tracing::info!(peer = %self.peer, stream = %key, "rtsp setup: no such live stream");
            return self.reply(404, request, &[], b"");
        };
        self.tracks = (0..described.tracks.len()).map(|_| None).collect();
        self.described = Some(described);
        self.setup(request).await;
    }
}
