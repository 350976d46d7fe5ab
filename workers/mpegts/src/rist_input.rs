//! RIST inputs (`Cameras` entries with `protocol` `rist`): one thread per entry runs a
//! librist receiver ([`crate::rist`]), listening on the entry's `ip:port` (`listen`) or
//! calling it (`pull`), and feeds what arrives into a [`TsInput`] as the entry's
//! `app/stream`. librist binds its own sockets, so the worker binds listening RIST
//! ports itself (the supervisor lends none; see README). A receiver that cannot start
//! (port taken, say) is retried with a backoff. The inputs restart when rules change.

use crate::input_status::OFFLINE_AFTER;
use crate::rist::{RistOptions, RistReceiver, StatsSlot};
use crate::shared::MpegTsShared;
use crate::ts_input::TsInput;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use strom_ipc::rules::{CameraSettings, Rules};
use strom_stream::StreamKey;
use strom_worker_runtime::sync::locked;
use tokio_util::sync::CancellationToken;

/// How long one read waits, so a stop is noticed quickly.
const POLL: Duration = Duration::from_millis(200);
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

pub struct RistInputs {
    shared: Arc<MpegTsShared>,
    shutdown: CancellationToken,
    current: Mutex<CancellationToken>,
    /// The threads of the current set: the next set waits for them, so a listening
    /// port is free again before it is bound anew.
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// The streams of the configured RIST inputs.
    keys: Mutex<Vec<StreamKey>>,
    /// The stats of running receivers with `rist-stats-interval`, by `Cameras` id.
    stats: Arc<Mutex<BTreeMap<String, Arc<StatsSlot>>>>,
}

impl RistInputs {
    pub fn new(shared: Arc<MpegTsShared>, shutdown: CancellationToken) -> Self {
        let current = Mutex::new(shutdown.child_token());
        Self {
            shared,
            shutdown,
            current,
            threads: Mutex::default(),
            keys: Mutex::default(),
            stats: Arc::default(),
        }
    }

    /// Stops every RIST input and starts those `rules` describe.
    pub fn restart(&self, rules: &Rules) {
        let next = self.shutdown.child_token();
        std::mem::replace(&mut *locked(&self.current), next.clone()).cancel();
        let previous = Arc::new(Mutex::new(std::mem::take(&mut *locked(&self.threads))));
        let cameras: Vec<&CameraSettings> = rules
            .cameras
            .iter()
            .filter(|c| c.protocol == "rist")
            .collect();
        *locked(&self.keys) = cameras
            .iter()
            .map(|c| StreamKey::new(c.app.clone(), c.stream.clone()))
            .collect();
        for camera in cameras {
            let (camera, shared, stop) = (camera.clone(), Arc::clone(&self.shared), next.clone());
            let (previous, stats) = (Arc::clone(&previous), Arc::clone(&self.stats));
            let spawned = std::thread::Builder::new()
                .name("rist-input".into())
                .spawn(move || {
                    {
                        let mut threads = locked(&previous);
                        for thread in threads.drain(..) {
                            let _ = thread.join();
                        }
                    }
                    run(&camera, &shared, &stop, &stats);
                });
            match spawned {
                Ok(thread) => locked(&self.threads).push(thread),
                Err(e) => tracing::error!(error = %e, "no thread for a RIST input"),
            }
        }
    }

    /// librist's latest stats JSON of every running input with `rist-stats-interval`.
    pub fn receiver_stats(&self) -> Vec<String> {
        locked(&self.stats)
            .iter()
            .filter_map(|(id, slot)| slot.latest_named(id))
            .collect()
    }
}

/// Runs one input until `stop`, starting its receiver again after failures.
fn run(
    camera: &CameraSettings,
    shared: &Arc<MpegTsShared>,
    stop: &CancellationToken,
    stats: &Mutex<BTreeMap<String, Arc<StatsSlot>>>,
) {
    let options = match RistOptions::from_parameters(&camera.parameters) {
        Ok(options) => options,
        Err(e) => {
            tracing::error!(input = %camera.id, error = %e, "RIST input not started");
            return;
        }
    };
    let listen = camera.receive_mode != "pull";
    let url = options.url(&camera.ip, camera.port, listen);
    let mut backoff = FIRST_BACKOFF;
    while !stop.is_cancelled() {
        match RistReceiver::start(&camera.id, &url, &options) {
            Ok(receiver) => {
                backoff = FIRST_BACKOFF;
                let mode = if listen { "listening" } else { "calling" };
                tracing::info!(input = %camera.id, addr = %format!("{}:{}", camera.ip, camera.port), profile = ?options.profile, "RIST input {mode}");
                if let Some(slot) = receiver.stats() {
                    locked(stats).insert(camera.id.clone(), slot);
                }
                receive(camera, shared, &receiver, stop);
                locked(stats).remove(&camera.id);
                drop(receiver);
                // A receiver that failed while reading is started again, not at once.
                pause(FIRST_BACKOFF, stop);
            }
            Err(e) => {
                tracing::error!(input = %camera.id, error = %e, retry_in = ?backoff, "RIST input failed to start");
                pause(backoff, stop);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
    tracing::info!(input = %camera.id, "RIST input stopped");
}

/// Sleeps `duration`, or less when `stop` comes first.
fn pause(duration: Duration, stop: &CancellationToken) {
    let until = Instant::now() + duration;
    while Instant::now() < until && !stop.is_cancelled() {
        std::thread::sleep(POLL);
    }
}

/// Feeds what `receiver` delivers into the entry's stream until `stop` or a read error.
fn receive(
    camera: &CameraSettings,
    shared: &Arc<MpegTsShared>,
    receiver: &RistReceiver,
    stop: &CancellationToken,
) {
    let mut input = TsInput::new(
        camera.id.clone(),
        StreamKey::new(camera.app.clone(), camera.stream.clone()),
        "RIST",
        shared.status_of(&camera.id),
        shared.hub.clone(),
        Arc::clone(&shared.ids),
    )
    .listing_contributors(shared.gate.sessions().clone());
    let configured = camera
        .ip
        .parse::<IpAddr>()
        .map(|ip| SocketAddr::new(ip, camera.port))
        .unwrap_or(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)));
    let mut last_data: Option<Instant> = None;
    while !stop.is_cancelled() {
        match receiver.read(POLL) {
            Ok(Some(block)) => {
                let payload = block.payload();
                shared.counters.add_received(payload.len() as u64);
                input.status.received(payload.len());
                let sender = match camera.receive_mode.as_str() {
                    "pull" => configured,
                    _ => receiver.last_peer().unwrap_or(configured),
                };
                input.feed(payload, sender);
                last_data = Some(Instant::now());
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(input = %camera.id, error = %e, "RIST read failed");
                break;
            }
        }
        if last_data.is_some_and(|last| last.elapsed() >= OFFLINE_AFTER) {
            input.stopped();
            last_data = None;
        }
    }
    input.stopped();
}
