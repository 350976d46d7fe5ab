//! One pull connection: `connect` and `play` the source URL, publish what arrives into the
//! local stream, until the source fails or goes quiet or the pull is stopped (by the pull
//! supervisor, `strom_stream::pulls`, also when an on-demand stream lost its players).

use crate::client::endpoint::{RtmpUrl, UrlError};
use crate::client::error::ClientError;
use crate::client::session::{Next, RtmpClient, ServerEvent, Setup, is_error_code};
use crate::publish_frames::{audio_frame, metadata_frame, video_frame};
use crate::pull::claim::{Claim, Taken};
use crate::shared::Shared;
use std::sync::Arc;
use std::time::Duration;
use strom_ipc::rules::PullSource;
use strom_stream::StreamKey;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Why a pull connection ended without being asked to.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    #[error(transparent)]
    Url(#[from] UrlError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Taken(#[from] Taken),
    #[error("the source sent no media for {0:?}")]
    Quiet(Duration),
    #[error("the source ended the stream ({0})")]
    Ended(String),
}

/// Pulls `source` into `key` once; `Ok` when stopped.
pub async fn pull(
    shared: &Arc<Shared>,
    source: &PullSource,
    key: &StreamKey,
    setup: &Setup,
    stop: &CancellationToken,
) -> Result<(), PullError> {
    let url = RtmpUrl::parse(&source.url)?;
    let connect = async {
        let tc_url = url.endpoint.tc_url(&url.app);
        let mut client = RtmpClient::open(&url.endpoint, tc_url, setup.clone()).await?;
        client.connect(&url.app).await?;
        client.play(&url.stream).await?;
        Ok::<_, ClientError>(client)
    };
    let mut client = tokio::select! {
        () = stop.cancelled() => return Ok(()),
        client = connect => client?,
    };
    tracing::info!(stream = %key, url = %source.url, "pull connected");
    let outcome = receive(shared, source, key, &mut client, stop).await;
    client.close().await;
    outcome
}

async fn receive(
    shared: &Arc<Shared>,
    source: &PullSource,
    key: &StreamKey,
    client: &mut RtmpClient,
    stop: &CancellationToken,
) -> Result<(), PullError> {
    let quiet = Duration::from_secs(u64::from(
        shared.rules().rtmp.limits.publisher_idle_timeout_secs,
    ));
    let mut claim: Option<Claim> = None;
    // Anything from the source (media or status) proves it alive.
    let mut heard = Instant::now();
    loop {
        let next = tokio::select! {
            () = stop.cancelled() => return Ok(()),
            next = tokio::time::timeout_at(heard + quiet, client.next(None)) => next,
        };
        let event = match next.map_err(|_| PullError::Quiet(quiet))?? {
            Next::Event(event) => event,
            Next::Frame(_) | Next::FramesEnded => continue,
        };
        heard = Instant::now();
        let frame = match event {
            ServerEvent::Status(code) if is_error_code(&code) => {
                return Err(ClientError::Refused(code).into());
            }
            ServerEvent::Status(code)
                if code.ends_with("Stop") || code.ends_with("UnpublishNotify") =>
            {
                return Err(PullError::Ended(code));
            }
            ServerEvent::Status(code) => {
                tracing::debug!(stream = %key, %code, "pull source status");
                continue;
            }
            ServerEvent::Metadata(metadata) => Ok((metadata_frame(&metadata), None)),
            ServerEvent::Video { timestamp, data } => {
                let claim = take(&mut claim, shared, key, &source.url)?;
                video_frame(&mut claim.clock, &data, timestamp).map(|frame| (frame, Some(data)))
            }
            ServerEvent::Audio { timestamp, data } => {
                let claim = take(&mut claim, shared, key, &source.url)?;
                audio_frame(&mut claim.clock, &data, timestamp).map(|frame| (frame, Some(data)))
            }
        };
        match frame {
            Ok((frame, body)) => {
                let claim = take(&mut claim, shared, key, &source.url)?;
                claim.publish(frame, body);
            }
            Err(e) => {
                tracing::debug!(stream = %key, error = %e, "unparsable media message from the source dropped")
            }
        }
    }
}

/// The claim, taken on first use.
fn take<'a>(
    claim: &'a mut Option<Claim>,
    shared: &Arc<Shared>,
    key: &StreamKey,
    url: &str,
) -> Result<&'a mut Claim, Taken> {
    if claim.is_none() {
        *claim = Some(Claim::take(shared, key, url)?);
    }
    claim.as_mut().ok_or_else(|| Taken(key.clone()))
}
