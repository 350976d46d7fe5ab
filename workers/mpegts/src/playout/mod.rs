//! Server playlists: output streams played out from a schedule of live streams and MP4
//! files (`ServerPlaylists` in `rules.conf` names the playlist file).
//!
//! The playlist file is read at start, every `SyncInterval` ms and on every rules
//! reload ([`sync`]); a file that does not parse or validate is logged and the previous
//! playlist goes on. Each task of the file is a [`channel`] that publishes its output
//! stream into the MPEG-TS worker's hub (served on the media bus like any producer's, so
//! RTMP, HLS, SRT, DVR and re-publishing take it), fed from MP4 files read at real time
//! ([`file_feed`], over `strom_media::mp4_read`) and from live streams of the server
//! ([`live_feed`]: readers here, which the worker's relays feed from the producing
//! worker), moved onto one continuous timeline ([`timeline`], [`output`]).
//! The schedule itself is [`schedule`] (pure, unit-tested).

mod channel;
mod feed;
mod file_feed;
mod live_feed;
mod local_time;
mod output;
pub mod schedule;
mod status;
mod sync;
mod timeline;
mod utc;

use channel::ChannelHandle;
use schedule::Playlist;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use strom_ipc::rules::ServerPlaylistSettings;
use strom_ipc::status::ServerPlaylistEntry;
use strom_stream::{Hub, StreamKey};
use strom_worker_runtime::SessionIds;
use strom_worker_runtime::sync::locked;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The server playlists of the worker.
pub struct Playouts {
    hub: Hub,
    ids: Arc<SessionIds>,
    shutdown: CancellationToken,
    state: Mutex<State>,
    /// Wakes the file reader for a re-read (a rules reload).
    reread: Arc<Notify>,
}

#[derive(Default)]
struct State {
    settings: Option<ServerPlaylistSettings>,
    /// Stops the file reader of the current settings.
    sync: Option<CancellationToken>,
    channels: HashMap<StreamKey, ChannelHandle>,
}

impl Playouts {
    pub fn start(
        hub: Hub,
        ids: Arc<SessionIds>,
        settings: Option<&ServerPlaylistSettings>,
        shutdown: CancellationToken,
    ) -> Arc<Self> {
        let playouts = Arc::new(Self {
            hub,
            ids,
            shutdown,
            state: Mutex::default(),
            reread: Arc::new(Notify::new()),
        });
        playouts.apply(settings);
        playouts
    }

    /// New rules: a new file or interval restarts the reader, else the file is re-read.
    pub fn apply(self: &Arc<Self>, settings: Option<&ServerPlaylistSettings>) {
        let mut state = locked(&self.state);
        if state.settings.as_ref() == settings && state.sync.is_some() {
            self.reread.notify_one();
            return;
        }
        if let Some(stop) = state.sync.take() {
            stop.cancel();
        }
        state.settings = settings.cloned();
        match settings {
            Some(settings) => {
                let stop = self.shutdown.child_token();
                tokio::spawn(sync::follow(
                    Arc::clone(self),
                    settings.clone(),
                    Arc::clone(&self.reread),
                    stop.clone(),
                ));
                state.sync = Some(stop);
            }
            None => {
                for (key, channel) in state.channels.drain() {
                    tracing::info!(stream = %key, "server playlists off: output stopped");
                    channel.stop.cancel();
                }
            }
        }
    }

    /// Plays `playlist` from now: new tasks start, changed ones get their new schedule
    /// (what plays goes on when it is unchanged), tasks no longer listed stop.
    fn install(&self, playlist: Playlist) {
        let mut state = locked(&self.state);
        let listed: Vec<StreamKey> = playlist.tasks.iter().map(|t| t.stream.clone()).collect();
        state.channels.retain(|key, channel| {
            let keep = listed.contains(key);
            if !keep {
                tracing::info!(stream = %key, "task left the playlist: output stopped");
                channel.stop.cancel();
            }
            keep
        });
        for task in playlist.tasks {
            if let Some(problem) = &task.problem {
                tracing::warn!(stream = %task.stream, %problem, "schedule not played; the default stream plays");
            }
            match state.channels.get(&task.stream) {
                Some(channel) => {
                    channel.schedule.send_if_modified(|current| {
                        let changed = **current != task;
                        if changed {
                            *current = Arc::new(task.clone());
                        }
                        changed
                    });
                }
                None => {
                    let key = task.stream.clone();
                    let handle = channel::spawn(
                        self.hub.clone(),
                        Arc::clone(&self.ids),
                        Arc::new(task),
                        self.shutdown.child_token(),
                    );
                    state.channels.insert(key, handle);
                }
            }
        }
    }

    /// What every task plays now.
    pub fn status(&self) -> Vec<ServerPlaylistEntry> {
        let state = locked(&self.state);
        let mut entries: Vec<_> = state
            .channels
            .values()
            .filter_map(|channel| locked(&channel.status).clone())
            .collect();
        entries.sort_by(|a, b| a.stream.cmp(&b.stream));
        entries
    }
}
