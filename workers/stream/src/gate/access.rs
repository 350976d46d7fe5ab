//! What a protocol tells the gate about a client ([`Access`]) and what the gate answers
//! when it says no ([`Refusal`]). A protocol adapter only translates: its own credential
//! form (RTMP query or Adobe auth, the SRT streamid, an RTSP URL query or Digest, an HTTP
//! query, Icecast Basic) into an `Access`, and a `Refusal` into its own error.

use crate::key::StreamKey;
use std::net::IpAddr;
use strom_ipc::rules::ProtectedProtocol;
use strom_worker_runtime::play_signature::query_value;

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

    /// The access a request with the URL query `query` asks for: its signed token
    /// (`publishsign=` to publish, `wmsAuthSign=` to read) found and percent-decoded here,
    /// once for every protocol that carries one in a URL query.
    pub fn from_query(
        protocol: Protocol,
        key: StreamKey,
        peer: IpAddr,
        intent: Intent,
        query: &str,
    ) -> Self {
        Self::new(protocol, key, peer).with_signature(query_signature(query, intent))
    }
}

/// What a request asks for, which decides the token its query carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    Publish,
    Read,
}

impl Intent {
    /// The query parameter of the signed token.
    pub fn parameter(self) -> &'static str {
        match self {
            Intent::Publish => "publishsign",
            Intent::Read => "wmsAuthSign",
        }
    }
}

/// `intent`'s signed token in `query` (`a=1&publishsign=...`), percent-decoded.
pub fn query_signature(query: &str, intent: Intent) -> Option<String> {
    query_value(query, intent.parameter())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_querys_signed_token_is_found_for_its_intent_and_decoded_once() {
        let query = "a=1&wmsAuthSign=c2Vy%3D%3D&publishsign=aWQ9MQ%253D%253D&b=2";
        assert_eq!(
            query_signature(query, Intent::Read).as_deref(),
            Some("c2Vy==")
        );
        // Decoded once: `%253D` is a literal `%3D` in the token, left for nobody to decode again.
        assert_eq!(
            query_signature(query, Intent::Publish).as_deref(),
            Some("aWQ9MQ%3D%3D")
        );
        assert_eq!(query_signature("xpublishsign=1", Intent::Publish), None);
        assert_eq!(query_signature("sid=3", Intent::Read), None);
        let access = Access::from_query(
            Protocol::Rtsp,
            StreamKey::new("live", "cam"),
            "10.0.0.1".parse().unwrap(),
            Intent::Read,
            "wmsAuthSign=",
        );
        assert_eq!(access.signature, None, "an empty token is none");
    }
}
