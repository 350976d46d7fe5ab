//! Re-publishing rules (`/manage/rtmp/republish...`): list, get, create, delete, stats.
//!
//! Rules created here are owner 1 and live only in memory: a reload of `rules.conf`
//! drops them, exactly as the spec says. They are bounded (at most [`MAX_API_RULES`],
//! every string field bounded by `config::rules::check_republish_sizes`), so the rules
//! every worker receives stay a few MiB: 400 names the field or the limit.

use crate::api::ApiState;
use crate::api::dto::{RepublishStat, Rule};
use crate::api::error::{ApiError, JsonBody, ok};
use crate::config::rules::validate_republish_rule;
use axum::Json;
use axum::extract::{Path, State};
use serde_json::{Value, json};
use strom_ipc::WorkerKind;
use strom_ipc::messages::{WorkerReply, WorkerRequest};
use strom_ipc::rules::RuleOwner;

/// Most API-created rules held at once.
pub const MAX_API_RULES: usize = 1000;

#[utoipa::path(get, path = "/manage/rtmp/republish", responses((status = 200, body = crate::api::shapes::RepublishRules)))]
pub async fn list(State(state): State<ApiState>) -> Json<Value> {
    let rules = state.supervisor.rules();
    let rules: Vec<Rule> = rules.republish.iter().map(Rule::from).collect();
    Json(json!({"rules": rules, "status": "Ok"}))
}

#[utoipa::path(get, path = "/manage/rtmp/republish/{id}", params(("id" = String, Path, description = "rule id")), responses((status = 200, body = crate::api::shapes::RepublishRules), (status = 404, body = crate::api::shapes::ErrorBody)))]
pub async fn get_one(
    State(state): State<ApiState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let rules = state.supervisor.rules();
    match rules.republish.iter().find(|rule| rule.id == id) {
        Some(rule) => Ok(Json(json!({"rules": [Rule::from(rule)], "status": "Ok"}))),
        None => Err(ApiError::not_found(format!(
            "no re-publishing rule with id {id:?}"
        ))),
    }
}

#[utoipa::path(post, path = "/manage/rtmp/republish", request_body = crate::api::shapes::RepublishRequest, responses((status = 200, body = crate::api::shapes::RepublishCreated), (status = 400, body = crate::api::shapes::ErrorBody)))]
pub async fn create(
    State(state): State<ApiState>,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<Value>, ApiError> {
    let supervisor = &state.supervisor;
    let api_rules = supervisor
        .rules()
        .republish
        .iter()
        .filter(|r| r.owner == RuleOwner::Api)
        .count();
    if api_rules >= MAX_API_RULES {
        return Err(ApiError::bad_request(format!(
            "at most {MAX_API_RULES} rules can be created through the API; delete one first"
        )));
    }
    let id = supervisor.new_rule_id();
    let rule = validate_republish_rule(body, RuleOwner::Api, id).map_err(ApiError::bad_request)?;
    let rendered = Rule::from(&rule);
    tracing::info!(id = %rule.id, src_app = %rule.src_app, dest = %rule.dest_addr, "re-publishing rule created");
    supervisor.change_rules(|rules| rules.republish.push(rule));
    push_rules(&state).await;
    Ok(Json(json!({"status": "Ok", "rule": rendered})))
}

#[utoipa::path(delete, path = "/manage/rtmp/republish/{id}", params(("id" = String, Path, description = "rule id")), responses((status = 200, description = "`Ok`, or `NotFound` for an unknown id", body = crate::api::shapes::StatusReply)))]
pub async fn delete(State(state): State<ApiState>, Path(id): Path<String>) -> Json<Value> {
    let mut found = false;
    state.supervisor.change_rules(|rules| {
        let before = rules.republish.len();
        rules.republish.retain(|rule| rule.id != id);
        found = rules.republish.len() != before;
    });
    if !found {
        return Json(json!({"status": "NotFound"}));
    }
    tracing::info!(%id, "re-publishing rule deleted");
    push_rules(&state).await;
    ok()
}

/// Tells the rtmp worker; if it is restarting it gets the rules with its hello.
async fn push_rules(state: &ApiState) {
    let rules = Box::new((*state.supervisor.rules()).clone());
    if let Err(e) = state
        .workers
        .ask(WorkerKind::Rtmp, WorkerRequest::ApplyRules(rules))
        .await
    {
        tracing::warn!(error = %e, "rtmp worker will get the new rules when it starts");
    }
}

#[utoipa::path(get, path = "/manage/rtmp/republish/stats", responses((status = 200, body = crate::api::shapes::RepublishStats)))]
pub async fn stats(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    match state
        .workers
        .ask(WorkerKind::Rtmp, WorkerRequest::RepublishStats)
        .await?
    {
        WorkerReply::RepublishStats(stats) => {
            let stats: Vec<RepublishStat> = stats.into_iter().map(RepublishStat::from).collect();
            Ok(Json(json!({"stats": stats, "status": "Ok"})))
        }
        other => Err(super::unexpected(other)),
    }
}
