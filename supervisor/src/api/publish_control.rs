//! Publish control: live publishers and the deny list.
//!
//! The deny list is held by the supervisor, so a restarted rtmp worker receives it again
//! with its hello and keeps refusing denied ids. It is bounded: ids of at most
//! [`MAX_ID_BYTES`], at most [`MAX_IDS`] per request and [`MAX_DENIED`] held in all
//! (about 25 MB at most in the hello, which travels in fragments past 16 MiB); a request
//! past a limit is refused whole with 400.

use crate::api::ApiState;
use crate::api::error::{ApiError, JsonBody};
use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};
use strom_ipc::WorkerKind;
use strom_ipc::messages::{WorkerReply, WorkerRequest};

/// Most ids one request may name.
pub const MAX_IDS: usize = 10_000;
/// Longest id, in bytes.
pub const MAX_ID_BYTES: usize = 256;
/// Most ids the deny list holds (it only grows until the supervisor restarts).
pub const MAX_DENIED: usize = 100_000;

/// The workers whose publishers go through publish control (each gate lists the
/// publishers it admitted): RTMP publishers, SRT contributors (the ingest worker), RTSP
/// publishers, Icecast sources (the packager) and WHIP publishers (the webrtc worker).
const PUBLISHING_WORKERS: [WorkerKind; 5] = [
    WorkerKind::Rtmp,
    WorkerKind::Ingest,
    WorkerKind::Rtsp,
    WorkerKind::Packager,
    WorkerKind::WebRtc,
];
/// The workers a deny reaches: the publishers' and the packager, whose viewers may carry
/// a denied pay-per-view id, and the webrtc worker (publishers and viewers both).
const DENYING_WORKERS: [WorkerKind; 5] = [
    WorkerKind::Rtmp,
    WorkerKind::Ingest,
    WorkerKind::Packager,
    WorkerKind::Rtsp,
    WorkerKind::WebRtc,
];

#[utoipa::path(get, path = "/manage/publish_control/status", responses((status = 200, body = crate::api::shapes::PublishControlStatus)))]
pub async fn status(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let mut entries = Vec::new();
    for kind in PUBLISHING_WORKERS {
        match state
            .workers
            .ask(kind, WorkerRequest::ListPublishers)
            .await?
        {
            WorkerReply::Publishers(publishers) => entries.extend(
                publishers
                    .into_iter()
                    .map(|p| json!({"key": p.key, "id": p.id, "ip": p.ip, "stream": p.stream})),
            ),
            other => return Err(super::unexpected(other)),
        }
    }
    Ok(Json(json!({"PublishControlStatus": entries})))
}

#[derive(Debug, Deserialize)]
#[allow(non_snake_case)]
pub struct DenyBody {
    PublishControlDenyRequest: Vec<String>,
}

