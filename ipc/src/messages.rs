//! Control messages between the supervisor and a worker, typed by direction.
//!
//! Every request carries an id that its reply repeats. New variants go at the end of an
//! enum: bincode encodes the variant index, and the golden-frame test keeps old frames
//! decodable.

use crate::kind::WorkerKind;
use crate::rules::Rules;
use crate::status::{
    CameraStatus, Counters, DvrArchive, IcecastInfo, LiveStream, Publisher, RepublishStatus,
    ServerPlaylistEntry, SessionInfo,
};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::PathBuf;

/// Correlates a reply with its request.
pub type RequestId = u64;

/// Frames the supervisor sends to a worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SupervisorToWorker {
    /// The first frame on a fresh channel. Its descriptors are the listeners of
    /// `hello.listeners`, in order.
    Hello(Box<WorkerHello>),
    /// A request; the worker answers with [`WorkerToSupervisor::Reply`] and the same id.
    Request {
        id: RequestId,
        request: WorkerRequest,
    },
}

/// Frames a worker sends to the supervisor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum WorkerToSupervisor {
    /// The worker has taken its listeners and serves.
    Ready {
        pid: u32,
    },
    Reply {
        id: RequestId,
        reply: WorkerReply,
    },
    Event(WorkerEvent),
}

/// Everything a worker needs to start serving.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerHello {
    pub kind: WorkerKind,
    /// Increases with every process the supervisor starts; session ids are derived from it
    /// so they stay unique across workers and restarts.
    pub generation: u32,
    /// One entry per descriptor attached to the hello frame.
    pub listeners: Vec<ListenerSpec>,
    pub settings: WorkerSettings,
    pub rules: Rules,
    pub tls: Option<TlsMaterial>,
    pub drm: Option<DrmSettings>,
    /// Publisher ids denied through publish control; held by the supervisor so that a
    /// restarted worker keeps refusing them.
    pub denied_publishers: Vec<String>,
}

/// Instance settings from `strom.conf` that workers use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerSettings {
    pub data_dir: PathBuf,
    pub run_dir: PathBuf,
    /// RAM the packager may spend on segments, in bytes.
    pub max_ram_cache_bytes: u64,
    /// Disk the DVR may spend, in bytes.
    pub max_file_cache_bytes: u64,
    /// `Access-Control-Allow-Origin` for HTTP delivery; `*` when not configured.
    pub cors_origin: String,
    /// Idle time after which an HLS viewer session ends.
    pub hls_session_timeout_secs: u32,
    /// How long the packager keeps serving an unpublished stream's segments before it
    /// frees them in memory and on disk (`hls_stream_grace`).
    pub hls_stream_grace_secs: u32,
    /// Audio a new Icecast listener of an audio-only stream starts with, in bytes
    /// (`icecast_burst_size`, icecast2's `burst-size`).
    pub icecast_burst_bytes: u32,
    /// Where the ingest worker browses for NDI sources: IP addresses of local
    /// interfaces, `*` for all; empty: no NDI discovery (`ndi_discovery_interfaces`).
    pub ndi_discovery_interfaces: Vec<String>,
    /// Bounds on the HTTP delivery port's connections.
    pub http_limits: HttpLimits,
}

/// Bounds on the HTTP(S) delivery port (`http_max_connections`,
/// `http_max_connections_per_ip`, `http_header_timeout`): a client that opens thousands
/// of connections or trickles its request heads holds a bounded share of the packager.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpLimits {
    pub max_connections: u32,
    pub max_connections_per_ip: u32,
    /// A request head must be complete this long after the connection opened or the
    /// previous answer went out.
    pub header_timeout_secs: u32,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            max_connections: 100_000,
            max_connections_per_ip: 1_000,
            header_timeout_secs: 30,
        }
    }
}

/// What a listening socket is for. The descriptor itself travels beside the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ListenerSpec {
    pub role: ListenerRole,
    pub addr: SocketAddr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ListenerRole {
    /// RTMP over TCP.
    Rtmp,
    /// Plain HTTP delivery (HLS, Icecast).
    Http,
    /// HTTPS delivery; the certificate comes with [`TlsMaterial`].
    Https,
    // Datagram sockets from here on (bound, not listening). Appended after the TCP roles:
    // bincode encodes the variant index.
    /// MPEG-TS over UDP, unicast or a joined multicast group (`Cameras`, protocol `udp`).
    Udp,
    /// An SRT listener's UDP socket (`Cameras`, protocol `srt`, receive mode `listen`).
    Srt,
    /// A RIST listener's UDP socket (`Cameras`, protocol `rist`, receive mode `listen`).
    Rist,
    /// RTSP over TCP (`RtspSettings`); a TCP role appended after the datagram ones
    /// because bincode encodes the variant index.
    Rtsp,
    /// RTSP over TLS (`RtspSettings.tls_interfaces`); the certificate comes with
    /// [`TlsMaterial`], as for [`ListenerRole::Https`].
    Rtsps,
    /// WebRTC's ICE port over UDP (`WebRtcSettings`): every session's STUN, DTLS and SRTP.
    WebRtcUdp,
    /// WebRTC's ICE-TCP port (RFC 6544 passive candidates, RFC 4571 framing), for
    /// networks that block UDP.
    WebRtcTcp,
}

