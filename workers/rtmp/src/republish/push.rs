//! One push: a rule re-publishing one source stream to its destination, reconnecting with
//! backoff until it is stopped (rule deleted or changed, source unpublished, shutdown).
//!
//! Each connected session subscribes to the source in the hub like a player (bounded
//! queue; whole GOPs dropped when the destination is too slow, never the publisher slowed
//! down), so it starts with metadata, sequence headers and the cached GOP.

use crate::client::error::ClientError;
use crate::client::session::{
    Next, PUBLISHER_FLASH_VERSION, RtmpClient, ServerEvent, Setup, is_error_code,
};
use crate::republish::destination::Destination;
use crate::republish::forward::Forwarder;
use crate::republish::login;
use crate::republish::status::{PushState, PushStatus};
use crate::shared::Shared;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strom_stream::Queue;
use strom_worker_runtime::backoff::Backoff;
use tokio_util::sync::CancellationToken;

/// Bound on each connection step and on each write to the destination.
const STEP_LIMIT: Duration = Duration::from_secs(10);

/// Runs the push described by `status` until `stop`.
pub async fn run(
    shared: Arc<Shared>,
    status: Arc<PushStatus>,
    destination: Destination,
    stop: CancellationToken,
) {
    let setup = Setup {
        limit: STEP_LIMIT,
        flash_version: PUBLISHER_FLASH_VERSION,
        traffic: Arc::clone(&status.traffic),
        counters: Arc::clone(&shared.counters),
    };
    let rule = &status.rule.id;
    let source = &status.source;
    let dest = format!(
        "{}/{}/{}",
        destination.endpoint, destination.app, destination.stream
    );
    let mut backoff = Backoff::default();
    loop {
        status.set(PushState::Connecting);
        let (outcome, lasted) = session(&shared, &status, &destination, &dest, &setup, &stop).await;
        status.set(PushState::Disconnected);
        let error = match outcome {
            Ok(()) => break,
            Err(_) if stop.is_cancelled() => break,
            Err(error) => error,
        };
        match &error {
            ClientError::AuthFailed(reason) => {
                tracing::warn!(%rule, %source, %dest, %reason, "re-publishing authentication failed")
            }
            other => {
                tracing::warn!(%rule, %source, %dest, error = %other, "re-publishing connection failed")
            }
        }
        let retry = status.retried();
        let delay = backoff.after(lasted);
        tracing::info!(%rule, %source, %dest, retry, ?delay, "re-publishing reconnects");
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(delay) => {}
        }
    }
    tracing::info!(%rule, %source, %dest, "re-publishing stopped");
}

/// One connection: connect, authenticate, publish, forward. `Ok` when stopped; also
/// returns how long it was publishing.
async fn session(
    shared: &Shared,
    status: &PushStatus,
    destination: &Destination,
    dest: &str,
    setup: &Setup,
    stop: &CancellationToken,
) -> (Result<(), ClientError>, Duration) {
    let connect = async {
        let mut client = login::connect(destination, &status.rule, setup).await?;
        client.publish(&destination.stream_with_params).await?;
        Ok::<_, ClientError>(client)
    };
    let mut client = tokio::select! {
        () = stop.cancelled() => return (Ok(()), Duration::ZERO),
        client = connect => match client {
            Ok(client) => client,
            Err(e) => return (Err(e), Duration::ZERO),
        },
    };
    let since = Instant::now();
    status.set(PushState::Connected { since });
    tracing::info!(rule = %status.rule.id, source = %status.source, %dest, schema = status.rule.auth_schema.as_str(), "re-publishing connected");
    let outcome = forward(shared, status, &mut client, stop).await;
    client.close().await;
    (outcome, since.elapsed())
}

async fn forward(
    shared: &Shared,
    status: &PushStatus,
    client: &mut RtmpClient,
    stop: &CancellationToken,
) -> Result<(), ClientError> {
    // The push's place among the source's readers, left when `forward` returns.
    let mut reader = shared
        .streams
        .own_reader(&status.source, Queue, shared.ids.next_id());
    let mut forwarder = Forwarder::default();
    loop {
        let next = tokio::select! {
            () = stop.cancelled() => return Ok(()),
            next = client.next(Some(&mut reader.frames)) => next?,
        };
        match next {
            Next::Frame(frame) => {
                if let Some(timestamp) = forwarder.timestamp(&frame) {
                    client.send(&frame, timestamp).await?;
                }
            }
            Next::FramesEnded => {
                return Err(ClientError::Protocol(
                    "the source's frame queue closed".to_owned(),
                ));
            }
            Next::Event(ServerEvent::Status(code)) if is_error_code(&code) => {
                return Err(ClientError::Refused(code));
            }
            Next::Event(ServerEvent::Status(code)) => {
                tracing::debug!(rule = %status.rule.id, %code, "destination status");
            }
            Next::Event(_) => {}
        }
    }
}
