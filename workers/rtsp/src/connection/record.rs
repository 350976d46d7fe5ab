//! The publishing side of a connection: ANNOUNCE (credentials, publish control, the
//! SDP), SETUP of each announced track with `mode=record` (TCP interleaved or UDP), and
//! RECORD, which claims the stream in the hub. Received RTP goes to
//! [`crate::publish::TrackReceiver`]s.

use super::{Connection, Transport, base_uri};
use crate::auth;
use crate::message::Request;
use crate::publish::TrackReceiver;
use crate::transport;
use bytes::Bytes;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use strom_media::rtp::announce::{self, AnnouncedTrack};
use strom_stream::gate::Admission;
use strom_stream::gate::sessions::SessionEntry;
use strom_stream::{Access, Credentials, Intent, Protocol, PublisherInfo, Publishing, StreamKey};
use strom_worker_runtime::clock::unix_now;
use strom_worker_runtime::limited_log;
use strom_worker_runtime::login_throttle::SOURCE_LOGINS;
use tokio::sync::mpsc;

/// RTP packets received over UDP waiting for the connection's task; past this many,
/// packets are lost as on a congested network.
pub const UDP_QUEUE_PACKETS: usize = 4096;

/// A publisher between ANNOUNCE and the end of the connection.
pub struct Announced {
    pub key: StreamKey,
    /// The query of the ANNOUNCE URI (kept for re-publishing rules).
    query: String,
    tracks: Vec<AnnouncedTrack>,
    /// Per announced track, once set up: its receiver and its interleaved RTP channel.
    receivers: Vec<Option<(TrackReceiver, Option<u8>)>>,
    /// The gate's admission at ANNOUNCE, which RECORD publishes with.
    admission: Admission,
    pub publishing: Option<Publishing>,
    started: Instant,
}

impl Connection {
    pub(super) fn announce(&mut self, request: &Request) {
        if self.described.is_some() || self.announced.is_some() {
            return self.reply(455, request, &[], b"");
        }
        let Some(target) = transport::target(&request.uri).filter(|t| t.track.is_none()) else {
            return self.reply(404, request, &[], b"");
        };
        let key = StreamKey::new(target.app, target.stream);
        // Digest is RTSP's credential form: checked here against the app's login, and
        // only its outcome goes to the gate.
        let login = self.shared.gate.publisher_login(&key.app);
        let credentials = match login {
            None => Credentials::None,
            Some((login, password)) => {
                let header = request.header("Authorization");
                let client = self.peer.ip();
                // An address that failed too often is answered as if wrong, unchecked.
                if header.is_some() && !SOURCE_LOGINS.allows(client) {
                    limited_log!(warn, 5, Duration::from_secs(10); peer = %self.peer, app = %key.app, "rtsp publisher refused: too many failed logins from this address");
                    let challenges = auth::challenges(&self.nonce);
                    return self.reply(401, request, &challenges, b"");
                }
                if !auth::check(header, &request.method, &self.nonce, &login, &password) {
                    if header.is_some() {
                        let locked_out = SOURCE_LOGINS.failed(client);
                        limited_log!(warn, 5, Duration::from_secs(10); peer = %self.peer, app = %key.app, locked_out, "rtsp publisher authentication failed");
                    }
                    let challenges = auth::challenges(&self.nonce);
                    return self.reply(401, request, &challenges, b"");
                }
                SOURCE_LOGINS.succeeded(client);
                Credentials::Proven
            }
        };
        let query = request
            .uri
            .split_once('?')
            .map(|(_, q)| q.to_owned())
            .unwrap_or_default();
        let access = Access::from_query(
            Protocol::Rtsp,
            key.clone(),
            self.peer.ip(),
            Intent::Publish,
            &query,
        )
        .with_credentials(credentials);
        let admission = match self.shared.gate.admit_publisher(&access) {
            Ok(admission) => admission,
            Err(refusal) => {
                tracing::warn!(peer = %self.peer, stream = %key, reason = %refusal, "rtsp publish refused");
                return self.reply(403, request, &[], b"");
            }
        };
        let sdp = String::from_utf8_lossy(&request.body);
        let tracks = match announce::parse(&sdp) {
            Ok(tracks) if tracks.iter().any(|t| t.codec.is_some()) => tracks,
            _ => {
                tracing::warn!(peer = %self.peer, "rtsp announce without a track strom takes");
                return self.reply(415, request, &[], b"");
            }
        };
        self.announced = Some(Announced {
            key,
            query,
            receivers: tracks.iter().map(|_| None).collect(),
            tracks,
            admission,
            publishing: None,
            started: Instant::now(),
        });
        self.reply(200, request, &[], b"");
    }

