//! Icecast sources on the delivery port: an encoder's `PUT /<app>/<stream>` (or legacy
//! `SOURCE`, `ICE/1.0` too) with HTTP Basic credentials from `IcecastSources`, then its
//! MP3 or AAC (ADTS) audio as the body, published into the delivery worker's hub as
//! `app/stream` like any other producer's stream: HLS, `icecast.stream` listeners, RTMP
//! players (over the media bus) and pushes take it from there.
//!
//! A source is refused as Icecast 2.4 refuses it ([`answer::Refusal`]): 401 without the
//! mount's credentials, `403 Mountpoint in use` when the stream already has a publisher
//! (here or in another worker), `403 Content-type not supported` for other audio. An
//! accepted source hears `100 Continue` when it asked, then `200 OK`. Its `ice-*`
//! headers answer `icecast_stream_info`; it is a session of type `ICECAST` that
//! `sessions/delete` ends; it ends when it hangs up, after [`SOURCE_TIMEOUT`] without
//! a byte, or when its body ends.

pub mod admin;
pub mod answer;
pub mod body;
mod info;

use answer::Refusal;
use body::Transfer;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strom_ipc::rules::Rules;
use strom_media::audio_stream::{AudioDeframer, AudioFormat};
use strom_media::icy_request::{HeadError, MAX_HEAD, SourceRequest, parse_head};
use strom_stream::{
    Access, Caps, Credentials, Gate, Intent, Protocol, PublisherInfo, SessionEntry, StreamKey,
};
use strom_worker_runtime::clock::unix_now;
use strom_worker_runtime::login_throttle::SOURCE_LOGINS;
use strom_worker_runtime::sync::locked;
use strom_worker_runtime::{SessionIds, WorkerCounters};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

pub use info::IceInfo;

/// A source that sends nothing for this long is dropped (Icecast's `source-timeout`).
pub const SOURCE_TIMEOUT: Duration = Duration::from_secs(10);
/// The request head must be complete within this.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Sources at most, and per client address.
pub const MAX_SOURCES: usize = 1000;
pub const MAX_SOURCES_PER_CLIENT: usize = 16;
const READ_BUFFER: usize = 16 * 1024;

/// A connected source: its `ice-*` headers, for `icecast_stream_info`.
#[derive(Debug)]
pub struct ActiveSource {
    pub id: u64,
    pub key: StreamKey,
    pub info: IceInfo,
    /// Its session in the gate's registry (held by its `Publishing`); cancelled by
    /// `sessions/delete`.
    pub session: Arc<SessionEntry>,
}

pub struct Sources {
    /// The front door: publish control and one owner per name across workers.
    gate: Arc<Gate>,
    ids: Arc<SessionIds>,
    counters: Arc<WorkerCounters>,
    active: Mutex<HashMap<u64, Arc<ActiveSource>>>,
}

impl Sources {
    pub fn new(gate: Arc<Gate>, ids: Arc<SessionIds>, counters: Arc<WorkerCounters>) -> Self {
        Self {
            gate,
            ids,
            counters,
            active: Mutex::default(),
        }
    }

