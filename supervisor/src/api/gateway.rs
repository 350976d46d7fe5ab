//! The narrow interface through which API handlers reach workers, so handlers can be
//! tested against fakes, and the rules for lists built from every worker's answer.
//!
//! A list never silently leaves a worker out. A worker that is running but gives no
//! complete answer (it timed out, its channel failed, it died mid-request, it answered
//! nonsense) makes the whole answer HTTP 503 naming it (`missing_workers`): the caller
//! retries rather than acting on a list that lacks, say, every RTMP player. A worker
//! that has no process at the moment (starting, or backing off after a crash) holds
//! nothing to list, since its sessions and streams ended with its process, so it is
//! left out of a 200 answer and named in the `Strom-Workers-Not-Running` header.

use crate::process::{RequestError, WorkerTable};
use axum::Json;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;
use serde::Serialize;
use serde_json::json;
use strom_ipc::WorkerKind;
use strom_ipc::messages::{WorkerReply, WorkerRequest};
use strom_ipc::paging::MAX_PAGE_SESSIONS;
use strom_ipc::status::SessionInfo;

pub type Answers = Vec<(WorkerKind, Result<WorkerReply, RequestError>)>;

/// Header naming the workers that had no process when a list was built.
pub const NOT_RUNNING_HEADER: HeaderName = HeaderName::from_static("strom-workers-not-running");

/// Sessions listed per worker at most: a worker claiming more is treated as broken
/// rather than allowed to grow the supervisor without bound.
const MAX_SESSIONS_PER_WORKER: usize = 2_000_000;

pub trait WorkerGateway: Send + Sync + 'static {
    /// Asks one worker.
    fn ask(
        &self,
        kind: WorkerKind,
        request: WorkerRequest,
    ) -> BoxFuture<'_, Result<WorkerReply, RequestError>>;
    /// Asks every worker at once.
    fn ask_all(&self, request: WorkerRequest) -> BoxFuture<'_, Answers>;
}

impl WorkerGateway for WorkerTable {
    fn ask(
        &self,
        kind: WorkerKind,
        request: WorkerRequest,
    ) -> BoxFuture<'_, Result<WorkerReply, RequestError>> {
        Box::pin(async move {
            self.get(kind)
                .request_with(request, &[], self.api_timeout())
                .await
        })
    }

    fn ask_all(&self, request: WorkerRequest) -> BoxFuture<'_, Answers> {
        Box::pin(self.fan_out(request))
    }
}

/// A list answer, complete over every worker that runs.
#[derive(Debug)]
pub struct Gathered<T> {
    pub items: Vec<T>,
    /// Workers without a process right now; they hold nothing to list.
    pub not_running: Vec<WorkerKind>,
}

/// Answers a list `body` as JSON, naming the workers that were not running in
/// [`NOT_RUNNING_HEADER`].
pub fn listed<B: Serialize>(not_running: &[WorkerKind], body: B) -> Response {
    let mut response = Json(body).into_response();
    if !not_running.is_empty() {
        let names: Vec<&str> = not_running.iter().map(|kind| kind.as_str()).collect();
        if let Ok(value) = HeaderValue::from_str(&names.join(",")) {
            response.headers_mut().insert(NOT_RUNNING_HEADER, value);
        }
    }
    response
}

/// Running workers gave no complete answer: HTTP 503 naming them.
#[derive(Debug, PartialEq, Eq)]
pub struct Incomplete {
    pub missing: Vec<(WorkerKind, String)>,
}

impl IntoResponse for Incomplete {
    fn into_response(self) -> Response {
        let error: Vec<String> = self
            .missing
            .iter()
            .map(|(kind, reason)| format!("worker {kind} did not answer: {reason}"))
            .collect();
        let names: Vec<&str> = self.missing.iter().map(|(kind, _)| kind.as_str()).collect();
        tracing::warn!(missing = ?names, "list answered 503: {}", error.join("; "));
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({
                "status": "Unavailable",
                "error": error.join("; "),
                "missing_workers": names,
            })),
        )
            .into_response()
    }
}

/// What one worker's answer means for a list.
enum Verdict<T> {
    Items(Vec<T>),
    NotRunning,
    Missing(String),
}

fn judge<T>(
    answer: Result<WorkerReply, RequestError>,
    pick: &mut impl FnMut(WorkerReply) -> Option<Vec<T>>,
) -> Verdict<T> {
    match answer {
        Ok(reply) => {
            let shown = format!("{reply:?}");
            match pick(reply) {
                Some(found) => Verdict::Items(found),
                None => {
                    let mut shown = shown;
                    shown.truncate(200);
                    Verdict::Missing(format!("unexpected reply {shown}"))
                }
            }
        }
        Err(RequestError::Unavailable(_)) => Verdict::NotRunning,
        Err(e) => Verdict::Missing(e.to_string()),
    }
}

