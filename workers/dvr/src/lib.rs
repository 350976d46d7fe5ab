//! The `dvr` worker: recordings under `data_dir/dvr`, MP4 export, archive cleanup.
//!
//! Recording arrives with the DVR issue. Until then the worker answers from what is on
//! disk: no archive directory means no archives, and cleanup of an unknown archive is
//! `Not found`.

use std::path::PathBuf;
use std::sync::Arc;
use strom_ipc::FailureKind;
use strom_ipc::messages::{WorkerReply, WorkerRequest};
use strom_worker_runtime::{InheritedListener, WorkerContext, WorkerService};

pub struct DvrWorker {
    archive_root: PathBuf,
}

pub fn start(context: WorkerContext) -> Result<Arc<DvrWorker>, String> {
    Ok(Arc::new(DvrWorker {
        archive_root: context.hello.settings.data_dir.join("dvr"),
    }))
}

impl DvrWorker {
    fn archive_exists(&self, app: &str, stream: &str) -> bool {
        let safe =
            |part: &str| !part.is_empty() && part != "." && part != ".." && !part.contains('/');
        safe(app) && safe(stream) && self.archive_root.join(app).join(stream).is_dir()
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
            WorkerRequest::DvrStatus { .. } => WorkerReply::DvrArchives(Vec::new()),
            WorkerRequest::DvrCleanup { app, stream, .. } => {
                if self.archive_exists(&app, &stream) {
                    WorkerReply::error(
                        FailureKind::Internal,
                        format!(
                            "archive {app}/{stream} exists but this build cannot clean archives yet"
                        ),
                    )
                } else {
                    WorkerReply::error(FailureKind::NotFound, format!("no archive {app}/{stream}"))
                }
            }
            WorkerRequest::ApplyRules(_) => WorkerReply::Done,
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
