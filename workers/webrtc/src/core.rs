//! A session's state behind its lock: its str0m `Rtc`, where replies to its peer go, and
//! for a viewer what it sends. Two drivers take the lock: the session's own task (the
//! peer's packets, str0m's timers, the connection's lifecycle) and, for a connected
//! viewer, its stream's fan-out shard (fanout.rs), which writes every frame to all of
//! its viewers in one pass, so a viewer costs no task wake-up per frame and its
//! datagrams leave in the shard's batch, one `sendmmsg` for many viewers.
//!
//! Whatever a drain finds that ends the session (ICE disconnected, a str0m error) is
//! kept in [`Core::ended`] and the session task is woken to end it.

use crate::dtls_keys::KeySlot;
use crate::feed_frame::FeedFrame;
use crate::publish::Publisher;
use crate::routing::{Inbound, PeerHeard, ReplyPath};
use crate::rtp_send::{Kind, RtpSender, Track, is_rtcp};
use crate::srtp_send::SrtpSession;
use crate::udp_batch::UdpBatch;
use bytes::Bytes;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use str0m::format::Codec as RtcCodec;
use str0m::media::{MediaKind, Mid, Pt};
use str0m::net::{Protocol, Receive};
use str0m::rtp::{Extension, RtpWrite, SeqNo};
use str0m::{Event, IceConnectionState, Input, Output, Rtc};
use strom_stream::gate::sessions::SessionEntry;
use tokio::sync::Notify;

/// A connected peer that sends nothing (no consent check, no RTCP, no media) this long
/// is gone (ICE consent freshness, RFC 7675: browsers check every 5 s or so).
const PEER_SILENCE: Duration = Duration::from_secs(15);
/// A connected publisher that sends no media this long loses its stream, as silent
/// RTMP, SRT and Icecast publishers do.
const PUBLISHER_SILENCE: Duration = Duration::from_secs(10);
/// A viewer's retransmission cache per track holds the packets of the last
/// `WebRtcSettings.limits.retransmission_window_ms` (str0m keeps 3 s by default), at
/// most this many per second of it (about 12 Mbit/s of 1,200-byte packets). The
/// packets' payloads are the stream's shared ones: the cache holds references, not
/// copies.
const RTX_CACHE_PACKETS_PER_SEC: u32 = 1000;
/// str0m's default: queued resends are dropped past 15% of what is sent.
const RTX_RATIO_CAP: Option<f32> = Some(0.15);
/// Reply paths a session keeps at most (a peer's candidate pairs over UDP and TCP).
const MAX_PATHS: usize = 16;

/// One track a viewer sends, in RTP mode: the shared payloads go out under the
/// viewer's own sequence numbers and timestamps (random starts, RFC 3550 5.1).
#[derive(Debug)]
struct SendTrack {
    mid: Mid,
    pt: Pt,
    /// The payload type's RTP clock (90 kHz video, 48 kHz Opus).
    clock_rate: u64,
    sequence: SeqNo,
    time_offset: u32,
}

impl SendTrack {
    fn new(mid: Mid, pt: Pt, clock_rate: u32) -> Self {
        Self {
            mid,
            pt,
            clock_rate: u64::from(clock_rate),
            // Below 2^15 so that the first packets carry no rollover counter the
            // viewer would need to be told about.
            sequence: SeqNo::from(u64::from(rand::random::<u16>() >> 1)),
            time_offset: rand::random(),
        }
    }

    /// The RTP timestamp of `ticks` (90 kHz since the viewer's start).
    fn rtp_time(&self, ticks: u64) -> u32 {
        let scaled = ticks.saturating_mul(self.clock_rate) / 90_000;
        self.time_offset.wrapping_add(scaled as u32)
    }
}

/// A viewer's sending state.
#[derive(Default)]
struct Sending {
    video: Option<SendTrack>,
    audio: Option<SendTrack>,
    /// Lost frames (fell behind the feed, or the way to the viewer had no room): video
    /// resumes at the next keyframe.
    waiting_keyframe: bool,
    base_pts: Option<i64>,
    keyframe_requests: u64,
    /// Video frames written (skipped frames count as dropped only once the viewer has
    /// had a picture).
    frames_sent: u64,
}

