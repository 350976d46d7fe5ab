//! Who publishes a stream (the facts status queries report) and why a publisher could
//! not take one: a leaf that the stream, the hub and the publishing guard all use.

/// Facts about the publisher that status queries report.
#[derive(Debug, Clone)]
pub struct PublisherInfo {
    pub session_id: u64,
    /// The pushing client's address; empty for a pulled source.
    pub ip: String,
    pub publish_time: i64,
    /// The query of the publisher's stream name (`cam?a=1` → `a=1`), which re-publishing
    /// rules with `keep_src_stream_params` carry over.
    pub query: String,
    /// Set when the stream is pulled from another server.
    pub source_url: Option<String>,
    /// Set when the stream is relayed over the bus from the named producer worker: the
    /// producer reports and announces it, this worker only serves it.
    pub relayed_from: Option<String>,
    /// What stream lists name the protocol the stream comes in by (`RTMP`, `SRT`,
    /// `RTSP`, `ICECAST`, `MPEGTS`, `RIST`, `PLAYLIST`).
    pub protocol: &'static str,
    /// Set by the gate for a client it admitted as a publisher (what publish control
    /// lists): its publish-control id, empty without one.
    pub admitted_id: Option<String>,
}

/// Why a publisher could not take a stream.
#[derive(Debug, PartialEq, Eq)]
pub struct AlreadyPublishing;
