//! The registry's connection to etcd: [`manage`] follows the `Cluster` settings and runs
//! one [`session`] after the other (a new one after a failure, with a backoff); a
//! session takes the lease (the previous one when it is still alive, so a short etcd
//! outage costs no claim), announces the server, reads the registry and watches it from
//! that revision, and keeps this server's claims equal to the streams it produces.

use super::claims::{Claim, Claimer, REQUEST_TIMEOUT};
use super::copy::{Change, RegistryCopy};
use super::push::Push;
use super::{Host, Shared};
use etcd_client::{Client, ConnectOptions, EventType, GetOptions, WatchOptions};
use futures_util::StreamExt;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strom_ipc::cluster::{ClusterSettings, StreamEntry};
use strom_ipc::sync::locked;
use tokio_util::sync::CancellationToken;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// Claims in flight at once while a session catches up with many streams.
const CLAIMS_IN_FLIGHT: usize = 64;

type Name = (String, String);

/// Runs the registry while the settings say so, until `stop`.
pub(super) async fn manage(shared: Arc<Shared>, host: Arc<dyn Host>, stop: CancellationToken) {
    let mut settings = shared.settings.subscribe();
    let mut lease = None;
    loop {
        let current = settings.borrow_and_update().clone();
        let Some(current) = current else {
            set_connected(&shared, false, None);
            locked(&shared.status).lease_id = 0;
            *locked(&shared.copy) = RegistryCopy::default();
            let _ = shared.push.send(Push::Snapshot).await;
            tokio::select! {
                () = stop.cancelled() => return,
                changed = settings.changed() => if changed.is_err() { return },
            }
            continue;
        };
        let mut backoff = Duration::from_millis(500);
        // The first failure after a connection (or after these settings came) is a
        // warning, so a wrong endpoint is seen at once; the retries after it are not.
        let mut warned = false;
        loop {
            let ended = CancellationToken::new();
            let outcome = tokio::select! {
                () = stop.cancelled() => { ended.cancel(); None }
                changed = settings.changed() => { ended.cancel(); if changed.is_err() { return } None }
                outcome = session(&shared, &host, &current, &mut lease, &ended) => Some(outcome),
            };
            if let Some(id) = lease.filter(|_| outcome.is_none()) {
                // Leaving (shutdown or new settings): the keys go now, not in a TTL.
                revoke(&current, id).await;
                lease = None;
            }
            match outcome {
                None if stop.is_cancelled() => return,
                None => break,
                Some(error) => {
                    let was_connected = locked(&shared.status).connected;
                    set_connected(&shared, false, Some(error.to_string()));
                    let _ = shared.push.send(Push::State).await;
                    if was_connected || !warned {
                        warned = true;
                        tracing::warn!(error = %error, "cluster: etcd unreachable: media goes on, edges use the last registry copy, publishes are admitted unclaimed until it is back");
                    } else {
                        tracing::debug!(error = %error, "cluster: etcd still unreachable");
                    }
                }
            }
            tokio::select! {
                () = stop.cancelled() => return,
                changed = settings.changed() => { if changed.is_err() { return } break }
                () = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}

fn set_connected(shared: &Shared, connected: bool, error: Option<String>) {
    let mut status = locked(&shared.status);
    status.connected = connected;
    if error.is_some() {
        status.last_error = error;
    }
    if !connected {
        status.claims = 0;
    }
}

async fn revoke(settings: &ClusterSettings, lease: i64) {
    let revoked = tokio::time::timeout(REQUEST_TIMEOUT, async {
        let mut client = connect(settings).await?;
        client.lease_revoke(lease).await?;
        anyhow::Ok(())
    })
    .await;
    match revoked {
        Ok(Ok(())) => tracing::info!(
            lease = format_args!("{lease:x}"),
            "cluster: lease revoked: this server's claims are released"
        ),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "cluster: lease not revoked: its keys expire with its TTL")
        }
        Err(_) => {
            tracing::warn!("cluster: lease not revoked in time: its keys expire with its TTL")
        }
    }
}

async fn connect(settings: &ClusterSettings) -> anyhow::Result<Client> {
    let options = ConnectOptions::new()
        .with_connect_timeout(CONNECT_TIMEOUT)
        // HTTP/2 pings find a dead connection without waiting for TCP; no more often
        // than etcd's `--grpc-keepalive-min-time` (5 s by default) allows, or etcd closes
        // the connection ("too many pings"). A member cut off from its quorum is found
        // sooner by the lease's keep-alive answers, which stop (and `require_leader`).
        .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5))
        // A member cut off from its quorum answers nothing current: fail over instead.
        .with_require_leader(true);
    let client = tokio::time::timeout(
        CONNECT_TIMEOUT,
        Client::connect(&settings.etcd_endpoints, Some(options)),
    )
    .await??;
    Ok(client)
}

