//! One WebRTC session (a WHEP viewer or a WHIP publisher): its str0m `Rtc` driven by
//! the packets its peer sends on the shared ICE port, its timers and, for a viewer, the
//! stream's feed. Everything str0m wants sent goes back the way the peer's packets came
//! (the UDP socket or the ICE-TCP connection); nothing here waits on a slow peer.

use crate::admission::Place;
use crate::feed::{Feed, FeedFrame};
use crate::publish::Publisher;
use crate::routing::{Inbound, ReplyPath};
use crate::shared::Shared;
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
use str0m::rtp::{RtpWrite, SeqNo};
use str0m::{Event, IceConnectionState, Input, Output, Rtc};
use strom_stream::gate::sessions::SessionEntry;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

/// A connected peer that sends nothing (no consent check, no RTCP, no media) this long
/// is gone (ICE consent freshness, RFC 7675: browsers check every 5 s or so).
const PEER_SILENCE: Duration = Duration::from_secs(15);
/// A connected publisher that sends no media this long loses its stream, as silent
/// RTMP, SRT and Icecast publishers do.
const PUBLISHER_SILENCE: Duration = Duration::from_secs(10);
/// A viewer's retransmission cache per track: the packets of the last [`RTX_CACHE_AGE`],
/// at most [`RTX_CACHE_PACKETS`] (str0m keeps 3 s by default).
const RTX_CACHE_AGE: Duration = Duration::from_secs(1);
const RTX_CACHE_PACKETS: usize = 1000;
/// str0m's default: queued resends are dropped past 15% of what is sent.
const RTX_RATIO_CAP: Option<f32> = Some(0.15);

/// What the session does with the stream.
pub enum Role {
    Play(Arc<Feed>),
    Publish(Box<Publisher>),
}

/// A session ready to run: its negotiated `Rtc` and where its candidates are.
pub struct Session {
    pub rtc: Rtc,
    /// Its place against the session limits, given back when the session ends.
    pub place: Place,
    pub ufrag: String,
    /// The name in the session's URL.
    pub resource: String,
    pub entry: Arc<SessionEntry>,
    /// A viewer's session in the registry, ended as the task ends (a publisher's is
    /// held by its `Publishing`).
    pub viewer_session: Option<strom_stream::Session>,
    pub role: Role,
    /// The candidate advertised for each local (TCP?, port, IPv6?): what str0m is told a
    /// packet arrived on.
    pub candidates: HashMap<(bool, u16, bool), SocketAddr>,
    pub connect_timeout: Duration,
    /// The worker's byte counters (`/metrics`, `server_status`).
    pub counters: Arc<strom_worker_runtime::WorkerCounters>,
}

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
    frames: Option<broadcast::Receiver<Arc<FeedFrame>>>,
    /// Lost frames (fell behind the feed, or the way to the viewer had no room): video
    /// resumes at the next keyframe.
    waiting_keyframe: bool,
    /// Packets the viewer's way (its UDP socket or ICE-TCP queue) had no room for since
    /// the last drain looked.
    refused_packets: usize,
    base_pts: Option<i64>,
    keyframe_requests: u64,
    /// Video frames written, for the closing log (and: skipped frames count as dropped
    /// only once the viewer has had a picture).
    frames_sent: u64,
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

    /// Why a connected session whose peer went quiet ends now, if it does; else when
    /// to look again.
    fn silence(&self, publisher: bool) -> Result<tokio::time::Instant, String> {
        let now = tokio::time::Instant::now();
        let peer_gone = self.anything + PEER_SILENCE;
        if now >= peer_gone {
            return Err(format!(
                "the peer went silent ({} s without ICE consent or media)",
                PEER_SILENCE.as_secs()
            ));
        }
        if !publisher {
            return Ok(peer_gone);
        }
        let no_media = self.media + PUBLISHER_SILENCE;
        if now >= no_media {
            return Err(format!(
                "the publisher sent no media for {} s",
                PUBLISHER_SILENCE.as_secs()
            ));
        }
        Ok(peer_gone.min(no_media))
    }
}

