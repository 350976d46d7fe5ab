//! Pulled RTSP sources (`rtsp://` and `rtsps://` entries of `RtmpPullSources`, through a
//! local relay that bounds what a source may send, [`relay`]): IP cameras and other
//! RTSP servers played with the `retina` client and published into the hub like an RTSP
//! publisher, so they are packaged, played and recorded like any stream and listed with
//! their `source_url` and protocol `RTSP`.
//!
//! One task per source ([`source`]) pulls always or while the stream has players here,
//! and reconnects with backoff; [`session`] runs one RTSP session, which a bad packet
//! does not end ([`packet_errors`]).

mod message_limit;
mod packet_errors;
mod relay;
mod session;
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
    running: Mutex<HashMap<StreamKey, (PullSource, CancellationToken)>>,
    shutdown: CancellationToken,
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

    /// Starts new and changed RTSP sources, stops removed and changed ones; the others
    /// go on undisturbed.
    pub fn apply(&self, sources: &[PullSource]) {
        let sources: Vec<&PullSource> = sources.iter().filter(|s| s.is_rtsp()).collect();
        let mut running = locked(&self.running);
        running.retain(|_, (source, stop)| {
            let keep = sources.contains(&&*source);
            if !keep {
                stop.cancel();
            }
            keep
        });
        for source in sources {
            let key = StreamKey::new(source.app.clone(), source.stream.clone());
            if running.contains_key(&key) {
                continue;
            }
            let stop = self.shutdown.child_token();
            tokio::spawn(source::run(
                Arc::clone(&self.shared),
                source.clone(),
                stop.clone(),
            ));
            running.insert(key, (source.clone(), stop));
        }
    }
}