    pub(super) async fn setup_record(&mut self, request: &Request) {
        let Some(announced) = self.announced.as_ref() else {
            return self.reply(455, request, &[], b"");
        };
        if announced.publishing.is_some() {
            return self.reply(455, request, &[], b"");
        }
        // ffmpeg appends the control to the whole ANNOUNCE URI, query included
        // (`...?publishsign=x/streamid=0`); others put it before the query.
        let stripped = request.uri.split(['?', '#']).next().unwrap_or("");
        let index = announced.tracks.iter().position(|t| {
            let suffix = format!("/{}", t.control);
            !t.control.is_empty()
                && [request.uri.as_str(), stripped]
                    .iter()
                    .any(|uri| *uri == t.control || uri.ends_with(&suffix))
        });
        let index = match index {
            Some(index) => index,
            None if announced.tracks.len() == 1 => 0,
            None => return self.reply(404, request, &[], b""),
        };
        let Some(receiver) = announced.tracks.get(index).and_then(TrackReceiver::new) else {
            return self.reply(461, request, &[], b"");
        };
        let default_channel = u8::try_from(index * 2).unwrap_or(0);
        let Some(chosen) = request
            .header("Transport")
            .and_then(|header| transport::choose(header, default_channel))
        else {
            return self.reply(461, request, &[], b"");
        };
        let (channel, transport_reply) = match chosen {
            Transport::Tcp {
                rtp_channel,
                rtcp_channel,
            } => (
                Some(rtp_channel),
                format!("RTP/AVP/TCP;unicast;interleaved={rtp_channel}-{rtcp_channel};mode=record"),
            ),
            Transport::Udp {
                rtp_port,
                rtcp_port,
            } => match self.udp_receiver(index).await {
                Ok((server_rtp, server_rtcp)) => (
                    None,
                    format!(
                        "RTP/AVP;unicast;client_port={rtp_port}-{rtcp_port};server_port={server_rtp}-{server_rtcp};mode=record"
                    ),
                ),
                Err(error) => {
                    strom_worker_runtime::limited_log!(warn, 5, std::time::Duration::from_secs(10); peer = %self.peer, %error, "rtsp: no UDP sockets for a publisher");
                    return self.reply(461, request, &[], b"");
                }
            },
        };
        if let Some(slot) = self
            .announced
            .as_mut()
            .and_then(|a| a.receivers.get_mut(index))
        {
            *slot = Some((receiver, channel));
        }
        self.take_session_id();
        let mut headers = self.session_header();
        headers.push(("Transport", transport_reply));
        self.reply(200, request, &headers, b"");
    }

