//! Pulled RTSP sources (`rtsp://` and `rtsps://` entries of `RtmpPullSources`, through a
//! local relay that bounds what a source may send, [`relay`]): IP cameras and other
//! RTSP servers played with the `retina` client and published into the hub like an RTSP
//! publisher, so they are packaged, played and recorded like any stream and listed with
//! their `source_url` and protocol `RTSP`.
//!
//! When a source is pulled, retried or dropped is the pull supervisor's
//! (`strom_stream::pulls`, the same for every pulling protocol); this worker supplies only
//! how one RTSP session is pulled ([`RtspPuller`], [`session`]), which a bad packet does
//! not end ([`packet_errors`]).

mod message_limit;
mod packet_errors;
mod relay;
mod session;

use crate::shared::Shared;
use std::sync::Arc;
use strom_ipc::rules::PullSource;
use strom_stream::pulls::{PullEnd, PullJob, PullSources, Puller, Pulling};
use tokio_util::sync::CancellationToken;

/// How the rtsp worker pulls one stream: DESCRIBE, SETUP, PLAY, then publish the frames.
struct RtspPuller {
    shared: Arc<Shared>,
}

impl Puller for RtspPuller {
    fn protocol(&self) -> &'static str {
        "RTSP"
    }

    fn takes(&self, source: &PullSource) -> bool {
        source.is_rtsp()
    }

    fn shown(&self, url: &str) -> String {
        session::without_credentials(url)
    }

    fn pull(&self, job: PullJob) -> Pulling {
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            PullEnd::of(session::pull(&shared, &job.source, &job.key, &job.stop).await)
        })
    }
}

/// Runs the RTSP entries of `sources` until `shutdown`.
pub fn start(
    shared: Arc<Shared>,
    sources: &[PullSource],
    shutdown: CancellationToken,
) -> PullSources {
    let hub = shared.hub.clone();
    PullSources::start(hub, Arc::new(RtspPuller { shared }), sources, shutdown)
}
