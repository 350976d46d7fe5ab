//! The `webrtc` worker: WHEP players of any live stream and WHIP publishers.
//!
//! Signaling (SDP offer and answer, trickle ICE, ending a session) comes from the
//! packager, which forwards `whep.stream` and `whip.stream` requests of the HTTP delivery
//! port to this worker's Unix socket; ICE, DTLS and SRTP of every session share the
//! ICE port the supervisor lends (UDP, and ICE-TCP beside it).

pub mod audio;
mod service;

pub use service::{WebRtcWorker, start};