impl Session {
    /// Runs the session until its peer leaves, it is deleted or killed, or the stream
    /// ends; then forgets it everywhere.
    pub async fn run(mut self, shared: Arc<Shared>, mut inbox: mpsc::Receiver<Inbound>) {
        let started = tokio::time::Instant::now();
        let mut paths: HashMap<(bool, SocketAddr), ReplyPath> = HashMap::new();
        let mut sending = Sending::default();
        let mut medias: Vec<(Mid, MediaKind)> = Vec::new();
        let mut connected = false;
        let mut heard = Heard::now();
        let publisher = matches!(self.role, Role::Publish(_));
        let kill = self.entry.kill.clone();
        let feed_ended = match &self.role {
            Role::Play(feed) => feed.stop_token(),
            Role::Publish(_) => CancellationToken::new(),
        };
        let reason = loop {
            let was_connected = connected;
            let timeout = match self.drain_outputs(
                &paths,
                &mut sending,
                &mut medias,
                &mut connected,
                &mut heard,
            ) {
                Ok(timeout) => timeout,
                Err(reason) => break reason,
            };
            if sending.refused_packets > 0 {
                self.fell_behind(&mut sending, "the way to the viewer is full");
            }
            if connected && !was_connected {
                // Silence counts from the connection: ICE and DTLS took their time.
                heard = Heard::now();
            }
            // str0m announces the media (`MediaAdded`) once DTLS is up, right after
            // `Connected`: a viewer starts sending when it knows both.
            if connected
                && sending.frames.is_none()
                && !medias.is_empty()
                && let Role::Play(feed) = &self.role
            {
                let feed = Arc::clone(feed);
                self.start_sending(&feed, &mut sending, &medias);
                continue;
            }
            if !connected && started.elapsed() > self.connect_timeout {
                break "ICE did not connect in time".to_owned();
            }
            let mut wake = tokio::time::Instant::from_std(timeout.max(Instant::now()));
            if !connected {
                // Wake for the connect deadline too (only before connecting: after it, the
                // deadline is in the past and would wake the loop at once, forever).
                wake = wake.min(started + self.connect_timeout + Duration::from_millis(10));
            } else {
                match heard.silence(publisher) {
                    Ok(deadline) => wake = wake.min(deadline + Duration::from_millis(10)),
                    Err(reason) => break reason,
                }
            }
            let frames = sending.frames.as_mut();
            tokio::select! {
                () = kill.cancelled() => break "ended by request".to_owned(),
                () = feed_ended.cancelled() => break "the stream ended".to_owned(),
                inbound = inbox.recv() => {
                    let Some(inbound) = inbound else { break "worker stopping".to_owned() };
                    if self.receive(inbound, &mut paths) {
                        heard.anything = tokio::time::Instant::now();
                    }
                }
                frame = async { match frames { Some(frames) => frames.recv().await, None => std::future::pending().await } } => {
                    match frame {
                        Ok(frame) => self.send(&mut sending, &frame),
                        Err(broadcast::error::RecvError::Lagged(lost)) => {
                            self.count_dropped(lost);
                            self.fell_behind(&mut sending, "it fell behind the stream");
                        }
                        Err(broadcast::error::RecvError::Closed) => break "the stream ended".to_owned(),
                    }
                }
                () = tokio::time::sleep_until(wake) => {
                    if let Err(error) = self.rtc.handle_input(Input::Timeout(Instant::now())) {
                        break format!("webrtc error: {error}");
                    }
                }
            }
        };
        self.rtc.disconnect();
        let _ = self.drain_outputs(
            &paths,
            &mut sending,
            &mut medias,
            &mut connected,
            &mut heard,
        );
        if let Role::Publish(publisher) = &mut self.role {
            publisher.finish();
        }
        shared.routes.unregister(&self.ufrag);
        strom_worker_runtime::sync::locked(&shared.resources).remove(&self.resource);
        drop(self.viewer_session);
        tracing::info!(
            session = self.entry.id,
            stream = %format!("{}/{}", self.entry.app, self.entry.stream),
            peer = %self.entry.client_ip,
            publisher = self.entry.publisher,
            bytes_sent = self.entry.bytes_sent.load(Ordering::Relaxed),
            bytes_received = self.entry.bytes_recv.load(Ordering::Relaxed),
            keyframe_requests = sending.keyframe_requests,
            video_frames = sending.frames_sent,
            %reason,
            "webrtc session closed"
        );
        // Its place against the limits is given back last, once it is gone everywhere.
        drop(self.place);
    }

    /// Hands a packet to str0m; whether it was one of the peer's (it authenticated).
    fn receive(
        &mut self,
        inbound: Inbound,
        paths: &mut HashMap<(bool, SocketAddr), ReplyPath>,
    ) -> bool {
        let family = inbound.source.is_ipv6();
        let Some(&destination) = self
            .candidates
            .get(&(inbound.tcp, inbound.local_port, family))
        else {
            return false;
        };
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
        if paths.len() < 16 || paths.contains_key(&(inbound.tcp, inbound.source)) {
            paths.insert((inbound.tcp, inbound.source), inbound.reply.clone());
        }
        match self
            .rtc
            .handle_input(Input::Receive(Instant::now(), receive))
        {
            Ok(()) => true,
            Err(error) => {
                tracing::debug!(session = self.entry.id, %error, "webrtc packet refused");
                false
            }
        }
    }

