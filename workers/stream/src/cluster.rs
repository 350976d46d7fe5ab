//! A worker's copy of the cluster registry (`Cluster` in `rules.conf`): which server of
//! the cluster holds each stream name and where each server can be pulled from. The
//! supervisor watches etcd and sends the changes ([`ClusterUpdate`]); this copy answers
//! the two questions a worker asks without a round trip:
//! - the gate: does another live server hold this name? (its publish is refused);
//! - an edge pull: which URL serves this stream? (the holder's, before the rule's
//!   `origins`).
//!
//! While the supervisor's watch is not current (etcd unreachable), the copy keeps its last
//! state for edges, and the gate refuses nothing for it: a registry that is down must not
//! stop publishing.

use crate::key::StreamKey;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use strom_ipc::cluster::ClusterUpdate;
use strom_ipc::rules::is_srt_origin;
use tokio::sync::watch;

#[derive(Default)]
struct Copy {
    own_id: Option<String>,
    connected: bool,
    servers: HashMap<String, Vec<String>>,
    holders: HashMap<StreamKey, Arc<str>>,
}

/// Where an edge should pull a stream from, by the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// No registry: the rule's `origins`, in order.
    Unknown,
    /// The registry is current and nobody holds the name: wait for its watch.
    Unregistered,
    /// The holder's advertised URL base for the rule's protocol, when it has one.
    Holder { server: String, url: Option<String> },
}

/// The copy; one per worker, shared by its hub (cheap to clone).
#[derive(Clone)]
pub struct ClusterView {
    copy: Arc<RwLock<Copy>>,
    changes: watch::Sender<u64>,
}

impl Default for ClusterView {
    fn default() -> Self {
        Self {
            copy: Arc::default(),
            changes: watch::Sender::new(0),
        }
    }
}

impl ClusterView {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Copy> {
        self.copy
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Applies `update`; returns the names it says another server holds now.
    pub fn apply(&self, update: ClusterUpdate) -> Vec<(StreamKey, String)> {
        let mut held_elsewhere = Vec::new();
        {
            let mut copy = self.copy.write().unwrap_or_else(|p| p.into_inner());
            if update.reset || update.own_id.is_none() {
                copy.servers.clear();
                copy.holders.clear();
            }
            copy.own_id = update.own_id;
            copy.connected = update.connected && copy.own_id.is_some();
            for server in update.servers {
                match server.urls {
                    Some(urls) => copy.servers.insert(server.id, urls),
                    None => copy.servers.remove(&server.id),
                };
            }
            for entry in update.streams {
                let key = StreamKey::new(entry.app, entry.stream);
                match entry.server {
                    Some(server) => {
                        if copy.own_id.as_deref() != Some(server.as_str()) {
                            held_elsewhere.push((key.clone(), server.clone()));
                        }
                        copy.holders.insert(key, server.into());
                    }
                    None => {
                        copy.holders.remove(&key);
                    }
                }
            }
            if !copy.connected {
                held_elsewhere.clear();
            }
        }
        self.changes.send_modify(|version| *version += 1);
        held_elsewhere
    }

    /// The other server that holds `key`, while the registry is current.
    pub fn held_elsewhere(&self, key: &StreamKey) -> Option<Arc<str>> {
        let copy = self.read();
        if !copy.connected {
            return None;
        }
        let holder = copy.holders.get(key)?;
        (copy.own_id.as_deref() != Some(&**holder)).then(|| Arc::clone(holder))
    }

    /// Where to pull `key` from, for a rule whose origins are SRT (`srt`) or RTMP. A
    /// holder is answered from the last copy even while the watch is not current.
    pub fn resolve(&self, key: &StreamKey, srt: bool) -> Resolution {
        let copy = self.read();
        if copy.own_id.is_none() {
            return Resolution::Unknown;
        }
        match copy.holders.get(key) {
            Some(server) => {
                let url = (copy.servers.get(&**server).into_iter().flatten())
                    .find(|url| is_srt_origin(url) == srt)
                    .cloned();
                Resolution::Holder {
                    server: server.to_string(),
                    url,
                }
            }
            None if copy.connected => Resolution::Unregistered,
            None => Resolution::Unknown,
        }
    }

    /// Wakes on every update.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strom_ipc::cluster::{ServerEntry, StreamEntry};

    fn update(reset: bool, connected: bool) -> ClusterUpdate {
        ClusterUpdate {
            own_id: Some("me".into()),
            connected,
            reset,
            ..ClusterUpdate::default()
        }
    }

    fn held(app: &str, stream: &str, server: Option<&str>) -> StreamEntry {
        StreamEntry {
            app: app.into(),
            stream: stream.into(),
            server: server.map(Into::into),
        }
    }

    #[test]
    fn names_held_elsewhere_are_refused_only_while_the_registry_is_current() {
        let view = ClusterView::default();
        let key = StreamKey::new("live", "x");
        assert_eq!(view.resolve(&key, false), Resolution::Unknown);
        let mut first = update(true, true);
        first.servers.push(ServerEntry {
            id: "o2".into(),
            urls: Some(vec!["srt://o2:9000".into(), "rtmp://o2:1935".into()]),
        });
        first.streams = vec![
            held("live", "x", Some("o2")),
            held("live", "mine", Some("me")),
        ];
        let elsewhere = view.apply(first);
        assert_eq!(elsewhere, [(key.clone(), "o2".to_owned())]);
        assert_eq!(view.held_elsewhere(&key).as_deref(), Some("o2"));
        assert_eq!(view.held_elsewhere(&StreamKey::new("live", "mine")), None);
        assert_eq!(
            view.resolve(&key, false),
            Resolution::Holder {
                server: "o2".into(),
                url: Some("rtmp://o2:1935".into())
            }
        );
        assert_eq!(
            view.resolve(&StreamKey::new("live", "nobody"), true),
            Resolution::Unregistered
        );

        // etcd unreachable: the last copy still resolves, but refuses nothing.
        assert!(view.apply(update(false, false)).is_empty());
        assert_eq!(view.held_elsewhere(&key), None);
        assert!(
            matches!(view.resolve(&key, true), Resolution::Holder { url: Some(u), .. } if u == "srt://o2:9000")
        );
        assert_eq!(
            view.resolve(&StreamKey::new("live", "nobody"), true),
            Resolution::Unknown
        );

        // Back, with the name released: nobody holds it.
        let mut back = update(true, true);
        back.streams.push(held("live", "x", None));
        view.apply(back);
        assert_eq!(view.held_elsewhere(&key), None);
        assert_eq!(view.resolve(&key, false), Resolution::Unregistered);

        // No Cluster block any more.
        view.apply(ClusterUpdate::default());
        assert_eq!(view.resolve(&key, false), Resolution::Unknown);
    }
}
