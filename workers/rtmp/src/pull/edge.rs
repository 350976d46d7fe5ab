//! Edge mode (`Edge` rules): when a stream of an edge app gets its first reader (an RTMP
//! player, the packager subscribing for an HLS viewer, or the ingest worker subscribing
//! for an SRT viewer) and nobody publishes it here, pull it from the rule's origins, tried
//! in order (the next one when a pull fails), and drop the pull `idle_grace_secs` after
//! the last reader left. No per-stream config: the pulled URL is the origin plus
//! `<app>/<stream>`.
//!
//! One task per demanded stream; it ends when its stream has no readers left, when its
//! rule goes away (reload), or with the worker. An explicit `RtmpPullSources` entry of
//! the stream wins over the edge rule, and so does a stream another worker of this server
//! produces (an SRT ingest of the edge app: the relay feeds it in, nothing is pulled).
//! Which pulls run, the failover between origins and the waits are the pull supervisor's
//! ([`strom_stream::pulls::edges`]), as for the ingest worker's pulls from SRT origins
//! (rules with SRT origins are that worker's); an origin is pulled by [`RtmpPuller`].

use super::RtmpPuller;
use crate::shared::Shared;
use std::sync::Arc;
use strom_stream::pulls::EdgePulls;
use tokio_util::sync::CancellationToken;

/// Edge pulls running at most (each is a connection to an origin).
pub const MAX_EDGE_PULLS: usize = 1000;

/// Starts pulling the streams of RTMP edge rules that readers of the worker's hub ask for.
pub fn start(shared: Arc<Shared>, shutdown: CancellationToken) -> Arc<EdgePulls> {
    let rules = {
        let shared = Arc::clone(&shared);
        Box::new(move || shared.rules())
    };
    let hub = shared.streams.clone();
    EdgePulls::start(
        hub,
        strom_ipc::WorkerKind::Rtmp,
        |rule| !rule.is_srt(),
        MAX_EDGE_PULLS,
        shutdown,
        rules,
        RtmpPuller::new(shared),
    )
}
