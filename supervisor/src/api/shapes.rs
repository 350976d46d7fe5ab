//! Schemas of the answers that handlers build as JSON values (the shapes of
//! `spec/management-api.md` that vary with the data, such as `mpeg2ts_status` entries),
//! for the OpenAPI document ([`super::openapi`]). The handlers' typed answers
//! ([`super::dto`]) derive their schemas themselves; the contract test (schemathesis
//! against a live server) checks that these stay true.

#![allow(dead_code, non_snake_case)]

use super::dto::{RepublishStat, Rule};
use serde::Serialize;
use utoipa::ToSchema;

/// `{"status": "Ok"}`, with a `note` when there was nothing to do. `status` is `Ok`,
/// `NotFound` or `Not found` as the spec names them per endpoint.
#[derive(Serialize, ToSchema)]
pub struct StatusReply {
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Errors the spec does not define: `{"status": "...", "error": "..."}`.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub status: String,
    pub error: String,
}

#[derive(Serialize, ToSchema)]
pub struct RepublishRules {
    pub rules: Vec<Rule>,
    pub status: String,
}

#[derive(Serialize, ToSchema)]
pub struct RepublishCreated {
    pub status: String,
    pub rule: Rule,
}

#[derive(Serialize, ToSchema)]
pub struct RepublishStats {
    pub stats: Vec<RepublishStat>,
    pub status: String,
}

#[derive(Serialize, ToSchema)]
pub struct NameValue {
    pub name: String,
    pub value: String,
}

/// A program of an input's MPEG-TS (`pmts`).
#[derive(Serialize, ToSchema)]
pub struct TsProgramEntry {
    pub program: u16,
    pub pmt_pid: u16,
    pub streams: Vec<TsStreamEntry>,
}

#[derive(Serialize, ToSchema)]
pub struct TsStreamEntry {
    pub pid: u16,
    #[serde(rename = "type")]
    pub stream_type: u8,
    pub codec: String,
}

/// A `Cameras` entry; the live fields (`st`, `tr`, `bw`, `pmts`) only in the status.
#[derive(Serialize, ToSchema)]
pub struct CameraEntry {
    pub id: String,
    pub ip: String,
    pub port: u16,
    pub protocol: String,
    pub receive_mode: Option<String>,
    pub parameters: Option<Vec<NameValue>>,
    pub app: Option<String>,
    pub stream: Option<String>,
    /// `online` or `offline`.
    pub st: Option<String>,
    /// Bytes received, digits.
    pub tr: Option<String>,
    /// Bits per second, digits.
    pub bw: Option<String>,
    pub pmts: Option<Vec<TsProgramEntry>>,
}

#[derive(Serialize, ToSchema)]
pub struct CamerasReply {
    pub CamerasHash: String,
    pub Cameras: Vec<CameraEntry>,
}

/// One SRT connection's statistics (see README: the nested `stats` object). Receiver
/// entries also carry `stream` and `peer` (the sender entry has neither).
#[derive(Serialize, ToSchema)]
pub struct SrtStatsEntry {
    pub id: String,
    pub stream: Option<String>,
    pub peer: Option<String>,
    pub state: String,
    #[schema(value_type = Object)]
    pub stats: serde_json::Value,
}

#[derive(Serialize, ToSchema)]
pub struct SrtSendersReply {
    pub SrtSenders: Vec<SrtStatsEntry>,
}

#[derive(Serialize, ToSchema)]
pub struct SrtReceiversReply {
    pub SrtReceivers: Vec<SrtStatsEntry>,
}

#[derive(Serialize, ToSchema)]
pub struct NdiSource {
    pub name: String,
    pub host: String,
    pub addresses: Vec<String>,
    pub port: u16,
}

/// One transcode (`GET /manage/transcodes`).
#[derive(Serialize, ToSchema)]
pub struct Transcode {
    pub app: String,
    /// The source stream.
    pub stream: String,
    /// `starting`, `running`, `restarting` or `refused`.
    pub state: String,
    /// The ffmpeg process, while one runs.
    pub pid: Option<u32>,
    /// Seconds the current ffmpeg has run.
    pub uptime_secs: f64,
    /// Source video frames given to ffmpeg in this run, and per second.
    pub input_frames: u64,
    pub input_fps: f64,
    /// ffmpeg's CPU in this run, percent of one core.
    pub cpu_percent: f64,
    /// ffmpeg runs that failed and were started again.
    pub restarts: u32,
    pub last_error: Option<String>,
    pub renditions: Vec<TranscodeRendition>,
}

#[derive(Serialize, ToSchema)]
pub struct TranscodeRendition {
    pub name: String,
    /// The stream it is published as: `<stream>_<name>`.
    pub stream: String,
    pub width: u32,
    pub height: u32,
    /// kbit/s.
    pub video_bitrate: u32,
    /// Video frames published in this run, and per second.
    pub frames: u64,
    pub fps: f64,
    /// Media time made per second of wall time (1.0: real time).
    pub speed: f64,
}

#[derive(Serialize, ToSchema)]
pub struct IcecastInfo {
    #[serde(rename = "icy-name")]
    pub name: String,
    #[serde(rename = "icy-description")]
    pub description: String,
    #[serde(rename = "icy-genre")]
    pub genre: String,
    #[serde(rename = "icy-br")]
    pub bitrate: u32,
    pub streamtitle: String,
}

#[derive(Serialize, ToSchema)]
pub struct IcecastMetadataBody {
    pub streamtitle: String,
    pub streamurl: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct PublisherEntry {
    pub key: String,
    pub id: String,
    pub ip: String,
    pub stream: String,
}

#[derive(Serialize, ToSchema)]
pub struct PublishControlStatus {
    pub PublishControlStatus: Vec<PublisherEntry>,
}

#[derive(Serialize, ToSchema)]
pub struct DenyRequest {
    pub PublishControlDenyRequest: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct DenyStatus {
    pub status: String,
}

#[derive(Serialize, ToSchema)]
pub struct DenyResponse {
    pub PublishControlDenyResponse: DenyStatus,
}

/// `sessions/delete`: a bare array of ids or `{"data": [...]}` (ids as numbers or digit
/// strings).
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum DeleteSessionsBody {
    Ids(Vec<SessionId>),
    Data { data: Vec<SessionId> },
}

/// A session id: a number, or a string of digits.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum SessionId {
    Number(u64),
    Digits(String),
}

/// A re-publishing rule as `POST /manage/rtmp/republish` takes it (spec §2.5).
#[derive(Serialize, ToSchema)]
pub struct RepublishRequest {
    pub src_app: String,
    pub src_stream: Option<String>,
    pub dest_addr: String,
    #[schema(value_type = Object)]
    pub dest_port: serde_json::Value,
    pub dest_app: String,
    pub dest_stream: Option<String>,
}
