//! A WHEP or WHIP offer through the gate to a running session: who may play or publish
//! (the same checks every protocol gets), the session's limits, the answer with this
//! server's ICE candidates, and ending a session by its resource.

use crate::admission::Full;
use crate::core::Core;
use crate::endpoint::Target;
use crate::feed::Tracks;
use crate::publish::Publisher;
use crate::routing::{INBOX_PACKETS, PeerHeard};
use crate::session::{Role, Session};
use crate::shared::{Resource, Shared};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};
use str0m::change::SdpOffer;
use str0m::rtp::{Extension, ExtensionMap};
use str0m::{Candidate, Rtc};
use strom_stream::gate::sessions::SessionEntry;
use strom_stream::{Access, Credentials, Intent, Protocol, PublisherInfo, Refusal};
use strom_worker_runtime::clock::unix_now;
use strom_worker_runtime::login_throttle::SOURCE_LOGINS;
use strom_worker_runtime::sync::locked;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How long a WHEP offer waits for its stream's first frames (an on-demand or edge pull
/// starting, a publisher about to connect).
const STREAM_WAIT: Duration = Duration::from_secs(8);

#[derive(Debug, thiserror::Error)]
pub enum OfferError {
    #[error("bad offer: {0}")]
    BadOffer(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Busy(String),
    #[error("{0}")]
    Limit(String),
    #[error("{0}")]
    NoCodec(String),
    #[error("{0}")]
    Unavailable(String),
}

impl From<Refusal> for OfferError {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::BadName(why) => OfferError::NotFound(why),
            Refusal::BadAuth => OfferError::Unauthorized(refusal.to_string()),
            Refusal::Denied(why) => OfferError::Forbidden(why),
            Refusal::Limit(why) => OfferError::Limit(why),
            Refusal::Busy(_) => OfferError::Busy(refusal.to_string()),
            Refusal::NotLive(_) => OfferError::NotFound(refusal.to_string()),
        }
    }
}

/// One POST.
pub struct Request<'a> {
    pub target: &'a Target,
    pub sdp: &'a str,
    pub peer: IpAddr,
    /// The address the client connected to, for candidates of `*` interfaces.
    pub local: Option<IpAddr>,
    pub query: &'a str,
    pub authorization: Option<&'a str>,
    pub user_agent: String,
}

pub struct Accepted {
    pub answer: String,
    pub location: String,
    pub etag: String,
}

/// `Authorization: Bearer <login>:<password>` (or `Bearer <password>` for the app's
/// login) as the gate's credentials.
fn bearer(authorization: Option<&str>, login: Option<String>) -> Credentials {
    let Some(token) = authorization.and_then(|a| {
        let (scheme, token) = a.trim().split_once(' ')?;
        scheme
            .eq_ignore_ascii_case("bearer")
            .then_some(token.trim())
    }) else {
        return Credentials::None;
    };
    match token.split_once(':') {
        Some((login, password)) => Credentials::Login {
            login: login.to_owned(),
            password: password.to_owned(),
        },
        None => Credentials::Login {
            login: login.unwrap_or_default(),
            password: token.to_owned(),
        },
    }
}

/// The candidates to advertise, one per lent socket (and address family of
/// `public_addresses`), and the local port each one maps to.
fn candidates(shared: &Shared, local: Option<IpAddr>) -> Vec<(bool, u16, SocketAddr)> {
    let settings = shared.settings();
    let mut public: Vec<IpAddr> = Vec::new();
    for address in settings
        .public_addresses
        .iter()
        .filter_map(|a| a.parse::<IpAddr>().ok())
    {
        // One per family: the session tells its candidates apart by port and family.
        if !public.iter().any(|p| p.is_ipv6() == address.is_ipv6()) {
            public.push(address);
        }
    }
    let mut out = Vec::new();
    for port in shared.ports() {
        let ips: Vec<IpAddr> = if !public.is_empty() {
            public.clone()
        } else if port.local.ip().is_unspecified() {
            local
                .filter(|ip| !ip.is_unspecified())
                .into_iter()
                .collect()
        } else {
            vec![port.local.ip()]
        };
        for ip in ips {
            out.push((
                port.tcp,
                port.local.port(),
                SocketAddr::new(ip, port.local.port()),
            ));
        }
    }
    out
}

