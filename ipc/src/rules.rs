//! The validated run-time rules (`rules.conf`) as every worker receives them.
//!
//! The supervisor parses the JSON file into its own raw structs, validates it and builds
//! these types; workers trust them. They carry no serde attributes that would break
//! bincode (no skipping, no flattening).
//!
//! What a stream is delivered as ([`DeliverySettings`]) is kept apart from how RTMP is
//! listened to ([`RtmpSettings`]): the packager and the other output workers read only
//! `delivery`. Old `rules.conf` files put outputs, segment duration and ABR groups under
//! `RtmpSettings`; the supervisor translates them into `delivery` when it validates, and
//! keeps `rtmp` as written because the management API echoes it.

pub use crate::access_rules::{AccessSettings, PublishControl};
pub use crate::interface::RtmpInterface;
pub use crate::playlist_rules::ServerPlaylistSettings;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rules {
    pub rtmp: RtmpSettings,
    pub republish: Vec<RepublishRule>,
    pub cameras: Vec<CameraSettings>,
    /// MPEG-TS outputs over SRT, RIST and UDP (`TsOutputs`), served by the ingest worker.
    pub ts_outputs: Vec<TsOutputSettings>,
    /// Streams the rtmp worker pulls from other servers (`RtmpPullSources`).
    pub pull_sources: Vec<PullSource>,
    /// Edge mode (`Edge`): apps whose every stream is pulled on demand from origins.
    pub edges: Vec<EdgeRule>,
    /// Which outputs each stream gets, segment durations and ABR groups.
    pub delivery: DeliverySettings,
    /// Ad insertion (SCTE-35) per app or stream (`AdInsertion`).
    pub ad_insertion: Vec<AdInsertionSettings>,
    /// Signed playback (`wmsAuthSign`) per app or stream (`PlaybackProtection`).
    pub protection: Vec<PlaybackProtection>,
    /// Who may send Icecast sources to the packager's HTTP port (`IcecastSources`).
    pub icecast_sources: Vec<IcecastSourceSettings>,
    /// Streams whose audio the packager sends as a source to another Icecast server
    /// (`IcecastPush`).
    pub icecast_pushes: Vec<IcecastPushSettings>,
    /// DVR archives (`Dvr`): location, segment length, retention.
    pub dvr: crate::dvr_rules::DvrSettings,
    /// The server playlist file (`ServerPlaylists`), played out by the ingest worker.
    pub server_playlists: Option<ServerPlaylistSettings>,
    /// The RTSP server (`RtspSettings`), served by the rtsp worker.
    pub rtsp: crate::rtsp_rules::RtspSettings,
    /// WebRTC (`WebRtcSettings`): WHEP playback and WHIP publishing, served by the
    /// webrtc worker.
    pub webrtc: crate::webrtc_rules::WebRtcSettings,
    /// Live transcoding (`Transcoding`): ABR ladders made by the transcoder worker.
    #[serde(default)]
    pub transcoding: crate::transcode_rules::TranscodingSettings,
    /// Who may publish to an app (derived from `RtmpSettings`; see
    /// [`crate::access_rules`]). The gate reads this, never `rtmp`.
    pub access: AccessSettings,
    /// The cluster registry (`Cluster`); `None`: this server is on its own.
    pub cluster: Option<crate::cluster::ClusterSettings>,
}

