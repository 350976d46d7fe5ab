//! The `webrtc` worker: WHEP players of any live stream and WHIP publishers.
//!
//! Signaling (SDP offer and answer, trickle ICE, ending a session; [`signaling`],
//! [`offer`]) comes from the packager, which forwards `whep.stream` and `whip.stream`
//! requests of the HTTP delivery port to this worker's Unix socket. ICE, DTLS and SRTP of
//! every session share the ICE port the supervisor lends: UDP ([`ice_udp`]) and ICE-TCP
//! ([`ice_tcp`]) beside it, each packet routed to its session by address or by the ufrag
//! of its first binding request ([`routing`]). A session ([`session`]) is a str0m `Rtc`
//! behind a lock ([`core`]) driven by its own task (packets, timers): a viewer is sent
//! the stream's [`feed`] (cut into RTP payloads once per stream, AAC transcoded to Opus
//! once per stream, [`audio`]) by the stream's [`fanout`] shards, a publisher's media goes
//! into the hub ([`publish`], Opus transcoded to AAC) like any other producer's.

mod admission;
pub mod audio;
mod core;
mod dtls_keys;
#[doc(hidden)]
pub mod endpoint;
mod fanout;
mod feed;
mod feed_frame;
mod ice_tcp;
mod ice_udp;
mod offer;
mod publish;
mod routing;
mod rtp_send;
mod service;
mod session;
mod shared;
#[doc(hidden)]
pub mod signaling;
mod socket_buffers;
mod srtp_send;
#[doc(hidden)]
pub mod stun;
mod udp_batch;

pub use service::{WebRtcWorker, start};
