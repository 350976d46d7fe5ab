//! Tests of the packager (`packaging.rs`), kept beside it so that file stays readable.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::store::Limits;
use std::path::PathBuf;
use std::time::Duration;
use strom_ipc::WorkerKind;

fn location(app: &str, stream: &str, bus: &std::path::Path) -> StreamLocation {
    StreamLocation {
        app: app.to_owned(),
        stream: stream.to_owned(),
        producer: WorkerKind::Rtmp,
        bus_path: bus.to_owned(),
    }
}

/// Every path under `dir`.
fn tree(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push(entry.path());
        if entry.file_type().unwrap().is_dir() {
            out.extend(tree(&entry.path()));
        }
    }
    out
}

/// A stream's delivery entry beats the defaults; other streams keep them.
#[test]
fn hls_follows_the_delivery_settings_of_each_stream() {
    use strom_ipc::rules::StreamDelivery;
    let mut rules = Rules::default();
    assert_eq!(hls_settings(&rules, "live", "s"), (true, 6));
    rules.delivery.streams.push(StreamDelivery {
        app: "live".into(),
        stream: "s".into(),
        outputs: Some(vec![DeliveryOutput::Dash]),
        segment_duration_secs: Some(2),
        dash_segment_addressing: None,
    });
    assert_eq!(
        hls_settings(&rules, "live", "s"),
        (true, 2),
        "DASH is segmented"
    );
    assert!(dash_enabled(&rules, "live", "s") && !dash_enabled(&rules, "live", "t"));
    rules.delivery.streams[0].outputs = Some(vec![DeliveryOutput::MpegTs]);
    assert_eq!(hls_settings(&rules, "live", "s"), (false, 2));
    assert_eq!(hls_settings(&rules, "live", "t"), (true, 6));
}

/// A producer announcing hostile names (as the registry would pass them on) gets
/// nothing packaged and nothing written, inside or outside `run_dir`.
#[tokio::test]
async fn hostile_announced_names_are_not_packaged() {
    let top = tempfile::tempdir().unwrap();
    let run_dir = top.path().join("a/b/run");
    std::fs::create_dir_all(&run_dir).unwrap();
    let bus = run_dir.join("bus.sock");
    let shutdown = CancellationToken::new();
    let store = Arc::new(Store::new(
        &run_dir,
        Limits {
            max_ram_bytes: u64::MAX,
            grace: Duration::from_secs(30),
        },
    ));
    let gate = strom_stream::Gate::new(Hub::default(), Arc::default(), Vec::new());
    let packaging = Packaging::new(
        Arc::new(gate),
        Arc::clone(&store),
        Arc::new(SessionIds::new(1)),
        shutdown.clone(),
    );
    assert!(hls_settings(&packaging.rules(), "live", "good").0);
    let hostile = [
        ("live", "../../../../x"),
        ("live", "/tmp/x"),
        ("..", ".."),
        ("live", "a/b"),
        ("live", ".hidden"),
        ("live", ""),
    ];
    packaging.apply_registry(
        hostile
            .iter()
            .map(|(app, stream)| location(app, stream, &bus))
            .collect(),
    );
    assert!(locked(&packaging.tasks).is_empty());
    for (app, stream) in hostile {
        assert!(packaging.store.get(app, stream).is_none());
    }
    // A good name beside them is packaged.
    packaging.apply_registry(vec![
        location("live", "../../../../x", &bus),
        location("live", "good", &bus),
    ]);
    assert_eq!(locked(&packaging.tasks).len(), 1);
    assert!(packaging.store.get("live", "good").is_some());
    // Gone from the registry: ended, freed after the grace time.
    packaging.apply_registry(Vec::new());
    assert!(locked(&packaging.tasks).is_empty());
    shutdown.cancel();
    assert_eq!(
        tree(top.path()),
        vec![top.path().join("a"), top.path().join("a/b"), run_dir]
    );
}