    /// Serves a connection whose first bytes (`start`) began a source request.
    pub async fn serve<S>(
        &self,
        mut io: S,
        client: SocketAddr,
        start: Vec<u8>,
        rules: Arc<Rules>,
        shutdown: CancellationToken,
    ) where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let (request, body) = match read_head(&mut io, start).await {
            Ok(head) => head,
            Err(why) => {
                strom_worker_runtime::limited_log!(info, 5, Duration::from_secs(10); %client, reason = %why, "icecast source refused: bad request head");
                let _ = io.write_all(&Refusal::BadRequest(why).answer()).await;
                return;
            }
        };
        let presented = request.header("authorization").is_some();
        // An address that failed too often is answered as if wrong, without a check.
        if presented && !SOURCE_LOGINS.allows(client.ip()) {
            strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); %client, mount = %request.path, "icecast source refused: too many failed logins from this address");
            let _ = io.write_all(&Refusal::Unauthorized.answer()).await;
            let _ = io.shutdown().await;
            return;
        }
        let admitted = match self.admit(&request, client, &rules) {
            Ok(admitted) => {
                SOURCE_LOGINS.succeeded(client.ip());
                admitted
            }
            Err(refusal) => {
                let locked_out = presented
                    && refusal == Refusal::Unauthorized
                    && SOURCE_LOGINS.failed(client.ip());
                if locked_out {
                    strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); %client, "icecast source logins from this address refused for a while: too many failures");
                }
                // Rate limited: a password guesser would write a line per attempt.
                strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); %client, mount = %request.path, ?refusal, "icecast source refused");
                let _ = io.write_all(&refusal.answer()).await;
                let _ = io.shutdown().await;
                return;
            }
        };
        let Admitted {
            source,
            format,
            transfer,
            publishing,
        } = admitted;
        let _listed = Listed {
            sources: self,
            id: source.id,
        };
        let continue_first = request
            .header("expect")
            .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"));
        let mut greeting = Vec::new();
        if continue_first {
            greeting.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
        greeting.extend_from_slice(b"HTTP/1.0 200 OK\r\n\r\n");
        if let Err(e) = io.write_all(&greeting).await {
            tracing::info!(%client, stream = %source.key, error = %e, "icecast source gone before its answer");
            return;
        }
        tracing::info!(
            %client,
            stream = %source.key,
            session = source.id,
            ?format,
            name = %source.info.name,
            "icecast source connected"
        );
        let mut pump = Pump {
            deframer: AudioDeframer::new(format),
            transfer,
            payload: Vec::with_capacity(READ_BUFFER),
            frames: Vec::new(),
        };
        let end = pump
            .run(
                &mut io,
                body,
                &source,
                &publishing,
                &self.counters,
                &shutdown,
            )
            .await;
        drop(publishing);
        tracing::info!(
            %client,
            stream = %source.key,
            session = source.id,
            reason = %end,
            bytes = source.session.bytes_recv.load(Ordering::Relaxed),
            skipped_bytes = pump.deframer.skipped_bytes(),
            "icecast source ended"
        );
    }

    fn admit(
        &self,
        request: &SourceRequest,
        client: SocketAddr,
        rules: &Rules,
    ) -> Result<Admitted, Refusal> {
        let key = mount_key(&request.path).ok_or(Refusal::BadMount)?;
        let entry = rules
            .icecast_source_for(&key.app, &key.stream)
            .ok_or(Refusal::Unauthorized)?;
        if !answer::authorized(request.header("authorization"), entry) {
            return Err(Refusal::Unauthorized);
        }
        let format = match request.header("content-type") {
            None => {
                tracing::warn!(%client, stream = %key, "icecast source without Content-Type: taken as MP3, as Icecast does");
                AudioFormat::Mpeg
            }
            Some(content_type) => AudioFormat::from_content_type(content_type)
                .ok_or(Refusal::ContentTypeNotSupported)?,
        };
        let transfer = Transfer::of(request).map_err(|e| Refusal::BadRequest(e.to_string()))?;
        // The mount's password is Icecast's credential form; publish control (a
        // `publishsign` in the query) and the deny list are the gate's, as for RTMP.
        let access = Access::from_query(
            Protocol::Icecast,
            key.clone(),
            client.ip(),
            Intent::Publish,
            &request.query,
        )
        .with_credentials(Credentials::Proven);
        let admission = match self.gate.admit_publisher(&access) {
            Ok(admission) => admission,
            Err(refusal) => {
                tracing::warn!(%client, stream = %key, %refusal, "icecast source refused");
                return Err(Refusal::Unauthorized);
            }
        };
        let id = self.ids.next_id();
        let user_agent = request.header("user-agent").unwrap_or_default();
        let session = SessionEntry::publisher(
            id,
            "ICECAST",
            &admission,
            client.ip(),
            CancellationToken::new(),
        )
        .with_user_agent(user_agent);
        let caps = Caps {
            total: MAX_SOURCES,
            per_client: MAX_SOURCES_PER_CLIENT,
        };
        let session =
            (self.gate.sessions().open_capped(session, caps)).ok_or(Refusal::TooManySources)?;
        let entry = Arc::clone(session.entry());
        let publishing = self
            .gate
            .publish(
                &admission,
                PublisherInfo {
                    session_id: id,
                    ip: client.ip().to_string(),
                    publish_time: unix_now(),
                    query: request.query.clone(),
                    source_url: None,
                    relayed_from: None,
                    protocol: "ICECAST",
                    admitted_id: None,
                },
                session,
            )
            .map_err(|_| Refusal::MountInUse)?;
        let source = Arc::new(ActiveSource {
            id,
            key,
            info: IceInfo::from_request(request),
            session: entry,
        });
        locked(&self.active).insert(id, Arc::clone(&source));
        Ok(Admitted {
            source,
            format,
            transfer,
            publishing,
        })
    }

    /// The source publishing `key`, if one does.
    pub fn of_stream(&self, key: &StreamKey) -> Option<Arc<ActiveSource>> {
        locked(&self.active)
            .values()
            .find(|s| &s.key == key)
            .cloned()
    }
}

