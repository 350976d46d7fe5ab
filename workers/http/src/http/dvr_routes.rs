//! DVR URLs in HTTP delivery ([`crate::dvr_playback`]): a DVR master playlist opens an
//! HLS viewer session like a live one (signature check, pay-per-view limits, session
//! caps, 503 while draining); its media playlist and segments carry `?sid=`, and a
//! deleted session's next request gets 403, as does a protected stream's request
//! without its session. An unknown stream or an empty archive is 404.

use super::{Context, PLAYLIST_TYPE, body, error};
use crate::dvr_playback::playlists::{self, Clock, MediaOptions};
use crate::dvr_playback::segments::{MuxError, Output};
use crate::dvr_playback::urls::{DvrFile, Window};
use crate::viewers::{Lookup, Viewer};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header;
use hyper::{Method, Request, Response, StatusCode};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use strom_ipc::rules::Rules;
use strom_media::dvr::SegmentEntry;
use strom_stream::gate::Protocol;

/// Archive segments do not change under their URL while the archive exists.
const SEGMENT_CACHE: &str = "public, max-age=3600";

impl Context {
    /// The answer to a GET or HEAD of a DVR URL (CORS headers on, bytes counted);
    /// `None` for every other request.
    pub(super) async fn dvr(&self, request: &Request<Incoming>) -> Option<Response<Full<Bytes>>> {
        let method = request.method();
        if method != Method::GET && method != Method::HEAD {
            return None;
        }
        let mut parts = request.uri().path().trim_start_matches('/').split('/');
        let (Some(app), Some(stream), Some(file), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let file = DvrFile::parse(file)?;
        let response = if strom_ipc::names::check_pair(app, stream).is_err() {
            error(StatusCode::NOT_FOUND, "no such stream")
        } else {
            self.dvr_answer(request, app, stream, file).await
        };
        let response = self.respond_with(response);
        if method != Method::HEAD {
            let sent = response
                .headers()
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
            self.counters.add_sent(sent);
        }
        Some(response)
    }

    async fn dvr_answer(
        &self,
        request: &Request<Incoming>,
        app: &str,
        stream: &str,
        file: DvrFile,
    ) -> Response<Full<Bytes>> {
        let head = request.method() == Method::HEAD;
        let rules = self.packaging.rules();
        if let DvrFile::Master { window, fmp4 } = file {
            return self
                .dvr_master(request, &rules, (app, stream), window, fmp4)
                .await;
        }
        let sid = request.uri().query().and_then(|q| {
            q.split('&')
                .find_map(|pair| pair.strip_prefix("sid="))
                .and_then(|v| v.parse::<u128>().ok())
        });
        let viewer = match sid.map(|token| self.viewers.lookup(token, self.peer.ip())) {
            Some(Lookup::Revoked) => return error(StatusCode::FORBIDDEN, "session ended"),
            Some(Lookup::Live(viewer)) => Some(viewer),
            Some(Lookup::Unknown) | None => None,
        };
        let protected = self
            .gate
            .protects(&strom_stream::StreamKey::new(app, stream), Protocol::Hls);
        let covers = |v: &Arc<Viewer>| v.app == app && v.stream == stream;
        if protected && !viewer.as_ref().is_some_and(covers) {
            tracing::warn!(peer = %self.peer, %app, %stream, "DVR request refused: no signed session");
            return error(StatusCode::FORBIDDEN, "forbidden");
        }
        let dir = self.dvr.archive_dir(&rules, app, stream);
        let archive = match self.dvr_archive(&dir).await {
            Ok(archive) => archive,
            Err(response) => return response,
        };
        let viewer = viewer.as_deref();
        let (seq, output) = match file {
            DvrFile::Media { window, fmp4 } => {
                let clock = self.dvr_clock(&rules, app, stream, &archive);
                let (range, closed) = playlists::select(&archive, window, clock);
                if range.is_empty() && closed {
                    return error(StatusCode::NOT_FOUND, "no recording in this span");
                }
                let options = MediaOptions {
                    fmp4,
                    session: viewer.map(|v| v.token),
                    target_secs: clock.target_secs,
                    closed,
                    start_at_first: matches!(window, Window::Range { .. }),
                    cue_style: crate::packaging::cue_style(&rules, app, stream),
                };
                let text = playlists::media_playlist(&archive, range, options);
                return body(
                    Bytes::from(text),
                    PLAYLIST_TYPE,
                    "no-cache",
                    viewer,
                    head,
                    None,
                );
            }
            DvrFile::Segment { seq, fmp4: false } => (seq, Output::Ts),
            DvrFile::Segment { seq, fmp4: true } => (seq, Output::Fmp4),
            DvrFile::Init { seq } => (seq, Output::Init),
            DvrFile::Master { .. } => return error(StatusCode::NOT_FOUND, "no such file"),
        };
        let content_type = match output {
            Output::Ts => "video/mp2t",
            Output::Fmp4 => "video/iso.segment",
            Output::Init => "video/mp4",
        };
        match self.dvr.segment(&dir, &archive, seq, output).await {
            Ok(bytes) => {
                let range = request
                    .headers()
                    .get(header::RANGE)
                    .and_then(|v| v.to_str().ok());
                body(bytes, content_type, SEGMENT_CACHE, viewer, head, range)
            }
            Err(MuxError::Gone) => error(StatusCode::NOT_FOUND, "no such segment"),
            Err(e) => {
                tracing::warn!(%app, %stream, seq, error = %e, "DVR segment not served");
                error(StatusCode::INTERNAL_SERVER_ERROR, "segment unreadable")
            }
        }
    }

    /// A DVR master playlist: opens the viewer session its media playlist carries.
    async fn dvr_master(
        &self,
        request: &Request<Incoming>,
        rules: &Rules,
        (app, stream): (&str, &str),
        window: Window,
        fmp4: bool,
    ) -> Response<Full<Bytes>> {
        if self.draining.load(Ordering::Relaxed) {
            tracing::info!(peer = %self.peer, %app, %stream, "DVR session refused: draining");
            return error(StatusCode::SERVICE_UNAVAILABLE, "draining");
        }
        let Ok(reading) = self.signed(request, app, stream, Protocol::Hls) else {
            return error(StatusCode::FORBIDDEN, "forbidden");
        };
        let dir = self.dvr.archive_dir(rules, app, stream);
        let archive = match self.dvr_archive(&dir).await {
            Ok(archive) => archive,
            Err(response) => return response,
        };
        let clock = self.dvr_clock(rules, app, stream, &archive);
        let (range, closed) = playlists::select(&archive, window, clock);
        if range.is_empty() && closed {
            return error(StatusCode::NOT_FOUND, "no recording in this span");
        }
        let user_agent = request
            .headers()
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        // `None` past the session caps: served without a session, as live HLS is
        // (not for a protected stream: its media requests need the session).
        let protected = self
            .gate
            .protects(&strom_stream::StreamKey::new(app, stream), Protocol::Hls);
        // A signature without a pay-per-view id bound the client's address.
        let bind_to_ip = protected && reading.ppv_id.is_none();
        let peer = self.peer.ip();
        let viewer = (self.viewers).open("HLS", &reading, peer, user_agent, bind_to_ip);
        if protected && viewer.is_none() {
            return error(StatusCode::FORBIDDEN, "forbidden");
        }
        let session = viewer
            .as_ref()
            .map(|v| format!("?sid={}", v.token))
            .unwrap_or_default();
        let variant = if fmp4 { "_fmp4" } else { "" };
        let uri = format!("chunks{variant}_dvr{}.m3u8{session}", window.suffix());
        let text = playlists::master_playlist(&archive[range], fmp4, &uri);
        tracing::debug!(session = ?viewer.as_ref().map(|v| v.id), %app, %stream, "DVR master playlist served");
        body(
            Bytes::from(text),
            PLAYLIST_TYPE,
            "no-cache",
            viewer.as_deref(),
            request.method() == Method::HEAD,
            None,
        )
    }

    /// The archive's index; the error answer when there is none or it cannot be read.
    async fn dvr_archive(
        &self,
        dir: &Path,
    ) -> Result<Arc<Vec<SegmentEntry>>, Response<Full<Bytes>>> {
        match self.dvr.archive(dir).await {
            Ok(archive) if archive.is_empty() => {
                Err(error(StatusCode::NOT_FOUND, "no such archive"))
            }
            Ok(archive) => Ok(archive),
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "DVR archive unreadable");
                Err(error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "archive unreadable",
                ))
            }
        }
    }

    fn dvr_clock(&self, rules: &Rules, app: &str, stream: &str, archive: &[SegmentEntry]) -> Clock {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        Clock {
            now_ms,
            recording: self.dvr.recording(rules, app, stream),
            target_secs: playlists::target_duration(archive, rules.dvr.segment_duration_secs),
        }
    }
}
