//! The `rtsp` worker: RTSP publishers (ANNOUNCE, SETUP, RECORD) and players (DESCRIBE,
//! SETUP, PLAY) of any live stream, whichever worker produces it, over TCP interleaved
//! or UDP unicast.
//!
//! Requests are parsed sans-io ([`message`], [`transport`]); a connection
//! ([`connection`]) joins the stream in the worker's hub at DESCRIBE ([`describe`]),
//! which relays it in over the media bus when another worker produces it, and turns its
//! frames into RTP per track ([`sender`], packetization in `strom_media::rtp`). A
//! publisher ([`auth`] for its credentials) has its RTP depacketized into the hub
//! ([`publish`]), which announces the stream to the supervisor and serves it to other
//! workers over the media bus. Pulled RTSP sources ([`pull`], the `retina` client) are
//! published into the hub the same way.

mod auth;
mod connection;
mod describe;
#[doc(hidden)]
pub mod message;
mod publish;
mod pull;
mod sender;
mod service;
mod sessions;
mod shared;
#[doc(hidden)]
pub mod transport;
mod udp_pair;

pub use service::{RtspWorker, start};
