//! The `dvr` worker: records the streams whose delivery includes `DVR` into archives
//! under the `Dvr` root ([`recording`], [`recorder`], [`cutter`]; the archive format is
//! `strom_media::dvr`; codecs it cannot hold are warned about, [`unrecorded`]), answers `dvr_status` ([`status`]), and removes old content
//! ([`retention`]: cleanup requests, depth and size limits, the free-space floor).
//! The packager serves DVR playback from the same files.

mod archive_export;
#[cfg(test)]
mod archive_export_tests;
mod archives;
mod cutter;
#[cfg(test)]
mod cutter_tests;
pub mod export;
mod recorder;
mod recording;
mod retention;
mod status;
mod unrecorded;

use archives::Archives;
use recording::Recording;
use retention::CleanupBounds;
use std::sync::Arc;
use strom_ipc::FailureKind;
use strom_ipc::messages::{WorkerReply, WorkerRequest};
use strom_stream::StreamKey;
use strom_worker_runtime::{InheritedListener, WorkerContext, WorkerService};

pub struct DvrWorker {
    archives: Arc<Archives>,
    recording: Arc<Recording>,
}

pub fn start(context: WorkerContext) -> Result<Arc<DvrWorker>, String> {
    let settings = &context.hello.settings;
    let rules = context.hello.rules.clone();
    let archives = Arc::new(Archives::new(rules.dvr.root(&settings.data_dir)));
    let recording = Recording::new(
        Arc::clone(&archives),
        rules,
        settings.data_dir.clone(),
        Arc::clone(&context.session_ids),
        context.shutdown.clone(),
    );
    // Every archive is reconciled at start-up, before anything records or reads it, one
    // at a time: each is closed again once checked (see `archives`).
    match archives.keys() {
        Ok(keys) => {
            let mut failed = 0usize;
            for key in &keys {
                if let Err(e) = archives.existing(&key.app, &key.stream) {
                    failed += 1;
                    tracing::warn!(stream = %key, error = %e, "DVR archive cannot be checked");
                }
            }
            tracing::info!(archives = keys.len(), failed, "DVR archives checked");
        }
        Err(e) => tracing::warn!(error = %e, "DVR archives could not be listed"),
    }
    let floor_rules = Arc::clone(&recording);
    tokio::spawn(retention::floor_loop(
        Arc::clone(&archives),
        move || {
            floor_rules
                .rules()
                .dvr
                .min_free_space_mb
                .saturating_mul(1024 * 1024)
        },
        context.shutdown.clone(),
    ));
    export::start(
        &settings.run_dir,
        Arc::new(archive_export::ArchiveExport {
            archives: Arc::clone(&archives),
        }),
        context.shutdown.clone(),
    )?;
    Ok(Arc::new(DvrWorker {
        archives,
        recording,
    }))
}

impl DvrWorker {
    async fn status(&self, stream: Option<(String, String)>, timeline: bool) -> WorkerReply {
        let archives = Arc::clone(&self.archives);
        let answer = tokio::task::spawn_blocking(move || -> std::io::Result<_> {
            let keys = match stream {
                Some((app, stream)) => vec![StreamKey::new(app, stream)],
                None => archives.keys()?,
            };
            // One archive open at a time, closed again after its entry (unless it records).
            let mut list = Vec::with_capacity(keys.len());
            for key in keys {
                if let Some(archive) = archives.existing(&key.app, &key.stream)? {
                    list.push(status::archive_status(&key, &archive, timeline));
                }
            }
            Ok(list)
        })
        .await;
        match answer {
            Ok(Ok(list)) => WorkerReply::DvrArchives(list),
            Ok(Err(e)) => WorkerReply::error(FailureKind::Internal, format!("DVR archives: {e}")),
            Err(e) => WorkerReply::error(FailureKind::Internal, format!("DVR status: {e}")),
        }
    }

    async fn cleanup(&self, app: String, stream: String, bounds: CleanupBounds) -> WorkerReply {
        let archives = Arc::clone(&self.archives);
        let answer = tokio::task::spawn_blocking(move || -> std::io::Result<_> {
            let Some(archive) = archives.existing(&app, &stream)? else {
                return Ok(None);
            };
            let removed = retention::cleanup(&archive, bounds)?;
            // Let go before asking: an archive left empty and held by nobody (no
            // recorder) goes with its directory.
            drop(archive);
            let key = StreamKey::new(app.clone(), stream.clone());
            let directory_removed = archives.remove_if_empty(&key)?;
            tracing::info!(
                app,
                stream,
                segments = removed.0,
                bytes = removed.1,
                directory_removed,
                ?bounds,
                "DVR cleanup"
            );
            Ok(Some(removed))
        })
        .await;
        match answer {
            Ok(Ok(Some(_))) => WorkerReply::Done,
            Ok(Ok(None)) => WorkerReply::error(FailureKind::NotFound, "no such DVR archive"),
            Ok(Err(e)) => WorkerReply::error(FailureKind::Internal, format!("DVR cleanup: {e}")),
            Err(e) => WorkerReply::error(FailureKind::Internal, format!("DVR cleanup: {e}")),
        }
    }
}

impl WorkerService for DvrWorker {
    async fn handle(&self, request: WorkerRequest) -> WorkerReply {
        match request {
            WorkerRequest::ListSessions => WorkerReply::Sessions(Vec::new()),
            WorkerRequest::ListSessionsPage { .. } => WorkerReply::SessionsPage {
                sessions: Vec::new(),
                more: false,
            },
            WorkerRequest::DeleteSessions(_) => WorkerReply::SessionsDeleted(Vec::new()),
            WorkerRequest::StreamRegistry(locations) => {
                self.recording.apply_registry(locations);
                WorkerReply::Done
            }
            WorkerRequest::DvrStatus { stream, timeline } => self.status(stream, timeline).await,
            WorkerRequest::DvrCleanup {
                app,
                stream,
                target_depth_minutes,
                from,
                to,
            } => {
                let bounds = CleanupBounds {
                    target_depth_minutes,
                    from,
                    to,
                };
                self.cleanup(app, stream, bounds).await
            }
            WorkerRequest::ApplyRules(rules) => {
                self.recording.set_rules(*rules);
                WorkerReply::Done
            }
            other => WorkerReply::error(
                FailureKind::Unsupported,
                format!("the dvr worker does not handle {other:?}"),
            ),
        }
    }

    fn replace_listeners(&self, listeners: Vec<InheritedListener>) {
        if !listeners.is_empty() {
            tracing::warn!(count = listeners.len(), "dvr worker ignores listeners");
        }
    }

    async fn drain(&self) {}
}