impl Rules {
    /// The ABR group published as `app/stream`: a `Delivery.abr` group, else the group
    /// of a transcoded stream's renditions (`<source>_abr`).
    pub fn abr_group(&self, app: &str, stream: &str) -> Option<std::borrow::Cow<'_, AbrGroup>> {
        match self.delivery.abr_group(app, stream) {
            Some(group) => Some(std::borrow::Cow::Borrowed(group)),
            None => self
                .transcoded_abr_group(app, stream)
                .map(std::borrow::Cow::Owned),
        }
    }

    /// The group of a transcoded source's renditions named `app/stream`
    /// (`<source>_abr`), if a ladder covers the source.
    fn transcoded_abr_group(&self, app: &str, stream: &str) -> Option<AbrGroup> {
        let members = self.transcoding.abr_members(app, stream)?;
        Some(AbrGroup {
            app: app.to_owned(),
            stream: stream.to_owned(),
            streams: members
                .into_iter()
                .map(|stream| StreamRef {
                    app: app.to_owned(),
                    stream,
                })
                .collect(),
        })
    }

    /// The ABR groups that have `app/stream` as a member: `Delivery.abr` groups, and
    /// the group of the transcoded source `app/stream` is, or is a rendition of.
    pub fn abr_groups_with(&self, app: &str, stream: &str) -> Vec<std::borrow::Cow<'_, AbrGroup>> {
        let member = |g: &AbrGroup| g.streams.iter().any(|m| m.app == app && m.stream == stream);
        let mut groups: Vec<std::borrow::Cow<'_, AbrGroup>> = (self.delivery.abr.iter())
            .filter(|g| member(g))
            .map(std::borrow::Cow::Borrowed)
            .collect();
        // The member less a `_<rendition>` suffix that one of the app's ladders names
        // (as many candidates as renditions, however many `_` the name has), else the
        // member itself: a rendition is never a source.
        let ladders = self.transcoding.ladders.iter().filter(|l| l.app == app);
        let mut sources: Vec<&str> = ladders
            .flat_map(|l| &l.renditions)
            .filter_map(|r| stream.strip_suffix(r.name.as_str())?.strip_suffix('_'))
            .collect();
        if sources.is_empty() {
            sources.push(stream);
        }
        sources.sort_unstable();
        sources.dedup();
        for source in sources {
            let name = format!("{source}{}", crate::transcode_rules::ABR_SUFFIX);
            if let Some(group) = self.transcoded_abr_group(app, &name).filter(|g| member(g)) {
                groups.push(std::borrow::Cow::Owned(group));
            }
        }
        groups
    }

    /// The ad-insertion settings of `app/stream`: its own entry, else its app's
    /// (an entry with an empty `stream`).
    pub fn ad_insertion_for(&self, app: &str, stream: &str) -> Option<&AdInsertionSettings> {
        crate::scoped::entry_for(&self.ad_insertion, app, stream, |a| (&a.app, &a.stream))
    }

    /// The `IcecastSources` entry of `app/stream`: its own, else its app's.
    pub fn icecast_source_for(&self, app: &str, stream: &str) -> Option<&IcecastSourceSettings> {
        crate::scoped::entry_for(&self.icecast_sources, app, stream, |s| (&s.app, &s.stream))
    }

    /// The playback protection of `app/stream` for `protocol`: its own entry, else its
    /// app's; `None` when playback over `protocol` is open.
    pub fn protection_for(
        &self,
        app: &str,
        stream: &str,
        protocol: ProtectedProtocol,
    ) -> Option<&PlaybackProtection> {
        let of_app = self.protection.iter().filter(|p| p.app == app);
        of_app
            .clone()
            .find(|p| p.stream == stream)
            .or_else(|| of_app.clone().find(|p| p.stream.is_empty()))
            .filter(|p| p.protocols.contains(&protocol))
    }

    /// The edge rule that pulls the streams of `app` from origins, if any.
    pub fn edge_for(&self, app: &str) -> Option<&EdgeRule> {
        self.edges.iter().find(|e| e.apps.iter().any(|a| a == app))
    }

    /// Whether `app/stream` takes SCTE-35 markers from the API (`time_sync` `scte35`).
    pub fn scte35_enabled(&self, app: &str, stream: &str) -> bool {
        self.ad_insertion_for(app, stream)
            .is_some_and(|a| a.time_sync == TimeSync::Scte35)
    }
}

/// Delivery protocols playback protection applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProtectedProtocol {
    Hls,
    MpegTs,
    Rtmp,
    Srt,
    Icecast,
    /// RTSP players (appended: bincode encodes the variant index).
    Rtsp,
    /// WHEP players (WebRTC).
    WebRtc,
}

impl ProtectedProtocol {
    pub const ALL: [ProtectedProtocol; 7] = [
        ProtectedProtocol::Hls,
        ProtectedProtocol::MpegTs,
        ProtectedProtocol::Rtmp,
        ProtectedProtocol::Srt,
        ProtectedProtocol::Icecast,
        ProtectedProtocol::Rtsp,
        ProtectedProtocol::WebRtc,
    ];

    /// The name in `rules.conf`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtectedProtocol::Hls => "HLS",
            ProtectedProtocol::MpegTs => "MPEGTS",
            ProtectedProtocol::Rtmp => "RTMP",
            ProtectedProtocol::Srt => "SRT",
            ProtectedProtocol::Icecast => "ICECAST",
            ProtectedProtocol::Rtsp => "RTSP",
            ProtectedProtocol::WebRtc => "WEBRTC",
        }
    }
}