/// Collects a fan-out's answers into one list, or says which running workers failed.
pub fn gather<T>(
    answers: Answers,
    mut pick: impl FnMut(WorkerReply) -> Option<Vec<T>>,
) -> Result<Gathered<T>, Incomplete> {
    let mut items = Vec::new();
    let mut not_running = Vec::new();
    let mut missing = Vec::new();
    for (kind, answer) in answers {
        match judge(answer, &mut pick) {
            Verdict::Items(found) => items.extend(found),
            Verdict::NotRunning => not_running.push(kind),
            Verdict::Missing(reason) => missing.push((kind, reason)),
        }
    }
    if missing.is_empty() {
        Ok(Gathered { items, not_running })
    } else {
        Err(Incomplete { missing })
    }
}

/// Every worker's live streams (`ListStreams`); workers without streams of their own
/// answer with a failure, which counts as none.
pub async fn all_live_streams(
    gateway: &dyn WorkerGateway,
) -> Result<Gathered<strom_ipc::status::LiveStream>, Incomplete> {
    gather(
        gateway.ask_all(WorkerRequest::ListStreams).await,
        |reply| match reply {
            WorkerReply::Streams(streams) => Some(streams),
            WorkerReply::Failed(_) | WorkerReply::Error { .. } => Some(Vec::new()),
            _ => None,
        },
    )
}

/// Every session of every worker, page by page ([`WorkerRequest::ListSessionsPage`]), in
/// ascending id order. No reply comes near the control frame limit however many
/// sessions there are.
pub async fn all_sessions(
    workers: &dyn WorkerGateway,
) -> Result<Gathered<SessionInfo>, Incomplete> {
    let first = workers.ask_all(page_request(0)).await;
    let mut items = Vec::new();
    let mut not_running = Vec::new();
    let mut missing = Vec::new();
    let mut continued = Vec::new();
    for (kind, answer) in first {
        match answer {
            Ok(WorkerReply::SessionsPage { sessions, more }) => {
                continued.push(rest_of_sessions(workers, kind, sessions, more));
            }
            other => match judge(other, &mut |_| None::<Vec<SessionInfo>>) {
                Verdict::NotRunning => not_running.push(kind),
                Verdict::Missing(reason) => missing.push((kind, reason)),
                Verdict::Items(_) => {}
            },
        }
    }
    for (kind, result) in futures_util::future::join_all(continued).await {
        match result {
            Ok(sessions) => items.extend(sessions),
            Err(reason) => missing.push((kind, reason)),
        }
    }
    if !missing.is_empty() {
        missing.sort_by_key(|(kind, _)| *kind);
        return Err(Incomplete { missing });
    }
    items.sort_by_key(|s| s.id);
    Ok(Gathered { items, not_running })
}

fn page_request(after_id: u64) -> WorkerRequest {
    WorkerRequest::ListSessionsPage {
        after_id,
        limit: MAX_PAGE_SESSIONS,
    }
}