impl ListenerRole {
    /// Whether the socket is a UDP socket rather than a listening TCP socket.
    pub fn is_datagram(self) -> bool {
        match self {
            ListenerRole::Rtmp
            | ListenerRole::Http
            | ListenerRole::Https
            | ListenerRole::Rtsp
            | ListenerRole::Rtsps
            | ListenerRole::WebRtcTcp => false,
            ListenerRole::Udp
            | ListenerRole::Srt
            | ListenerRole::Rist
            | ListenerRole::WebRtcUdp => true,
        }
    }
}

/// A certificate chain and its private key, PEM-encoded, already validated by the
/// supervisor.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct TlsMaterial {
    pub certificate_chain_pem: Vec<u8>,
    pub private_key_pem: Vec<u8>,
}

impl std::fmt::Debug for TlsMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material into a log.
        f.debug_struct("TlsMaterial")
            .field("certificate_chain_pem", &self.certificate_chain_pem.len())
            .field("private_key_pem", &"<redacted>")
            .finish()
    }
}

/// HLS encryption keys from the DRM settings file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DrmSettings {
    pub hls_aes128: Vec<HlsAes128Key>,
}

/// AES-128 encryption of one app (or one stream of it) for HLS.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct HlsAes128Key {
    pub app: String,
    /// Empty: every stream of the app.
    pub stream: String,
    pub key: [u8; 16],
    /// Where players fetch the key; the operator's key server.
    pub key_uri: String,
}

impl std::fmt::Debug for HlsAes128Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HlsAes128Key")
            .field("app", &self.app)
            .field("stream", &self.stream)
            .field("key", &"<redacted>")
            .field("key_uri", &self.key_uri)
            .finish()
    }
}

/// Which side of a transport a stats query asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StatsDirection {
    Senders,
    Receivers,
}

/// SCTE-35 cue to insert.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Scte35Cue {
    /// Leave the programme for an ad break; `duration_secs` schedules the return.
    /// `time_signal`: sent as a time_signal with a Provider Placement Opportunity
    /// segmentation descriptor instead of a splice_insert.
    Out {
        duration_secs: Option<u32>,
        #[serde(default)]
        time_signal: bool,
    },
    /// Return to the programme.
    In,
}

/// What the supervisor asks of a worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum WorkerRequest {
    /// Liveness check that also collects counters; answered with [`WorkerReply::Counters`].
    Heartbeat,
    ListSessions,
    /// Ends the sessions with these ids; answered with the ids that were found here.
    DeleteSessions(Vec<u64>),
    ListStreams,
    ListPublishers,
    /// Disconnects publishers with these ids and refuses them from now on.
    DenyPublishers(Vec<String>),
    MpegtsStatus,
    SrtStats(StatsDirection),
    RistStats(StatsDirection),
    NdiList,
    IcecastInfo {
        app: String,
        stream: String,
    },
    IcecastMetadata {
        app: String,
        stream: String,
        title: String,
        url: String,
    },
    Scte35 {
        app: String,
        stream: String,
        cue: Scte35Cue,
    },
    ServerPlaylists,
    DvrStatus {
        /// `(app, stream)` to restrict the answer to one archive.
        stream: Option<(String, String)>,
        timeline: bool,
    },
    DvrCleanup {
        app: String,
        stream: String,
        target_depth_minutes: Option<u64>,
        from: Option<i64>,
        to: Option<i64>,
    },
    /// New rules after a reload; the worker applies what concerns it.
    ApplyRules(Box<Rules>),
    /// The complete new set of listeners of this worker; descriptors attached in order.
    SetListeners(Vec<ListenerSpec>),
    SetTls(TlsMaterial),
    SetDrm(DrmSettings),
    /// Drain and exit.
    Shutdown,
    /// State of every active re-publishing push.
    RepublishStats,
    /// Every live stream and where its producer serves it (full snapshot).
    StreamRegistry(Vec<crate::bus::StreamLocation>),
    /// One page of this worker's sessions: ids above `after_id`, ascending, at most
    /// `limit` (and at most [`crate::paging::MAX_PAGE_SESSIONS`] and about
    /// [`crate::paging::PAGE_BYTES`]); answered with [`WorkerReply::SessionsPage`]. The
    /// supervisor asks page after page, so no answer comes near the frame limit however
    /// many sessions a worker holds.
    ListSessionsPage {
        after_id: u64,
        limit: u32,
    },
    /// Drain for a rolling upgrade (`true`): refuse new viewers (RTMP plays, HLS
    /// sessions, HTTP listeners) while the open ones go on; `false` ends the drain.
    SetDraining(bool),
    /// The transcoder's transcodes, one JSON object each ([`WorkerReply::JsonItems`]).
    Transcodes,
    /// A change of the cluster registry's copy; answered with [`WorkerReply::Done`].
    Cluster(crate::cluster::ClusterUpdate),
}

