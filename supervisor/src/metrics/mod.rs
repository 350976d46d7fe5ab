//! Prometheus metrics: `GET /metrics` on its own listener (off unless
//! `metrics_listen_interfaces` is set), optionally behind a bearer token (`metrics_token`).
//!
//! Every scrape asks the workers the same questions the management API asks for
//! `server_status`, `workers`, `rtmp_status`, `sessions`, `srt_receiver_stats` and
//! `dvr_status`, through the same [`crate::api::gateway::WorkerGateway`] with the same
//! timeout (`management_worker_timeout`) ([`snapshot`]), and renders the answers in the
//! OpenMetrics text format with the `prometheus-client` crate ([`render`]), or in the
//! Prometheus text format 0.0.4 when the scrape's `Accept` does not prefer OpenMetrics
//! ([`exposition`]). The
//! management API's request latencies are recorded by a layer on its router
//! ([`crate::api_latency`]). The listener is bound by the supervisor like every other socket and
//! served by [`crate::management::serve`], so it gets the same header and idle timeouts
//! and a connection cap of its own ([`MAX_CONNECTIONS`], [`MAX_CONNECTIONS_PER_IP`] from one
//! address). When every place is taken, a new connection takes the place of the oldest
//! one that is not serving a request, so idle connections from several addresses cannot
//! refuse scrapes ([`crate::management::eviction`]).

pub mod exposition;
mod http;
pub mod render;
pub mod snapshot;

use crate::api::ApiState;
use crate::config::instance::{InstanceConfig, socket_addrs};
use crate::listeners::bind_tcp;
use crate::management::{self, Management};
use anyhow::Context;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Open metrics connections at most (all metrics interfaces together). Prometheus keeps
/// one connection per target; a few more leave room for a second server and curl.
pub const MAX_CONNECTIONS: usize = 16;
/// Open metrics connections at most from one client address (or fewer, with a lower
/// `management_max_connections_per_ip`): one client holding idle connections (each until
/// the header timeout) could otherwise take all [`MAX_CONNECTIONS`] and refuse every
/// scrape.
pub const MAX_CONNECTIONS_PER_IP: u32 = 4;

/// Binds the metrics listeners: none when `metrics_listen_interfaces` is unset, and only
/// on the interfaces it names.
pub fn bind(instance: &InstanceConfig) -> anyhow::Result<Vec<std::net::TcpListener>> {
    let settings = &instance.metrics;
    let Some(interfaces) = &settings.listen_interfaces else {
        tracing::info!("metrics endpoint disabled: metrics_listen_interfaces is not set");
        return Ok(Vec::new());
    };
    if settings.token.is_none() {
        tracing::warn!("metrics_token is not set: /metrics answers every client");
    }
    socket_addrs(interfaces, settings.port)
        .into_iter()
        .map(|addr| bind_tcp(addr).with_context(|| format!("cannot listen for /metrics on {addr}")))
        .collect()
}

/// Serves `/metrics` on `listeners` until `stop` is cancelled.
pub fn start(
    listeners: Vec<std::net::TcpListener>,
    api: ApiState,
    stop: &CancellationToken,
) -> anyhow::Result<()> {
    if listeners.is_empty() {
        return Ok(());
    }
    let limits = &api.supervisor.instance.management;
    let seconds = |secs: u32| Duration::from_secs(secs.into());
    let server = Arc::new(
        Management::new(
            seconds(limits.header_timeout_secs),
            seconds(limits.idle_timeout_secs),
            seconds(limits.body_timeout_secs),
            MAX_CONNECTIONS,
            limits.max_connections_per_ip.min(MAX_CONNECTIONS_PER_IP),
            None,
        )
        .evicting_idle(),
    );
    let token = api.supervisor.instance.metrics.token.clone();
    let router = http::router(api, token);
    for listener in listeners {
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        tracing::info!(%addr, "metrics endpoint listening (GET /metrics)");
        tokio::spawn(management::serve(
            listener,
            router.clone(),
            Arc::clone(&server),
            stop.clone(),
        ));
    }
    Ok(())
}
