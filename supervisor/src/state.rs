//! The supervisor's state: loaded config, rules, listeners, TLS and DRM material, the
//! publish-control deny list and the worker table. Everything a new worker process is
//! started from comes from here, so a restarted worker gets what is current.

use crate::config::instance::InstanceConfig;
use crate::listeners::ListenerTable;
use crate::process::WorkerTable;
use crate::process::supervision::SupervisorHooks;
use crate::system::SystemSampler;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, RwLock};
use strom_ipc::WorkerKind;
use strom_ipc::bus::StreamLocation;
use strom_ipc::contract::bus_path;
use strom_ipc::messages::{DrmSettings, TlsMaterial, WorkerEvent, WorkerHello, WorkerSettings};
use strom_ipc::rules::{DeliveryOutput, Rules};
use strom_ipc::sync::locked;

#[derive(Debug)]
pub struct SupervisorState {
    pub instance: Arc<InstanceConfig>,
    rules: RwLock<Arc<Rules>>,
    pub listeners: Mutex<ListenerTable>,
    pub workers: WorkerTable,
    tls: RwLock<Option<TlsMaterial>>,
    drm: RwLock<Option<DrmSettings>>,
    /// Denied publisher ids; kept here so a restarted rtmp worker keeps refusing them.
    denied_publishers: Mutex<BTreeSet<String>>,
    pub system: Arc<SystemSampler>,
    /// Serializes reloads: two at once would interleave listener changes.
    pub reload_lock: tokio::sync::Mutex<()>,
    /// Live streams and the producer serving each: the media bus registry.
    registry: Mutex<BTreeMap<(String, String), StreamLocation>>,
    /// Bumped whenever subscribers need the registry again (a change, or a subscriber
    /// worker that just started).
    registry_version: tokio::sync::watch::Sender<u64>,
    /// The management API's certificate when it speaks HTTPS; swapped by
    /// `reload_ssl_certificates` and SIGHUP for new handshakes.
    pub management_certificate: Arc<strom_tls::SwappableCertificate>,
    /// Draining for a rolling upgrade (`/manage/drain`, SIGUSR1).
    pub drain: crate::drain::Drain,
    /// The cluster registry (`Cluster`), idle without one.
    pub cluster: crate::cluster::Cluster,
}

