//! The `transcoder` worker: makes the ABR ladders of `Transcoding` from published
//! streams ([`jobs`]: which sources, within `max_concurrent`), an ffmpeg process per
//! source ([`job`], its command line in [`ffmpeg_args`]), and publishes each rendition
//! back as `app/<stream>_<name>`, which every output then serves like any stream.
//!
//! Why ffmpeg processes under the worker's control rather than libavcodec linked in or
//! GStreamer: a decoder or encoder that crashes or hangs on one bad stream takes down
//! its own process, not the worker and the other transcodes; the encoding is exactly
//! ffmpeg's (the CPU a rendition costs is ffmpeg's, which is what operators compare
//! against); and nothing is linked against a particular libav* version. See
//! docs/transcoding.md.

mod ffmpeg_args;
mod job;
mod jobs;
mod status;

use jobs::Jobs;
use std::path::PathBuf;
use std::sync::Arc;
use strom_ipc::FailureKind;
use strom_ipc::WorkerKind;
use strom_ipc::messages::{WorkerReply, WorkerRequest};
use strom_ipc::rules::Rules;
use strom_stream::{Gate, Hub};
use strom_worker_runtime::{InheritedListener, WorkerContext, WorkerService};

/// The ffmpeg binary: `STROM_FFMPEG` when set (tests, other builds), else `ffmpeg` on
/// the `PATH`.
fn ffmpeg_binary() -> PathBuf {
    std::env::var_os("STROM_FFMPEG").map_or_else(|| PathBuf::from("ffmpeg"), PathBuf::from)
}

pub struct TranscodeWorker {
    gate: Arc<Gate>,
    jobs: Arc<Jobs>,
}

pub fn start(context: WorkerContext) -> Result<Arc<TranscodeWorker>, String> {
    if !context.listeners.is_empty() {
        return Err(format!(
            "the transcoder worker takes no listeners, got {}",
            context.listeners.len()
        ));
    }
    let run_dir = &context.hello.settings.run_dir;
    let hub = Hub::for_worker(context.events.clone(), run_dir)
        .map_err(|e| format!("stream name claims in the run directory: {e}"))?;
    strom_stream::bus::producer::start(
        run_dir,
        WorkerKind::Transcoder,
        hub.clone(),
        Arc::clone(&context.session_ids),
        context.shutdown.clone(),
    )?;
    let socket_dir = run_dir.join("transcode");
    std::fs::create_dir_all(&socket_dir).map_err(|e| format!("{}: {e}", socket_dir.display()))?;
    let rules = context.hello.rules.clone();
    let gate = Arc::new(Gate::new(
        hub.clone(),
        Arc::new(rules.clone()),
        context.hello.denied_publishers.clone(),
    ));
    let jobs = Jobs::new(
        hub,
        context.session_ids,
        rules,
        socket_dir,
        ffmpeg_binary(),
        context.shutdown,
    );
    Ok(Arc::new(TranscodeWorker { gate, jobs }))
}

impl WorkerService for TranscodeWorker {
    async fn handle(&self, request: WorkerRequest) -> WorkerReply {
        match request {
            WorkerRequest::StreamRegistry(locations) => {
                self.jobs.apply_registry(locations);
                WorkerReply::Done
            }
            WorkerRequest::Transcodes => WorkerReply::JsonItems(
                self.jobs
                    .status()
                    .iter()
                    .map(serde_json::Value::to_string)
                    .collect(),
            ),
            WorkerRequest::ApplyRules(rules) => {
                let rules: Arc<Rules> = Arc::from(rules);
                tracing::info!(ladders = rules.transcoding.ladders.len(), "rules applied");
                self.gate.set_rules(Arc::clone(&rules));
                self.jobs.set_rules(rules);
                WorkerReply::Done
            }
            other => WorkerReply::error(
                FailureKind::Unsupported,
                format!("the transcoder worker does not handle {other:?}"),
            ),
        }
    }

    fn replace_listeners(&self, listeners: Vec<InheritedListener>) {
        if !listeners.is_empty() {
            tracing::warn!(
                count = listeners.len(),
                "transcoder worker ignores listeners"
            );
        }
    }

    async fn drain(&self) {}
}

impl strom_stream::gate::GatedService for TranscodeWorker {
    fn gate(&self) -> &Gate {
        &self.gate
    }
}