#[utoipa::path(post, path = "/manage/publish_control/deny", request_body = crate::api::shapes::DenyRequest, responses((status = 200, body = crate::api::shapes::DenyResponse), (status = 400, body = crate::api::shapes::ErrorBody)))]
pub async fn deny(
    State(state): State<ApiState>,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<Value>, ApiError> {
    let body: DenyBody = serde_json::from_value(body).map_err(|_| {
        ApiError::bad_request("expected {\"PublishControlDenyRequest\":[\"id\",...]}")
    })?;
    let ids = body.PublishControlDenyRequest;
    if ids.len() > MAX_IDS {
        return Err(ApiError::bad_request(format!(
            "PublishControlDenyRequest: {} ids; the limit is {MAX_IDS} per request",
            ids.len()
        )));
    }
    if let Some((at, id)) = ids
        .iter()
        .enumerate()
        .find(|(_, id)| id.len() > MAX_ID_BYTES)
    {
        return Err(ApiError::bad_request(format!(
            "PublishControlDenyRequest[{at}]: {} bytes long; the limit is {MAX_ID_BYTES} bytes",
            id.len()
        )));
    }
    state
        .supervisor
        .deny_publishers(&ids, MAX_DENIED)
        .map_err(|held| {
            ApiError::bad_request(format!(
                "the deny list holds {held} ids and would exceed its limit of {MAX_DENIED}"
            ))
        })?;
    tracing::info!(?ids, "publishers denied");
    // Recorded above first: if the worker is restarting, its hello carries the list.
    for kind in DENYING_WORKERS {
        match state
            .workers
            .ask(kind, WorkerRequest::DenyPublishers(ids.clone()))
            .await
        {
            Ok(WorkerReply::Done) => {}
            Ok(other) => return Err(super::unexpected(other)),
            Err(e) => {
                tracing::warn!(worker = %kind, error = %e, "the worker gets the deny list when it starts")
            }
        }
    }
    Ok(Json(
        json!({"PublishControlDenyResponse": {"status": "success"}}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::republish::MAX_API_RULES;
    use crate::config::rules::{
        MAX_RULE_FIELD_BYTES, MAX_RULE_PARAMS_BYTES, validate_republish_rule,
    };
    use crate::listeners::ListenerTable;
    use crate::process::WorkerTable;
    use crate::process::supervision::SupervisorHooks;
    use crate::state::SupervisorState;
    use crate::system::SystemSampler;
    use std::path::Path;
    use strom_ipc::ControlChannel;
    use strom_ipc::frame::{self, MAX_FRAME_SIZE};
    use strom_ipc::messages::SupervisorToWorker;
    use strom_ipc::rules::{RuleOwner, Rules};
    use tokio_util::sync::CancellationToken;

    /// The deny list full of the longest ids and 1000 API rules with every field at its
    /// limit: the hello is far larger than one control frame, and the worker still gets
    /// it whole (in fragments), so configuration size never blocks a worker's start.
    #[tokio::test]
    async fn a_worker_starts_with_the_largest_configuration_the_api_allows() {
        let instance = crate::config::instance::parse("", Path::new("/tmp/strom.conf")).unwrap();
        let stop = CancellationToken::new();
        let state = SupervisorState::new(
            instance,
            Rules::default(),
            ListenerTable::default(),
            WorkerTable::new(&stop),
            None,
            None,
            SystemSampler::start().unwrap(),
        );
        let ids: Vec<String> = (0..MAX_DENIED)
            .map(|i| format!("{i:0>width$}", width = MAX_ID_BYTES))
            .collect();
        for chunk in ids.chunks(MAX_IDS) {
            state.deny_publishers(chunk, MAX_DENIED).unwrap();
        }
        assert_eq!(
            state.deny_publishers(&["one more".to_owned()], MAX_DENIED),
            Err(MAX_DENIED)
        );
        // Ids already held do not count twice.
        state.deny_publishers(&ids[..10], MAX_DENIED).unwrap();

        let field = "f".repeat(MAX_RULE_FIELD_BYTES);
        let params = "p".repeat(MAX_RULE_PARAMS_BYTES);
        let rules: Vec<_> = (0..MAX_API_RULES)
            .map(|i| {
                let body = json!({
                    "src_app": "live", "src_stream": "s".repeat(128),
                    "dest_addr": field, "dest_port": 1935, "dest_app": field,
                    "dest_stream": field, "dest_app_params": params,
                    "dest_stream_params": params, "dest_login": field,
                    "dest_password": field, "auth_schema": "NIMBLE",
                });
                validate_republish_rule(body, RuleOwner::Api, format!("{i:08x}")).unwrap()
            })
            .collect();
        state.change_rules(|current| current.republish.extend(rules));

        let (hello, fds) = state.hello(WorkerKind::Rtmp, 1).unwrap();
        assert!(fds.is_empty());
        let message = SupervisorToWorker::Hello(Box::new(hello));
        let encoded = frame::encode_message(&message, 0).unwrap();
        assert!(
            encoded.len() > 2 * MAX_FRAME_SIZE,
            "the hello is {} bytes",
            encoded.len()
        );
        drop(encoded);

        let (supervisor_end, worker_end) = std::os::unix::net::UnixStream::pair().unwrap();
        let (_, mut writer) = ControlChannel::from_std(supervisor_end).unwrap().split();
        let (mut reader, _) = ControlChannel::from_std(worker_end).unwrap().split();
        let expected = message.clone();
        let sender = tokio::spawn(async move {
            writer.send(&message, &[]).await.unwrap();
            writer
        });
        // What a starting worker reads first (`control::serve_on` in the worker runtime).
        let received = reader.recv::<SupervisorToWorker>().await.unwrap();
        assert_eq!(received.message, expected);
        let SupervisorToWorker::Hello(hello) = received.message else {
            unreachable!()
        };
        assert_eq!(hello.denied_publishers.len(), MAX_DENIED);
        assert_eq!(hello.rules.republish.len(), MAX_API_RULES);
        drop(sender.await.unwrap());
    }
}