/// What a session's closing log says of its sending.
pub struct Tally {
    pub keyframe_requests: u64,
    pub video_frames: u64,
    /// Who wrote the viewer's RTP: "strom" (rtp_send.rs), "str0m", or "none" (a
    /// publisher, or a viewer that never started).
    pub rtp_path: &'static str,
    /// Packets resent for the viewer's NACKs on strom's path.
    pub resent: u64,
}

/// When the peer was last heard from, and (a publisher) when its media last came.
struct Heard {
    anything: tokio::time::Instant,
    media: tokio::time::Instant,
}

impl Heard {
    fn now() -> Self {
        let now = tokio::time::Instant::now();
        Self {
            anything: now,
            media: now,
        }
    }
}

/// Where a drain's datagrams go: UDP ones into `batch` (sent by whoever drains, when
/// it is done), ICE-TCP ones into their connection's bounded queue.
pub struct Core {
    pub rtc: Rtc,
    /// A publisher's way into the hub (`None`: a viewer).
    pub publisher: Option<Box<Publisher>>,
    pub entry: Arc<SessionEntry>,
    counters: Arc<strom_worker_runtime::WorkerCounters>,
    paths: HashMap<(bool, SocketAddr), ReplyPath>,
    sending: Sending,
    medias: Vec<(Mid, MediaKind)>,
    pub connected: bool,
    heard: Heard,
    /// Why the session ends, found by a drain; the session task ends it.
    pub ended: Option<String>,
    /// The viewer is in its stream's fan-out.
    pub attached: bool,
    /// The session task gave up its core: the fan-out forgets it.
    pub closed: bool,
    /// The str0m deadline the session task sleeps until: a drain that finds an earlier
    /// one wakes the task.
    pub armed: Option<Instant>,
    /// Wakes the session task (an earlier deadline, or the end).
    pub wake: Arc<Notify>,
    /// How far back retransmissions reach (`limits.retransmission_window_ms`).
    rtx_window: Duration,
    /// A viewer's SRTP keys as its DTLS handshake gives them (dtls_keys.rs).
    keys: Option<Arc<KeySlot>>,
    /// A viewer sent by strom's own RTP path (rtp_send.rs); `None`: str0m sends.
    direct: Option<RtpSender>,
    /// Where str0m last sent something other than a STUN reply (DTLS, RTCP): the
    /// candidate pair ICE selected, where the own RTP path sends too.
    media_path: Option<(bool, SocketAddr)>,
    /// When the peer was last heard, for the routing table (an address whose session
    /// went silent can be taken over, routing.rs).
    pub peer_heard: Arc<PeerHeard>,
}

/// Packets a viewer's retransmission cache keeps per track for `window`.
fn rtx_cache_packets(window: Duration) -> usize {
    let per_sec = u128::from(RTX_CACHE_PACKETS_PER_SEC);
    usize::try_from(window.as_millis() * per_sec / 1000)
        .unwrap_or(usize::MAX)
        .max(1)
}

impl Core {
    pub fn new(
        rtc: Rtc,
        publisher: Option<Box<Publisher>>,
        entry: Arc<SessionEntry>,
        counters: Arc<strom_worker_runtime::WorkerCounters>,
        rtx_window: Duration,
        keys: Option<Arc<KeySlot>>,
    ) -> Self {
        Self {
            rtc,
            publisher,
            entry,
            counters,
            paths: HashMap::new(),
            sending: Sending::default(),
            medias: Vec::new(),
            connected: false,
            heard: Heard::now(),
            ended: None,
            attached: false,
            closed: false,
            armed: None,
            wake: Arc::new(Notify::new()),
            rtx_window,
            keys,
            direct: None,
            media_path: None,
            peer_heard: Arc::default(),
        }
    }