/// One connection's life; returns why it ended (it runs until an error or until its
/// future is dropped).
async fn session(
    shared: &Arc<Shared>,
    host: &Arc<dyn Host>,
    settings: &ClusterSettings,
    lease: &mut Option<i64>,
    ended: &CancellationToken,
) -> anyhow::Error {
    match run_session(shared, host, settings, lease, ended).await {
        Ok(never) => match never {},
        Err(e) => e,
    }
}

async fn run_session(
    shared: &Arc<Shared>,
    host: &Arc<dyn Host>,
    settings: &ClusterSettings,
    lease: &mut Option<i64>,
    ended: &CancellationToken,
) -> anyhow::Result<std::convert::Infallible> {
    let mut client = connect(settings).await?;
    let ttl = i64::from(settings.lease_ttl_secs);
    let alive = match *lease {
        Some(id) => tokio::time::timeout(REQUEST_TIMEOUT, client.lease_time_to_live(id, None))
            .await?
            .is_ok_and(|answer| answer.ttl() > 0)
            .then_some(id),
        None => None,
    };
    let id = match alive {
        Some(id) => id,
        None => {
            let granted =
                tokio::time::timeout(REQUEST_TIMEOUT, client.lease_grant(ttl, None)).await??;
            granted.id()
        }
    };
    *lease = Some(id);
    let claimer = Claimer {
        client: client.clone(),
        prefix: settings.key_prefix.clone(),
        id: settings.server_id.clone(),
        lease: id,
    };
    // Its own task: claims and pushes below must never delay a keep-alive.
    let keeper_stop = ended.child_token();
    let _stop_keeper = keeper_stop.clone().drop_guard();
    let mut keeping = tokio::spawn(keep_alive(
        client.clone(),
        id,
        settings.lease_ttl_secs,
        keeper_stop,
    ));
    claimer.announce(&settings.advertise).await?;

    let prefix = settings.key_prefix.clone();
    let read = tokio::time::timeout(
        REQUEST_TIMEOUT,
        client.get(prefix.clone(), Some(GetOptions::new().with_prefix())),
    )
    .await??;
    let revision = read.header().map_or(0, |h| h.revision());
    let mut copy = RegistryCopy::default();
    for kv in read.kvs() {
        copy.apply(&prefix, kv.key(), Some(kv.value()));
    }
    *locked(&shared.copy) = copy;
    let mut watch = client
        .watch(
            prefix.clone(),
            Some(
                WatchOptions::new()
                    .with_prefix()
                    .with_start_revision(revision + 1),
            ),
        )
        .await?;
    {
        let mut status = locked(&shared.status);
        status.connected = true;
        status.lease_id = id;
    }
    shared.push.send(Push::Snapshot).await?;
    tracing::info!(
        server_id = %settings.server_id,
        lease = format_args!("{id:x}"),
        ttl_secs = settings.lease_ttl_secs,
        revision,
        "cluster: connected to etcd"
    );

    // Claims in their own task too: a storm of publishes must not hold up the watch,
    // which is how this server learns what others claimed (and so what to refuse).
    let committed = Arc::new(Committed::default());
    let released = Arc::new(tokio::sync::Notify::new());
    let claims_stop = ended.child_token();
    let _stop_claims = claims_stop.clone().drop_guard();
    tokio::spawn(keep_claims(
        Arc::clone(shared),
        Arc::clone(host),
        claimer,
        Arc::clone(&committed),
        Arc::clone(&released),
        claims_stop,
    ));
    loop {
        tokio::select! {
            ended = &mut keeping => return Err(match ended {
                Ok(error) => error,
                Err(e) => anyhow::anyhow!("the keep-alive task failed: {e}"),
            }),
            message = watch.message() => {
                let Some(answer) = message? else {
                    anyhow::bail!("the watch ended");
                };
                if answer.canceled() {
                    anyhow::bail!("the watch was cancelled: {}", answer.cancel_reason());
                }
                let mut changes = Vec::new();
                let mut deleted = false;
                {
                    let mut copy = locked(&shared.copy);
                    for event in answer.events() {
                        let Some(kv) = event.kv() else { continue };
                        let value = match event.event_type() {
                            EventType::Put => Some(kv.value()),
                            EventType::Delete => None,
                        };
                        committed.seen(shared, kv.key(), value);
                        deleted |= value.is_none();
                        changes.extend(copy.apply(&prefix, kv.key(), value));
                    }
                }
                if !changes.is_empty() {
                    shared.push.send(Push::Changes(changes)).await?;
                }
                if deleted {
                    // A name this server lost may be free now.
                    released.notify_one();
                }
            }
        }
    }
}