/// One `PlaybackProtection` entry: an app (empty `stream`) or one stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlaybackProtection {
    pub app: String,
    pub stream: String,
    /// Signing keys; any one verifies (rotation).
    pub keys: Vec<String>,
    pub protocols: Vec<ProtectedProtocol>,
    /// Concurrent sessions per pay-per-view id at most (per delivery worker).
    pub ppv_max_sessions: Option<u32>,
    /// Clock difference tolerated, seconds.
    pub skew_secs: u32,
}

/// How ad breaks are timed for a stream (`time_sync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TimeSync {
    /// SCTE-35 markers in the stream (`scte35`).
    Scte35,
    /// Markers are not taken from the API (`none`).
    None,
}

/// How HLS media playlists show SCTE-35 breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum HlsCueTags {
    /// `#EXT-X-DATERANGE` with `SCTE35-OUT`/`SCTE35-IN` (RFC 8216 §4.3.2.7.1).
    #[default]
    DateRange,
    /// `#EXT-X-CUE-OUT` / `#EXT-X-CUE-OUT-CONT` / `#EXT-X-CUE-IN`.
    Cue,
    /// `#EXT-X-SPLICEPOINT-SCTE35` with the section in base64.
    SplicePoint,
}

/// One `IcecastSources` entry: who may send an Icecast source (`PUT`/`SOURCE`
/// `/<app>/<stream>`) for an app (empty `stream`) or one stream.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IcecastSourceSettings {
    pub app: String,
    pub stream: String,
    pub user: String,
    /// Never printed: [`std::fmt::Debug`] shows `***`.
    pub password: String,
}

impl std::fmt::Debug for IcecastSourceSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IcecastSourceSettings")
            .field("app", &self.app)
            .field("stream", &self.stream)
            .field("user", &self.user)
            .field("password", &"***")
            .finish()
    }
}

/// One `AdInsertion` entry: an app (empty `stream`) or one stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdInsertionSettings {
    pub app: String,
    pub stream: String,
    pub time_sync: TimeSync,
    pub hls_tags: HlsCueTags,
}

/// One `IcecastPush` entry: the audio of `app/stream` sent as an Icecast source
/// (`PUT <mount>`) to another server. The supervisor has split the entry's URL.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IcecastPushSettings {
    pub app: String,
    pub stream: String,
    /// Host name or IP address of the Icecast server (no brackets around IPv6).
    pub host: String,
    pub port: u16,
    /// The mount point, starting with `/`.
    pub mount: String,
    /// Source user name (`source` unless the URL names one).
    pub user: String,
    /// Never printed: [`std::fmt::Debug`] shows `***`.
    pub password: String,
    /// `Ice-Name`, `Ice-Description`, `Ice-Genre`; empty ones are not sent.
    pub name: String,
    pub description: String,
    pub genre: String,
    /// `Ice-Public`: whether the server may list the stream in directories.
    pub public: bool,
}

impl IcecastPushSettings {
    /// `host:port/mount`, for log lines (no credentials).
    pub fn target(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}{}", self.host, self.port, self.mount)
        } else {
            format!("{}:{}{}", self.host, self.port, self.mount)
        }
    }
}

impl std::fmt::Debug for IcecastPushSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IcecastPushSettings")
            .field("app", &self.app)
            .field("stream", &self.stream)
            .field("target", &self.target())
            .field("user", &self.user)
            .field("password", &"***")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("genre", &self.genre)
            .field("public", &self.public)
            .finish()
    }
}

/// Output protocols a stream can be packaged into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OutputProtocol {
    Hls,
    Icecast,
    MpegTs,
    Rtmp,
}

impl OutputProtocol {
    pub const ALL: [OutputProtocol; 4] = [
        OutputProtocol::Hls,
        OutputProtocol::Icecast,
        OutputProtocol::MpegTs,
        OutputProtocol::Rtmp,
    ];

    /// The name used in `rules.conf` and by the API.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputProtocol::Hls => "HLS",
            OutputProtocol::Icecast => "ICECAST",
            OutputProtocol::MpegTs => "MPEGTS",
            OutputProtocol::Rtmp => "RTMP",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == name)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RtmpSettings {
    pub interfaces: Vec<RtmpInterface>,
    /// Publishing credentials for every app without its own; empty when unset.
    pub login: String,
    pub password: String,
    /// Default HLS chunk duration in seconds.
    pub duration: u32,
    pub protocols: Vec<OutputProtocol>,
    pub apps: Vec<AppSettings>,
    pub abr: Vec<AbrGroup>,
    pub limits: RtmpLimits,
}

