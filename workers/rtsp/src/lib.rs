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
//!
//! RTSP over TLS (`rtsps://`, [`tls`]) runs the same connection code over a TLS stream,
//! interleaved only; `rtsps://` pulls (and `rtsp://` pulls with RTP over TCP) go through
//! a local relay (`pull::relay`) because retina speaks plain TCP and bounds nothing it
//! reads.
//!
//! A player that SETUPs the stream's URL itself without a DESCRIBE (SAT>IP style, as VLC
//! without live555 does) gets the whole stream as MPEG-TS over RTP ([`mp2t_rtp`], the TS
//! from `strom_stream::TsFeed`).

mod auth;
mod connection;
mod describe;
#[doc(hidden)]
pub mod message;
mod mp2t_rtp;
mod publish;
mod pull;
mod rtp_source;
mod sender;
mod service;
mod shared;
mod tls;
#[doc(hidden)]
pub mod transport;
mod udp_budget;
mod udp_pair;

pub use service::{RtspWorker, start};
