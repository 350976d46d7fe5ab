//! The MPEG-TS side of a player: a SETUP of the stream's URL itself (no track part)
//! without a DESCRIBE before it, SAT>IP style, as VLC without live555 sends it, or one
//! whose transport asks for MPEG-TS (`MP2T/RTP/UDP`, `MP2T/RTP/TCP`) before any track
//! was set up. The player joins the stream at SETUP and, once it PLAYs, gets the whole
//! stream as one
//! MPEG-TS over RTP (RFC 2250) track, from a [`TsFeed`] (its own PAT, PMT and a keyframe
//! first), over UDP unicast or TCP interleaved, with sender reports like other tracks.

use super::{Connection, Transport, UdpLink, interleave, udp_send};
use crate::describe::Described;
use crate::message::Request;
use crate::mp2t_rtp::Mp2tSender;
use crate::transport;
use bytes::BytesMut;
use std::sync::Arc;
use std::time::Duration;
use strom_media::frame::Track;
use strom_stream::{FrameReceiver, Reader, SharedFrame, StreamKey, TsFeed};
use tokio::time::Instant;

/// Configuration frames kept between SETUP and PLAY (a stream has one per track; a
/// publisher that keeps sending new ones only replaces the oldest).
const MAX_CONFIGS: usize = 8;

/// The single MPEG-TS track of a player.
pub(super) struct Mp2tTrack {
    sender: Mp2tSender,
    feed: TsFeed,
    transport: Transport,
    udp: Option<UdpLink>,
    /// Configuration frames read while joining, for the feed at PLAY.
    configs: Vec<Arc<SharedFrame>>,
    /// One frame's TS packets, reused.
    scratch: BytesMut,
}

impl Mp2tTrack {
    /// Whether the RTSP connection carries the media (its liveness is the player's).
    pub(super) fn interleaved(&self) -> bool {
        matches!(self.transport, Transport::Tcp { .. })
    }
}

impl Connection {
    /// A SETUP that asks for the stream as MPEG-TS: it names the stream itself, and the
    /// connection has no track layout from a DESCRIBE, or already chose MPEG-TS, or the
    /// transport asks for it before any track was set up.
    pub(super) fn wants_mp2t(&self, request: &Request) -> bool {
        let explicit = request.header("Transport").is_some_and(asks_for_mp2t)
            && self.tracks.iter().all(Option::is_none);
        self.announced.is_none()
            && (self.described.is_none() || self.mp2t.is_some() || explicit)
            && transport::target(&request.uri).is_some_and(|t| t.track.is_none())
    }

