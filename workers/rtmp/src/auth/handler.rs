//! Asking the operator's publish handler (`handler_url`) whether a publish may proceed.
//!
//! Request `{"PublishAuthRequest":[{"seq":..,"id":..,"ip":..,"stream":..}]}`, answer
//! `{"PublishAuthResponse":[{"seq":..,"status":"success"|"fail"}]}`. No answer in time, an
//! error or anything but `success` for our `seq` refuses the publish.

use super::answer::{MAX_ANSWER_BYTES, verdict};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Serialize)]
struct Request<'a> {
    #[serde(rename = "PublishAuthRequest")]
    items: [RequestItem<'a>; 1],
}

#[derive(Serialize)]
struct RequestItem<'a> {
    seq: u64,
    id: &'a str,
    ip: &'a str,
    stream: &'a str,
}

static SEQ: AtomicU64 = AtomicU64::new(1);

/// `Ok(())` when the handler approved.
pub async fn approve(
    client: &reqwest::Client,
    url: &str,
    timeout: Duration,
    id: &str,
    ip: &str,
    stream: &str,
) -> Result<(), String> {
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let body = serde_json::to_vec(&Request {
        items: [RequestItem {
            seq,
            id,
            ip,
            stream,
        }],
    })
    .map_err(|e| e.to_string())?;
    let exchange = async {
        let mut response = client
            .post(url)
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| format!("handler unreachable: {e}"))?;
        let mut answer = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
            if answer.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err("handler answer too large".to_owned());
            }
            answer.extend_from_slice(&chunk);
        }
        verdict(&answer, seq)
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| format!("handler did not answer within {timeout:?}"))?
}