    fn is_publisher(&self) -> bool {
        self.publisher.is_some()
    }

    /// A viewer that is connected and knows its media, not yet in its stream's fan-out.
    pub fn ready_to_attach(&self) -> bool {
        !self.is_publisher() && self.connected && !self.attached && !self.medias.is_empty()
    }

    /// Silence counts from the connection: ICE and DTLS took their time.
    pub fn just_connected(&mut self) {
        self.heard = Heard::now();
    }

    /// Why a connected session whose peer went quiet ends now, if it does; else when
    /// to look again.
    pub fn silence(&self) -> Result<tokio::time::Instant, String> {
        let now = tokio::time::Instant::now();
        let peer_gone = self.heard.anything + PEER_SILENCE;
        if now >= peer_gone {
            return Err(format!(
                "the peer went silent ({} s without ICE consent or media)",
                PEER_SILENCE.as_secs()
            ));
        }
        if !self.is_publisher() {
            return Ok(peer_gone);
        }
        let no_media = self.heard.media + PUBLISHER_SILENCE;
        if now >= no_media {
            return Err(format!(
                "the publisher sent no media for {} s",
                PUBLISHER_SILENCE.as_secs()
            ));
        }
        Ok(peer_gone.min(no_media))
    }

    /// Hands a packet to str0m (`destination`: the candidate it arrived on); whether it
    /// was one of the peer's (it authenticated).
    pub fn receive(&mut self, inbound: Inbound, destination: SocketAddr) -> bool {
        let proto = if inbound.tcp {
            Protocol::Tcp
        } else {
            Protocol::Udp
        };
        let len = inbound.data.len() as u64;
        self.entry.bytes_recv.fetch_add(len, Ordering::Relaxed);
        self.counters.add_received(len);
        self.entry.touch();
        let Ok(receive) = Receive::new(proto, inbound.source, destination, &inbound.data) else {
            return false;
        };
        let path = (inbound.tcp, inbound.source);
        if self.paths.len() < MAX_PATHS || self.paths.contains_key(&path) {
            self.paths.insert(path, inbound.reply.clone());
        }
        if let Some(direct) = &mut self.direct
            && is_rtcp(&inbound.data)
        {
            // The viewer's receiver reports, NACKs and PLIs are for the own RTP path;
            // str0m never sent those packets.
            let authentic = direct.receive_rtcp(&inbound.data);
            if authentic {
                self.heard.anything = tokio::time::Instant::now();
                self.peer_heard.mark();
            }
            return authentic;
        }
        match self
            .rtc
            .handle_input(Input::Receive(Instant::now(), receive))
        {
            Ok(()) => {
                self.heard.anything = tokio::time::Instant::now();
                self.peer_heard.mark();
                true
            }
            Err(error) => {
                tracing::debug!(session = self.entry.id, %error, "webrtc packet refused");
                false
            }
        }
    }

    /// str0m's timers are due.
    pub fn timeout(&mut self) {
        if let Err(error) = self.rtc.handle_input(Input::Timeout(Instant::now())) {
            self.end(format!("webrtc error: {error}"));
        }
    }

