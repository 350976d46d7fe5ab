//! One pull raced against its stream's demand: an on-demand pull whose stream has had no
//! reader for the grace time is stopped (and waited for, so the protocol closes its
//! connection) and ends [`PullEnd::Idle`].

use super::{PullEnd, PullJob, Puller};
use crate::demand::{DemandWatch, Unwatched};
use crate::hub::Hub;
use crate::key::StreamKey;
use std::time::Duration;
use strom_ipc::rules::PullSource;
use tokio_util::sync::CancellationToken;

/// Pulls `source` into `key` once with `puller`, until it fails, `stop`, or (when
/// `on_demand`) the stream's readers are gone for `source.idle_grace_secs`.
pub(super) async fn attempt(
    hub: &Hub,
    puller: &dyn Puller,
    key: &StreamKey,
    source: PullSource,
    origin: Option<String>,
    stop: &CancellationToken,
) -> PullEnd {
    let on_demand = source.mode == strom_ipc::rules::PullMode::OnDemand;
    let grace = Duration::from_secs(u64::from(source.idle_grace_secs));
    let mut events = hub.events().listen();
    let mut demand = DemandWatch::new(hub, key, &mut events, on_demand, grace);
    let this_pull = stop.child_token();
    let mut pulling = puller.pull(PullJob {
        key: key.clone(),
        source,
        origin,
        stop: this_pull.clone(),
    });
    tokio::select! {
        end = &mut pulling => end,
        unwatched = demand.wait() => {
            this_pull.cancel();
            pulling.await;
            match unwatched {
                Unwatched::Idle => PullEnd::Idle,
                Unwatched::Closed => PullEnd::Stopped,
            }
        }
    }
}
