//! NDI discovery: a fake NDI sender registered over mDNS (`_ndi._tcp.local.`, the way NDI
//! senders announce themselves) shows up in `GET /manage/ndi/list`, found by the ingest
//! worker's mDNS browser. The announcement carries 127.0.0.1, so it goes out on the
//! loopback interface, which mdns-sd enables by default; no LAN is needed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Server, wait_for};
use mdns_sd::{ServiceDaemon, ServiceInfo};
use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[test]
fn announced_ndi_source_is_listed() {
    let server = Server::start("ndi_discovery_interfaces = 127.0.0.1");
    server.wait_ready();
    let (status, body) = server.get("/manage/ndi/list");
    assert_eq!(status, 200, "{body}");
    assert!(body.is_array(), "{body}");

    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let id = format!("{}-{nanos}", std::process::id());
    let instance = format!("TESTHOST (strom test {id})");
    let host = format!("testhost-{id}.local.");
    let announcer = ServiceDaemon::new().unwrap();
    let info = ServiceInfo::new(
        "_ndi._tcp.local.",
        &instance,
        &host,
        "127.0.0.1",
        5961,
        None::<HashMap<String, String>>,
    )
    .unwrap();
    announcer.register(info).unwrap();

    let source = wait_for(Duration::from_secs(20), "the NDI source listed", || {
        let (status, body) = server.try_get("/manage/ndi/list")?;
        if status != 200 {
            return None;
        }
        body.as_array()?
            .iter()
            .find(|source| source["name"] == instance.as_str())
            .cloned()
    })
    .unwrap_or_else(|| {
        panic!(
            "{instance} never listed: {:?}; log:\n{}",
            server.try_get("/manage/ndi/list"),
            server.log()
        )
    });
    assert_eq!(
        source,
        serde_json::json!({
            "name": instance,
            "host": host,
            "addresses": ["127.0.0.1"],
            "port": 5961,
        })
    );
    let _ = announcer.shutdown();
}
