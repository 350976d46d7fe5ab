//! `rules.conf`: the JSON document of everything that can change at run time (RTMP
//! settings, re-publishing rules, MPEG-TS/SRT/RIST inputs and outputs, pulled sources,
//! delivery), read into raw serde structs and validated into [`strom_ipc::rules::Rules`],
//! which workers trust as they are. One module per top-level key: [`rtmp`], [`republish`],
//! [`cameras`], [`ts_outputs`], [`pull`], [`edge`], [`delivery`], [`ad_insertion`], [`icecast_sources`], [`icecast_push`],
//! [`server_playlists`]; [`fields`] holds the checks they share.
//!
//! Schema (every top-level key is optional; unknown keys are errors at every level):
//!
//! ```json
//! {
//!   "RtmpSettings": {
//!     "interfaces": [{"ip": "*", "port": 1935}],
//!     "login": "", "password": "",
//!     "duration": 6,
//!     "protocols": ["HLS", "ICECAST", "MPEGTS", "RTMP"],
//!     "apps": [{"app": "live", "login": "", "password": "", "duration": 4,
//!               "protocols": ["HLS"],
//!               "publish_control": {"password": "...", "handler_url": "https://...",
//!                                   "handler_timeout_ms": 3000}}],
//!     "abr": [{"app": "live", "stream": "abr",
//!              "streams": [{"app": "live", "stream": "hi"}, {"app": "live", "stream": "lo"}]}],
//!     "limits": {"max_connections": 10000, "handshake_timeout_secs": 10,
//!                "publisher_idle_timeout_secs": 10, "max_message_bytes": 8388608,
//!                "play_coalesce_ms": 2, "play_nodelay": false, "max_publishers": 1000,
//!                "max_players": 10000,
//!                "max_connections_per_ip": 1000, "player_wait_timeout_secs": 30,
//!                "unpublish_grace_secs": 10}
//!   },
//!   "RtmpRepublishRules": [{"id": "to-cdn", "src_app": "live", "src_stream": "",
//!     "dest_addr": "cdn.example.com", "dest_port": 1935, "dest_app": "ingest",
//!     "dest_stream": "", "auth_schema": "NONE"}],
//!   "Cameras": [{"id": "cam1", "ip": "0.0.0.0", "port": 9000, "protocol": "srt",
//!                "receive_mode": "listen", "parameters": [{"name": "latency", "value": "200"}],
//!                "app": "live", "stream": "cam1"}],
//!   "TsOutputs": [{"id": "out1", "app": "live", "stream": "tv", "protocol": "srt",
//!                  "mode": "listen", "ip": "0.0.0.0", "port": 9100,
//!                  "parameters": [{"name": "latency", "value": "200"}]}],
//!   "RtmpPullSources": [{"app": "live", "stream": "pulled",
//!                        "url": "rtmp://origin.example.com:1935/live/cam",
//!                        "mode": "always", "idle_grace_secs": 30}],
//!   "Edge": [{"apps": ["live"], "idle_grace_secs": 30,
//!             "origins": ["rtmp://origin1.example.com:1935", "rtmp://origin2.example.com"]}],
//!   "Delivery": {
//!     "outputs": ["HLS"], "segment_duration_secs": 6, "part_target_ms": 334,
//!     "dash_segment_addressing": "timeline",
//!     "apps": [{"app": "live", "outputs": ["HLS", "DASH"], "segment_duration_secs": 4}],
//!     "streams": [{"app": "live", "stream": "news", "outputs": ["LLHLS"],
//!                  "segment_duration_secs": 2}],
//!     "abr": [{"app": "live", "stream": "abr",
//!              "streams": [{"app": "live", "stream": "hi"}, {"app": "live", "stream": "lo"}]}]
//!   },
//!   "IcecastPush": [{"app": "live", "stream": "radio",
//!                    "url": "icecast://source:hackme@icecast.example:8000/radio",
//!                    "name": "Radio", "description": "", "genre": "", "public": false}],
//!   "ServerPlaylists": {"Path": "playlist.json", "SyncInterval": 5000},
//!   "Dvr": {"path": "dvr", "segment_duration_secs": 6, "max_depth_minutes": 1440,
//!           "max_size_mb": 0, "min_free_space_mb": 1024,
//!           "streams": [{"app": "live", "stream": "cam", "max_depth_minutes": 60}]},
//!   "RtspSettings": {"interfaces": [{"ip": "*", "port": 554}],
//!                    "limits": {"max_connections": 10000, "max_connections_per_ip": 1000,
//!                               "session_timeout_secs": 60, "max_request_bytes": 16384,
//!                               "player_wait_timeout_secs": 10,
//!                               "request_timeout_secs": 10, "max_udp_pairs": 4096}},
//!   "Transcoding": {"max_concurrent": 4, "ladders": [{"app": "live", "renditions": [
//!                   {"name": "480p", "width": 854, "height": 480, "video_bitrate": 1200,
//!                    "max_fps": 30, "profile": "main", "preset": "veryfast",
//!                    "audio": "passthrough"}]}]},
//!   "Cluster": {"server_id": "origin-1", "etcd_endpoints": ["http://10.0.0.5:2379"],
//!               "advertise": ["rtmp://10.0.0.1:1935"], "lease_ttl_secs": 5,
//!               "key_prefix": "/strom/"}
//! }
//! ```
//!
//! Omitted parts of `RtmpSettings` take [`strom_ipc::rules::RtmpSettings::default`]; an explicitly empty
//! `interfaces` list means no RTMP listener. The `hash` of an `RtmpSettings` node and a
//! top-level `CamerasHash` are accepted and ignored, because panel documents are shaped
//! like the management API's settings responses, which carry them. A re-publishing rule
//! without an `id` gets `cfg-<position, from 1>`. A pulled source's `mode` is `always`
//! (default) or `on_demand`; `idle_grace_secs` (default 30) only matters on demand.
//!
//! Delivery (what the packager and the other output workers produce) is per stream: a
//! `Delivery.streams` entry beats its app's `Delivery.apps` entry, which beats the
//! `Delivery` defaults (`outputs` `["HLS"]`, `segment_duration_secs` 6), each field on its
//! own. Outputs are `HLS`, `DASH`, `LLHLS`, `ICECAST`, `MPEGTS`, `DVR` and `SCTE35`
//! (`SCTE35` is accepted and carried; `AdInsertion` switches SCTE-35 on).
//! `part_target_ms` (100..=1000, default 334, top level only) is the LL-HLS part target
//! of the `LLHLS` streams. Without a `Delivery` key
//! the delivery comes from the legacy keys of `RtmpSettings` (`protocols` less `RTMP`,
//! `duration`, `apps[].protocols/duration`, `abr`), so old files keep their meaning.
//! With a `Delivery` key, it alone decides delivery: the legacy keys are still validated
//! and echoed by `GET /manage/rtmp_settings`, but no longer package anything.
//!
//! Every listening input in `Cameras` (`udp`; `srt` and `rist` with receive mode
//! `listen`) must have its own `ip:port`: the supervisor binds it and lends the socket to
//! the ingest worker. A listening `TsOutputs` entry (`srt` or `rist` in mode `listen`)
//! must not share its UDP port with any other listening input or output on the same
//! address or a wildcard one (see [`ts_outputs`]); an output without an `id` gets
//! `ts-<position, from 1>`.