pub async fn accept(shared: &Arc<Shared>, request: Request<'_>) -> Result<Accepted, OfferError> {
    let target = request.target;
    if shared.is_draining() {
        return Err(OfferError::Unavailable("the server is draining".to_owned()));
    }
    let settings = shared.settings();
    if settings.interfaces.is_empty() {
        return Err(OfferError::NotFound(
            "WebRTC is not enabled on this server (WebRtcSettings)".to_owned(),
        ));
    }
    let limits = settings.limits;
    let key = target.key.clone();
    let peer = request.peer;
    let id = shared.ids.next_id();
    let kill = CancellationToken::new();
    // A publisher's session entry (its Publishing holds the session).
    let (place, role, tracks, published) = if target.publish {
        let place = shared
            .admissions
            .take(&limits, peer, |_| Ok::<_, OfferError>(None))
            .map_err(|full| refused_place(full, peer))?;
        let credentials = bearer(
            request.authorization,
            shared
                .gate
                .publisher_login(&key.app)
                .map(|(login, _)| login),
        );
        let presented = credentials != Credentials::None;
        // An address that guessed wrong too often is answered as if wrong, unchecked: the
        // same throttle as every other source login of this worker.
        if presented && !SOURCE_LOGINS.allows(peer) {
            strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); stream = %key, %peer, "whip publish refused: too many failed logins from this address");
            return Err(Refusal::BadAuth.into());
        }
        let access = Access::from_query(
            Protocol::WebRtc,
            key.clone(),
            peer,
            Intent::Publish,
            request.query,
        )
        .with_credentials(credentials);
        let admission = match shared.gate.admit_publisher(&access) {
            Ok(admission) => admission,
            Err(refusal) => {
                if presented && refusal == Refusal::BadAuth && SOURCE_LOGINS.failed(peer) {
                    strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); %peer, "whip logins from this address refused for a while: too many failures");
                }
                strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); stream = %key, %peer, %refusal, "whip publish refused");
                return Err(refusal.into());
            }
        };
        if presented {
            SOURCE_LOGINS.succeeded(peer);
        }
        let info = PublisherInfo {
            session_id: id,
            protocol: "WEBRTC",
            ip: peer.to_string(),
            publish_time: unix_now(),
            query: request.query.to_owned(),
            source_url: None,
            relayed_from: None,
            admitted_id: None,
        };
        let session = SessionEntry::publisher(id, "WebRTC", &admission, peer, kill.clone())
            .with_user_agent(&request.user_agent);
        let session = shared.gate.sessions().open(session);
        let entry = Arc::clone(session.entry());
        let publishing = shared.gate.publish(&admission, info, session)?;
        (
            place,
            Role::Publish(Box::new(Publisher::new(publishing))),
            None,
            Some(entry),
        )
    } else {
        let access = Access::from_query(
            Protocol::WebRtc,
            key.clone(),
            peer,
            Intent::Read,
            request.query,
        );
        // The gate's decision and the session's place are taken in one step, before the
        // wait for the stream, so offers sent before it goes live count too.
        let place = shared
            .admissions
            .take(&limits, peer, |held| {
                shared
                    .gate
                    .admit_reader_counting(&access, |ppv| held(ppv))
                    .map(|reading| reading.ppv_id)
            })
            .map_err(|full| match full {
                Ok(full) => refused_place(Ok(full), peer),
                Err(refusal) => OfferError::from(refusal),
            })?;
        let feed = shared.feeds.get(&key);
        let Some(tracks) = feed.started(STREAM_WAIT).await else {
            strom_worker_runtime::limited_log!(info, 5, Duration::from_secs(10); stream = %key, %peer, "whep: no such live stream");
            return Err(OfferError::NotFound(format!("{key} is not live")));
        };
        (place, Role::Play(feed), Some(tracks), None)
    };
    let ppv_id = place.ppv_id().map(str::to_owned);
    let builder = Rtc::builder()
        .set_ice_lite(true)
        .clear_codecs()
        .enable_h264(true)
        .enable_opus(true, false);
    // A viewer is sent RTP packets built from the feed's payloads, cut once per stream
    // (feed.rs), not frames that str0m would packetize for every viewer; once its DTLS
    // handshake gives AES-GCM keys, strom seals and sends them itself (rtp_send.rs).
    let (mut rtc, keys) = if target.publish {
        (builder.build(Instant::now()), None)
    } else {
        let builder = builder
            .set_extension_map(viewer_extensions())
            .set_rtp_mode(true);
        let (rtc, keys) = crate::dtls_keys::build_with_keys(builder, Instant::now());
        (rtc, Some(keys))
    };
    let mut candidate_map = HashMap::new();
    for (tcp, port, address) in candidates(shared, request.local) {
        let candidate = if tcp {
            Candidate::builder()
                .tcp()
                .host(address)
                .tcptype(str0m::net::TcpType::Passive)
                .build()
        } else {
            Candidate::host(address, "udp")
        };
        match candidate {
            Ok(candidate) => {
                rtc.add_local_candidate(candidate);
                candidate_map.insert((tcp, port, address.is_ipv6()), address);
            }
            Err(error) => tracing::warn!(%address, %error, "webrtc candidate not usable"),
        }
    }
    if candidate_map.is_empty() {
        finish_refused(&role);
        return Err(OfferError::Unavailable(
            "no ICE address to offer (set WebRtcSettings.public_addresses)".to_owned(),
        ));
    }
    // The parser's own messages are for the log only: they can carry addresses of this
    // process's memory (`PointerOffset(0x7f..)`).
    let offer = match SdpOffer::from_sdp_string(request.sdp) {
        Ok(offer) => offer,
        Err(error) => {
            finish_refused(&role);
            strom_worker_runtime::limited_log!(info, 5, Duration::from_secs(10); stream = %key, %peer, %error, "webrtc offer not parsed");
            return Err(OfferError::BadOffer(
                "the SDP offer could not be parsed".to_owned(),
            ));
        }
    };
    let answer = match rtc.sdp_api().accept_offer(offer) {
        Ok(answer) => answer,
        Err(error) => {
            finish_refused(&role);
            strom_worker_runtime::limited_log!(info, 5, Duration::from_secs(10); stream = %key, %peer, %error, "webrtc offer not accepted");
            return Err(OfferError::BadOffer(
                "the SDP offer could not be negotiated".to_owned(),
            ));
        }
    };
    let answer = answer.to_sdp_string();
    if let Some(tracks) = tracks
        && let Some(missing) = missing_codec(&answer, tracks)
    {
        return Err(OfferError::NoCodec(missing));
    }
    if target.publish && !answer.contains("H264/90000") && !answer.contains("opus/48000") {
        finish_refused(&role);
        return Err(OfferError::NoCodec(
            "the offer has neither H.264 video nor Opus audio".to_owned(),
        ));
    }
    let ufrag = rtc.direct_api().local_ice_credentials().ufrag;
    let resource = format!("{id}-{}", hex::encode(rand::random::<[u8; 16]>()));
    let file = if target.publish {
        crate::endpoint::WHIP
    } else {
        crate::endpoint::WHEP
    };
    let location = format!("/{}/{}/{file}/{resource}", key.app, key.stream);
    // A publisher's session is its Publishing's; a viewer's is held by its session task.
    let (entry, viewer_session) = match published {
        Some(entry) => (entry, None),
        None => {
            let session = SessionEntry::new(id, "WebRTC", &key, peer, kill)
                .with_ppv_id(ppv_id)
                .with_user_agent(&request.user_agent);
            let _ = session.dropped.set(Arc::new(AtomicU64::new(0)));
            let session = shared.gate.sessions().open(session);
            (Arc::clone(session.entry()), Some(session))
        }
    };
    let (inbox, inbox_rx) = mpsc::channel(INBOX_PACKETS);
    let peer_heard = Arc::new(PeerHeard::default());
    shared
        .routes
        .register(&ufrag, inbox, Arc::clone(&peer_heard));
    locked(&shared.resources).insert(
        resource.clone(),
        Resource {
            key: key.clone(),
            publish: target.publish,
            session: id,
        },
    );
    let (feed, publisher) = match role {
        Role::Play(feed) => (Some(feed), None),
        Role::Publish(publisher) => (None, Some(publisher)),
    };
    let mut core = Core::new(
        rtc,
        publisher,
        Arc::clone(&entry),
        Arc::clone(&shared.counters),
        Duration::from_millis(u64::from(limits.retransmission_window_ms)),
        keys,
    );
    core.peer_heard = peer_heard;
    let session = Session {
        core: Arc::new(std::sync::Mutex::new(core)),
        feed,
        place,
        ufrag,
        resource: resource.clone(),
        entry,
        viewer_session,
        candidates: candidate_map,
        connect_timeout: Duration::from_secs(u64::from(limits.connect_timeout_secs)),
    };
    tracing::info!(session = id, stream = %key, %peer, publisher = target.publish, "webrtc session offered");
    tokio::spawn(session.run(Arc::clone(shared), inbox_rx));
    Ok(Accepted {
        answer,
        location,
        etag: resource,
    })
}

