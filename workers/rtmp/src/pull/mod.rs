//! Pulled RTMP sources (`RtmpPullSources`) and RTMP edge origins: streams played from
//! other RTMP servers and published into the local hub like any publisher, so they are
//! played over RTMP, packaged to HLS and re-published like pushed streams, and listed
//! with their `source_url`.
//!
//! When a stream is pulled, retried or dropped is the pull supervisor's
//! (`strom_stream::pulls`, the same for every pulling protocol); this worker supplies only
//! how one RTMP stream is pulled once ([`RtmpPuller`], a connection in [`ingest`]). Edge
//! rules with RTMP origins ([`edge`]) pull any stream of an app when it is first asked
//! for.

mod claim;
pub mod edge;
mod ingest;

use crate::client::session::Setup;
use crate::client::traffic::Traffic;
use crate::connect_info::PULL_FLASH_VERSION;
use crate::shared::Shared;
use std::sync::Arc;
use std::time::Duration;
use strom_ipc::rules::PullSource;
use strom_stream::pulls::{PullEnd, PullJob, PullSources, Puller, Pulling};
use tokio_util::sync::CancellationToken;

/// Bound on each connection step and each write to the source.
const STEP_LIMIT: Duration = Duration::from_secs(10);

/// How the rtmp worker pulls one stream: `connect` and `play`, then publish what comes.
pub struct RtmpPuller {
    shared: Arc<Shared>,
}

impl RtmpPuller {
    pub fn new(shared: Arc<Shared>) -> Arc<Self> {
        Arc::new(Self { shared })
    }
}

impl Puller for RtmpPuller {
    fn protocol(&self) -> &'static str {
        "RTMP"
    }

    /// RTSP sources are the rtsp worker's.
    fn takes(&self, source: &PullSource) -> bool {
        !source.is_rtsp()
    }

    fn pull(&self, job: PullJob) -> Pulling {
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let setup = Setup {
                limit: STEP_LIMIT,
                flash_version: PULL_FLASH_VERSION,
                traffic: Arc::new(Traffic::default()),
                counters: Arc::clone(&shared.counters),
            };
            PullEnd::of(ingest::pull(&shared, &job.source, &job.key, &setup, &job.stop).await)
        })
    }
}

/// Runs the RTMP entries of `sources` until `shutdown` (RTSP ones are the rtsp worker's).
pub fn start(
    shared: Arc<Shared>,
    sources: &[PullSource],
    shutdown: CancellationToken,
) -> PullSources {
    let hub = shared.streams.clone();
    PullSources::start(hub, RtmpPuller::new(shared), sources, shutdown)
}