    pub(super) async fn setup_mp2t(&mut self, request: &Request) {
        if self.player.is_some() {
            return self.reply(455, request, &[], b"");
        }
        let Some(target) = transport::target(&request.uri) else {
            return self.reply(404, request, &[], b"");
        };
        let key = StreamKey::new(target.app, target.stream);
        if self.mp2t.is_some()
            && self
                .described
                .as_ref()
                .is_some_and(|d| d.place.key() != &key)
        {
            return self.reply(455, request, &[], b"");
        }
        let header = request.header("Transport").unwrap_or_default();
        let profile = if asks_for_mp2t(header) {
            "MP2T/RTP"
        } else {
            "RTP/AVP"
        };
        let Some(chosen) = transport::choose(&as_rtp_avp(header), 0) else {
            return self.reply(461, request, &[], b"");
        };
        if self.mp2t.is_none() {
            // The track layout of a DESCRIBE gives way: the stream is joined again, so
            // that the feed gets its configuration frames.
            self.leave_described();
            if self.shared.is_draining() {
                return self.reply(503, request, &[], b"");
            }
            let Some(reading) = self.admit_player(request, &key) else {
                return;
            };
            let wait = Duration::from_secs(u64::from(self.limits.player_wait_timeout_secs));
            let reader = self.read_as_player(&reading);
            let Some((described, configs)) = join(reader, wait).await else {
                tracing::info!(peer = %self.peer, stream = %key, "rtsp MPEG-TS setup: no such live stream");
                return self.reply(404, request, &[], b"");
            };
            self.described = Some(described);
            self.mp2t = Some(Mp2tTrack {
                sender: Mp2tSender::new(),
                feed: TsFeed::new(),
                transport: chosen,
                udp: None,
                configs,
                scratch: BytesMut::new(),
            });
        }
        let udp = match chosen {
            Transport::Udp {
                rtp_port,
                rtcp_port,
            } => match self.udp_link(rtp_port, rtcp_port).await {
                Ok(link) => Some(link),
                Err(error) => {
                    strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); peer = %self.peer, %error, "rtsp: no UDP sockets for a player");
                    return self.reply(461, request, &[], b"");
                }
            },
            Transport::Tcp { .. } => None,
        };
        let Some(track) = self.mp2t.as_mut() else {
            return self.reply(455, request, &[], b"");
        };
        let ssrc = track.sender.ssrc();
        let transport_reply = match (chosen, &udp) {
            (
                Transport::Tcp {
                    rtp_channel,
                    rtcp_channel,
                },
                _,
            ) => format!(
                "{profile}/TCP;unicast;interleaved={rtp_channel}-{rtcp_channel};ssrc={ssrc:08X}"
            ),
            (
                Transport::Udp {
                    rtp_port,
                    rtcp_port,
                },
                link,
            ) => {
                let port = |socket: Option<&tokio::net::UdpSocket>| {
                    socket
                        .and_then(|s| s.local_addr().ok())
                        .map_or(0, |a| a.port())
                };
                let server_rtp = port(link.as_ref().map(|l| l.rtp.as_ref()));
                let server_rtcp = port(link.as_ref().map(|l| l.rtcp.as_ref()));
                let udp = if profile == "MP2T/RTP" { "/UDP" } else { "" };
                format!(
                    "{profile}{udp};unicast;client_port={rtp_port}-{rtcp_port};server_port={server_rtp}-{server_rtcp};ssrc={ssrc:08X}"
                )
            }
        };
        track.transport = chosen;
        track.udp = udp;
        self.take_session_id();
        // No Content-Base: SAT>IP clients build their PLAY URL from it, and any URL
        // plays this connection's session.
        let mut headers = self.session_header();
        headers.push(("Transport", transport_reply));
        self.reply(200, request, &headers, b"");
    }

    pub(super) fn play_mp2t(&mut self, request: &Request) {
        let (Some(track), Some(described), Some(id)) =
            (self.mp2t.as_mut(), self.described.as_mut(), self.session_id)
        else {
            return self.reply(455, request, &[], b"");
        };
        let mut discarded = BytesMut::new();
        for config in track.configs.drain(..) {
            track.feed.push(&config, &mut discarded);
        }
        let mut first = described.first.take();
        let mut start_pts = first.as_ref().map_or(0, |f| f.frame.pts);
        // As for RTP tracks, a UDP player starts at the next live keyframe rather than
        // with the cached GOP in one burst; the feed still learns the configurations.
        if !track.interleaved() {
            if let Some(skipped) = first.take() {
                start_pts = skipped.frame.pts;
            }
            while let Ok(skipped) = described.frames.try_recv() {
                if skipped.frame.config {
                    track.feed.push(&skipped, &mut discarded);
                }
                start_pts = skipped.frame.pts;
            }
        }
        let (seq, rtptime) = track.sender.rtp_info(start_pts);
        let rtp_info = format!("url={};seq={seq};rtptime={rtptime}", request.uri);
        self.become_player(id, "MPEG-TS over RTP");
        let mut headers = self.session_header();
        headers.push(("Range", "npt=0.000-".to_owned()));
        headers.push(("RTP-Info", rtp_info));
        self.reply(200, request, &headers, b"");
        if let Some(first) = first {
            self.queue_frame(&first);
        }
    }

    /// The frame's TS packets as RTP: interleaved into `out`, or sent over UDP.
    pub(super) fn queue_mp2t(&mut self, frame: &SharedFrame) {
        let queued = self.out.len();
        let Some(track) = self.mp2t.as_mut() else {
            return;
        };
        track.scratch.clear();
        if track.feed.push(frame, &mut track.scratch) == 0 {
            return;
        }
        // RFC 2250: the timestamp is when the packet's first byte leaves the sender,
        // which follows decode order.
        let time = frame.frame.dts;
        match (track.transport, &track.udp) {
            (Transport::Tcp { rtp_channel, .. }, _) => {
                let out = &mut self.out;
                track
                    .sender
                    .packetize(&track.scratch, time, |head, payload| {
                        interleave_parts(out, rtp_channel, head, payload);
                    });
            }
            (Transport::Udp { .. }, Some(link)) => {
                let mut packet = Vec::with_capacity(1500);
                let (shared, player) = (&self.shared, self.player.as_deref());
                track
                    .sender
                    .packetize(&track.scratch, time, |head, payload| {
                        packet.clear();
                        packet.extend_from_slice(head);
                        packet.extend_from_slice(payload);
                        udp_send(link.rtp.as_ref(), link.rtp_to, &packet, shared, player);
                    });
            }
            (Transport::Udp { .. }, None) => {}
        }
        self.mark_media(queued);
    }

    pub(super) fn report_mp2t(&mut self) {
        let queued = self.out.len();
        let Some((pts, ntp)) = self.clock.map(|clock| clock.now()) else {
            return;
        };
        let Some(track) = &self.mp2t else {
            return;
        };
        let Some(report) = track.sender.sender_report(pts, ntp) else {
            return;
        };
        match (track.transport, &track.udp) {
            (Transport::Tcp { rtcp_channel, .. }, _) => {
                interleave(&mut self.out, rtcp_channel, &report);
            }
            (Transport::Udp { .. }, Some(link)) => udp_send(
                link.rtcp.as_ref(),
                link.rtcp_to,
                &report,
                &self.shared,
                self.player.as_deref(),
            ),
            (Transport::Udp { .. }, None) => {}
        }
        self.mark_media(queued);
    }
}

