//! NDI source discovery for `GET /manage/ndi/list`: NDI senders announce themselves over
//! mDNS/DNS-SD as `_ndi._tcp.local.` services, so no NDI SDK is needed to list them.
//!
//! [`NdiSources`] runs an [`mdns_sd::ServiceDaemon`] (its own thread, sockets on every
//! interface including loopback) browsing that service type for the worker's lifetime; a
//! `strom-ndi` thread folds the browse events into a bounded map: resolved services are
//! added or updated, removed ones (goodbye packets or expired records) dropped. The list is
//! therefore as fresh as the LAN's announcements. A host without multicast only gets a
//! warning and an empty list; the worker never fails over discovery.

use mdns_sd::{IfKind, ResolvedService, ServiceDaemon, ServiceEvent};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use strom_worker_runtime::sync::locked;

/// The DNS-SD service type NDI senders register.
pub const NDI_SERVICE_TYPE: &str = "_ndi._tcp.local.";

/// Most sources kept; announcements of further ones are ignored (and logged once), so a
/// noisy or hostile LAN cannot grow the worker's memory without bound.
const MAX_SOURCES: usize = 1024;

/// One resolved NDI sender.
#[derive(Debug, Clone, PartialEq, Eq)]
struct NdiSource {
    /// The instance name as NDI shows it, e.g. `HOST (Source name)`.
    name: String,
    /// The sender's host name, e.g. `host.local.`.
    host: String,
    /// Its IP addresses, sorted.
    addresses: Vec<String>,
    port: u16,
}

impl NdiSource {
    fn from_resolved(service: &ResolvedService) -> Self {
        let suffix = format!(".{}", service.ty_domain);
        let name = service
            .fullname
            .strip_suffix(&suffix)
            .unwrap_or(&service.fullname)
            .to_owned();
        let mut addresses: Vec<String> = service
            .addresses
            .iter()
            .map(|ip| ip.to_ip_addr().to_string())
            .collect();
        addresses.sort();
        addresses.dedup();
        Self {
            name,
            host: service.host.clone(),
            addresses,
            port: service.port,
        }
    }

    fn to_json(&self) -> String {
        serde_json::json!({
            "name": self.name,
            "host": self.host,
            "addresses": self.addresses,
            "port": self.port,
        })
        .to_string()
    }
}

/// Sources keyed by their DNS-SD full name (what removals name).
type SourceMap = HashMap<String, NdiSource>;

/// The NDI senders currently announced on the LAN, kept up to date in the background.
pub struct NdiSources {
    daemon: Option<ServiceDaemon>,
    sources: Arc<Mutex<SourceMap>>,
}

impl NdiSources {
    /// Starts browsing; never fails: without a working mDNS daemon the list stays empty.
    /// Browses on the local interfaces with these addresses (`*`: every interface);
    /// none: no discovery at all (nothing listens on the mDNS port).
    pub fn start(interfaces: &[String]) -> Self {
        let sources = Arc::new(Mutex::new(SourceMap::new()));
        if interfaces.is_empty() {
            return Self {
                daemon: None,
                sources,
            };
        }
        let daemon = match Self::browse(interfaces, Arc::clone(&sources)) {
            Ok(daemon) => Some(daemon),
            Err(e) => {
                tracing::warn!(error = %e, "NDI discovery (mDNS) unavailable; the NDI list stays empty");
                None
            }
        };
        Self { daemon, sources }
    }

    fn browse(
        interfaces: &[String],
        sources: Arc<Mutex<SourceMap>>,
    ) -> Result<ServiceDaemon, String> {
        let daemon = ServiceDaemon::new().map_err(|e| format!("mDNS daemon: {e}"))?;
        if !interfaces.iter().any(|i| i == "*") {
            // Only the interfaces the configuration names.
            let addresses = interfaces
                .iter()
                .map(|i| i.parse::<std::net::IpAddr>().map(IfKind::Addr))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("ndi_discovery_interfaces: {e}"))?;
            let limited = daemon
                .disable_interface(IfKind::All)
                .and_then(|()| daemon.enable_interface(addresses));
            if let Err(e) = limited {
                let _ = daemon.shutdown();
                return Err(format!("limiting mDNS to {interfaces:?}: {e}"));
            }
        }
        let events = match daemon.browse(NDI_SERVICE_TYPE) {
            Ok(events) => events,
            Err(e) => {
                let _ = daemon.shutdown();
                return Err(format!("browsing {NDI_SERVICE_TYPE}: {e}"));
            }
        };
        let spawned = std::thread::Builder::new()
            .name("strom-ndi".into())
            .spawn(move || {
                let mut warned_full = false;
                // Ends when the daemon shuts down and drops the sending side.
                while let Ok(event) = events.recv() {
                    apply(&sources, event, &mut warned_full);
                }
            });
        if let Err(e) = spawned {
            let _ = daemon.shutdown();
            return Err(format!("browse thread: {e}"));
        }
        Ok(daemon)
    }

    /// One JSON object per source, `{"name", "host", "addresses", "port"}`, sorted by name.
    pub fn list(&self) -> Vec<String> {
        let mut sources: Vec<NdiSource> = locked(&self.sources).values().cloned().collect();
        sources.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.host.cmp(&b.host)));
        sources.iter().map(NdiSource::to_json).collect()
    }
}

