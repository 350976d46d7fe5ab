//! The supervisor's copy of the registry, kept by its etcd watch: every server's
//! advertised URLs and every claimed stream's holder. Each change becomes an entry of a
//! [`ClusterUpdate`] for the workers; a snapshot pages the whole copy.

use super::keys::{self, Key};
use std::collections::BTreeMap;
use strom_ipc::cluster::{ClusterUpdate, MAX_ENTRIES_PER_UPDATE, ServerEntry, StreamEntry};

#[derive(Debug, Default, Clone)]
pub struct RegistryCopy {
    pub servers: BTreeMap<String, Vec<String>>,
    pub streams: BTreeMap<(String, String), String>,
}

/// One change of the copy, as the workers are told it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Server(ServerEntry),
    Stream(StreamEntry),
}

impl RegistryCopy {
    /// A key was written (`value`) or deleted (`None`); the change, if the copy changed.
    pub fn apply(&mut self, prefix: &str, key: &[u8], value: Option<&[u8]>) -> Option<Change> {
        match keys::parse(prefix, key)? {
            Key::Server(id) => {
                let urls = value.map(keys::urls);
                let changed = match &urls {
                    Some(urls) => {
                        self.servers.insert(id.clone(), urls.clone()).as_ref() != Some(urls)
                    }
                    None => self.servers.remove(&id).is_some(),
                };
                changed.then_some(Change::Server(ServerEntry { id, urls }))
            }
            Key::Stream(app, stream) => {
                let holder = value.map(|v| String::from_utf8_lossy(v).into_owned());
                let name = (app.clone(), stream.clone());
                let changed = match &holder {
                    Some(holder) => {
                        self.streams.insert(name, holder.clone()).as_ref() != Some(holder)
                    }
                    None => self.streams.remove(&name).is_some(),
                };
                changed.then_some(Change::Stream(StreamEntry {
                    app,
                    stream,
                    server: holder,
                }))
            }
        }
    }

    /// The whole copy as updates of at most [`MAX_ENTRIES_PER_UPDATE`] entries, the first
    /// a reset.
    pub fn snapshot(&self, own_id: &str, connected: bool) -> Vec<ClusterUpdate> {
        let changes = (self.servers.iter())
            .map(|(id, urls)| {
                Change::Server(ServerEntry {
                    id: id.clone(),
                    urls: Some(urls.clone()),
                })
            })
            .chain(self.streams.iter().map(|((app, stream), holder)| {
                Change::Stream(StreamEntry {
                    app: app.clone(),
                    stream: stream.clone(),
                    server: Some(holder.clone()),
                })
            }));
        let mut updates = pages(own_id, connected, changes);
        if updates.is_empty() {
            updates.push(update(own_id, connected));
        }
        updates[0].reset = true;
        updates
    }
}

fn update(own_id: &str, connected: bool) -> ClusterUpdate {
    ClusterUpdate {
        own_id: Some(own_id.to_owned()),
        connected,
        ..ClusterUpdate::default()
    }
}

/// `changes` as updates of at most [`MAX_ENTRIES_PER_UPDATE`] entries (none for none).
pub fn pages(
    own_id: &str,
    connected: bool,
    changes: impl IntoIterator<Item = Change>,
) -> Vec<ClusterUpdate> {
    let mut updates: Vec<ClusterUpdate> = Vec::new();
    for change in changes {
        let full = updates
            .last()
            .is_none_or(|u| u.servers.len() + u.streams.len() >= MAX_ENTRIES_PER_UPDATE);
        if full {
            updates.push(update(own_id, connected));
        }
        if let Some(last) = updates.last_mut() {
            match change {
                Change::Server(entry) => last.servers.push(entry),
                Change::Stream(entry) => last.streams.push(entry),
            }
        }
    }
    updates
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_reported_once_and_snapshots_are_paged() {
        let p = "/s/";
        let mut copy = RegistryCopy::default();
        let put = copy.apply(p, b"/s/streams/live/x", Some(b"o1"));
        assert!(
            matches!(put, Some(Change::Stream(StreamEntry { server: Some(ref s), .. })) if s == "o1")
        );
        assert_eq!(copy.apply(p, b"/s/streams/live/x", Some(b"o1")), None);
        assert!(
            copy.apply(p, b"/s/servers/o1", Some(br#"["rtmp://o1:1935"]"#))
                .is_some()
        );
        assert_eq!(copy.apply(p, b"/s/unrelated", Some(b"1")), None);
        for i in 0..2_500 {
            copy.apply(p, format!("/s/streams/live/{i}").as_bytes(), Some(b"o2"));
        }
        let snapshot = copy.snapshot("o1", true);
        assert_eq!(snapshot.len(), 3);
        assert!(snapshot[0].reset && !snapshot[1].reset);
        let entries: usize = snapshot
            .iter()
            .map(|u| u.servers.len() + u.streams.len())
            .sum();
        assert_eq!(entries, 2_502);
        let gone = copy.apply(p, b"/s/streams/live/x", None);
        assert!(matches!(
            gone,
            Some(Change::Stream(StreamEntry { server: None, .. }))
        ));
        assert!(RegistryCopy::default().snapshot("o1", false)[0].reset);
    }
}
