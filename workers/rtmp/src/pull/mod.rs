//! Pulled sources (`RtmpPullSources`): streams played from other RTMP servers and
//! published into the local hub like any publisher, so they are played over RTMP,
//! packaged to HLS and re-published like pushed streams, and listed with their
//! `source_url`.
//!
//! One task per configured source ([`source`]) decides when to pull (always, or while the
//! stream has players) and retries with backoff; one connection ([`ingest`]) plays the
//! remote stream and publishes what it receives. Edge rules ([`edge`]) pull any stream of
//! an app from origins when it is first asked for.

mod claim;
pub mod edge;
mod ingest;
mod source;

use crate::shared::Shared;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use strom_ipc::rules::PullSource;
use strom_stream::StreamKey;
use strom_worker_runtime::sync::locked;
use tokio_util::sync::CancellationToken;

pub struct Pulls {
    shared: Arc<Shared>,
    running: Mutex<HashMap<StreamKey, Running>>,
    shutdown: CancellationToken,
}

struct Running {
    source: PullSource,
    stop: CancellationToken,
}

impl Pulls {
    pub fn start(shared: Arc<Shared>, sources: &[PullSource], shutdown: CancellationToken) -> Self {
        let pulls = Self {
            shared,
            running: Mutex::new(HashMap::new()),
            shutdown,
        };
        pulls.apply(sources);
        pulls
    }

    /// Starts new and changed sources, stops removed and changed ones; unchanged ones keep
    /// pulling undisturbed.
    pub fn apply(&self, sources: &[PullSource]) {
        // RTSP sources are the rtsp worker's.
        let sources: Vec<&PullSource> = sources.iter().filter(|s| !s.is_rtsp()).collect();
        let mut running = locked(&self.running);
        running.retain(|_, pull| {
            let keep = sources.contains(&&pull.source);
            if !keep {
                pull.stop.cancel();
            }
            keep
        });
        for source in sources {
            let key = StreamKey {
                app: source.app.clone(),
                stream: source.stream.clone(),
            };
            if running.contains_key(&key) {
                continue;
            }
            let stop = self.shutdown.child_token();
            tokio::spawn(source::run(
                Arc::clone(&self.shared),
                source.clone(),
                stop.clone(),
            ));
            running.insert(
                key,
                Running {
                    source: source.clone(),
                    stop,
                },
            );
        }
    }
}