/// Asks `kind` for the pages after `first` until it says there are no more.
async fn rest_of_sessions(
    workers: &dyn WorkerGateway,
    kind: WorkerKind,
    first: Vec<SessionInfo>,
    mut more: bool,
) -> (WorkerKind, Result<Vec<SessionInfo>, String>) {
    let mut sessions = first;
    while more {
        let Some(after_id) = sessions.last().map(|s| s.id) else {
            return (
                kind,
                Err("answered an empty page with more to come".to_owned()),
            );
        };
        if sessions.len() > MAX_SESSIONS_PER_WORKER {
            return (
                kind,
                Err(format!(
                    "listed more than {MAX_SESSIONS_PER_WORKER} sessions"
                )),
            );
        }
        match workers.ask(kind, page_request(after_id)).await {
            Ok(WorkerReply::SessionsPage {
                sessions: page,
                more: again,
            }) => {
                if page.first().is_some_and(|s| s.id <= after_id) || (again && page.is_empty()) {
                    return (
                        kind,
                        Err("answered a page that does not advance".to_owned()),
                    );
                }
                sessions.extend(page);
                more = again;
            }
            Ok(other) => {
                let mut shown = format!("{other:?}");
                shown.truncate(200);
                return (kind, Err(format!("unexpected reply {shown}")));
            }
            // Between pages the process went away: its sessions went with it, but the
            // list would mix two states, so ask the caller to try again.
            Err(e) => return (kind, Err(e.to_string())),
        }
    }
    (kind, Ok(sessions))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::sync::Mutex;
    use std::time::Duration;

    fn session(id: u64) -> SessionInfo {
        SessionInfo {
            id,
            app: "live".into(),
            stream: "cam".into(),
            protocol: "HLS".into(),
            bytes_recv: 0,
            bytes_sent: 0,
            created: 0,
            last_access: 0,
            client_ip: "10.0.0.1".into(),
            user_agent: "test".into(),
            ppv_id: None,
            dropped_frames: None,
        }
    }

    /// Workers that hold sessions and answer pages the way the real ones do, or fail.
    #[derive(Default)]
    struct FakeWorkers {
        sessions: BTreeMap<WorkerKind, Vec<u64>>,
        failing: BTreeMap<WorkerKind, fn() -> RequestError>,
        /// Page requests seen, per worker.
        asked: Mutex<BTreeMap<WorkerKind, usize>>,
    }

    impl FakeWorkers {
        fn answer(
            &self,
            kind: WorkerKind,
            request: WorkerRequest,
        ) -> Result<WorkerReply, RequestError> {
            if let Some(failure) = self.failing.get(&kind) {
                return Err(failure());
            }
            *self.asked.lock().unwrap().entry(kind).or_default() += 1;
            match request {
                WorkerRequest::ListSessionsPage { after_id, limit } => {
                    let ids = self.sessions.get(&kind).cloned().unwrap_or_default();
                    Ok(strom_ipc::paging::sessions_page(
                        ids.into_iter().map(|id| (id, id)),
                        after_id,
                        limit,
                        session,
                    ))
                }
                WorkerRequest::ListStreams => Ok(WorkerReply::Streams(Vec::new())),
                _ => Ok(WorkerReply::Failed("not handled".into())),
            }
        }
    }

    impl WorkerGateway for FakeWorkers {
        fn ask(
            &self,
            kind: WorkerKind,
            request: WorkerRequest,
        ) -> BoxFuture<'_, Result<WorkerReply, RequestError>> {
            Box::pin(async move { self.answer(kind, request) })
        }

        fn ask_all(&self, request: WorkerRequest) -> BoxFuture<'_, Answers> {
            Box::pin(async move {
                WorkerKind::ALL
                    .into_iter()
                    .map(|kind| (kind, self.answer(kind, request.clone())))
                    .collect()
            })
        }
    }

    /// 200,000 sessions (the packager's most) plus RTMP players: listed completely in
    /// id order, page by page, each page far below the frame limit.
    #[tokio::test]
    async fn many_sessions_are_listed_completely_through_pages() {
        let mut fake = FakeWorkers::default();
        let rtmp_ids: Vec<u64> = (0..5_000).map(|i| (1 << 32) | (i * 2 + 1)).collect();
        let hls_ids: Vec<u64> = (0..200_000).map(|i| (2 << 32) | i).rev().collect();
        fake.sessions.insert(WorkerKind::Rtmp, rtmp_ids.clone());
        fake.sessions.insert(WorkerKind::Packager, hls_ids.clone());
        let listed = all_sessions(&fake).await.unwrap();
        assert_eq!(listed.items.len(), 205_000);
        assert!(listed.items.windows(2).all(|w| w[0].id < w[1].id));
        assert!(listed.not_running.is_empty());
        let asked = fake.asked.lock().unwrap().clone();
        assert_eq!(asked[&WorkerKind::Packager], 100);
        assert_eq!(asked[&WorkerKind::Rtmp], 3);
        assert_eq!(asked[&WorkerKind::Dvr], 1);
    }

    #[tokio::test]
    async fn a_worker_that_does_not_answer_makes_the_list_unavailable() {
        let mut fake = FakeWorkers::default();
        fake.sessions.insert(WorkerKind::Packager, vec![1, 2, 3]);
        fake.failing
            .insert(WorkerKind::Rtmp, || RequestError::Timeout {
                kind: "rtmp",
                timeout: Duration::from_secs(3),
            });
        let error = all_sessions(&fake).await.unwrap_err();
        assert_eq!(error.missing.len(), 1);
        assert_eq!(error.missing[0].0, WorkerKind::Rtmp);
        assert!(error.missing[0].1.contains("did not answer within"));
        let response = error.into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        let body = http_body_util::BodyExt::collect(response.into_body())
            .await
            .unwrap()
            .to_bytes();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["missing_workers"], json!(["rtmp"]));
        assert_eq!(body["status"], "Unavailable");
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .starts_with("worker rtmp did not answer: the rtmp worker did not answer within")
        );
    }

    #[tokio::test]
    async fn a_worker_without_a_process_is_named_but_not_a_failure() {
        let mut fake = FakeWorkers::default();
        fake.sessions.insert(WorkerKind::Packager, vec![7]);
        fake.failing
            .insert(WorkerKind::Rtmp, || RequestError::Unavailable("rtmp"));
        let listed = all_sessions(&fake).await.unwrap();
        assert_eq!(listed.items.len(), 1);
        assert_eq!(listed.not_running, vec![WorkerKind::Rtmp]);
        let response = super::listed(&listed.not_running, listed.items.len());
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()[NOT_RUNNING_HEADER], "rtmp");

        // The same rules for a plain fan-out list.
        let answers = fake.ask_all(WorkerRequest::ListStreams).await;
        let streams = gather(answers, |reply| match reply {
            WorkerReply::Streams(streams) => Some(streams),
            _ => None,
        })
        .unwrap();
        assert_eq!(streams.not_running, vec![WorkerKind::Rtmp]);
        fake.failing
            .insert(WorkerKind::Dvr, || RequestError::Gone("dvr"));
        let answers = fake.ask_all(WorkerRequest::ListStreams).await;
        let error = gather(answers, |reply| match reply {
            WorkerReply::Streams(streams) => Some(streams),
            _ => None,
        })
        .unwrap_err();
        assert_eq!(error.missing[0].0, WorkerKind::Dvr);
    }
}
