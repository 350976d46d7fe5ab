//! MPEG-DASH URLs in HTTP delivery ([`crate::dash`]): `manifest.mpd` of a stream whose
//! outputs include `DASH` (or of an ABR group, with a representation per member) opens
//! a viewer session of type `DASH` like an HLS master (signature check, pay-per-view
//! limits, session caps, 503 while draining) and names it in its `<Location>` and
//! segment URLs (`?sid=`); a deleted session's next request gets 403. The per-track
//! segments and init segments are answered with the stream's other segments.

use super::{Context, body, error};
use crate::dash::{DashFile, MANIFEST_TYPE, Rendition, manifest};
use crate::store::HlsStream;
use crate::viewers::Lookup;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use std::sync::atomic::Ordering;
use strom_ipc::rules::DashAddressing;
use strom_stream::gate::Protocol;

impl Context {
    /// `manifest.mpd` of `app/stream`, for session `sid` (a new session without one).
    pub(super) fn dash_manifest(
        &self,
        request: &Request<Incoming>,
        app: &str,
        stream: &str,
        sid: Option<u128>,
        head: bool,
    ) -> Response<Full<Bytes>> {
        let rules = self.packaging.rules();
        if !crate::packaging::dash_enabled(&rules, app, stream) {
            return error(StatusCode::NOT_FOUND, "no such stream");
        }
        let store = &self.packaging.store;
        let renditions: Vec<Rendition> = match rules.abr_group(app, stream) {
            Some(group) => group
                .streams
                .iter()
                .filter_map(|member| {
                    let hls = store.get(&member.app, &member.stream)?;
                    Some(Rendition {
                        listing: hls.dash_listing(),
                        prefix: format!("../../{}/{}/", member.app, member.stream),
                    })
                })
                .collect(),
            None => store
                .get(app, stream)
                .map(|hls| Rendition {
                    listing: hls.dash_listing(),
                    prefix: String::new(),
                })
                .into_iter()
                .collect(),
        };
        if renditions.iter().all(|r| r.listing.segments.is_empty()) {
            return error(StatusCode::NOT_FOUND, "no such stream");
        }
        // The session: the one the manifest's `<Location>` names, or a new one.
        let viewer = match sid.map(|token| self.viewers.lookup(token, self.peer.ip())) {
            Some(Lookup::Revoked) => return error(StatusCode::FORBIDDEN, "session ended"),
            Some(Lookup::Live(viewer)) => Some(viewer),
            Some(Lookup::Unknown) | None => {
                if self.draining.load(Ordering::Relaxed) {
                    tracing::info!(peer = %self.peer, %app, %stream, "DASH session refused: draining");
                    return error(StatusCode::SERVICE_UNAVAILABLE, "draining");
                }
                let Ok(reading) = self.signed(request, app, stream, Protocol::Dash) else {
                    return error(StatusCode::FORBIDDEN, "forbidden");
                };
                let user_agent = request
                    .headers()
                    .get(hyper::header::USER_AGENT)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default();
                let protected = self
                    .gate
                    .protects(&strom_stream::StreamKey::new(app, stream), Protocol::Dash);
                // A signature without a pay-per-view id bound the client's address.
                let bind_to_ip = protected && reading.ppv_id.is_none();
                let peer = self.peer.ip();
                let viewer = (self.viewers).open("DASH", &reading, peer, user_agent, bind_to_ip);
                if viewer.is_none() && protected {
                    return error(StatusCode::FORBIDDEN, "forbidden");
                }
                viewer
            }
        };
        let session = viewer.as_ref().map(|v| v.token);
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or_default();
        let delivery = rules.delivery.for_stream(app, stream);
        let number_secs = (delivery.dash_segment_addressing == DashAddressing::Number)
            .then_some(delivery.segment_duration_secs);
        let Some(text) = manifest(&renditions, session, now_ms, number_secs) else {
            return error(StatusCode::NOT_FOUND, "no such stream");
        };
        tracing::debug!(?session, %app, %stream, "dash manifest served");
        body(
            Bytes::from(text),
            MANIFEST_TYPE,
            "no-cache",
            viewer.as_deref(),
            head,
            None,
        )
    }
}

/// A DASH segment or init segment of `hls` and its content type; `None` for a name that
/// is not one, or one the stream does not hold.
pub(super) fn dash_file(hls: &HlsStream, file: &str) -> Option<(Bytes, &'static str)> {
    match DashFile::parse(file)? {
        DashFile::Segment { sequence, audio } => hls
            .dash_segment(sequence, audio)
            .map(|b| (b, "video/iso.segment")),
        DashFile::Init { id, audio } => hls
            .dash_init(id, audio)
            .map(|b| (b, if audio { "audio/mp4" } else { "video/mp4" })),
    }
}
