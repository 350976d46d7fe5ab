//! The `webrtc` worker: WHEP players of any live stream and WHIP publishers.
//!
//! Signaling (SDP offer and answer, trickle ICE, ending a session; [`signaling`],
//! [`offer`]) comes from the packager, which forwards `whep.stream` and `whip.stream`
//! requests of the HTTP delivery port to this worker's Unix socket. ICE, DTLS and SRTP of
//! every session share the ICE port the supervisor lends: UDP ([`ice_udp`]) and ICE-TCP
//! ([`ice_tcp`]) beside it, each packet routed to its session by address or by the ufrag
//! of its first binding request ([`routing`]). A session ([`session`]) is a str0m `Rtc`
//! on its own task: a viewer sends the stream's [`feed`] (H.264 passed through, AAC
//! transcoded to Opus once per stream, [`audio`]), a publisher's media goes into the hub
//! ([`publish`], Opus transcoded to AAC) like any other producer's.

mod admission;
pub mod audio;
#[doc(hidden)]
pub mod endpoint;
mod feed;
mod ice_tcp;
mod ice_udp;
mod offer;
mod publish;
mod routing;
mod service;
mod session;
mod shared;
#[doc(hidden)]
pub mod signaling;
mod socket_buffers;
#[doc(hidden)]
pub mod stun;
mod udp_batch;

pub use service::{WebRtcWorker, start};
