//! MPEG-TS inputs (`mpeg2ts_status`, `mpeg2ts_settings`), SRT and RIST stats, NDI list:
//! everything the ingest worker owns.

use crate::api::ApiState;
use crate::api::error::ApiError;
use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use strom_ipc::WorkerKind;
use strom_ipc::messages::{StatsDirection, WorkerReply, WorkerRequest};
use strom_ipc::status::CameraStatus;

/// Parameters whose values are secrets: SRT's `passphrase` and RIST's `secret`.
const SECRET_PARAMETERS: [&str; 2] = ["passphrase", "secret"];
/// What the API shows instead of a secret (still a string, as deployed panels parse it).
const MASK: &str = "********";

/// A parameter's value as the API shows it: secrets masked, like RTSP credentials.
fn shown_value<'a>(name: &str, value: &'a str) -> &'a str {
    if SECRET_PARAMETERS.contains(&name) {
        MASK
    } else {
        value
    }
}

fn camera_entry(
    id: &str,
    ip: &str,
    port: u16,
    protocol: &str,
    receive_mode: &str,
    parameters: &[(String, String)],
) -> Value {
    let mut entry = json!({"id": id, "ip": ip, "port": port, "protocol": protocol});
    if let Some(object) = entry.as_object_mut() {
        if protocol != "udp" {
            object.insert("receive_mode".into(), json!(receive_mode));
        }
        if !parameters.is_empty() {
            let parameters: Vec<Value> = parameters
                .iter()
                .map(|(name, value)| json!({"name": name, "value": shown_value(name, value)}))
                .collect();
            object.insert("parameters".into(), json!(parameters));
        }
    }
    entry
}

/// `{CamerasHash, Cameras}`. The hash covers the configured fields only, so status and
/// settings of the same configuration carry the same hash; `live` then adds each
/// entry's live state (status only). Secrets are masked before hashing, so the hash
/// cannot be used to guess them (a change of a secret alone leaves it unchanged).
fn cameras_document(cameras: Vec<Value>, live: impl FnOnce(&mut [Value])) -> Value {
    let digest = Sha256::digest(Value::Array(cameras.clone()).to_string().as_bytes());
    let hash = u64::from_be_bytes([
        digest[0], digest[1], digest[2], digest[3], digest[4], digest[5], digest[6], digest[7],
    ]);
    let mut cameras = cameras;
    live(&mut cameras);
    json!({"CamerasHash": hash.to_string(), "Cameras": cameras})
}

/// What deployed panels read besides the spec's fields: `st` (`online`/`offline`), `tr`
/// (bytes received, a string of digits), `bw` (bits per second, a string of digits) and
/// `pmts` (the programs: number, PMT PID and elementary streams).
fn live_state(entry: &mut Value, camera: &CameraStatus) {
    let programs: Vec<Value> = camera
        .programs
        .iter()
        .map(|program| {
            let streams: Vec<Value> = program
                .streams
                .iter()
                .map(|s| json!({"pid": s.pid, "type": s.stream_type, "codec": s.codec}))
                .collect();
            json!({"program": program.number, "pmt_pid": program.pmt_pid, "streams": streams})
        })
        .collect();
    if let Some(object) = entry.as_object_mut() {
        object.insert(
            "st".into(),
            json!(if camera.online { "online" } else { "offline" }),
        );
        object.insert("tr".into(), json!(camera.bytes_received.to_string()));
        object.insert("bw".into(), json!(camera.bitrate_bps.to_string()));
        object.insert("pmts".into(), json!(programs));
    }
}

#[utoipa::path(get, path = "/manage/mpeg2ts_status", responses((status = 200, body = crate::api::shapes::CamerasReply)))]
pub async fn mpegts_status(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    match state
        .workers
        .ask(WorkerKind::Ingest, WorkerRequest::MpegtsStatus)
        .await?
    {
        WorkerReply::Cameras(cameras) => Ok(Json(cameras_document(
            cameras
                .iter()
                .map(|c: &CameraStatus| {
                    camera_entry(
                        &c.id,
                        &c.ip,
                        c.port,
                        &c.protocol,
                        &c.receive_mode,
                        &c.parameters,
                    )
                })
                .collect(),
            |entries| {
                for (entry, camera) in entries.iter_mut().zip(&cameras) {
                    live_state(entry, camera);
                }
            },
        ))),
        other => Err(super::unexpected(other)),
    }
}

#[utoipa::path(get, path = "/manage/mpeg2ts_settings", responses((status = 200, body = crate::api::shapes::CamerasReply)))]
pub async fn mpegts_settings(State(state): State<ApiState>) -> Json<Value> {
    let rules = state.supervisor.rules();
    Json(cameras_document(
        rules
            .cameras
            .iter()
            .map(|c| {
                camera_entry(
                    &c.id,
                    &c.ip,
                    c.port,
                    &c.protocol,
                    &c.receive_mode,
                    &c.parameters,
                )
            })
            .collect(),
        |entries| {
            for (entry, c) in entries.iter_mut().zip(&rules.cameras) {
                if let Some(object) = entry.as_object_mut() {
                    object.insert("app".into(), json!(c.app));
                    object.insert("stream".into(), json!(c.stream));
                }
            }
        },
    ))
}

async fn stats_items(state: &ApiState, request: WorkerRequest) -> Result<Vec<Value>, ApiError> {
    match state.workers.ask(WorkerKind::Ingest, request).await? {
        WorkerReply::JsonItems(items) => Ok(items
            .iter()
            .filter_map(|item| match serde_json::from_str(item) {
                Ok(value) => Some(value),
                Err(e) => {
                    tracing::warn!(error = %e, "ingest worker sent stats that are not JSON");
                    None
                }
            })
            .collect()),
        other => Err(super::unexpected(other)),
    }
}

#[utoipa::path(get, path = "/manage/srt_sender_stats", responses((status = 200, body = crate::api::shapes::SrtSendersReply)))]
pub async fn srt_sender_stats(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let items = stats_items(&state, WorkerRequest::SrtStats(StatsDirection::Senders)).await?;
    Ok(Json(json!({"SrtSenders": items})))
}

#[utoipa::path(get, path = "/manage/srt_receiver_stats", responses((status = 200, body = crate::api::shapes::SrtReceiversReply)))]
pub async fn srt_receiver_stats(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let items = stats_items(&state, WorkerRequest::SrtStats(StatsDirection::Receivers)).await?;
    Ok(Json(json!({"SrtReceivers": items})))
}

#[utoipa::path(get, path = "/manage/rist_sender_stats", responses((status = 200, body = Vec<Object>)))]
pub async fn rist_sender_stats(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let items = stats_items(&state, WorkerRequest::RistStats(StatsDirection::Senders)).await?;
    Ok(Json(Value::Array(items)))
}

#[utoipa::path(get, path = "/manage/rist_receiver_stats", responses((status = 200, body = Vec<Object>)))]
pub async fn rist_receiver_stats(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let items = stats_items(&state, WorkerRequest::RistStats(StatsDirection::Receivers)).await?;
    Ok(Json(Value::Array(items)))
}

#[utoipa::path(get, path = "/manage/ndi/list", responses((status = 200, body = Vec<crate::api::shapes::NdiSource>)))]
pub async fn ndi_list(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let items = stats_items(&state, WorkerRequest::NdiList).await?;
    Ok(Json(Value::Array(items)))
}