    /// Sends what str0m has to send (UDP into `batch`) and handles its events; the time
    /// of its next timer (`None` once the session has ended).
    pub fn drain(&mut self, batch: &mut UdpBatch) -> Option<Instant> {
        if self.ended.is_some() {
            return None;
        }
        let mut refused = self.send_direct(batch);
        let next = loop {
            let output = match self.rtc.poll_output() {
                Ok(output) => output,
                Err(error) => {
                    self.end(format!("webrtc error: {error}"));
                    break None;
                }
            };
            match output {
                Output::Timeout(at) => break Some(at),
                Output::Transmit(transmit) => {
                    let tcp = transmit.proto == Protocol::Tcp;
                    // RFC 7983: a first byte of 0..=3 is STUN, which answers any pair.
                    if transmit.contents.first().is_some_and(|first| *first > 3) {
                        self.media_path = Some((tcp, transmit.destination));
                    }
                    if self.direct.is_some() && is_rtcp(&transmit.contents) {
                        // str0m's reports of streams it never sent on.
                        continue;
                    }
                    let Some(path) = self.paths.get(&(tcp, transmit.destination)) else {
                        continue;
                    };
                    let len = transmit.contents.len() as u64;
                    self.entry.bytes_sent.fetch_add(len, Ordering::Relaxed);
                    self.counters.add_sent(len);
                    match path {
                        ReplyPath::Udp(socket) => {
                            batch.push(socket, transmit.contents.into(), transmit.destination);
                        }
                        ReplyPath::Tcp(queue) => {
                            let packet: Vec<u8> = transmit.contents.into();
                            if queue.try_send(Bytes::from(packet)).is_err() {
                                refused += 1;
                            }
                        }
                    }
                }
                Output::Event(event) => self.event(event),
            }
        };
        if refused > 0 {
            self.fell_behind("its ICE-TCP connection is full", refused);
        }
        next
    }

    /// Whether strom's own RTP path sends this viewer (rtp_send.rs).
    pub fn sends_itself(&self) -> bool {
        self.direct.is_some()
    }

    /// Sends what the own RTP path has sealed, outside a drain (the fan-out).
    pub fn flush_own(&mut self, batch: &mut UdpBatch) {
        let refused = self.send_direct(batch);
        if refused > 0 {
            self.fell_behind("its ICE-TCP connection is full", refused);
        }
    }

    /// Sends the own RTP path's sealed datagrams to the selected pair; how many the way
    /// there had no room for.
    fn send_direct(&mut self, batch: &mut UdpBatch) -> usize {
        let Some(direct) = &mut self.direct else {
            return 0;
        };
        if direct.outbox.is_empty() {
            return 0;
        }
        let path = self
            .media_path
            .and_then(|(tcp, to)| Some((self.paths.get(&(tcp, to))?, to)));
        let Some((path, to)) = path else {
            direct.outbox.clear();
            return 0;
        };
        let mut refused = 0;
        let mut bytes = 0u64;
        for datagram in direct.outbox.drain(..) {
            bytes += datagram.len() as u64;
            match path {
                ReplyPath::Udp(socket) => batch.push(socket, datagram, to),
                ReplyPath::Tcp(queue) => {
                    if queue.try_send(Bytes::from(datagram)).is_err() {
                        refused += 1;
                    }
                }
            }
        }
        self.entry.bytes_sent.fetch_add(bytes, Ordering::Relaxed);
        self.counters.add_sent(bytes);
        refused
    }

    /// After a drain by someone else (the fan-out): wakes the session task if str0m
    /// now wants it sooner than it sleeps, or the session has ended.
    pub fn wake_if_sooner(&self, next: Option<Instant>) {
        let sooner = match (next, self.armed) {
            (None, _) => true,
            (Some(next), Some(armed)) => next < armed,
            (Some(_), None) => false,
        };
        if sooner {
            self.wake.notify_one();
        }
    }

    fn end(&mut self, reason: String) {
        if self.ended.is_none() {
            self.ended = Some(reason);
        }
        self.wake.notify_one();
    }

    fn event(&mut self, event: Event) {
        match event {
            Event::IceConnectionStateChange(IceConnectionState::Disconnected) => {
                self.end("the peer went away (ICE disconnected)".to_owned());
            }
            Event::Connected => {
                self.connected = true;
                tracing::info!(session = self.entry.id, peer = %self.entry.client_ip, "webrtc session connected");
            }
            Event::MediaAdded(added) => self.medias.push((added.mid, added.kind)),
            Event::MediaData(data) => {
                self.heard.media = tokio::time::Instant::now();
                if let Some(publisher) = &mut self.publisher {
                    let wants_keyframe = publisher.receive(&data);
                    if wants_keyframe && let Some(mut writer) = self.rtc.writer(data.mid) {
                        let _ =
                            writer.request_keyframe(None, str0m::media::KeyframeRequestKind::Pli);
                    }
                }
            }
            Event::KeyframeRequest(_) => {
                // Video passes through: the viewer recovers at the publisher's next
                // keyframe (NACK repairs plain loss); counted for the closing log.
                self.sending.keyframe_requests += 1;
            }
            _ => {}
        }
    }