mod access;
mod ad_insertion;
mod cameras;
mod cluster;
mod delivery;
mod dvr;
mod edge;
pub(crate) mod fields;
mod icecast_push;
mod icecast_sources;
mod protection;
mod pull;
mod republish;
mod rtmp;
mod rtsp;
mod server_playlists;
#[cfg(test)]
mod tests;
mod transcoding;
mod ts_outputs;
#[cfg(test)]
mod ts_outputs_tests;
mod webrtc;

use super::error::{ConfigError, FieldError};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use std::path::Path;
use strom_ipc::rules::Rules;

pub(crate) use fields::{check_http_url, check_media_name, each, unique};
#[allow(unused_imports, reason = "the API's tests and its docs name them")]
pub use republish::{
    MAX_RULE_FIELD_BYTES, MAX_RULE_ID_BYTES, MAX_RULE_PARAMS_BYTES, validate_republish_rule,
};

/// Largest `rules.conf` accepted. Validated rules encode to no more bytes than their
/// JSON, so with the API's own limits (see `api::republish` and `api::publish_control`)
/// a worker's hello stays far below the control channel's message limit
/// (`strom_ipc::frame::MAX_MESSAGE_SIZE`): the size of the configuration never decides
/// whether a worker can start.
pub const MAX_RULES_BYTES: u64 = 64 * 1024 * 1024;

/// Reads and validates `path`.
pub fn load(path: &Path) -> Result<Rules, ConfigError> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_RULES_BYTES + 1).read_to_string(&mut text))
        .map_err(|error| ConfigError::io(path, error))?;
    if text.len() as u64 > MAX_RULES_BYTES {
        let error = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than the limit of {MAX_RULES_BYTES} bytes"),
        );
        return Err(ConfigError::io(path, error));
    }
    parse(&text, path)
}