/// Claims committed and not yet seen through the watch, for the watch's lag.
#[derive(Default)]
struct Committed(std::sync::Mutex<HashMap<Vec<u8>, Instant>>);

impl Committed {
    fn add(&self, key: String) {
        let mut committed = locked(&self.0);
        if committed.len() > 4 * super::SAMPLES {
            committed.clear();
        }
        committed.insert(key.into_bytes(), Instant::now());
    }

    /// A watch event of `key`: the lag of this server's own claims.
    fn seen(&self, shared: &Shared, key: &[u8], value: Option<&[u8]>) {
        if value.is_none() {
            return;
        }
        let committed = locked(&self.0).remove(key);
        if let Some(committed) = committed {
            locked(&shared.status).watch_lag_ms.add(committed.elapsed());
        }
    }
}

/// How often claims and releases that failed are tried again without a change.
const RETRY_INTERVAL: Duration = Duration::from_secs(5);

/// Keeps this server's claims equal to the streams it produces, until `stop`.
async fn keep_claims(
    shared: Arc<Shared>,
    host: Arc<dyn Host>,
    claimer: Claimer,
    committed: Arc<Committed>,
    released: Arc<tokio::sync::Notify>,
    stop: CancellationToken,
) {
    let mut claims = Claims::default();
    let mut registry = host.claimable_changes();
    let mut retries = tokio::time::interval(RETRY_INTERVAL);
    retries.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        claims
            .reconcile(&shared, &*host, &claimer, &committed)
            .await;
        tokio::select! {
            () = stop.cancelled() => return,
            changed = registry.changed() => if changed.is_err() { return },
            () = released.notified() => claims.lost.clear(),
            _ = retries.tick() => {}
        }
    }
}