    /// Sends what str0m has to send and handles its events; the time of its next timer.
    fn drain_outputs(
        &mut self,
        paths: &HashMap<(bool, SocketAddr), ReplyPath>,
        sending: &mut Sending,
        medias: &mut Vec<(Mid, MediaKind)>,
        connected: &mut bool,
        heard: &mut Heard,
    ) -> Result<Instant, String> {
        // Whatever this drain sends over UDP leaves in one system call when it ends.
        let mut batch = UdpBatch::default();
        loop {
            let output = self
                .rtc
                .poll_output()
                .map_err(|e| format!("webrtc error: {e}"))?;
            match output {
                Output::Timeout(at) => {
                    batch.flush();
                    sending.refused_packets += batch.refused();
                    return Ok(at);
                }
                Output::Transmit(transmit) => {
                    let tcp = transmit.proto == Protocol::Tcp;
                    let Some(path) = paths.get(&(tcp, transmit.destination)) else {
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
                                sending.refused_packets += 1;
                            }
                        }
                    }
                }
                Output::Event(event) => self.event(event, sending, medias, connected, heard)?,
            }
        }
    }

    fn event(
        &mut self,
        event: Event,
        sending: &mut Sending,
        medias: &mut Vec<(Mid, MediaKind)>,
        connected: &mut bool,
        heard: &mut Heard,
    ) -> Result<(), String> {
        match event {
            Event::IceConnectionStateChange(IceConnectionState::Disconnected) => {
                return Err("the peer went away (ICE disconnected)".to_owned());
            }
            Event::Connected => {
                *connected = true;
                tracing::info!(session = self.entry.id, peer = %self.entry.client_ip, "webrtc session connected");
            }
            Event::MediaAdded(added) => medias.push((added.mid, added.kind)),
            Event::MediaData(data) => {
                heard.media = tokio::time::Instant::now();
                if let Role::Publish(publisher) = &mut self.role {
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
                sending.keyframe_requests += 1;
            }
            _ => {}
        }
        Ok(())
    }

    /// Frames this viewer was not sent, in its session (`dropped_frames`).
    fn count_dropped(&self, frames: u64) {
        if let Some(dropped) = self.entry.dropped.get() {
            dropped.fetch_add(frames, Ordering::Relaxed);
        }
    }

    /// The viewer lost packets on the way or frames of the feed: its video skips to the
    /// next keyframe (a picture with holes would freeze or smear until then anyway) and
    /// the frames skipped count as dropped. Logged once per episode.
    fn fell_behind(&self, sending: &mut Sending, why: &str) {
        let refused = std::mem::take(&mut sending.refused_packets);
        if sending.video.is_none() {
            return;
        }
        if !sending.waiting_keyframe {
            tracing::info!(
                session = self.entry.id,
                refused,
                "webrtc viewer: {why}; resuming at the next keyframe"
            );
        }
        sending.waiting_keyframe = true;
    }

    fn start_sending(
        &mut self,
        feed: &Arc<Feed>,
        sending: &mut Sending,
        medias: &[(Mid, MediaKind)],
    ) {
        for &(mid, kind) in medias {
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
            // Retransmissions answer NACKs of the last second only: older packets are
            // memory that no repair can use any more.
            if let Some(stream) = self.rtc.direct_api().stream_tx_by_mid(mid, None) {
                stream.set_rtx_cache(RTX_CACHE_PACKETS, RTX_CACHE_AGE, RTX_RATIO_CAP);
            }
            match (kind, params) {
                (MediaKind::Video, Some((pt, clock))) if sending.video.is_none() => {
                    sending.video = Some(SendTrack::new(mid, pt, clock))
                }
                (MediaKind::Audio, Some((pt, clock))) if sending.audio.is_none() => {
                    sending.audio = Some(SendTrack::new(mid, pt, clock))
                }
                _ => {}
            }
        }
        tracing::debug!(session = self.entry.id, ?medias, video = ?sending.video, audio = ?sending.audio, "webrtc viewer sends");
        let (gop, frames) = feed.join();
        sending.waiting_keyframe = sending.video.is_some();
        sending.frames = Some(frames);
        for frame in gop {
            self.send(sending, &frame);
        }
    }

    /// Writes a frame's shared payloads as this viewer's RTP packets; they leave at the
    /// next drain.
    fn send(&mut self, sending: &mut Sending, frame: &FeedFrame) {
        if frame.video && sending.waiting_keyframe {
            if !frame.keyframe {
                if sending.frames_sent > 0 {
                    self.count_dropped(1);
                }
                return;
            }
            sending.waiting_keyframe = false;
        }
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
            tracing::debug!(session = self.entry.id, %error, "webrtc frame not sent");
        }
    }
}
