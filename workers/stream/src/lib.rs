//! The stream core every worker publishes into and reads from, whatever protocol
//! brought a stream in or takes it out.
//!
//! A worker keeps one [`Hub`] of live streams keyed by `app/stream` ([`StreamKey`]).
//! A producer (an RTMP publisher, a pulled source, an MPEG-TS ingest, a bus
//! subscription to another worker) claims a stream and gets a [`Publishing`] guard,
//! through which it publishes neutral frames ([`strom_media::frame::Frame`]); the guard
//! releases the stream when dropped. A client's publisher and reader get their handles
//! only from the [`Gate`] after admission ([`Gate::publish`], [`Gate::read`]); the
//! operator's own from [`Hub::own_publisher`] and [`Hub::own_reader`]. Readers (players,
//! pushes, packagers, the bus producer serving other workers) get a [`Reader`]: a bounded
//! queue of [`SharedFrame`]s that starts
//! at the last keyframe and drops whole GOPs when they fall behind, counting the drops;
//! readers that are many (the players of a fan-out) read the same frames through a
//! [`Cursor`] over the stream's ring instead, with the same start and drops.
//! [`HubEvents`] says when streams are published, released, demanded and their tracks
//! known. The media [`bus`] links the hubs of different worker processes. Live MPEG-TS
//! outputs read a stream through a [`TsFeed`]. SCTE-35 cues ([`cues`]) and stream
//! titles ([`titles`]) are data frames put into the stream at its producer.

pub mod audio_history;
pub mod bus;
pub mod cluster;
pub mod cues;
pub mod cursor;
pub mod demand;
pub mod events;
pub mod gate;
pub mod hub;
pub mod key;
pub mod publisher_info;
pub mod pulls;
pub mod reader;
mod ring;
#[cfg(test)]
mod ring_tests;
pub mod shared_frame;
pub mod stream;
#[cfg(test)]
mod tests;
pub mod titles;
pub mod ts_feed;
#[cfg(test)]
mod ts_feed_tests;

pub use cues::{Cue, CueError};
pub use cursor::Cursor;
pub use demand::{DemandWatch, Unwatched};
pub use events::{HubEvent, HubEvents};
pub use gate::sessions::{Caps, Meter, Session, SessionEntry, Sessions};
pub use gate::{
    Access, AudioBurst, Credentials, Fanout, Gate, Gated, GatedService, Intent, Leave, Protocol,
    Queue, ReadMode, Reader, ReaderPlace, Reading, Refusal,
};
pub use hub::Publishing;
pub use hub::{Announcer, Hub};
pub use key::StreamKey;
pub use publisher_info::{AlreadyPublishing, PublisherInfo};
pub use reader::{DropCounter, FrameReceiver, READER_QUEUE_FRAMES};
pub use shared_frame::SharedFrame;
pub use stream::{CodecInfo, Stream};
pub use ts_feed::TsFeed;