struct Admitted {
    source: Arc<ActiveSource>,
    format: AudioFormat,
    transfer: Transfer,
    publishing: strom_stream::Publishing,
}

/// Removes a source from the list however its connection ends.
struct Listed<'a> {
    sources: &'a Sources,
    id: u64,
}

impl Drop for Listed<'_> {
    fn drop(&mut self) {
        locked(&self.sources.active).remove(&self.id);
    }
}

/// `/<app>/<stream>` with valid names.
pub fn mount_key(path: &str) -> Option<StreamKey> {
    let mut parts = path.strip_prefix('/')?.split('/');
    let (Some(app), Some(stream), None) = (parts.next(), parts.next(), parts.next()) else {
        return None;
    };
    strom_ipc::names::check_pair(app, stream).ok()?;
    Some(StreamKey::new(app, stream))
}

/// Reads until the request head is complete; returns it and the body bytes after it.
async fn read_head<S: AsyncRead + Unpin>(
    io: &mut S,
    mut buffer: Vec<u8>,
) -> Result<(SourceRequest, Vec<u8>), String> {
    let deadline = tokio::time::Instant::now() + HEAD_TIMEOUT;
    let mut chunk = [0u8; 4096];
    loop {
        match parse_head(&buffer) {
            Ok(Some((request, len))) => return Ok((request, buffer.split_off(len))),
            Ok(None) => {}
            Err(e) => return Err(e.to_string()),
        }
        let read = tokio::time::timeout_at(deadline, io.read(&mut chunk))
            .await
            .map_err(|_| "request head not complete in time".to_owned())?
            .map_err(|e| e.to_string())?;
        if read == 0 {
            return Err("closed before the end of the request head".to_owned());
        }
        if buffer.len() + read > MAX_HEAD + 4 {
            return Err(HeadError::TooLong.to_string());
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
}

/// The body of one source: transfer decoding, deframing, publishing.
struct Pump {
    deframer: AudioDeframer,
    transfer: Transfer,
    payload: Vec<u8>,
    frames: Vec<strom_media::frame::Frame>,
}

impl Pump {
    async fn run<S: AsyncRead + Unpin>(
        &mut self,
        io: &mut S,
        first: Vec<u8>,
        source: &ActiveSource,
        publishing: &strom_stream::Publishing,
        counters: &WorkerCounters,
        shutdown: &CancellationToken,
    ) -> String {
        match self.take(&first, source, publishing, counters) {
            Ok(true) => return "its body ended".to_owned(),
            Ok(false) => {}
            Err(e) => return e,
        }
        let mut buffer = vec![0u8; READ_BUFFER];
        loop {
            let read = tokio::select! {
                () = source.session.kill.cancelled() => return "ended by request".to_owned(),
                () = shutdown.cancelled() => return "worker shutting down".to_owned(),
                read = tokio::time::timeout(SOURCE_TIMEOUT, io.read(&mut buffer)) => read,
            };
            let n = match read {
                Err(_) => return format!("nothing received for {SOURCE_TIMEOUT:?}"),
                Ok(Err(e)) => return format!("read error: {e}"),
                Ok(Ok(0)) => return "the source hung up".to_owned(),
                Ok(Ok(n)) => n,
            };
            match self.take(&buffer[..n], source, publishing, counters) {
                Ok(true) => return "its body ended".to_owned(),
                Ok(false) => {}
                Err(e) => return e,
            }
        }
    }

    /// Publishes the frames `input` completes; `Ok(true)` when the body ended.
    fn take(
        &mut self,
        input: &[u8],
        source: &ActiveSource,
        publishing: &strom_stream::Publishing,
        counters: &WorkerCounters,
    ) -> Result<bool, String> {
        if input.is_empty() {
            return Ok(false);
        }
        counters.add_received(input.len() as u64);
        source.session.received(input.len());
        self.payload.clear();
        let ended = self
            .transfer
            .decode(input, &mut self.payload)
            .map_err(|e| e.to_string())?;
        self.deframer.push(&self.payload, &mut self.frames);
        for frame in self.frames.drain(..) {
            publishing.publish(frame);
        }
        Ok(ended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_name_an_app_and_a_stream() {
        assert_eq!(
            mount_key("/live/radio"),
            Some(StreamKey::new("live", "radio"))
        );
        for bad in [
            "/live",
            "live/radio",
            "/live/radio/x",
            "/../radio",
            "/live/",
        ] {
            assert_eq!(mount_key(bad), None, "{bad}");
        }
    }
}