/// Keeps lease `id` alive (a keep-alive every third of its TTL); returns why it could not.
async fn keep_alive(
    mut client: Client,
    id: i64,
    ttl_secs: u32,
    ended: CancellationToken,
) -> anyhow::Error {
    let run = async {
        let (mut keeper, mut answers) =
            tokio::time::timeout(REQUEST_TIMEOUT, client.lease_keep_alive(id)).await??;
        let interval = Duration::from_millis(u64::from(ttl_secs) * 1000 / 3);
        let mut ticks = tokio::time::interval(interval);
        let mut last_answer = Instant::now();
        loop {
            tokio::select! {
                () = ended.cancelled() => anyhow::bail!("session ended"),
                _ = ticks.tick() => {
                    if last_answer.elapsed() > Duration::from_secs(u64::from(ttl_secs)) {
                        anyhow::bail!("no keep-alive answer for the lease's TTL");
                    }
                    keeper.keep_alive().await?;
                }
                answer = answers.message() => {
                    let Some(answer) = answer? else { anyhow::bail!("the keep-alive stream ended") };
                    if answer.ttl() <= 0 {
                        anyhow::bail!("the lease expired");
                    }
                    last_answer = Instant::now();
                }
            }
        }
    };
    match run.await {
        Ok(never) => never,
        Err(e) => e,
    }
}

/// This server's claims against the streams it produces.
#[derive(Default)]
struct Claims {
    held: BTreeSet<Name>,
    /// Names another server held when claimed; claimed again once a key is released.
    lost: BTreeSet<Name>,
}

impl Claims {
    /// Claims the streams produced here and releases the ones no longer produced.
    async fn reconcile(
        &mut self,
        shared: &Shared,
        host: &dyn Host,
        claimer: &Claimer,
        committed: &Committed,
    ) {
        let produced: BTreeSet<Name> = host.claimable();
        self.lost.retain(|name| produced.contains(name));
        let gone: Vec<Name> = self.held.difference(&produced).cloned().collect();
        let new: Vec<Name> = (produced.iter())
            .filter(|name| !self.held.contains(*name) && !self.lost.contains(*name))
            .cloned()
            .collect();
        let releases = futures_util::stream::iter(gone)
            .map(|(app, stream)| async move {
                let released = claimer.release(&app, &stream).await;
                ((app, stream), released)
            })
            .buffer_unordered(CLAIMS_IN_FLIGHT)
            .collect::<Vec<_>>()
            .await;
        for (name, released) in releases {
            match released {
                Ok(()) => {
                    self.held.remove(&name);
                }
                // Still held: released again with the next change, or with the lease.
                Err(e) => {
                    tracing::warn!(stream = %format_args!("{}/{}", name.0, name.1), error = %e, "cluster: release failed: tried again")
                }
            }
        }
        let outcomes = futures_util::stream::iter(new)
            .map(|(app, stream)| async move {
                let started = Instant::now();
                let claim = claimer.claim(&app, &stream).await;
                ((app, stream), started, claim)
            })
            .buffer_unordered(CLAIMS_IN_FLIGHT)
            .collect::<Vec<_>>()
            .await;
        let mut lost_to = Vec::new();
        for ((app, stream), started, claim) in outcomes {
            match claim {
                Ok(Claim::Ours) => {
                    committed.add(super::keys::stream(&claimer.prefix, &app, &stream));
                    locked(&shared.status).claim_ms.add(started.elapsed());
                    tracing::info!(stream = %format_args!("{app}/{stream}"), "cluster: claimed");
                    self.held.insert((app, stream));
                }
                Ok(Claim::Held(holder)) => {
                    locked(&shared.status).lost_claims += 1;
                    tracing::warn!(holder = %holder, "cluster: claim of {app}/{stream} lost to {holder}: its publisher here is ended");
                    // The workers end a publisher when an update names another holder;
                    // this one may have started just after its worker saw the winner's
                    // claim, so the workers are told again.
                    lost_to.push(Change::Stream(StreamEntry {
                        app: app.clone(),
                        stream: stream.clone(),
                        server: Some(holder),
                    }));
                    self.lost.insert((app, stream));
                }
                Err(e) => {
                    // Tried again with the next change of the streams or of the registry.
                    tracing::warn!(stream = %format_args!("{app}/{stream}"), error = %e, "cluster: claim failed");
                }
            }
        }
        if !lost_to.is_empty() {
            let _ = shared.push.send(Push::Changes(lost_to)).await;
        }
        locked(&shared.status).claims = self.held.len();
    }
}
