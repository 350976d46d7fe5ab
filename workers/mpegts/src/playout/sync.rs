//! Reading the playlist file: at start, every `SyncInterval` ms and when woken (a rules
//! reload). The file is read off the async runtime with a size limit; an unchanged file
//! is not parsed again; a file that cannot be read or validated is logged once per
//! content and the playlist in effect goes on.

use super::Playouts;
use super::schedule;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use strom_ipc::rules::ServerPlaylistSettings;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The largest playlist file read.
pub const MAX_PLAYLIST_BYTES: u64 = 4 * 1024 * 1024;

pub(super) async fn follow(
    playouts: Arc<Playouts>,
    settings: ServerPlaylistSettings,
    reread: Arc<Notify>,
    stop: CancellationToken,
) {
    let path = settings.path.clone();
    let interval = Duration::from_millis(u64::from(settings.sync_interval_ms));
    tracing::info!(path = %path.display(), ?interval, "server playlist file followed");
    // The last text seen, installed or not: the same text is neither parsed nor logged
    // again.
    let mut last: Option<Result<String, String>> = None;
    loop {
        let reading = path.clone();
        let read = tokio::task::spawn_blocking(move || read_limited(&reading))
            .await
            .unwrap_or_else(|e| Err(e.to_string()));
        if last.as_ref() != Some(&read) {
            match &read {
                Ok(text) => match schedule::parse(text, &settings.media_dir) {
                    Ok(playlist) => {
                        tracing::info!(path = %path.display(), tasks = playlist.tasks.len(), "server playlist loaded");
                        playouts.install(playlist);
                    }
                    Err(error) => {
                        tracing::warn!(path = %path.display(), %error, "server playlist file rejected; the previous playlist goes on");
                    }
                },
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "server playlist file cannot be read; the previous playlist goes on");
                }
            }
            last = Some(read);
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
            () = reread.notified() => {}
        }
    }
}

fn read_limited(path: &Path) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut text = String::new();
    file.take(MAX_PLAYLIST_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > MAX_PLAYLIST_BYTES {
        return Err(format!("larger than {MAX_PLAYLIST_BYTES} bytes"));
    }
    Ok(text)
}