/// A worker's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum WorkerReply {
    Counters(Counters),
    Sessions(Vec<SessionInfo>),
    SessionsDeleted(Vec<u64>),
    Streams(Vec<LiveStream>),
    Publishers(Vec<Publisher>),
    Cameras(Vec<CameraStatus>),
    /// JSON documents passed through as text (librist's stats, for example).
    JsonItems(Vec<String>),
    Icecast(IcecastInfo),
    ServerPlaylists(Vec<ServerPlaylistEntry>),
    DvrArchives(Vec<DvrArchive>),
    Done,
    /// The named stream or archive does not exist on this worker.
    NotFound,
    /// The request was understood but could not be carried out.
    Failed(String),
    RepublishStats(Vec<RepublishStatus>),
    /// A page of [`WorkerRequest::ListSessionsPage`]; `more`: ask again after the last id.
    SessionsPage {
        sessions: Vec<SessionInfo>,
        more: bool,
    },
    /// The request failed for a typed reason (see [`crate::failure`]); replaces
    /// `NotFound` and `Failed`, which stay decodable for older workers.
    Error {
        kind: crate::failure::FailureKind,
        message: String,
    },
}

impl WorkerReply {
    /// A typed failure reply.
    pub fn error(kind: crate::failure::FailureKind, message: impl Into<String>) -> Self {
        Self::Error {
            kind,
            message: message.into(),
        }
    }

    /// The failure this reply carries, if it is one, whichever encoding the worker used.
    pub fn failure(&self) -> Option<(crate::failure::FailureKind, &str)> {
        match self {
            Self::Error { kind, message } => Some((*kind, message)),
            Self::NotFound => Some((crate::failure::FailureKind::NotFound, "")),
            Self::Failed(message) => Some((crate::failure::FailureKind::Internal, message)),
            _ => None,
        }
    }
}

/// Things a worker tells the supervisor without being asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum WorkerEvent {
    StreamPublished {
        app: String,
        stream: String,
    },
    StreamUnpublished {
        app: String,
        stream: String,
    },
    /// A publish was refused because `holder` holds the name in the cluster registry.
    ClusterConflict {
        app: String,
        stream: String,
        holder: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame;

    fn sample_request() -> SupervisorToWorker {
        SupervisorToWorker::Request {
            id: 7,
            request: WorkerRequest::DeleteSessions(vec![1, 1 << 40]),
        }
    }

    /// Frames written by this version must stay decodable by later ones: if this test
    /// fails, a variant was inserted or reordered instead of appended.
    #[test]
    fn golden_frames_stay_decodable() {
        let golden_request = "0000000e000107020201fd0000010000000000";
        let frame = frame::encode(&sample_request(), 0).unwrap();
        assert_eq!(hex::encode(&frame), golden_request);

        let reply = WorkerToSupervisor::Reply {
            id: 7,
            reply: WorkerReply::Counters(Counters {
                connections: 3,
                bytes_sent: 1000,
                bytes_received: 2000,
                ram_cache_bytes: 0,
                file_cache_bytes: 0,
            }),
        };
        let golden_reply = "0000000c0001070003fb03e8fb07d00000";
        let frame = frame::encode(&reply, 0).unwrap();
        assert_eq!(hex::encode(&frame), golden_reply);

        let mut buffer = hex::decode(golden_request).unwrap();
        let raw = frame::split_frame(&mut buffer).unwrap().unwrap();
        assert_eq!(
            frame::decode::<SupervisorToWorker>(&raw.payload).unwrap(),
            sample_request()
        );
        let mut buffer = hex::decode(golden_reply).unwrap();
        let raw = frame::split_frame(&mut buffer).unwrap().unwrap();
        assert_eq!(
            frame::decode::<WorkerToSupervisor>(&raw.payload).unwrap(),
            reply
        );
    }

    /// The paging variants were appended: the old indices keep their meaning.
    #[test]
    fn paging_variants_come_last() {
        let request = SupervisorToWorker::Request {
            id: 1,
            request: WorkerRequest::ListSessionsPage {
                after_id: 5,
                limit: 2,
            },
        };
        let frame = frame::encode(&request, 0).unwrap();
        // Payload: Request (1), id 1, variant 23, after_id 5, limit 2.
        assert_eq!(hex::encode(&frame[5..]), "0101170502");
        let reply = WorkerToSupervisor::Reply {
            id: 1,
            reply: WorkerReply::SessionsPage {
                sessions: Vec::new(),
                more: true,
            },
        };
        let frame = frame::encode(&reply, 0).unwrap();
        assert_eq!(hex::encode(&frame[5..]), "01010e0001");
    }

    #[test]
    fn key_material_is_not_printed() {
        let tls = TlsMaterial {
            certificate_chain_pem: b"cert".to_vec(),
            private_key_pem: b"-----BEGIN PRIVATE KEY----- secret".to_vec(),
        };
        assert!(!format!("{tls:?}").contains("secret"));
    }
}
