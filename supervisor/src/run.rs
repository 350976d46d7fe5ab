//! `strom run`: load the configuration, bind the listeners, start and supervise the
//! workers, serve the management API, and handle SIGHUP, SIGUSR1/SIGUSR2 (drain), SIGTERM
//! and SIGINT.

use crate::api::{self, ApiState};
use crate::config::instance::{self, InstanceConfig, socket_addrs};
use crate::config::{drm, rules as rules_file};
use crate::listeners::{ListenerTable, bind_tcp, plan};
use crate::logging;
use crate::management::{self, Management, fd_limit};
use crate::metrics;
use crate::process::WorkerTable;
use crate::process::supervision::{SupervisionContext, supervise};
use crate::reload;
use crate::state::SupervisorState;
use crate::system::SystemSampler;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU32;
use std::time::Duration;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// Longest the supervisor waits for workers to drain and exit at shutdown.
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(15);

pub use crate::commands::{check_config, sign};

pub fn main(config_path: &Path) -> anyhow::Result<()> {
    let instance = instance::load(config_path)?;
    logging::init(&instance.logging, "supervisor");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("strom-supervisor")
        .build()?;
    runtime.block_on(supervise_all(instance))
}

async fn supervise_all(instance: InstanceConfig) -> anyhow::Result<()> {
    // Before anything is opened: workers inherit the raised limit too.
    let descriptor_limit = fd_limit::raise_nofile_limit().context("reading RLIMIT_NOFILE")?;
    let rules = rules_file::load(&instance.rules_path)?;
    let tls = reload::load_delivery_tls(&instance, &rules)?;
    let management_tls = reload::load_management_tls(&instance)?;
    let drm = instance
        .drm_settings_path
        .as_deref()
        .map(drm::load)
        .transpose()?;
    for dir in [&instance.data_dir, &instance.run_dir] {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut listeners = ListenerTable::default();
    let planned = plan(&instance, &rules);
    listeners.reconcile(&planned)?;
    let management = bind_management(&instance)?;
    let metrics_listeners = metrics::bind(&instance)?;
    // Metrics connections come out of the same descriptor budget.
    let metrics_fds = match metrics_listeners.len() {
        0 => 0,
        listeners => listeners + metrics::MAX_CONNECTIONS,
    };
    let management_cap = management_cap(
        &instance,
        descriptor_limit,
        planned.len() + management.len() + metrics_fds,
    );

    let stop = CancellationToken::new();
    let workers = WorkerTable::new(&stop).with_api_timeout(Duration::from_secs(
        instance.management.worker_timeout_secs.into(),
    ));
    let system = SystemSampler::start()?;
    let state = Arc::new(SupervisorState::new(
        instance,
        rules,
        listeners,
        workers.clone(),
        tls,
        drm,
        system,
    ));
    if let Some(certified) = management_tls {
        state.management_certificate.replace(certified);
    }
    let management_server = Arc::new(management_server(&state, management_cap)?);

    let context = SupervisionContext {
        exe: PathBuf::from("/proc/self/exe"),
        log_filter: state.instance.logging.clone(),
        hooks: state.clone(),
        generations: Arc::new(AtomicU32::new(0)),
    };
    let mut supervisors = tokio::task::JoinSet::new();
    for worker in workers.all() {
        supervisors.spawn(supervise(Arc::clone(worker), context.clone()));
    }

    tokio::spawn(push_registry(Arc::clone(&state)));
    state.cluster.start(
        Arc::clone(&state) as Arc<dyn crate::cluster::Host>,
        stop.clone(),
    );
    tokio::spawn(crate::registry_audit::run(Arc::clone(&state), stop.clone()));
    let draining = Arc::clone(&state);
    tokio::spawn(async move { draining.drain.keep_told(&draining.workers).await });

    let api_stop = CancellationToken::new();
    let api_state = ApiState {
        supervisor: Arc::clone(&state),
        workers: Arc::new(workers.clone()),
    };
    metrics::start(metrics_listeners, api_state.clone(), &api_stop)?;
    let router = api::router(api_state);
    for listener in management {
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let https = management_server.tls.is_some();
        tracing::info!(%addr, https, "management API listening");
        tokio::spawn(management::serve(
            listener,
            router.clone(),
            Arc::clone(&management_server),
            api_stop.clone(),
        ));
    }

    wait_for_signals(&state).await?;
    tracing::info!("shutting down: draining workers");
    api_stop.cancel();
    stop.cancel();
    let drained = tokio::time::timeout(SHUTDOWN_LIMIT, async {
        while supervisors.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!("workers did not stop in time; they are killed with the supervisor");
    }
    tracing::info!("stopped");
    Ok(())
}

/// Keeps subscriber workers' view of the live streams current.
async fn push_registry(state: Arc<SupervisorState>) {
    let mut changes = state.registry_changes();
    while changes.changed().await.is_ok() {
        let snapshot = state.registry();
        for kind in crate::state::bus_subscribers(&state.rules()) {
            let request = strom_ipc::messages::WorkerRequest::StreamRegistry(snapshot.clone());
            if let Err(e) = state.workers.get(kind).request(request).await {
                // It gets the registry when it reports ready.
                tracing::debug!(worker = %kind, error = %e, "stream registry not delivered");
            }
        }
    }
}

/// The management connection cap: as configured, or lower so that the descriptor
/// reserve stays free (see [`fd_limit`]).
fn management_cap(instance: &InstanceConfig, descriptor_limit: u64, listeners: usize) -> usize {
    let configured = instance.management.max_connections;
    let cap = fd_limit::connection_cap(configured, descriptor_limit, listeners);
    if cap < configured as usize {
        tracing::warn!(
            configured,
            cap,
            descriptor_limit,
            "management_max_connections lowered to keep descriptors free for worker restarts"
        );
    }
    tracing::info!(
        descriptor_limit,
        management_max_connections = cap,
        "descriptor budget"
    );
    cap
}

/// The management listeners' settings: timeouts, TLS (with the swappable certificate
/// in `state`), the connection cap and the cross-site guard.
fn management_server(state: &SupervisorState, cap: usize) -> anyhow::Result<Management> {
    let settings = &state.instance.management;
    let tls = match settings.ssl_certificate {
        Some(_) => {
            let certificate = Arc::clone(&state.management_certificate);
            let config = strom_tls::server_config(certificate)
                .map_err(|e| anyhow::anyhow!("management API TLS: {e}"))?;
            Some(tokio_rustls::TlsAcceptor::from(config))
        }
        None => None,
    };
    let seconds = |secs: u32| Duration::from_secs(secs.into());
    let cross_site = management::cross_site::CrossSite::new(
        settings.allowed_origins.clone(),
        settings.allowed_hosts.clone(),
        tls.is_some(),
    );
    Ok(Management::new(
        seconds(settings.header_timeout_secs),
        seconds(settings.idle_timeout_secs),
        seconds(settings.body_timeout_secs),
        cap,
        settings.max_connections_per_ip,
        tls,
    )
    .guarding_cross_site(cross_site))
}

fn bind_management(instance: &InstanceConfig) -> anyhow::Result<Vec<std::net::TcpListener>> {
    let Some(interfaces) = &instance.management_listen_interfaces else {
        tracing::warn!(
            "management API disabled: management_listen_interfaces is not set in strom.conf"
        );
        return Ok(Vec::new());
    };
    if instance.management_token.is_none() {
        tracing::warn!("management_token is not set: the management API accepts every request");
    }
    socket_addrs(interfaces, instance.management_port)
        .into_iter()
        .map(|addr| {
            bind_tcp(addr)
                .with_context(|| format!("cannot listen for the management API on {addr}"))
        })
        .collect()
}

/// Serves SIGHUP (reload), SIGUSR1 (drain) and SIGUSR2 (end the drain) until SIGTERM or
/// SIGINT arrives.
async fn wait_for_signals(state: &SupervisorState) -> anyhow::Result<()> {
    let mut hangup = signal(SignalKind::hangup())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut drain = signal(SignalKind::user_defined1())?;
    let mut undrain = signal(SignalKind::user_defined2())?;
    loop {
        tokio::select! {
            _ = drain.recv() => {
                tracing::info!("SIGUSR1: draining");
                state.drain.set(&state.workers, true).await;
            }
            _ = undrain.recv() => {
                tracing::info!("SIGUSR2: drain ended");
                state.drain.set(&state.workers, false).await;
            }
            _ = hangup.recv() => {
                tracing::info!("SIGHUP: reloading rules");
                if let Err(e) = reload::reload_rules(state, false).await {
                    tracing::error!(error = %e, "reload failed; keeping the rules in force");
                }
                let tls_configured = state.instance.ssl_port.is_some()
                    || state.has_tls()
                    || state.instance.management.ssl_certificate.is_some();
                if tls_configured
                    && let Err(e) = reload::reload_certificates(state).await
                {
                    tracing::error!(error = %e, "certificate reload failed");
                }
            }
            _ = terminate.recv() => return Ok(()),
            _ = interrupt.recv() => return Ok(()),
        }
    }
}
