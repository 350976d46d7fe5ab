//! One MPEG-TS input as a publisher: datagrams (RTP-wrapped or plain TS) go through the
//! demuxer into neutral frames, which are published into the worker's hub as the
//! input's `app/stream`. The stream is claimed at the first frame and released when the
//! sender stops, so an input that is configured but silent is not live.

use crate::input_status::InputStatus;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use strom_ipc::status::{TsElementaryStream, TsProgram};
use strom_media::frame::Frame;
use strom_media::ts_demux::{self, DemuxEvent, TsDemuxer};
use strom_stream::{Hub, PublisherInfo, Publishing, StreamKey};
use strom_stream::{Meter, Session, SessionEntry, Sessions};
use strom_worker_runtime::SessionIds;
use strom_worker_runtime::clock::unix_now;
use strom_worker_runtime::log_limit::LogLimit;
use tokio_util::sync::CancellationToken;

pub struct TsInput {
    /// The `Cameras` entry's id, for logs.
    pub id: String,
    pub key: StreamKey,
    /// `MPEGTS`, `SRT`, `RIST`: the protocol the stream list names.
    pub protocol: &'static str,
    pub status: Arc<InputStatus>,
    hub: Hub,
    ids: Arc<SessionIds>,
    demuxer: TsDemuxer,
    frames: Vec<Frame>,
    claim: Option<Publishing>,
    /// Where the sender of a `udp` or `rist` input is listed as a session while it
    /// sends (SRT connections are sessions of their own, `srt_input`).
    contributors: Option<Sessions>,
    /// The current sender's session.
    contributor: Option<Session>,
    /// The URL a pulled stream comes from (an SRT edge pull), as status reports it.
    source_url: Option<String>,
    /// This input's budget of program lines: a sender that flips its PMT version with
    /// every packet would otherwise write a line per packet. Per input, so one bad
    /// sender cannot hide another input's program changes.
    program_log: LogLimit,
}

/// Program lines one input writes at most per [`PROGRAM_LOG_WINDOW`].
const PROGRAM_LOG_BURST: u32 = 5;
const PROGRAM_LOG_WINDOW: Duration = Duration::from_secs(10);

impl TsInput {
    pub fn new(
        id: String,
        key: StreamKey,
        protocol: &'static str,
        status: Arc<InputStatus>,
        hub: Hub,
        ids: Arc<SessionIds>,
    ) -> Self {
        Self {
            id,
            key,
            protocol,
            status,
            hub,
            ids,
            demuxer: TsDemuxer::new(None),
            frames: Vec::new(),
            claim: None,
            contributors: None,
            contributor: None,
            source_url: None,
            program_log: LogLimit::new(PROGRAM_LOG_BURST, PROGRAM_LOG_WINDOW),
        }
    }

    /// Starts with the stream already claimed (an SRT caller, claimed at connect).
    pub fn with_claim(mut self, claim: Option<Publishing>) -> Self {
        self.claim = claim;
        self
    }

    /// Lists each sender as a session in `sessions` while it sends (listed only: a
    /// `sessions/delete` ends the sender's publish, which its next packet starts again).
    pub fn listing_contributors(mut self, sessions: Sessions) -> Self {
        self.contributors = Some(sessions);
        self
    }

    /// Reports the stream as pulled from `url` (an SRT edge pull).
    pub fn with_source_url(mut self, url: String) -> Self {
        self.source_url = Some(url);
        self
    }

    /// Feeds one datagram (or any run of TS bytes) from `sender`.
    pub fn feed(&mut self, bytes: &[u8], sender: SocketAddr) {
        let ts = ts_demux::strip_rtp(bytes);
        self.demuxer.push(ts);
        while let Some(event) = self.demuxer.next_event() {
            self.event(event);
        }
        while let Some(frame) = self.demuxer.next_frame() {
            self.frames.push(frame);
        }
        if self.frames.is_empty() {
            return;
        }
        if self
            .contributor
            .as_ref()
            .is_some_and(|c| c.kill.is_cancelled())
        {
            tracing::info!(input = %self.id, stream = %self.key, %sender, "input sender's session ended by request");
            self.stopped();
        }
        if self.claim.is_none() {
            self.claim = self.take(sender);
            if let (Some(_), Some(sessions)) = (&self.claim, &self.contributors) {
                let meter = InputBytes {
                    status: Arc::clone(&self.status),
                    before: self.status.total_bytes(),
                };
                let entry = SessionEntry::new(
                    self.ids.next_id(),
                    self.protocol,
                    &self.key,
                    sender.ip(),
                    CancellationToken::new(),
                )
                .metered(Arc::new(meter));
                self.contributor = Some(sessions.open(entry));
            }
        }
        match &self.claim {
            Some(claim) => {
                for frame in self.frames.drain(..) {
                    claim.publish(frame);
                }
            }
            None => self.frames.clear(),
        }
    }

    /// The sender stopped: the stream is no longer live, the next packets start afresh.
    pub fn stopped(&mut self) {
        if let Some(claim) = self.claim.take() {
            claim.release();
            self.contributor = None;
            tracing::info!(input = %self.id, stream = %self.key, "input stopped sending: stream ended");
        }
        self.demuxer = TsDemuxer::new(None);
        self.status.set_programs(Vec::new());
    }

    fn take(&self, sender: SocketAddr) -> Option<Publishing> {
        let publisher = PublisherInfo {
            session_id: self.ids.next_id(),
            ip: sender.ip().to_string(),
            publish_time: unix_now(),
            query: String::new(),
            source_url: self.source_url.clone(),
            relayed_from: None,
            protocol: self.protocol,
            admitted_id: None,
        };
        match self.hub.own_publisher(&self.key, publisher) {
            Ok(claim) => {
                tracing::info!(input = %self.id, stream = %self.key, %sender, protocol = self.protocol, "input live");
                Some(claim)
            }
            Err(_) => {
                strom_worker_runtime::limited_log!(warn, 3, std::time::Duration::from_secs(10); input = %self.id, stream = %self.key, "stream already published by another input; frames dropped");
                None
            }
        }
    }

    fn event(&mut self, event: DemuxEvent) {
        match event {
            DemuxEvent::ProgramChanged(program) => {
                if let Some(suppressed) = self.program_log.check() {
                    tracing::info!(input = %self.id, program = program.number, pmt_pid = program.pmt_pid, version = program.version, streams = ?program.streams, suppressed, "MPEG-TS program");
                }
                let streams = program
                    .streams
                    .iter()
                    .map(|s| TsElementaryStream {
                        pid: s.pid,
                        stream_type: s.stream_type,
                        codec: s.codec_name().to_owned(),
                    })
                    .collect();
                self.status.set_programs(vec![TsProgram {
                    number: program.number,
                    pmt_pid: program.pmt_pid,
                    streams,
                }]);
            }
            other => {
                strom_worker_runtime::limited_log!(info, 5, std::time::Duration::from_secs(10); input = %self.id, event = ?other, "MPEG-TS input");
            }
        }
    }
}

/// A sender's bytes: the input's since the sender started.
struct InputBytes {
    status: Arc<InputStatus>,
    before: u64,
}

impl Meter for InputBytes {
    fn bytes(&self) -> (u64, u64) {
        (self.status.total_bytes().saturating_sub(self.before), 0)
    }
}