impl Default for RtmpSettings {
    fn default() -> Self {
        Self {
            interfaces: vec![RtmpInterface {
                ip: "*".to_owned(),
                port: 1935,
            }],
            login: String::new(),
            password: String::new(),
            duration: 6,
            protocols: vec![OutputProtocol::Hls],
            apps: Vec::new(),
            abr: Vec::new(),
            limits: RtmpLimits::default(),
        }
    }
}

/// Bounds on what RTMP clients can make the server hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RtmpLimits {
    pub max_connections: u32,
    pub handshake_timeout_secs: u32,
    /// A publisher that sends no media for this long is closed.
    pub publisher_idle_timeout_secs: u32,
    pub max_message_bytes: u32,
    /// After a frame arrives, a stream's players are written once this long has passed,
    /// with every frame that came meanwhile (an encoder sends a video frame and its audio
    /// within a millisecond or two): one system call per player for them all. 0 writes
    /// on every frame's arrival.
    pub play_coalesce_ms: u32,
    /// `TCP_NODELAY` on playing connections. Off (the default, as nginx-rtmp and SRS),
    /// the kernel holds a write's last partial segment while an earlier partial segment
    /// is unacknowledged: fewer packets per player, no delay while the player's round
    /// trip is shorter than the frame interval. On, for players far away that need
    /// every byte at once.
    pub play_nodelay: bool,
    /// Publishing connections at most (apart from `max_connections`, so players of
    /// made-up streams cannot take publishers' places).
    pub max_publishers: u32,
    /// Playing connections at most.
    pub max_players: u32,
    /// Connections from one IP address at most.
    pub max_connections_per_ip: u32,
    /// A player of a stream that has no publisher is closed after this long.
    pub player_wait_timeout_secs: u32,
    /// After `NetStream.Play.UnpublishNotify`, a player is closed if no publisher comes
    /// back within this long.
    pub unpublish_grace_secs: u32,
}

impl Default for RtmpLimits {
    fn default() -> Self {
        Self {
            max_connections: 10_000,
            handshake_timeout_secs: 10,
            publisher_idle_timeout_secs: 10,
            max_message_bytes: 8 * 1024 * 1024,
            play_coalesce_ms: 2,
            play_nodelay: false,
            max_publishers: 1_000,
            max_players: 10_000,
            max_connections_per_ip: 1_000,
            player_wait_timeout_secs: 30,
            unpublish_grace_secs: 10,
        }
    }
}

/// Per-application overrides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppSettings {
    pub app: String,
    /// Empty login: the global credentials apply.
    pub login: String,
    pub password: String,
    pub duration: Option<u32>,
    pub protocols: Option<Vec<OutputProtocol>>,
    pub publish_control: Option<PublishControl>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbrGroup {
    pub app: String,
    pub stream: String,
    pub streams: Vec<StreamRef>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamRef {
    pub app: String,
    pub stream: String,
}

/// How a re-publisher authenticates at its destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AuthSchema {
    None,
    /// The service's own Adobe-style challenge (`NIMBLE`, alias `STROM`).
    Native,
    Akamai,
    Limelight,
    Periscope,
}

impl AuthSchema {
    /// The identifier deployed clients use.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthSchema::None => "NONE",
            AuthSchema::Native => "NIMBLE",
            AuthSchema::Akamai => "AKAMAI",
            AuthSchema::Limelight => "LIMELIGHT",
            AuthSchema::Periscope => "PERISCOPE",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "NONE" => AuthSchema::None,
            "NIMBLE" | "STROM" => AuthSchema::Native,
            "AKAMAI" => AuthSchema::Akamai,
            "LIMELIGHT" => AuthSchema::Limelight,
            "PERISCOPE" => AuthSchema::Periscope,
            _ => return None,
        })
    }
}

