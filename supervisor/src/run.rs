//! `strom run`: load the configuration, bind the listeners, start and supervise the
//! workers, serve the management API, and handle SIGHUP, SIGTERM and SIGINT.

use crate::api::{self, ApiState};
use crate::config::instance::{self, InstanceConfig, socket_addrs};
use crate::config::{drm, rules as rules_file};
use crate::listeners::{ListenerTable, bind_tcp, plan};
use crate::logging;
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
    let rules = rules_file::load(&instance.rules_path)?;
    let tls = match instance.ssl_port {
        Some(_) => Some(reload::load_tls(&instance)?),
        None => None,
    };
    let drm = instance
        .drm_settings_path
        .as_deref()
        .map(drm::load)
        .transpose()?;
    for dir in [&instance.data_dir, &instance.run_dir] {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut listeners = ListenerTable::default();
    listeners.reconcile(&plan(&instance, &rules))?;
    let management = bind_management(&instance)?;

    let stop = CancellationToken::new();
    let workers = WorkerTable::new(&stop);
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

    let api_stop = CancellationToken::new();
    let router = api::router(ApiState {
        supervisor: Arc::clone(&state),
        workers: Arc::new(workers.clone()),
    });
    for listener in management {
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let router = router.clone();
        let api_stop = api_stop.clone();
        tracing::info!(%addr, "management API listening");
        tokio::spawn(async move {
            let served = axum::serve(listener, router)
                .with_graceful_shutdown(async move { api_stop.cancelled().await })
                .await;
            if let Err(e) = served {
                tracing::error!(%addr, error = %e, "management API stopped");
            }
        });
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
        for kind in crate::state::SUBSCRIBERS {
            let request = strom_ipc::messages::WorkerRequest::StreamRegistry(snapshot.clone());
            if let Err(e) = state.workers.get(kind).request(request).await {
                // It gets the registry when it reports ready.
                tracing::debug!(worker = %kind, error = %e, "stream registry not delivered");
            }
        }
    }
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

/// Serves SIGHUP until SIGTERM or SIGINT arrives.
async fn wait_for_signals(state: &SupervisorState) -> anyhow::Result<()> {
    let mut hangup = signal(SignalKind::hangup())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    loop {
        tokio::select! {
            _ = hangup.recv() => {
                tracing::info!("SIGHUP: reloading rules");
                if let Err(e) = reload::reload_rules(state, false).await {
                    tracing::error!(error = %e, "reload failed");
                }
                if state.instance.ssl_port.is_some()
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
