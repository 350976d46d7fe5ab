//! `strom worker <kind>`: the entry point of a worker process.

use crate::logging;
use crate::process::spawn::LOG_ENV;
use strom_ipc::WorkerKind;
use strom_stream::Gated;
use strom_worker_runtime::{RuntimeError, serve};

pub fn main(kind: WorkerKind) -> anyhow::Result<()> {
    let filter = std::env::var(LOG_ENV).unwrap_or_else(|_| "info".to_owned());
    logging::init(&filter, kind.as_str());
    // Exec'd as /proc/self/exe, the process would show as `exe`; the main thread's name
    // is the process name monitoring sees.
    if let Err(e) = nix::sys::prctl::set_name(kind.process_name()) {
        tracing::warn!(worker = %kind, error = %e, "could not set the process name");
    }
    // reqwest and the packager's TLS use the process-wide rustls provider: ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(format!("strom-{kind}"))
        .build()?;
    let result: Result<(), RuntimeError> = runtime.block_on(async move {
        match kind {
            // Producing workers run behind their gate (stream-scoped requests answered
            // there); the dvr worker produces nothing.
            WorkerKind::Rtmp => serve(kind, |c| strom_worker_rtmp::start(c).map(Gated::new)).await,
            WorkerKind::Ingest => {
                serve(kind, |c| strom_worker_mpegts::start(c).map(Gated::new)).await
            }
            WorkerKind::Packager => {
                serve(kind, |c| strom_worker_http::start(c).map(Gated::new)).await
            }
            WorkerKind::Dvr => serve(kind, strom_worker_dvr::start).await,
            WorkerKind::Rtsp => serve(kind, |c| strom_worker_rtsp::start(c).map(Gated::new)).await,
            WorkerKind::WebRtc => {
                serve(kind, |c| strom_worker_webrtc::start(c).map(Gated::new)).await
            }
            WorkerKind::Transcoder => {
                serve(kind, |c| strom_worker_transcode::start(c).map(Gated::new)).await
            }
        }
    });
    if let Err(e) = &result {
        tracing::error!(worker = %kind, error = %e, "worker failed");
    }
    // Do not wait for stray tasks (open client connections past the drain limit).
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    Ok(result?)
}