/// Who created a re-publishing rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RuleOwner {
    /// `rules.conf` (the control-panel side); API owner number 0.
    Config,
    /// `POST /manage/rtmp/republish`; API owner number 1. Not persisted.
    Api,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepublishRule {
    pub id: String,
    pub owner: RuleOwner,
    pub src_app: String,
    /// Empty: every stream of `src_app`.
    pub src_stream: String,
    pub dest_addr: String,
    pub dest_port: u16,
    pub dest_app: String,
    pub dest_stream: String,
    pub dest_app_params: String,
    pub dest_stream_params: String,
    pub auth_schema: AuthSchema,
    pub dest_login: String,
    pub dest_password: String,
    pub keep_src_stream_params: bool,
    pub ssl: bool,
}

/// An MPEG-TS input (`Cameras` in the API).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CameraSettings {
    pub id: String,
    pub ip: String,
    pub port: u16,
    /// `udp`, `srt` or `rist`.
    pub protocol: String,
    /// `listen` or `pull` for srt and rist.
    pub receive_mode: String,
    pub parameters: Vec<(String, String)>,
    /// `<app>/<stream>` the input is published as.
    pub app: String,
    pub stream: String,
}

impl CameraSettings {
    /// The value of parameter `name`, if the entry sets it.
    pub fn parameter(&self, name: &str) -> Option<&str> {
        self.parameters
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// An MPEG-TS output (`TsOutputs` in `rules.conf`): a live stream sent out over SRT,
/// RIST or UDP by the ingest worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TsOutputSettings {
    pub id: String,
    /// `srt`, `rist` or `udp`.
    pub protocol: String,
    /// `listen` (srt, rist: receivers call in) or `push` (srt, rist, udp: strom sends
    /// to `ip:port`).
    pub mode: String,
    pub ip: String,
    pub port: u16,
    pub parameters: Vec<(String, String)>,
    /// The source `<app>/<stream>`; both empty only for an SRT listener whose callers
    /// choose the stream with `streamid` (`#!::r=app/stream,m=request`).
    pub app: String,
    pub stream: String,
}

impl TsOutputSettings {
    /// The value of parameter `name`, if the entry sets it.
    pub fn parameter(&self, name: &str) -> Option<&str> {
        self.parameters
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// When a pulled source is pulled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PullMode {
    /// All the time, re-pulled with backoff when the source fails.
    Always,
    /// While the stream has players or bus subscribers, plus a grace time.
    OnDemand,
}

impl PullMode {
    /// The name used in `rules.conf`.
    pub fn as_str(self) -> &'static str {
        match self {
            PullMode::Always => "always",
            PullMode::OnDemand => "on_demand",
        }
    }
}

/// A stream pulled from another server or camera and published locally as
/// `app/stream`: over RTMP by the rtmp worker, over RTSP by the rtsp worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullSource {
    pub app: String,
    pub stream: String,
    /// `rtmp://host[:port]/app/stream`, `rtmps://...`, `rtsp://[user:pass@]host[:port]/...`
    /// or `rtsps://...`.
    pub url: String,
    pub mode: PullMode,
    /// On demand: how long the pull outlives its last player.
    pub idle_grace_secs: u32,
    /// How an RTSP source sends its RTP; ignored for RTMP.
    pub rtsp_transport: RtspTransport,
}

impl PullSource {
    /// Whether the rtsp worker pulls it (rather than the rtmp worker).
    pub fn is_rtsp(&self) -> bool {
        self.url.starts_with("rtsp://") || self.url.starts_with("rtsps://")
    }
}

/// RTP over the RTSP connection (interleaved) or over UDP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum RtspTransport {
    #[default]
    Tcp,
    Udp,
}

/// Edge mode (`Edge`): any stream of `apps` that a viewer asks for and that is not live
/// here is pulled over RTMP or SRT from the first origin that has it, while it has
/// viewers (plus `idle_grace_secs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EdgeRule {
    pub apps: Vec<String>,
    /// `rtmp://host[:port]` (the stream is pulled as `<app>/<stream>`) or
    /// `rtmp://host[:port]/<origin app>`; `rtmps://` too; or, all of a rule's origins
    /// alike, `srt://host:port[?passphrase=..&latency=..]` (an origin's SRT output
    /// listener, asked with streamid `#!::r=<app>/<stream>,m=request`). Tried in order.
    pub origins: Vec<String>,
    /// How long a pull outlives its last viewer.
    pub idle_grace_secs: u32,
}

impl EdgeRule {
    /// Whether the rule pulls over SRT (the ingest worker does), not RTMP (the rtmp
    /// worker does). Validation makes all of a rule's origins one kind.
    pub fn is_srt(&self) -> bool {
        self.origins
            .first()
            .is_some_and(|origin| is_srt_origin(origin))
    }

