//! A worker as a media bus producer: other workers subscribe to the live streams of its
//! hub here and get the same neutral frames its own readers get, through the same
//! bounded, GOP-dropping queues (a bus subscriber is one more reader of the stream).

use crate::bus::wire::header_for;
use crate::{Hub, StreamKey};
use std::sync::Arc;
use std::time::Duration;
use strom_worker_runtime::SessionIds;
use strom_worker_runtime::bus::{read_subscribe, write_media};
use tokio::io::AsyncReadExt;
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;

const SUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Binds worker `kind`'s bus socket under `run_dir` and serves `hub` on it (in a task)
/// until `shutdown`; the error names the socket that could not be bound.
pub fn start(
    run_dir: &std::path::Path,
    kind: strom_ipc::WorkerKind,
    hub: Hub,
    ids: Arc<SessionIds>,
    shutdown: CancellationToken,
) -> Result<(), String> {
    let path = strom_worker_runtime::bus::bus_path(run_dir, kind);
    let listener = strom_worker_runtime::bus::bind(&path)
        .map_err(|e| format!("media bus socket {}: {e}", path.display()))?;
    tokio::spawn(serve(listener, hub, ids, shutdown));
    Ok(())
}

/// Serves subscriptions to `hub`'s streams on `listener` until `shutdown`.
pub async fn serve(
    listener: UnixListener,
    hub: Hub,
    ids: Arc<SessionIds>,
    shutdown: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((socket, _)) => {
                tokio::spawn(subscriber(
                    socket,
                    hub.clone(),
                    Arc::clone(&ids),
                    shutdown.clone(),
                ));
            }
            Err(e) => {
                strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); error = %e, "bus accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

async fn subscriber(
    mut socket: UnixStream,
    hub: Hub,
    ids: Arc<SessionIds>,
    shutdown: CancellationToken,
) {
    let request = match tokio::time::timeout(SUBSCRIBE_TIMEOUT, read_subscribe(&mut socket)).await {
        Ok(Ok(request)) => request,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "bad bus subscription");
            return;
        }
        Err(_) => {
            tracing::warn!("bus subscriber sent no subscription");
            return;
        }
    };
    if let Err(e) = strom_ipc::names::check_pair(&request.app, &request.stream) {
        tracing::warn!(error = %e, "bus subscription refused");
        return;
    }
    let key = StreamKey::new(request.app, request.stream);
    let id = ids.next_id();
    let (mut frames, _dropped) = hub.subscribe(&key, id);
    tracing::info!(stream = %key, subscriber = id, "bus subscriber attached");
    // A subscriber only reads; anything it sends after its subscription, or its hanging
    // up, ends the link. Without this a subscriber whose stream went quiet would hold its
    // descriptor, task and hub entry forever.
    let (mut peer_reader, mut socket) = socket.into_split();
    let mut scratch = [0u8; 64];
    loop {
        let frame = tokio::select! {
            () = shutdown.cancelled() => break,
            read = peer_reader.read(&mut scratch) => {
                match read {
                    Ok(0) | Err(_) => tracing::debug!(stream = %key, "bus subscriber hung up"),
                    Ok(_) => tracing::warn!(stream = %key, "bus subscriber sent unexpected bytes"),
                }
                break;
            }
            frame = frames.recv() => frame,
        };
        let Some(frame) = frame else { break };
        let header = header_for(&frame);
        if let Err(e) = write_media(&mut socket, &header, &frame.frame.payload).await {
            tracing::debug!(stream = %key, error = %e, "bus subscriber gone");
            break;
        }
    }
    hub.leave(&key, id);
    tracing::info!(stream = %key, subscriber = id, "bus subscriber detached");
}