fn read<T: Clone>(lock: &RwLock<T>) -> T {
    match lock.read() {
        Ok(value) => value.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

fn write<T>(lock: &RwLock<T>, value: T) {
    match lock.write() {
        Ok(mut current) => *current = value,
        Err(poisoned) => *poisoned.into_inner() = value,
    }
}

impl SupervisorState {
    pub fn new(
        instance: InstanceConfig,
        rules: Rules,
        listeners: ListenerTable,
        workers: WorkerTable,
        tls: Option<TlsMaterial>,
        drm: Option<DrmSettings>,
        system: Arc<SystemSampler>,
    ) -> Self {
        Self {
            instance: Arc::new(instance),
            cluster: crate::cluster::Cluster::new(rules.cluster.clone()),
            rules: RwLock::new(Arc::new(rules)),
            listeners: Mutex::new(listeners),
            workers,
            tls: RwLock::new(tls),
            drm: RwLock::new(drm),
            denied_publishers: Mutex::new(BTreeSet::new()),
            system,
            reload_lock: tokio::sync::Mutex::new(()),
            registry: Mutex::new(BTreeMap::new()),
            registry_version: tokio::sync::watch::Sender::new(0),
            management_certificate: Arc::default(),
            drain: crate::drain::Drain::default(),
        }
    }

    pub fn rules(&self) -> Arc<Rules> {
        read(&self.rules)
    }

    pub fn set_rules(&self, rules: Arc<Rules>) {
        self.cluster.configure(rules.cluster.clone());
        write(&self.rules, rules);
    }

    /// Changes the rules in force under the write lock (API-created re-publishing rules).
    pub fn change_rules(&self, change: impl FnOnce(&mut Rules)) {
        let mut guard = match self.rules.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut rules = (**guard).clone();
        change(&mut rules);
        *guard = Arc::new(rules);
    }

    /// A fresh id for an API-created re-publishing rule.
    pub fn new_rule_id(&self) -> String {
        loop {
            let id = format!("{:08x}", rand::random::<u32>());
            if !self.rules().republish.iter().any(|rule| rule.id == id) {
                return id;
            }
        }
    }

    pub fn set_tls(&self, material: TlsMaterial) {
        write(&self.tls, Some(material));
    }

    /// Whether the delivery certificate is loaded (HTTPS, rtsps).
    pub fn has_tls(&self) -> bool {
        read(&self.tls).is_some()
    }

    pub fn set_drm(&self, settings: DrmSettings) {
        write(&self.drm, Some(settings));
    }

    /// Adds ids to the deny list unless it would then hold more than `max`; `Err` holds
    /// its current size.
    pub fn deny_publishers(&self, ids: &[String], max: usize) -> Result<(), usize> {
        let mut denied = locked(&self.denied_publishers);
        let new = ids
            .iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter(|id| !denied.contains(*id))
            .count();
        if denied.len() + new > max {
            return Err(denied.len());
        }
        denied.extend(ids.iter().cloned());
        Ok(())
    }

    /// Every live stream and where to subscribe to it.
    pub fn registry(&self) -> Vec<StreamLocation> {
        locked(&self.registry).values().cloned().collect()
    }

    /// The worker that produces `app/stream`, if it is live.
    pub fn producer_of(&self, app: &str, stream: &str) -> Option<WorkerKind> {
        locked(&self.registry)
            .get(&(app.to_owned(), stream.to_owned()))
            .map(|location| location.producer)
    }

    /// The live streams `kind` produces, by the registry.
    pub fn produced_by(&self, kind: WorkerKind) -> BTreeSet<(String, String)> {
        (locked(&self.registry).iter())
            .filter(|(_, location)| location.producer == kind)
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Corrects the registry by what `kind` says it produces (`listed`): adds what it
    /// lists and the registry lacks, removes what the registry had for it `before` the
    /// question and it no longer lists. Returns (added, removed).
    pub fn audit_registry(
        &self,
        kind: WorkerKind,
        before: &BTreeSet<(String, String)>,
        listed: &BTreeSet<(String, String)>,
    ) -> (usize, usize) {
        let mut registry = locked(&self.registry);
        let mut added = 0;
        for (app, stream) in listed {
            let name = (app.clone(), stream.clone());
            if let std::collections::btree_map::Entry::Vacant(entry) = registry.entry(name) {
                entry.insert(StreamLocation {
                    app: app.clone(),
                    stream: stream.clone(),
                    producer: kind,
                    bus_path: bus_path(&self.instance.run_dir, kind),
                });
                added += 1;
            }
        }
        let mut removed = 0;
        for name in before.difference(listed) {
            if registry.get(name).is_some_and(|l| l.producer == kind) {
                registry.remove(name);
                removed += 1;
            }
        }
        drop(registry);
        if added + removed > 0 {
            self.registry_changed();
        }
        (added, removed)
    }

    /// Wakes whenever the registry must be pushed to subscriber workers.
    pub fn registry_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.registry_version.subscribe()
    }

    /// Has the registry pushed to the subscriber workers again, as when a worker becomes
    /// one on a reload.
    pub(crate) fn registry_changed(&self) {
        self.registry_version.send_modify(|version| *version += 1);
    }

    pub fn worker_settings(&self) -> WorkerSettings {
        WorkerSettings {
            data_dir: self.instance.data_dir.clone(),
            run_dir: self.instance.run_dir.clone(),
            max_ram_cache_bytes: self.instance.ram_cache_size_mb * 1024 * 1024,
            max_file_cache_bytes: self.instance.file_cache_size_mb * 1024 * 1024,
            cors_origin: self
                .instance
                .access_control_allow_origin
                .clone()
                .unwrap_or_else(|| "*".to_owned()),
            hls_session_timeout_secs: self.instance.hls_session_timeout_secs,
            hls_stream_grace_secs: self.instance.hls_stream_grace_secs,
            icecast_burst_bytes: self.instance.icecast_burst_bytes,
            http_limits: self.instance.http_limits,
            ndi_discovery_interfaces: self
                .instance
                .ndi_discovery_interfaces
                .iter()
                .flatten()
                .map(ToString::to_string)
                .collect(),
        }
    }
}

impl crate::cluster::Host for SupervisorState {
    fn claimable(&self) -> BTreeSet<(String, String)> {
        let rules = self.rules();
        (locked(&self.registry).keys())
            .filter(|(app, _)| rules.edge_for(app).is_none())
            .cloned()
            .collect()
    }

    fn claimable_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.registry_changes()
    }

    fn worker(&self, kind: WorkerKind) -> &Arc<crate::process::table::WorkerHandle> {
        self.workers.get(kind)
    }
}

impl SupervisorHooks for SupervisorState {
    fn hello(&self, kind: WorkerKind, generation: u32) -> io::Result<(WorkerHello, Vec<OwnedFd>)> {
        let (listeners, fds) = locked(&self.listeners).for_worker(kind)?;
        let hello = WorkerHello {
            kind,
            generation,
            listeners,
            settings: self.worker_settings(),
            rules: (*self.rules()).clone(),
            // HTTPS delivery and rtsps listeners share the delivery certificate.
            tls: if matches!(kind, WorkerKind::Packager | WorkerKind::Rtsp) {
                read(&self.tls)
            } else {
                None
            },
            drm: if kind == WorkerKind::Packager {
                read(&self.drm)
            } else {
                None
            },
            // Publishers (rtmp, ingest) and pay-per-view ids (every delivering worker).
            denied_publishers: if kind != WorkerKind::Dvr {
                locked(&self.denied_publishers).iter().cloned().collect()
            } else {
                Vec::new()
            },
        };
        Ok((hello, fds))
    }

    fn event(&self, kind: WorkerKind, event: WorkerEvent) {
        match event {
            WorkerEvent::StreamPublished { app, stream } => {
                tracing::info!(worker = %kind, %app, %stream, "stream published");
                let location = StreamLocation {
                    app: app.clone(),
                    stream: stream.clone(),
                    producer: kind,
                    bus_path: bus_path(&self.instance.run_dir, kind),
                };
                locked(&self.registry).insert((app, stream), location);
            }
            WorkerEvent::StreamUnpublished { app, stream } => {
                tracing::info!(worker = %kind, %app, %stream, "stream unpublished");
                // Only the producer's own end removes it: the names' owners are exclusive
                // (the workers' gates), but the release of a previous owner may arrive
                // after the next owner's publish.
                let mut registry = locked(&self.registry);
                let key = (app, stream);
                if registry.get(&key).is_some_and(|l| l.producer == kind) {
                    registry.remove(&key);
                }
            }
            WorkerEvent::ClusterConflict {
                app,
                stream,
                holder,
            } => {
                tracing::info!(worker = %kind, %app, %stream, %holder, "publish refused: the name is held by another server of the cluster");
                self.cluster.publish_refused();
                return;
            }
        }
        self.registry_changed();
    }

    fn worker_ready(&self, kind: WorkerKind) {
        self.cluster.worker_ready(kind);
        if bus_subscribers(&self.rules()).contains(&kind) {
            self.registry_changed();
        }
    }

    fn worker_exited(&self, kind: WorkerKind) {
        let mut registry = locked(&self.registry);
        let before = registry.len();
        registry.retain(|_, location| location.producer != kind);
        let gone = before - registry.len();
        drop(registry);
        if gone > 0 {
            tracing::warn!(worker = %kind, streams = gone, "streams of the exited worker are gone");
            self.registry_changed();
        }
    }
}

/// Workers that read other workers' streams over the media bus under `rules`, and so
/// get the registry of live streams: the packager when any stream is delivered in a
/// packaged output or pushed to an Icecast server (`IcecastPush`), the rtmp worker when
/// it has listeners (its players may ask for any stream) or re-publishing rules, the
/// ingest worker when it has MPEG-TS outputs (`TsOutputs`: it relays streams produced
/// elsewhere), the dvr worker when any stream is delivered as `DVR` (it records them),
/// the rtsp worker when it listens (its players may ask for any stream).
/// Which streams each one subscribes to is its own decision, from the same rules.
pub fn bus_subscribers(rules: &Rules) -> Vec<WorkerKind> {
    let delivery = &rules.delivery;
    let packaged = !rules.icecast_pushes.is_empty()
        || !delivery.outputs.is_empty()
        || delivery
            .apps
            .iter()
            .any(|a| a.outputs.as_ref().is_some_and(|o| !o.is_empty()))
        || delivery
            .streams
            .iter()
            .any(|s| s.outputs.as_ref().is_some_and(|o| !o.is_empty()));
    let plays = !rules.rtmp.interfaces.is_empty() || !rules.republish.is_empty();
    // TS outputs and server playlists (live sources) read other workers' streams.
    let relays_ts = !rules.ts_outputs.is_empty() || rules.server_playlists.is_some();
    let records = delivery.outputs.contains(&DeliveryOutput::Dvr)
        || delivery.apps.iter().any(|a| {
            a.outputs
                .as_ref()
                .is_some_and(|o| o.contains(&DeliveryOutput::Dvr))
        })
        || delivery.streams.iter().any(|s| {
            s.outputs
                .as_ref()
                .is_some_and(|o| o.contains(&DeliveryOutput::Dvr))
        });
    [
        (packaged, WorkerKind::Packager),
        (plays, WorkerKind::Rtmp),
        (relays_ts, WorkerKind::Ingest),
        (records, WorkerKind::Dvr),
        (!rules.rtsp.interfaces.is_empty(), WorkerKind::Rtsp),
        (!rules.webrtc.interfaces.is_empty(), WorkerKind::WebRtc),
        (
            !rules.transcoding.ladders.is_empty(),
            WorkerKind::Transcoder,
        ),
    ]
    .into_iter()
    .filter_map(|(wanted, kind)| wanted.then_some(kind))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use strom_ipc::rules::{AppDelivery, DeliveryOutput, RtmpInterface, TsOutputSettings};

    #[test]
    fn bus_subscribers_follow_the_rules() {
        let mut rules = Rules::default();
        rules.rtmp.interfaces.clear();
        assert_eq!(bus_subscribers(&rules), [WorkerKind::Packager]);
        rules.delivery.outputs.clear();
        assert!(
            bus_subscribers(&rules).is_empty(),
            "nothing reads other workers' streams"
        );
        rules.delivery.apps.push(AppDelivery {
            app: "live".into(),
            outputs: Some(vec![DeliveryOutput::Hls]),
            segment_duration_secs: None,
            dash_segment_addressing: None,
        });
        rules.rtmp.interfaces.push(RtmpInterface {
            ip: "127.0.0.1".into(),
            port: 1935,
        });
        assert_eq!(
            bus_subscribers(&rules),
            [WorkerKind::Packager, WorkerKind::Rtmp]
        );
        rules.ts_outputs.push(TsOutputSettings {
            id: "ts-1".into(),
            protocol: "udp".into(),
            mode: "push".into(),
            ip: "239.1.1.1".into(),
            port: 5000,
            parameters: Vec::new(),
            app: "live".into(),
            stream: "tv".into(),
        });
        assert_eq!(
            bus_subscribers(&rules),
            [WorkerKind::Packager, WorkerKind::Rtmp, WorkerKind::Ingest]
        );
        rules.delivery.apps.clear();
        rules.rtmp.interfaces.clear();
        assert_eq!(
            bus_subscribers(&rules),
            [WorkerKind::Ingest],
            "MPEG-TS outputs alone make the ingest worker a subscriber"
        );
        rules.ts_outputs.clear();
        rules
            .icecast_pushes
            .push(strom_ipc::rules::IcecastPushSettings {
                app: "live".into(),
                stream: "radio".into(),
                host: "icecast.example".into(),
                port: 8000,
                mount: "/radio".into(),
                user: "source".into(),
                password: "pw".into(),
                name: String::new(),
                description: String::new(),
                genre: String::new(),
                public: false,
            });
        assert_eq!(
            bus_subscribers(&rules),
            [WorkerKind::Packager],
            "an Icecast push alone makes the packager a subscriber"
        );
    }
}
