//! Status records that workers report and the management API renders.
//!
//! These are the neutral, typed facts; the JSON shapes of the API (field names, digit
//! strings) are the supervisor's concern.

use serde::{Deserialize, Serialize};

/// Running totals a worker reports with every heartbeat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Open client connections (publishers, players, viewers).
    pub connections: u64,
    /// Bytes sent to clients since the worker started; the supervisor derives rates.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Segment and GOP memory in use.
    pub ram_cache_bytes: u64,
    /// Recording and segment files on disk.
    pub file_cache_bytes: u64,
}

/// One viewer or player session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub id: u64,
    pub app: String,
    pub stream: String,
    /// Transmission protocol as the API names it: `RTMP`, `HLS`, ...
    pub protocol: String,
    pub bytes_recv: u64,
    pub bytes_sent: u64,
    pub created: i64,
    pub last_access: i64,
    pub client_ip: String,
    pub user_agent: String,
    pub ppv_id: Option<String>,
    /// Frames this session's reader queue lost because the client fell behind (players
    /// fed from a stream hub); `None` for sessions without one (HLS viewers).
    pub dropped_frames: Option<u64>,
}

/// One live stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveStream {
    pub app: String,
    pub stream: String,
    /// Measured incoming bit rate.
    pub bandwidth_bps: u64,
    pub width: u32,
    pub height: u32,
    /// RFC 6381 codec strings, empty when the stream has no such track.
    pub vcodec: String,
    pub acodec: String,
    /// `RTMP`, `RTSP`, `MPEGTS`, ...
    pub protocol: String,
    pub publish_time: i64,
    /// Set for pulled streams.
    pub source_url: Option<String>,
    /// Set for pushed streams.
    pub publisher_ip: Option<String>,
    /// The latest SCTE-35 markers in the stream, oldest first.
    pub scte35: Vec<Scte35Event>,
}

/// An SCTE-35 marker a stream carried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scte35Event {
    /// Unix seconds when it passed.
    pub time: i64,
    /// `out`, `in`, or the command's name for other commands (`time_signal`, ...).
    pub kind: String,
    pub event_id: Option<u32>,
    /// The planned break, seconds.
    pub duration_secs: Option<f64>,
}

/// A live publisher under publish control.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Publisher {
    pub key: String,
    pub id: String,
    pub ip: String,
    /// `<app>/<stream>`
    pub stream: String,
}

/// An MPEG-TS input as configured and as seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CameraStatus {
    pub id: String,
    pub ip: String,
    pub port: u16,
    pub protocol: String,
    pub receive_mode: String,
    pub parameters: Vec<(String, String)>,
    /// Whether packets are arriving.
    pub online: bool,
    /// Bytes received since the worker started.
    pub bytes_received: u64,
    /// Receive rate, bits per second.
    pub bitrate_bps: u64,
    /// The programs the input's MPEG-TS announces (PAT/PMT).
    pub programs: Vec<TsProgram>,
}

/// One MPEG-TS program of an input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TsProgram {
    pub number: u16,
    pub pmt_pid: u16,
    pub streams: Vec<TsElementaryStream>,
}

/// One elementary stream of a program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TsElementaryStream {
    pub pid: u16,
    pub stream_type: u8,
    /// What strom makes of it: `h264`, `h265`, `aac`, `mp3`, `ac3`, `scte35`, or
    /// `unknown`.
    pub codec: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IcecastInfo {
    pub name: String,
    pub description: String,
    pub genre: String,
    pub bitrate_kbps: u32,
    pub stream_title: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerPlaylistEntry {
    pub stream: String,
    pub block_id: String,
    pub block_duration: u64,
    pub main_stream: String,
    pub main_stream_type: String,
    pub main_stream_duration: u64,
    pub default_stream: Option<String>,
    pub default_stream_type: Option<String>,
    pub default_stream_duration: Option<u64>,
    /// Why the scheduled source does not play (a file that cannot be played, blocks
    /// that overlap); shown as `error` beside the spec's fields.
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DvrArchive {
    pub app: String,
    pub stream: String,
    pub size: u64,
    pub bandwidth: u64,
    pub resolution: String,
    pub acodec: String,
    pub vcodec: String,
    pub path: String,
    pub space_available: u64,
    pub duration: u64,
    /// `(start, duration)` per recording session, filled when asked for.
    pub timeline: Option<Vec<(i64, u64)>>,
    pub periods: u64,
}

/// One active re-publishing push.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepublishStatus {
    pub rule_id: String,
    /// `connected`, `connecting` or `disconnected`.
    pub state: String,
    pub session_duration_secs: u64,
    pub bandwidth_bps: u64,
    pub bytes_recv: u64,
    pub bytes_sent: u64,
    pub retry_count: u64,
    pub owner: crate::rules::RuleOwner,
    pub src_app: String,
    pub src_stream: String,
    pub dest_addr: String,
    pub dest_port: u16,
    pub dest_app: String,
    pub dest_stream: String,
}
