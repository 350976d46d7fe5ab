//! The media bus as a link between hubs: [`producer`] serves a hub's streams to other
//! workers, [`subscriber`] feeds a stream of another worker into this worker's hub, and
//! [`wire`] maps neutral frames onto the bus header (`strom_ipc::bus`).

pub mod producer;
pub mod subscriber;
pub mod wire;