/// Whether a `Transport` header's first alternative is MPEG-TS over RTP
/// (`MP2T/RTP/UDP`, `MP2T/RTP/TCP`).
fn asks_for_mp2t(header: &str) -> bool {
    header
        .trim_start()
        .get(..9)
        .is_some_and(|profile| profile.eq_ignore_ascii_case("MP2T/RTP/"))
}

/// `header` with `MP2T/RTP/UDP` and `MP2T/RTP/TCP` spelled as the RTP profiles they
/// are, for [`transport::choose`].
fn as_rtp_avp(header: &str) -> String {
    header
        .split(',')
        .map(|spec| {
            let spec = spec.trim();
            match spec.get(..12).map(str::to_ascii_uppercase).as_deref() {
                Some("MP2T/RTP/UDP") => format!("RTP/AVP/UDP{}", &spec[12..]),
                Some("MP2T/RTP/TCP") => format!("RTP/AVP/TCP{}", &spec[12..]),
                _ => spec.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// [`interleave`] of a packet given as header and payload, without joining them first.
fn interleave_parts(out: &mut Vec<u8>, channel: u8, head: &[u8], payload: &[u8]) {
    let Ok(len) = u16::try_from(head.len() + payload.len()) else {
        return;
    };
    out.push(b'$');
    out.push(channel);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(head);
    out.extend_from_slice(payload);
}

/// Waits up to `wait` for the first media frame of the stream `reader` joined, keeping
/// the configuration frames before it; `None` (and the reader gone again) when no media
/// came.
async fn join(
    reader: Reader<FrameReceiver>,
    wait: Duration,
) -> Option<(Described, Vec<Arc<SharedFrame>>)> {
    let Reader {
        mut frames, place, ..
    } = reader;
    let deadline = Instant::now() + wait;
    let mut configs: Vec<Arc<SharedFrame>> = Vec::new();
    let mut first = None;
    while let Ok(Some(frame)) = tokio::time::timeout_at(deadline, frames.recv()).await {
        if frame.frame.config {
            if configs.len() == MAX_CONFIGS {
                configs.remove(0);
            }
            configs.push(frame);
            continue;
        }
        let is_media = matches!(frame.frame.track, Track::Video | Track::Audio);
        if is_media && frame.frame.is_sample() {
            first = Some(frame);
            break;
        }
    }
    first.as_ref()?;
    Some((
        Described {
            place,
            frames,
            tracks: Vec::new(),
            first,
        },
        configs,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpeg_ts_transports_are_rtp_profiles() {
        assert!(asks_for_mp2t("MP2T/RTP/UDP;unicast;client_port=5000-5001"));
        assert!(asks_for_mp2t(" mp2t/rtp/tcp;interleaved=0-1"));
        assert!(!asks_for_mp2t("RTP/AVP;unicast;client_port=5000-5001"));
        assert!(!asks_for_mp2t("MP2T"));
        assert_eq!(
            as_rtp_avp("MP2T/RTP/TCP;interleaved=2-3, mp2t/rtp/udp;client_port=6000-6001"),
            "RTP/AVP/TCP;interleaved=2-3,RTP/AVP/UDP;client_port=6000-6001"
        );
        assert_eq!(
            transport::choose(&as_rtp_avp("MP2T/RTP/UDP;unicast;client_port=6000-6001"), 0),
            Some(Transport::Udp {
                rtp_port: 6000,
                rtcp_port: 6001
            })
        );
        assert_eq!(as_rtp_avp("RTP/AVP;unicast"), "RTP/AVP;unicast");
    }
}
