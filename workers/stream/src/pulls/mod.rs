//! The pull supervisor, one for every pulling protocol (RTMP, RTSP, SRT edges, and the
//! next): when a stream is pulled (always, or while it has readers, with a grace; an edge
//! rule's streams when first read), which origin of an edge rule is tried next, how long
//! to wait after a failure, and which pulls stop when the rules change. A protocol
//! supplies only how one stream is pulled from one URL, once ([`Puller`]).
//!
//! - [`sources`]: the configured pulled sources (`RtmpPullSources`) of one protocol.
//! - [`edges`]: pulls for `Edge` rules, decided the same way in every worker that pulls.
//! - [`attempt`]: one pull raced against the stream's demand.

mod attempt;
pub mod edges;
pub mod sources;
#[cfg(test)]
mod tests;

use crate::key::StreamKey;
use std::future::Future;
use std::pin::Pin;
use strom_ipc::rules::PullSource;
use tokio_util::sync::CancellationToken;

pub use edges::EdgePulls;
pub use sources::PullSources;

/// How a pull ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullEnd {
    /// The worker, a rule change or the supervisor stopped it.
    Stopped,
    /// On demand: the stream had no reader for the grace time (the supervisor's call; a
    /// [`Puller`] never answers it).
    Idle,
    /// The source refused, failed, sent nothing or ended the stream.
    Failed(String),
}

impl PullEnd {
    /// A protocol's pull result: `Ok` when it was stopped, its error when it failed.
    pub fn of<E: std::fmt::Display>(result: Result<(), E>) -> Self {
        match result {
            Ok(()) => PullEnd::Stopped,
            Err(error) => PullEnd::Failed(error.to_string()),
        }
    }
}

/// One pull for a [`Puller`] to run.
pub struct PullJob {
    pub key: StreamKey,
    /// What to pull: its URL and, for RTSP, the transport. An edge pull's is made from
    /// the rule's origin and the stream's name.
    pub source: PullSource,
    /// The edge origin the URL was made from (it may carry connection parameters, as
    /// an `srt://` origin does); `None` for a configured source.
    pub origin: Option<String>,
    /// Cancelled when the pull must end (then it answers [`PullEnd::Stopped`]).
    pub stop: CancellationToken,
}

pub type Pulling = Pin<Box<dyn Future<Output = PullEnd> + Send>>;

/// How one protocol pulls one stream from one URL, once: it connects, claims the stream
/// in the hub ([`crate::Hub::own_publisher`]) and publishes what arrives until the source
/// fails or `job.stop`. Everything around that is the supervisor's.
pub trait Puller: Send + Sync + 'static {
    /// The protocol, for log lines ("RTMP", "RTSP", "SRT").
    fn protocol(&self) -> &'static str;

    /// Whether a configured source (an `RtmpPullSources` entry) is this protocol's, by
    /// its URL.
    fn takes(&self, source: &PullSource) -> bool;

    /// `url` as log lines may show it (an RTSP source's login is left out).
    fn shown(&self, url: &str) -> String {
        url.to_owned()
    }

    fn pull(&self, job: PullJob) -> Pulling;
}