    /// Frames this viewer was not sent, in its session (`dropped_frames`).
    pub fn count_dropped(&self, frames: u64) {
        if let Some(dropped) = self.entry.dropped.get() {
            dropped.fetch_add(frames, Ordering::Relaxed);
        }
    }

    /// The viewer lost packets on the way or frames of the feed: its video skips to the
    /// next keyframe (a picture with holes would freeze or smear until then anyway) and
    /// the frames skipped count as dropped. Logged once per episode.
    pub fn fell_behind(&mut self, why: &str, lost: usize) {
        if self.sending.video.is_none() {
            return;
        }
        if !self.sending.waiting_keyframe {
            tracing::info!(
                session = self.entry.id,
                lost,
                "webrtc viewer: {why}; resuming at the next keyframe"
            );
        }
        self.sending.waiting_keyframe = true;
    }

    /// Picks each negotiated track's payload type and sets its retransmission cache;
    /// video then waits for a keyframe.
    pub fn prepare_tracks(&mut self) {
        for &(mid, kind) in &self.medias {
            let want = match kind {
                MediaKind::Video => RtcCodec::H264,
                MediaKind::Audio => RtcCodec::Opus,
            };
            let Some(media) = self.rtc.media(mid) else {
                continue;
            };
            let remote = media.remote_pts();
            // Packetization mode 1 (FU-A) first: single-NAL mode cannot carry large frames.
            let params = self
                .rtc
                .codec_config()
                .params()
                .iter()
                .filter(|p| remote.contains(&p.pt()) && p.spec().codec == want)
                .max_by_key(|p| p.spec().format.packetization_mode == Some(1))
                .map(|p| (p.pt(), p.spec().clock_rate.get()));
            if let Some(stream) = self.rtc.direct_api().stream_tx_by_mid(mid, None) {
                stream.set_rtx_cache(
                    rtx_cache_packets(self.rtx_window),
                    self.rtx_window,
                    RTX_RATIO_CAP,
                );
            }
            match (kind, params) {
                (MediaKind::Video, Some((pt, clock))) if self.sending.video.is_none() => {
                    self.sending.video = Some(SendTrack::new(mid, pt, clock))
                }
                (MediaKind::Audio, Some((pt, clock))) if self.sending.audio.is_none() => {
                    self.sending.audio = Some(SendTrack::new(mid, pt, clock))
                }
                _ => {}
            }
        }
        self.direct = self.own_rtp_path();
        tracing::debug!(session = self.entry.id, medias = ?self.medias, video = ?self.sending.video, audio = ?self.sending.audio, own_rtp = self.direct.is_some(), "webrtc viewer sends");
        self.sending.waiting_keyframe = self.sending.video.is_some();
        self.attached = true;
    }

    /// strom's own RTP path for this viewer, when its handshake gave AES-GCM keys and
    /// str0m has its tracks' SSRCs.
    fn own_rtp_path(&mut self) -> Option<RtpSender> {
        let keys = self.keys.as_ref()?.take()?;
        let Some(srtp) = SrtpSession::new(&keys) else {
            tracing::debug!(
                session = self.entry.id,
                ?keys,
                "webrtc viewer: str0m sends (not AES-GCM)"
            );
            return None;
        };
        let tracks: Vec<(bool, Mid, u8, u32)> =
            [(true, &self.sending.video), (false, &self.sending.audio)]
                .into_iter()
                .filter_map(|(video, track)| {
                    let track = track.as_ref()?;
                    Some((video, track.mid, *track.pt, track.clock_rate as u32))
                })
                .collect();
        let (mut video, mut audio) = (None, None);
        for (is_video, mid, pt, clock_rate) in tracks {
            let extension = self
                .rtc
                .media(mid)
                .and_then(|media| media.remote_extmap().id_of(Extension::RtpMid));
            let ssrc = *self.rtc.direct_api().stream_tx_by_mid(mid, None)?.ssrc();
            let mid_text = mid.to_string();
            let track = Track::new(
                ssrc,
                pt,
                clock_rate,
                extension.map(|id| (id, mid_text.as_str())),
                is_video,
            );
            if is_video {
                video = Some(track);
            } else {
                audio = Some(track);
            }
        }
        Some(RtpSender::new(srtp, video, audio, self.rtx_window))
    }