    /// The URL that pulls `app/stream` from `origin`, as status reports it (an SRT
    /// origin's query, which may hold its passphrase, is left out).
    pub fn url(origin: &str, app: &str, stream: &str) -> String {
        if is_srt_origin(origin) {
            let address = srt_origin_parts(origin).0;
            return format!("srt://{address}?streamid={}", srt_request_id(app, stream));
        }
        let origin = origin.trim_end_matches('/');
        let has_app = origin
            .split_once("://")
            .is_some_and(|(_, rest)| rest.contains('/'));
        if has_app {
            format!("{origin}/{stream}")
        } else {
            format!("{origin}/{app}/{stream}")
        }
    }
}

/// Whether an `Edge` origin is an SRT one (`srt://`).
pub fn is_srt_origin(origin: &str) -> bool {
    origin
        .get(..6)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("srt://"))
}

/// An SRT origin's `host:port` and its query parameters (`passphrase`, `latency`) as
/// name/value pairs, as SRT options are written for `Cameras`.
pub fn srt_origin_parts(origin: &str) -> (&str, Vec<(String, String)>) {
    let rest = origin.get(6..).unwrap_or_default();
    let (address, query) = rest.split_once('?').unwrap_or((rest, ""));
    let parameters = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (name.to_owned(), value.to_owned())
        })
        .collect();
    (address.trim_end_matches('/'), parameters)
}

/// The streamid an SRT caller asks an origin's output listener for `app/stream` with.
pub fn srt_request_id(app: &str, stream: &str) -> String {
    format!("#!::r={app}/{stream},m=request")
}

/// What strom's SRT edge pulls add to their streamid: a strom origin refuses such a call
/// in the handshake when it does not have the stream and cannot start it, so that the edge moves
/// on to its next origin instead of waiting for media that will not come. Other servers
/// ignore the key (the access-control syntax lets a caller add its own).
pub const SRT_PULL_MARK: (&str, &str) = ("strom", "pull");

/// The streamid a strom edge calls an SRT origin with for `app/stream`.
pub fn srt_pull_request_id(app: &str, stream: &str) -> String {
    let (key, value) = SRT_PULL_MARK;
    format!("{},{key}={value}", srt_request_id(app, stream))
}

/// An output a stream can be delivered as. [`DeliveryOutput::Scte35`] is accepted and
/// carried (`AdInsertion` switches SCTE-35 on); the others are produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DeliveryOutput {
    Hls,
    Dash,
    LlHls,
    Icecast,
    MpegTs,
    Dvr,
    Scte35,
}

impl DeliveryOutput {
    pub const ALL: [DeliveryOutput; 7] = [
        DeliveryOutput::Hls,
        DeliveryOutput::Dash,
        DeliveryOutput::LlHls,
        DeliveryOutput::Icecast,
        DeliveryOutput::MpegTs,
        DeliveryOutput::Dvr,
        DeliveryOutput::Scte35,
    ];

    /// The name used in `rules.conf`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryOutput::Hls => "HLS",
            DeliveryOutput::Dash => "DASH",
            DeliveryOutput::LlHls => "LLHLS",
            DeliveryOutput::Icecast => "ICECAST",
            DeliveryOutput::MpegTs => "MPEGTS",
            DeliveryOutput::Dvr => "DVR",
            DeliveryOutput::Scte35 => "SCTE35",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.as_str() == name)
    }

    /// The delivery output a legacy `RtmpSettings` protocol stands for; `RTMP` is
    /// playback over the RTMP listener, not a delivery output.
    pub fn from_protocol(protocol: OutputProtocol) -> Option<Self> {
        match protocol {
            OutputProtocol::Hls => Some(DeliveryOutput::Hls),
            OutputProtocol::Icecast => Some(DeliveryOutput::Icecast),
            OutputProtocol::MpegTs => Some(DeliveryOutput::MpegTs),
            OutputProtocol::Rtmp => None,
        }
    }
}