/// A session refused a place: the limit it met, logged (rate limited: a client can send
/// offers at will) and answered 503.
fn refused_place(full: Result<Full, OfferError>, peer: IpAddr) -> OfferError {
    match full {
        Ok(Full::Sessions(max)) => {
            strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); %peer, max, "webrtc session refused: max_sessions");
            OfferError::Limit("too many webrtc sessions".to_owned())
        }
        Ok(Full::PerAddress(max)) => {
            strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); %peer, max, "webrtc session refused: max_sessions_per_ip");
            OfferError::Limit("too many webrtc sessions from this address".to_owned())
        }
        Err(error) => error,
    }
}

/// A refused publisher lets go of the name it claimed.
fn finish_refused(role: &Role) {
    if let Role::Publish(publisher) = role {
        publisher.release_claim();
    }
}

/// What a viewer's answer lacks that the stream has: H.264 for its video, Opus for its
/// audio; `None` when it can play something.
fn missing_codec(answer: &str, tracks: Tracks) -> Option<String> {
    let video = tracks.video && answer.contains("H264/90000");
    let audio = tracks.audio_channels.is_some() && answer.contains("opus/48000");
    if video || audio {
        return None;
    }
    Some(
        "the offer accepts neither H.264 video nor Opus audio, which this stream is sent as"
            .to_owned(),
    )
}

