//! Who may read: playback protection (`PlaybackProtection`, a `wmsAuthSign` signature
//! checked for the reader's protocol), the deny list of pay-per-view ids and their limit
//! of open sessions, the same for every delivery protocol, RTSP included.

use super::{Access, Gate, Refusal};
use strom_worker_runtime::play_signature::check_playback;

/// What an admitted reader brings along; only [`Gate::admit_reader`] makes one, and
/// [`Gate::read`] takes it for the reader's [`super::Reader`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// The pay-per-view id the signature carried, for `ppv_id` in sessions and
    /// `publish_control/deny`.
    pub ppv_id: Option<String>,
    /// Whether playback of the stream is protected for this protocol (HLS binds its
    /// viewer sessions to the signature then).
    pub protected: bool,
    /// The stream the reader was admitted to (private: a reading cannot be made up).
    key: crate::StreamKey,
}

impl Reading {
    /// The stream the reader was admitted to.
    pub fn key(&self) -> &crate::StreamKey {
        &self.key
    }
}

impl Gate {
    /// Whether playback of `key` over `protocol` needs a signature (HLS binds its viewer
    /// sessions to the signed master playlist then).
    pub fn protects(&self, key: &crate::StreamKey, protocol: super::Protocol) -> bool {
        self.rules()
            .protection_for(&key.app, &key.stream, protocol.protected_as())
            .is_some()
    }

    /// Checks a reader of `access.key`; a pay-per-view id's open sessions are those in
    /// this worker's registry.
    pub fn admit_reader(&self, access: &Access) -> Result<Reading, Refusal> {
        self.admit_reader_counting(access, |id| self.sessions().ppv_sessions(id))
    }

    /// [`Gate::admit_reader`], with a pay-per-view id's open sessions counted by
    /// `open_sessions(id)`: WebRTC counts the offers still waiting for their stream too.
    pub fn admit_reader_counting(
        &self,
        access: &Access,
        open_sessions: impl Fn(&str) -> usize,
    ) -> Result<Reading, Refusal> {
        let rules = self.rules();
        let protocol = access.protocol.protected_as();
        let (app, stream) = (&access.key.app, &access.key.stream);
        let signed = check_playback(
            &rules,
            app,
            stream,
            protocol,
            access.signature.as_deref(),
            access.peer,
        )
        .map_err(|why| {
            strom_worker_runtime::limited_log!(warn, 5, std::time::Duration::from_secs(10); stream = %access.key, peer = %access.peer, protocol = access.protocol.as_str(), reason = %why, "playback refused");
            Refusal::Denied(format!("playback refused: {why}"))
        })?;
        let protection = rules.protection_for(app, stream, protocol);
        let ppv_id = signed.and_then(|s| s.ppv_id);
        if let Some(id) = &ppv_id {
            if self.is_denied(id) {
                strom_worker_runtime::limited_log!(warn, 5, std::time::Duration::from_secs(10); stream = %access.key, peer = %access.peer, ppv_id = %id, "playback refused: pay-per-view id denied");
                return Err(Refusal::Denied(format!(
                    "playback refused: pay-per-view id {id} is denied"
                )));
            }
            if let Some(max) = protection.and_then(|p| p.ppv_max_sessions)
                && open_sessions(id) >= max as usize
            {
                strom_worker_runtime::limited_log!(warn, 5, std::time::Duration::from_secs(10); stream = %access.key, peer = %access.peer, ppv_id = %id, max, "playback refused: pay-per-view limit");
                return Err(Refusal::Limit(format!(
                    "playback refused: pay-per-view id {id} has {max} sessions"
                )));
            }
        }
        Ok(Reading {
            ppv_id,
            protected: protection.is_some(),
            key: access.key.clone(),
        })
    }
}
