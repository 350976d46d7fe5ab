//! One WebRTC session (a WHEP viewer or a WHIP publisher) as a task: it hands the packets
//! its peer sends on the shared ICE port to the session's str0m `Rtc` ([`Core`]), runs
//! its timers, joins a connected viewer to its stream's fan-out, and ends the session
//! when the peer leaves, it is deleted or killed, or the stream ends. Everything str0m
//! wants sent goes back the way the peer's packets came (the UDP socket or the ICE-TCP
//! connection); nothing here waits on a slow peer.

use crate::admission::Place;
use crate::core::Core;
use crate::feed::Feed;
use crate::publish::Publisher;
use crate::routing::Inbound;
use crate::shared::Shared;
use crate::udp_batch::UdpBatch;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use strom_stream::gate::sessions::SessionEntry;
use strom_worker_runtime::sync::locked;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What the session does with the stream.
pub enum Role {
    Play(Arc<Feed>),
    Publish(Box<Publisher>),
}

/// A session ready to run: its negotiated `Rtc` (in its core) and where its candidates
/// are.
pub struct Session {
    pub core: Arc<Mutex<Core>>,
    /// A viewer's stream.
    pub feed: Option<Arc<Feed>>,
    /// Its place against the session limits, given back when the session ends.
    pub place: Place,
    pub ufrag: String,
    /// The name in the session's URL.
    pub resource: String,
    pub entry: Arc<SessionEntry>,
    /// A viewer's session in the registry, ended as the task ends (a publisher's is
    /// held by its `Publishing`).
    pub viewer_session: Option<strom_stream::Session>,
    /// The candidate advertised for each local (TCP?, port, IPv6?): what str0m is told a
    /// packet arrived on.
    pub candidates: HashMap<(bool, u16, bool), SocketAddr>,
    pub connect_timeout: Duration,
}

impl Session {
    /// Runs the session until its peer leaves, it is deleted or killed, or the stream
    /// ends; then forgets it everywhere.
    pub async fn run(self, shared: Arc<Shared>, mut inbox: mpsc::Receiver<Inbound>) {
        let started = tokio::time::Instant::now();
        let kill = self.entry.kill.clone();
        let feed_ended = match &self.feed {
            Some(feed) => feed.stop_token(),
            None => CancellationToken::new(),
        };
        let wake = Arc::clone(&locked(&self.core).wake);
        // What this task's drains send over UDP leaves in one system call per drain.
        let mut batch = UdpBatch::default();
        let reason = loop {
            let deadline = match self.step(&mut batch, started) {
                Ok(deadline) => deadline,
                Err(reason) => break reason,
            };
            tokio::select! {
                () = kill.cancelled() => break "ended by request".to_owned(),
                () = feed_ended.cancelled() => break "the stream ended".to_owned(),
                // The fan-out found an earlier timer, or the end.
                () = wake.notified() => {}
                inbound = inbox.recv() => {
                    let Some(inbound) = inbound else { break "worker stopping".to_owned() };
                    let family = inbound.source.is_ipv6();
                    if let Some(&destination) =
                        self.candidates.get(&(inbound.tcp, inbound.local_port, family))
                    {
                        locked(&self.core).receive(inbound, destination);
                    }
                }
                () = tokio::time::sleep_until(deadline) => locked(&self.core).timeout(),
            }
        };
        let tally = {
            let mut core = locked(&self.core);
            core.rtc.disconnect();
            let _ = core.drain(&mut batch);
            core.closed = true;
            if let Some(publisher) = &mut core.publisher {
                publisher.finish();
            }
            core.tally()
        };
        batch.flush();
        shared.routes.unregister(&self.ufrag);
        locked(&shared.resources).remove(&self.resource);
        drop(self.viewer_session);
        tracing::info!(
            session = self.entry.id,
            stream = %format!("{}/{}", self.entry.app, self.entry.stream),
            peer = %self.entry.client_ip,
            publisher = self.entry.publisher,
            bytes_sent = self.entry.bytes_sent.load(Ordering::Relaxed),
            bytes_received = self.entry.bytes_recv.load(Ordering::Relaxed),
            keyframe_requests = tally.keyframe_requests,
            video_frames = tally.video_frames,
            rtp_path = tally.rtp_path,
            resent = tally.resent,
            %reason,
            "webrtc session closed"
        );
        // Its place against the limits is given back last, once it is gone everywhere.
        drop(self.place);
    }

    /// Drains the session's outputs and decides what comes next: the instant to wake at
    /// (str0m's next timer, the connect deadline, the silence deadline), or why the
    /// session ends. A viewer that has just connected joins its stream's fan-out here.
    fn step(
        &self,
        batch: &mut UdpBatch,
        started: tokio::time::Instant,
    ) -> Result<tokio::time::Instant, String> {
        let mut core = locked(&self.core);
        loop {
            let was_connected = core.connected;
            let next = core.drain(batch);
            batch.flush();
            let refused = batch.take_refused();
            if refused > 0 {
                core.fell_behind("the server's UDP socket is full", refused);
            }
            if let Some(reason) = core.ended.take() {
                return Err(reason);
            }
            let Some(next) = next else {
                return Err("webrtc session ended".to_owned());
            };
            if core.connected && !was_connected {
                core.just_connected();
            }
            // str0m announces the media (`MediaAdded`) once DTLS is up, right after
            // `Connected`: a viewer starts sending when it knows both. Its core stays
            // locked while it is sent the kept GOP, so its shard's frames come after.
            if core.ready_to_attach()
                && let Some(feed) = &self.feed
            {
                core.prepare_tracks();
                for frame in feed.attach(self.entry.id, &self.core) {
                    core.send(&frame);
                }
                continue;
            }
            let mut wake = tokio::time::Instant::from_std(next.max(Instant::now()));
            if !core.connected {
                if started.elapsed() > self.connect_timeout {
                    return Err("ICE did not connect in time".to_owned());
                }
                // Wake for the connect deadline too (only before connecting: after it,
                // the deadline is in the past and would wake the loop at once, forever).
                wake = wake.min(started + self.connect_timeout + Duration::from_millis(10));
            } else {
                let deadline = core.silence()?;
                wake = wake.min(deadline + Duration::from_millis(10));
            }
            core.armed = Some(next);
            return Ok(wake);
        }
    }
}
