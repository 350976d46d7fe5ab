//! The `rtmp` worker: RTMP publishers and players, publisher authentication, publish
//! control, and the status of live streams and players.
//!
//! A connection runs the `rml_rtmp` server session ([`connection`]); published messages
//! become neutral frames ([`publish_frames`]) in the worker's `strom_stream::Hub`, which
//! hands them to players through bounded queues; a stream's fan-out groups ([`fanout`])
//! write them, chunked once for everyone ([`chunking`]), to the players' sockets
//! ([`sink`]) as they arrive.
//! The same hub feeds pushes to other servers ([`republish`]) and is fed by streams pulled
//! from them ([`pull`]); both use the RTMP client in [`client`].

mod admission;
mod amf_guard;
mod auth;
mod chunk_guard;
mod chunking;
mod client;
#[cfg(test)]
mod component_tests;
mod connect_info;
mod connection;
mod cue_point;
#[cfg(test)]
mod edge_tests;
mod fanout;
mod fanout_load;
#[cfg(test)]
mod fanout_tests;
mod frame;
#[cfg(test)]
mod input_tests;
mod publish_frames;
mod pull;
#[cfg(test)]
mod relay_tests;
mod republish;
#[doc(hidden)]
pub mod server_input;
mod service;
mod shared;
mod sink;
mod status_message;
#[cfg(test)]
mod test_noise;

pub use service::{RtmpWorker, start};
