//! What a protocol tells the gate about a client ([`Access`]) and what the gate answers
//! when it says no ([`Refusal`]). A protocol adapter only translates: its own credential
//! form (RTMP query or Adobe auth, the SRT streamid, an RTSP URL query or Digest, an HTTP
//! query, Icecast Basic) into an `Access`, and a `Refusal` into its own error.

use crate::key::StreamKey;
use std::net::IpAddr;
use strom_ipc::rules::ProtectedProtocol;

/// The protocol a client came in with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Rtmp,
    Rtsp,
    Srt,
    Icecast,
    /// HLS, LL-HLS and DVR playlists and their segments.
    Hls,
    /// DASH manifests and segments (protected as HLS is: the same HTTP delivery).
    Dash,
    /// MPEG-TS over HTTP (`mpegts.stream`).
    MpegTs,
    /// WHEP players and WHIP publishers.
    WebRtc,
}

impl Protocol {
    /// The `PlaybackProtection` protocol that guards playback over this one.
    pub fn protected_as(self) -> ProtectedProtocol {
        match self {
            Protocol::Rtmp => ProtectedProtocol::Rtmp,
            Protocol::Rtsp => ProtectedProtocol::Rtsp,
            Protocol::Srt => ProtectedProtocol::Srt,
            Protocol::Icecast => ProtectedProtocol::Icecast,
            Protocol::Hls | Protocol::Dash => ProtectedProtocol::Hls,
            Protocol::MpegTs => ProtectedProtocol::MpegTs,
            Protocol::WebRtc => ProtectedProtocol::WebRtc,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Rtmp => "RTMP",
            Protocol::Rtsp => "RTSP",
            Protocol::Srt => "SRT",
            Protocol::Icecast => "ICECAST",
            Protocol::Hls => "HLS",
            Protocol::Dash => "DASH",
            Protocol::MpegTs => "MPEGTS",
            Protocol::WebRtc => "WebRTC",
        }
    }
}

/// The publisher login a client gave, in its protocol's form.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum Credentials {
    /// None given.
    #[default]
    None,
    /// A login and password in clear (SRT `u=`/`s=` streamid keys), checked by the gate.
    Login { login: String, password: String },
    /// The protocol ran a challenge against [`crate::Gate::publisher_login`] and the
    /// client answered it (RTMP Adobe auth, RTSP Digest), or the protocol's own source
    /// password matched (an Icecast mount's `IcecastSources` entry).
    Proven,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a password into a log.
        match self {
            Credentials::None => f.write_str("None"),
            Credentials::Login { login, .. } => write!(f, "Login({login:?}, ***)"),
            Credentials::Proven => f.write_str("Proven"),
        }
    }
}

/// Who asks to publish or read which stream, and what they showed for it.
#[derive(Debug, Clone)]
pub struct Access {
    pub protocol: Protocol,
    pub key: StreamKey,
    pub peer: IpAddr,
    pub credentials: Credentials,
    /// The signed token the protocol carried, percent-decoded: `publishsign` for a
    /// publisher, `wmsAuthSign` (or SRT's `s=`) for a reader.
    pub signature: Option<String>,
}

impl Access {
    pub fn new(protocol: Protocol, key: StreamKey, peer: IpAddr) -> Self {
        Self {
            protocol,
            key,
            peer,
            credentials: Credentials::None,
            signature: None,
        }
    }

    pub fn with_credentials(mut self, credentials: Credentials) -> Self {
        self.credentials = credentials;
        self
    }

    pub fn with_signature(mut self, signature: Option<String>) -> Self {
        self.signature = signature.filter(|s| !s.is_empty());
        self
    }
}

/// Why the gate said no; the message is for the log and for protocols that can carry
/// text (RTMP's `onStatus` description), never a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The name is malformed or not allowed.
    #[error("{0}")]
    BadName(String),
    /// Publisher credentials are required and were missing or wrong.
    #[error("publishing requires credentials")]
    BadAuth,
    /// A signature (publish control, playback protection) is missing or invalid, or its
    /// id is on the deny list.
    #[error("{0}")]
    Denied(String),
    /// A limit (pay-per-view sessions, publishers) is reached.
    #[error("{0}")]
    Limit(String),
    /// Another producer, in any worker and over any protocol, publishes the name.
    #[error("{0} is already being published")]
    Busy(StreamKey),
    /// Nothing publishes the stream and nothing can start it.
    #[error("{0} is not live")]
    NotLive(StreamKey),
}