/// Delivery for every stream: global defaults, per-app and per-stream overrides (a
/// stream's entry beats its app's, which beats the defaults; each field separately).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeliverySettings {
    pub outputs: Vec<DeliveryOutput>,
    /// Target segment duration in seconds.
    pub segment_duration_secs: u32,
    /// Low-Latency HLS part target (`PART-TARGET`) in milliseconds, for the streams
    /// whose outputs include [`DeliveryOutput::LlHls`].
    #[serde(default = "default_part_target_ms")]
    pub part_target_ms: u32,
    /// How DASH manifests address segments (see [`DashAddressing`]).
    #[serde(default)]
    pub dash_segment_addressing: DashAddressing,
    pub apps: Vec<AppDelivery>,
    pub streams: Vec<StreamDelivery>,
    pub abr: Vec<AbrGroup>,
}

impl Default for DeliverySettings {
    /// What an empty `rules.conf` means: HLS in 6-second segments (the defaults of
    /// [`RtmpSettings`], from which old files take their delivery).
    fn default() -> Self {
        Self {
            outputs: vec![DeliveryOutput::Hls],
            segment_duration_secs: 6,
            part_target_ms: default_part_target_ms(),
            dash_segment_addressing: DashAddressing::default(),
            apps: Vec::new(),
            streams: Vec::new(),
            abr: Vec::new(),
        }
    }
}

/// How a DASH `SegmentTemplate` says where its segments are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum DashAddressing {
    /// A `SegmentTimeline` lists each segment's start and duration: exact whatever the
    /// segments' durations (the default).
    #[default]
    Timeline,
    /// `SegmentTemplate@duration` (DASH-IF IOP number-based addressing): players
    /// compute a segment's number from the clock, assuming segments of the nominal
    /// duration. For players that need it (GStreamer 1.22 joining an old stream); the
    /// keyframe interval must divide the segment duration.
    Number,
}

/// A third of a second, rounded up to the millisecond so that 10 frames at 30 fps
/// (333.3 ms, or RTMP's 333/334 ms) fit one part: LL-HLS players then hold back 1.0 s
/// (3 part targets), which hls.js with its catch-up on plays at about 1.4 s glass to
/// glass (BENCHMARKS.md). 333 would cut 9-frame parts and leave a short one at each
/// segment's end.
fn default_part_target_ms() -> u32 {
    334
}

/// Overrides for one app; `None` keeps the global value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppDelivery {
    pub app: String,
    pub outputs: Option<Vec<DeliveryOutput>>,
    pub segment_duration_secs: Option<u32>,
    #[serde(default)]
    pub dash_segment_addressing: Option<DashAddressing>,
}

/// Overrides for one stream; `None` keeps its app's value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamDelivery {
    pub app: String,
    pub stream: String,
    pub outputs: Option<Vec<DeliveryOutput>>,
    pub segment_duration_secs: Option<u32>,
    #[serde(default)]
    pub dash_segment_addressing: Option<DashAddressing>,
}

/// The delivery in force for one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamOutputs<'a> {
    pub outputs: &'a [DeliveryOutput],
    pub segment_duration_secs: u32,
    pub dash_segment_addressing: DashAddressing,
}

impl StreamOutputs<'_> {
    pub fn has(&self, output: DeliveryOutput) -> bool {
        self.outputs.contains(&output)
    }
}

impl DeliverySettings {
    /// The outputs, segment duration and DASH addressing of `app/stream`.
    pub fn for_stream(&self, app: &str, stream: &str) -> StreamOutputs<'_> {
        let app_entry = self.apps.iter().find(|a| a.app == app);
        let stream_entry = self
            .streams
            .iter()
            .find(|s| s.app == app && s.stream == stream);
        let outputs = stream_entry
            .and_then(|s| s.outputs.as_deref())
            .or_else(|| app_entry.and_then(|a| a.outputs.as_deref()))
            .unwrap_or(&self.outputs);
        let segment_duration_secs = stream_entry
            .and_then(|s| s.segment_duration_secs)
            .or_else(|| app_entry.and_then(|a| a.segment_duration_secs))
            .unwrap_or(self.segment_duration_secs);
        let dash_segment_addressing = stream_entry
            .and_then(|s| s.dash_segment_addressing)
            .or_else(|| app_entry.and_then(|a| a.dash_segment_addressing))
            .unwrap_or(self.dash_segment_addressing);
        StreamOutputs {
            outputs,
            segment_duration_secs,
            dash_segment_addressing,
        }
    }

    /// The ABR group published as `app/stream`, if any.
    pub fn abr_group(&self, app: &str, stream: &str) -> Option<&AbrGroup> {
        self.abr.iter().find(|g| g.app == app && g.stream == stream)
    }
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