    /// Writes a frame's shared payloads as this viewer's RTP packets; they leave at the
    /// next drain.
    pub fn send(&mut self, frame: &FeedFrame) {
        if frame.video && self.sending.waiting_keyframe {
            if !frame.keyframe {
                if self.sending.frames_sent > 0 {
                    self.count_dropped(1);
                }
                return;
            }
            self.sending.waiting_keyframe = false;
        }
        let sending = &mut self.sending;
        if sending.video.is_some() && sending.waiting_keyframe {
            // Audio waits for the picture too, so both start together.
            return;
        }
        let base = *sending.base_pts.get_or_insert(frame.pts);
        let track = if frame.video {
            sending.video.as_mut()
        } else {
            sending.audio.as_mut()
        };
        let Some(track) = track else {
            return;
        };
        // A second of headroom: audio may start a little before the first keyframe.
        let ticks = (frame.pts - base + 90_000).max(0) as u64;
        let time = track.rtp_time(ticks);
        let now = Instant::now();
        if let Some(direct) = &mut self.direct {
            let kind = if frame.video {
                Kind::Video
            } else {
                Kind::Audio
            };
            let last = frame.payloads.len().saturating_sub(1);
            for (index, payload) in frame.payloads.iter().enumerate() {
                let marker = frame.video && index == last;
                direct.write(kind, *track.sequence.inc(), time, marker, payload, now);
            }
            if frame.video {
                sending.frames_sent += 1;
            }
            direct.report_if_due(now);
            return;
        }
        let mut api = self.rtc.direct_api();
        let Some(stream) = api.stream_tx_by_mid(track.mid, None) else {
            return;
        };
        let last = frame.payloads.len().saturating_sub(1);
        for (index, payload) in frame.payloads.iter().enumerate() {
            let packet = RtpWrite::new(
                track.pt,
                track.sequence.inc(),
                time,
                now,
                Arc::clone(payload),
            )
            .marker(frame.video && index == last)
            .nackable(true);
            stream.write_rtp(packet);
        }
        if frame.video {
            sending.frames_sent += 1;
        }
        // str0m releases written packets once time has moved past their writing.
        if let Err(error) = self.rtc.handle_input(Input::Timeout(now)) {
            self.end(format!("webrtc error: {error}"));
        }
    }

    /// For the closing log.
    pub fn tally(&self) -> Tally {
        let own = self
            .direct
            .as_ref()
            .map_or(0, |direct| direct.keyframe_requests);
        Tally {
            keyframe_requests: self.sending.keyframe_requests + own,
            video_frames: self.sending.frames_sent,
            rtp_path: match (&self.direct, self.attached) {
                (Some(_), _) => "strom",
                (None, true) => "str0m",
                (None, false) => "none",
            },
            resent: self.direct.as_ref().map_or(0, |direct| direct.resent),
        }
    }
}

#[cfg(test)]
mod rtx_tests {
    use super::*;

    #[test]
    fn the_retransmission_cache_is_sized_by_its_window() {
        assert_eq!(rtx_cache_packets(Duration::from_secs(1)), 1000);
        assert_eq!(rtx_cache_packets(Duration::from_millis(100)), 100);
        assert_eq!(rtx_cache_packets(Duration::from_secs(10)), 10_000);
        assert_eq!(rtx_cache_packets(Duration::ZERO), 1);
    }
}

#[cfg(test)]
#[path = "core_tests.rs"]
mod own_path_tests;