    /// Two UDP sockets for track `index`: what arrives on the RTP one from the
    /// publisher's address goes to the connection's task, the RTCP one counts as
    /// activity. Returns their ports.
    async fn udp_receiver(&mut self, index: usize) -> std::io::Result<(u16, u16)> {
        // Before RECORD a publisher needs one pair per announced track, no more: repeated
        // SETUPs without RECORD would otherwise hold sockets for nothing.
        let announced = self.announced.as_ref().map_or(0, |a| a.tracks.len());
        self.take_udp_pair(announced)?;
        let local = self
            .local_ip
            .unwrap_or(std::net::IpAddr::from([0, 0, 0, 0]));
        let (rtp, rtcp) = crate::udp_pair::bind(local).await?;
        let ports = (rtp.local_addr()?.port(), rtcp.local_addr()?.port());
        let sender = self.udp_in.clone();
        let publisher_ip = self.peer.ip();
        let done = self.kill.clone();
        let activity = Arc::clone(&self.activity_ms);
        let started = self.started;
        tokio::spawn(async move {
            let mut buffer = vec![0u8; 65_536];
            let mut control = [0u8; 1500];
            loop {
                tokio::select! {
                    _ = done.cancelled() => return,
                    received = rtp.recv_from(&mut buffer) => {
                        let Ok((len, from)) = received else { continue };
                        if from.ip() != publisher_ip {
                            continue;
                        }
                        activity.store(started.elapsed().as_millis() as i64, Ordering::Relaxed);
                        let packet = Bytes::copy_from_slice(&buffer[..len]);
                        if let Err(mpsc::error::TrySendError::Closed(_)) = sender.try_send((index, packet)) {
                            return;
                        }
                    }
                    received = rtcp.recv_from(&mut control) => {
                        if received.is_ok_and(|(_, from)| from.ip() == publisher_ip) {
                            activity.store(started.elapsed().as_millis() as i64, Ordering::Relaxed);
                        }
                    }
                }
            }
        });
        Ok(ports)
    }

    pub(super) fn record(&mut self, request: &Request) {
        let Some(announced) = self.announced.as_mut() else {
            return self.reply(455, request, &[], b"");
        };
        if announced.publishing.is_some() {
            let session = self.session_header();
            return self.reply(200, request, &session, b"");
        }
        let Some(id) = self
            .session_id
            .filter(|_| announced.receivers.iter().any(Option::is_some))
        else {
            return self.reply(455, request, &[], b"");
        };
        let key = announced.key.clone();
        let info = PublisherInfo {
            session_id: id,
            ip: self.peer.ip().to_string(),
            publish_time: unix_now(),
            query: announced.query.clone(),
            source_url: None,
            relayed_from: None,
            protocol: "RTSP",
            admitted_id: None,
        };
        let session = SessionEntry::publisher(
            id,
            "RTSP",
            &announced.admission,
            self.peer.ip(),
            self.kill.clone(),
        )
        .with_user_agent(&self.user_agent);
        let session = self.shared.gate.sessions().open(session);
        let entry = Arc::clone(session.entry());
        let publishing = match self
            .shared
            .gate
            .publish(&announced.admission, info, session)
        {
            Ok(publishing) => publishing,
            Err(refusal) => {
                tracing::warn!(peer = %self.peer, stream = %key, reason = %refusal, "rtsp publish refused");
                return self.reply(455, request, &[], b"");
            }
        };
        self.player = Some(entry);
        announced.publishing = Some(publishing);
        announced.started = Instant::now();
        tracing::info!(peer = %self.peer, stream = %key, session = id, uri = %base_uri(&request.uri), "rtsp publishing");
        let session = self.session_header();
        self.reply(200, request, &session, b"");
    }

    /// An RTP packet of the publisher: interleaved on `channel`, or over UDP for track
    /// `index`.
    pub(super) fn received(&mut self, channel: Option<u8>, index: Option<usize>, packet: &Bytes) {
        let Some(announced) = self.announced.as_mut() else {
            return;
        };
        let Some(publishing) = announced.publishing.as_ref() else {
            return;
        };
        let started = announced.started;
        let slot = announced
            .receivers
            .iter_mut()
            .enumerate()
            .find_map(|(i, slot)| {
                let (receiver, rtp_channel) = slot.as_mut()?;
                let matches = match (channel, index) {
                    (Some(channel), _) => *rtp_channel == Some(channel),
                    (None, Some(index)) => i == index,
                    (None, None) => false,
                };
                matches.then_some(receiver)
            });
        if let Some(receiver) = slot {
            receiver.receive(packet, started, publishing);
        }
    }
}