/// Validates `text`; `path` only names the source in errors.
pub fn parse(text: &str, path: &Path) -> Result<Rules, ConfigError> {
    let mut raw: RawRules = serde_json::from_str(text).map_err(|e| ConfigError::json(path, &e))?;
    let playlists = raw.server_playlists.take();
    let mut rules = raw.validate().map_err(|e| e.in_file(path))?;
    let rules_dir = path.parent().unwrap_or(Path::new(""));
    rules.server_playlists = playlists
        .map(|raw| raw.validate(rules_dir))
        .transpose()
        .map_err(|e| e.under("ServerPlaylists").in_file(path))?;
    Ok(rules)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRules {
    #[serde(rename = "RtmpSettings", default)]
    rtmp: rtmp::RawRtmpSettings,
    /// Kept as JSON so that [`republish`] can name the field of any error.
    #[serde(rename = "RtmpRepublishRules", default)]
    republish: Vec<Value>,
    #[serde(rename = "Cameras", default)]
    cameras: Vec<cameras::RawCamera>,
    #[serde(rename = "CamerasHash", default)]
    _cameras_hash: Option<IgnoredAny>,
    #[serde(rename = "TsOutputs", default)]
    ts_outputs: Vec<ts_outputs::RawTsOutput>,
    #[serde(rename = "RtmpPullSources", default)]
    pull_sources: Vec<pull::RawPullSource>,
    #[serde(rename = "Edge", default)]
    edges: Vec<edge::RawEdge>,
    #[serde(rename = "Delivery", default)]
    delivery: Option<delivery::RawDelivery>,
    #[serde(rename = "Access", default)]
    access: Option<access::RawAccess>,
    #[serde(rename = "AdInsertion", default)]
    ad_insertion: Vec<ad_insertion::RawAdInsertion>,
    #[serde(rename = "PlaybackProtection", default)]
    protection: Vec<protection::RawProtection>,
    #[serde(rename = "IcecastSources", default)]
    icecast_sources: Vec<icecast_sources::RawIcecastSource>,
    #[serde(rename = "IcecastPush", default)]
    icecast_pushes: Vec<icecast_push::RawIcecastPush>,
    /// Validated in [`parse`], which knows the directory of the file.
    #[serde(rename = "ServerPlaylists", default)]
    server_playlists: Option<server_playlists::RawServerPlaylists>,
    #[serde(rename = "Dvr", default)]
    dvr: Option<dvr::RawDvr>,
    #[serde(rename = "RtspSettings", default)]
    rtsp: Option<rtsp::RawRtspSettings>,
    #[serde(rename = "WebRtcSettings", default)]
    webrtc: Option<webrtc::RawWebRtcSettings>,
    #[serde(rename = "Transcoding", default)]
    transcoding: Option<transcoding::RawTranscoding>,
    #[serde(rename = "Cluster", default)]
    cluster: Option<cluster::RawCluster>,
}

impl RawRules {
    fn validate(self) -> Result<Rules, FieldError> {
        let rtmp = self.rtmp.validate().map_err(|e| e.under("RtmpSettings"))?;
        let republish = republish::validate_all(self.republish)?;
        let cameras = cameras::validate_all(self.cameras)?;
        let ts_outputs = ts_outputs::validate_all(self.ts_outputs, &cameras)?;
        let pull_sources = pull::validate_all(self.pull_sources, &cameras)?;
        let edges = edge::validate_all(self.edges)?;
        let delivery = match self.delivery {
            Some(raw) => raw.validate().map_err(|e| e.under("Delivery"))?,
            None => delivery::from_rtmp(&rtmp),
        };
        Ok(Rules {
            access: access::validate(self.access, &rtmp)?,
            rtmp,
            republish,
            cameras,
            ts_outputs,
            pull_sources,
            edges,
            delivery,
            ad_insertion: ad_insertion::validate_all(self.ad_insertion)?,
            protection: protection::validate_all(self.protection)?,
            icecast_sources: icecast_sources::validate_all(self.icecast_sources)?,
            icecast_pushes: icecast_push::validate_all(self.icecast_pushes)?,
            server_playlists: None,
            dvr: match self.dvr {
                Some(raw) => raw.validate().map_err(|e| e.under("Dvr"))?,
                None => Default::default(),
            },
            rtsp: match self.rtsp {
                Some(raw) => raw.validate().map_err(|e| e.under("RtspSettings"))?,
                None => Default::default(),
            },
            webrtc: match self.webrtc {
                Some(raw) => raw.validate().map_err(|e| e.under("WebRtcSettings"))?,
                None => Default::default(),
            },
            transcoding: match self.transcoding {
                Some(raw) => raw.validate().map_err(|e| e.under("Transcoding"))?,
                None => Default::default(),
            },
            cluster: match self.cluster {
                Some(raw) => Some(raw.validate().map_err(|e| e.under("Cluster"))?),
                None => None,
            },
        })
    }
}
