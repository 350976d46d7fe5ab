//! The watch over one SRT output connection: ends it when its caller is gone or when its
//! stream has not been live for the output's `player_wait_timeout_secs`.
//!
//! The connection's thread waits for frames in its hub reader and only notices a gone
//! caller when a send fails; for a stream that is not live (a made-up name) no frame ever
//! comes, so without this watch the thread, its session and its slot under `max_callers`
//! would stay forever. The watch is a small task on the worker's runtime: every
//! [`STEP`] it asks libsrt for the socket's state (a caller that vanished without a word
//! turns `broken` after libsrt's peer idle timeout, 5 s) and the hub whether the stream
//! has a publisher; it cancels the connection's stop token, which removes the reader and
//! wakes the thread, as `sessions/delete` does.

use super::SrtSender;
use std::sync::Arc;
use std::time::Duration;
use strom_stream::Hub;
use tokio::runtime::Handle;
use tokio::time::Instant;

/// How often the watch looks.
const STEP: Duration = Duration::from_millis(500);
/// How long a caller waits for a stream that is not live, unless the output's
/// `player_wait_timeout_secs` says otherwise: RTMP players' default.
pub const DEFAULT_PLAYER_WAIT: Duration = Duration::from_secs(30);

/// The wait of an output from its `player_wait_timeout_secs` parameter (validated by the
/// supervisor as 1..=300; anything else falls back to the default).
pub fn player_wait(parameter: Option<&str>) -> Duration {
    parameter
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|secs| (1..=300).contains(secs))
        .map_or(DEFAULT_PLAYER_WAIT, Duration::from_secs)
}

/// Watches `sender` until its stop token is cancelled, cancelling it when the caller is
/// gone or the stream was not live for `wait`.
pub fn spawn(runtime: &Handle, hub: Hub, sender: Arc<SrtSender>, wait: Duration) {
    runtime.spawn(async move {
        let mut last_live = Instant::now();
        let mut ticks = tokio::time::interval(STEP);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = sender.stop.cancelled() => return,
                _ = ticks.tick() => {}
            }
            if sender.socket.is_gone() {
                tracing::info!(peer = %sender.peer, stream = %sender.key, session = sender.session_id, "SRT viewer's caller is gone; closing");
                sender.stop.cancel();
                sender.socket.close();
                return;
            }
            let live = hub
                .get(&sender.key)
                .is_some_and(|stream| stream.publisher().is_some());
            if live {
                last_live = Instant::now();
            } else if last_live.elapsed() >= wait {
                tracing::info!(peer = %sender.peer, stream = %sender.key, session = sender.session_id, wait_secs = wait.as_secs(), "SRT viewer closed: the stream is not live");
                sender.stop.cancel();
                sender.socket.close();
                return;
            }
        }
    });
}
