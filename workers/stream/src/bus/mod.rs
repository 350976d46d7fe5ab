//! The media bus as a link between hubs: [`producer`] serves a hub's streams to other
//! workers, [`subscriber`] feeds a stream of another worker into this worker's hub,
//! [`relays`] decides which streams of other workers to feed in, and [`wire`] maps neutral frames onto the bus header (`strom_ipc::bus`).

pub mod producer;
pub mod relays;
pub mod subscriber;
pub mod wire;