impl Drop for NdiSources {
    fn drop(&mut self) {
        if let Some(daemon) = self.daemon.take() {
            // The daemon thread exits on its own; nothing to wait for.
            let _ = daemon.shutdown();
        }
    }
}

/// Folds one browse event into `sources`.
fn apply(sources: &Mutex<SourceMap>, event: ServiceEvent, warned_full: &mut bool) {
    match event {
        ServiceEvent::ServiceResolved(service) => {
            if !service.is_valid() {
                return;
            }
            let source = NdiSource::from_resolved(&service);
            let mut sources = locked(sources);
            if sources.len() >= MAX_SOURCES && !sources.contains_key(&service.fullname) {
                if !*warned_full {
                    *warned_full = true;
                    tracing::warn!(
                        limit = MAX_SOURCES,
                        ignored = %service.fullname,
                        "too many NDI sources announced; ignoring further ones"
                    );
                }
                return;
            }
            if sources.get(&service.fullname) != Some(&source) {
                tracing::debug!(name = %source.name, host = %source.host, "NDI source found");
            }
            sources.insert(service.fullname.clone(), source);
        }
        ServiceEvent::ServiceRemoved(_, fullname) => {
            let removed = locked(sources).remove(&fullname);
            if let Some(source) = removed {
                tracing::debug!(name = %source.name, "NDI source gone");
            }
        }
        _ => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use mdns_sd::ServiceInfo;
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    fn unique() -> String {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        format!("{}-{nanos}", std::process::id())
    }

    /// The listed source named `name`, if any.
    fn find(sources: &NdiSources, name: &str) -> Option<serde_json::Value> {
        sources
            .list()
            .iter()
            .map(|item| serde_json::from_str::<serde_json::Value>(item).unwrap())
            .find(|item| item["name"] == name)
    }

    fn poll<T>(limit: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(found) = probe() {
                return Some(found);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    #[test]
    fn ndi_source_found_and_removed() {
        let off = NdiSources::start(&[]);
        assert!(off.daemon.is_none(), "no interfaces named: nothing listens");
        let sources = NdiSources::start(&["127.0.0.1".to_owned()]);
        assert!(sources.daemon.is_some(), "mDNS daemon did not start");

        let id = unique();
        let instance = format!("TESTHOST (strom test {id})");
        let host = format!("testhost-{id}.local.");
        let announcer = ServiceDaemon::new().unwrap();
        let info = ServiceInfo::new(
            NDI_SERVICE_TYPE,
            &instance,
            &host,
            "127.0.0.1",
            5961,
            None::<HashMap<String, String>>,
        )
        .unwrap();
        let fullname = info.get_fullname().to_owned();
        announcer.register(info).unwrap();

        let found = poll(Duration::from_secs(20), || find(&sources, &instance))
            .unwrap_or_else(|| panic!("{instance} never listed: {:?}", sources.list()));
        assert_eq!(found["host"], host.as_str(), "{found}");
        assert_eq!(
            found["addresses"],
            serde_json::json!(["127.0.0.1"]),
            "{found}"
        );
        assert_eq!(found["port"], 5961, "{found}");
        assert_eq!(found.as_object().unwrap().len(), 4, "{found}");

        announcer.unregister(&fullname).unwrap();
        let gone = poll(Duration::from_secs(20), || {
            find(&sources, &instance).is_none().then_some(())
        });
        assert!(
            gone.is_some(),
            "{instance} still listed after unregistering"
        );
        let _ = announcer.shutdown();
    }

    #[test]
    fn list_is_sorted_and_bounded() {
        let sources = Mutex::new(SourceMap::new());
        let mut warned = false;
        let resolved = |name: &str| {
            let info = ServiceInfo::new(
                NDI_SERVICE_TYPE,
                name,
                "h.local.",
                "10.0.0.2,10.0.0.1",
                5960,
                None::<HashMap<String, String>>,
            )
            .unwrap();
            ServiceEvent::ServiceResolved(Box::new(info.as_resolved_service()))
        };
        for i in (0..MAX_SOURCES + 5).rev() {
            apply(&sources, resolved(&format!("H (s{i:05})")), &mut warned);
        }
        assert!(warned);
        let ndi = NdiSources {
            daemon: None,
            sources: Arc::new(sources),
        };
        let list = ndi.list();
        assert_eq!(list.len(), MAX_SOURCES);
        let first: serde_json::Value = serde_json::from_str(&list[0]).unwrap();
        assert_eq!(
            first,
            serde_json::json!({"name": "H (s00005)", "host": "h.local.",
                "addresses": ["10.0.0.1", "10.0.0.2"], "port": 5960})
        );
        let names: Vec<String> = list
            .iter()
            .map(|s| serde_json::from_str::<serde_json::Value>(s).unwrap()["name"].to_string())
            .collect();
        assert!(names.windows(2).all(|w| w[0] < w[1]));

        let removed = format!("H (s00005).{NDI_SERVICE_TYPE}");
        apply(
            &ndi.sources,
            ServiceEvent::ServiceRemoved(NDI_SERVICE_TYPE.into(), removed),
            &mut warned,
        );
        assert_eq!(ndi.list().len(), MAX_SOURCES - 1);
    }
}