fn resource_of(shared: &Shared, target: &Target, resource: &str) -> Option<Resource> {
    let found = locked(&shared.resources).get(resource).cloned()?;
    (found.key == target.key && found.publish == target.publish).then_some(found)
}

/// Whether `resource` is a live session of `target`.
pub fn exists(shared: &Shared, target: &Target, resource: &str) -> bool {
    resource_of(shared, target, resource).is_some()
}

/// Ends the session of `resource`; `false` when there is none.
pub fn end(shared: &Shared, target: &Target, resource: &str) -> bool {
    let Some(found) = resource_of(shared, target, resource) else {
        return false;
    };
    shared.gate.sessions().kill(&[found.session]);
    tracing::info!(session = found.session, stream = %found.key, "webrtc session ended by DELETE");
    true
}

/// The RTP header extensions a viewer's session offers: the media id, which BUNDLE needs,
/// and stream ids. Not transport-wide congestion control nor abs-send-time: nothing here
/// estimates a viewer's bandwidth, and their feedback (4-5% of the worker's CPU,
/// BENCHMARKS.md) would only be read and thrown away. A publisher keeps str0m's standard
/// set: the browser's own encoder adapts its bitrate from that feedback.
fn viewer_extensions() -> ExtensionMap {
    let mut extensions = ExtensionMap::empty();
    extensions.set(4, Extension::RtpMid);
    extensions.set(10, Extension::RtpStreamId);
    extensions.set(11, Extension::RepairedRtpStreamId);
    extensions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_viewer_answers_without_transport_wide_feedback_and_a_publisher_with_it() {
        #![allow(clippy::unwrap_used)]
        use str0m::media::{Direction, MediaKind};
        let offer = || {
            let mut browser = Rtc::builder().build(Instant::now());
            let mut change = browser.sdp_api();
            change.add_media(MediaKind::Video, Direction::SendRecv, None, None, None);
            change.apply().unwrap().0
        };
        let offered = offer().to_sdp_string();
        assert!(offered.contains("transport-wide-cc"), "{offered}");
        let answer = |viewer: bool| {
            let mut builder = Rtc::builder()
                .set_ice_lite(true)
                .clear_codecs()
                .enable_h264(true);
            if viewer {
                builder = builder.set_extension_map(viewer_extensions());
            }
            let mut server = builder.build(Instant::now());
            server
                .sdp_api()
                .accept_offer(offer())
                .unwrap()
                .to_sdp_string()
        };
        let viewer = answer(true);
        assert!(!viewer.contains("transport-wide-cc"), "{viewer}");
        assert!(
            viewer.contains("urn:ietf:params:rtp-hdrext:sdes:mid"),
            "{viewer}"
        );
        let publisher = answer(false);
        assert!(publisher.contains("transport-wide-cc"), "{publisher}");
    }

    #[test]
    fn bearer_tokens_become_credentials() {
        assert_eq!(bearer(None, None), Credentials::None);
        assert_eq!(bearer(Some("Basic abc"), None), Credentials::None);
        assert_eq!(
            bearer(Some("Bearer alice:secret"), None),
            Credentials::Login {
                login: "alice".to_owned(),
                password: "secret".to_owned()
            }
        );
        assert_eq!(
            bearer(Some("bearer secret"), Some("bob".to_owned())),
            Credentials::Login {
                login: "bob".to_owned(),
                password: "secret".to_owned()
            }
        );
    }
}
