//! `RtmpRepublishRules` and the rules `POST /manage/rtmp/republish` creates: validated
//! field by field from JSON so that every error names its field, with every string
//! bounded.

use super::super::error::FieldError;
use super::fields::{check_media_name, check_name, kind, unique};
use serde_json::{Map, Value};
use strom_ipc::rules::{AuthSchema, RepublishRule, RuleOwner};

/// Validates one re-publishing rule given as JSON (a `rules.conf` entry or the body of
/// `POST /manage/rtmp/republish`). An `id` field in `raw` is accepted and ignored: the
/// rule gets `id`. The error names the offending field, e.g. `dest_port: expected a port
/// number or numeric string, got true`.
pub fn validate_republish_rule(
    raw: Value,
    owner: RuleOwner,
    id: String,
) -> Result<RepublishRule, String> {
    republish_rule(raw, owner, id).map_err(|e| e.to_string())
}

/// Validates the `RtmpRepublishRules` list; a rule without an `id` gets
/// `cfg-<position, from 1>`.
pub(super) fn validate_all(list: Vec<Value>) -> Result<Vec<RepublishRule>, FieldError> {
    let mut republish = Vec::with_capacity(list.len());
    for (i, raw) in list.into_iter().enumerate() {
        let at = format!("RtmpRepublishRules[{i}]");
        let id = match raw.get("id") {
            None | Some(Value::Null) => format!("cfg-{}", i + 1),
            Some(Value::String(id)) if id.is_empty() => format!("cfg-{}", i + 1),
            Some(Value::String(id)) => {
                // The id is a path segment of `/manage/rtmp/republish/<id>`.
                check_name("id", id).map_err(|e| e.under(&at))?;
                id.clone()
            }
            Some(other) => {
                let message = format!("expected a string, got {}", kind(other));
                return Err(FieldError::new("id", message).under(&at));
            }
        };
        republish.push(republish_rule(raw, RuleOwner::Config, id).map_err(|e| e.under(&at))?);
    }
    unique(&republish, "RtmpRepublishRules", "id", |rule| {
        rule.id.clone()
    })?;
    Ok(republish)
}

/// The fields of spec 2.5; `id` is accepted but the caller decides it.
const REPUBLISH_FIELDS: [&str; 14] = [
    "id",
    "src_app",
    "src_stream",
    "dest_addr",
    "dest_port",
    "dest_app",
    "dest_stream",
    "dest_app_params",
    "dest_stream_params",
    "auth_schema",
    "dest_login",
    "dest_password",
    "keep_src_stream_params",
    "ssl",
];

/// Field by field rather than through serde, so that every error names its field.
fn republish_rule(raw: Value, owner: RuleOwner, id: String) -> Result<RepublishRule, FieldError> {
    let Value::Object(mut fields) = raw else {
        let message = format!("expected an object of rule fields, got {}", kind(&raw));
        return Err(FieldError::new("", message));
    };
    if let Some(unknown) = fields
        .keys()
        .find(|k| !REPUBLISH_FIELDS.contains(&k.as_str()))
    {
        let message = format!(
            "unknown field; expected one of {}",
            REPUBLISH_FIELDS.join(", ")
        );
        return Err(FieldError::new(unknown.as_str(), message));
    }
    let src_app = required(&mut fields, "src_app")?;
    check_media_name("src_app", &src_app)?;
    let src_stream = string(&mut fields, "src_stream")?;
    if !src_stream.is_empty() {
        check_media_name("src_stream", &src_stream)?;
    }
    let dest_addr = required(&mut fields, "dest_addr")?;
    if dest_addr
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
    {
        let message = format!("expected a host name, IP address or URL, got {dest_addr:?}");
        return Err(FieldError::new("dest_addr", message));
    }
    let dest_port = match fields.remove("dest_port") {
        None | Some(Value::Null) => return Err(FieldError::new("dest_port", "required")),
        Some(value) => port(&value).map_err(|message| FieldError::new("dest_port", message))?,
    };
    let dest_app = required(&mut fields, "dest_app")?;
    // An empty destination stream follows the source name, which is only known per stream
    // when the rule covers a whole app.
    let dest_stream = string(&mut fields, "dest_stream")?;
    if dest_stream.is_empty() && !src_stream.is_empty() {
        return Err(FieldError::new(
            "dest_stream",
            "required when src_stream is set",
        ));
    }
    let auth_schema = match string(&mut fields, "auth_schema")?.as_str() {
        "" => AuthSchema::None,
        name => AuthSchema::from_name(name).ok_or_else(|| {
            let message = format!(
                "unknown scheme {name:?}; expected NONE, NIMBLE (or STROM), AKAMAI, \
                 LIMELIGHT or PERISCOPE"
            );
            FieldError::new("auth_schema", message)
        })?,
    };
    let rule = RepublishRule {
        id,
        owner,
        src_app,
        src_stream,
        dest_addr,
        dest_port,
        dest_app,
        dest_stream,
        dest_app_params: string(&mut fields, "dest_app_params")?,
        dest_stream_params: string(&mut fields, "dest_stream_params")?,
        auth_schema,
        dest_login: string(&mut fields, "dest_login")?,
        dest_password: string(&mut fields, "dest_password")?,
        keep_src_stream_params: boolean(&mut fields, "keep_src_stream_params")?,
        ssl: boolean(&mut fields, "ssl")?,
    };
    check_republish_sizes(&rule)?;
    Ok(rule)
}

/// Longest re-publishing rule id, in bytes.
pub const MAX_RULE_ID_BYTES: usize = 256;
/// Longest address, app, stream, login or password of a re-publishing rule, in bytes.
pub const MAX_RULE_FIELD_BYTES: usize = 1024;
/// Longest `dest_app_params` or `dest_stream_params`, in bytes.
pub const MAX_RULE_PARAMS_BYTES: usize = 4096;

/// Every string of a rule is bounded, so 1000 API rules stay a few MiB in every message
/// that carries the rules.
fn check_republish_sizes(rule: &RepublishRule) -> Result<(), FieldError> {
    let fields = [
        ("id", &rule.id, MAX_RULE_ID_BYTES),
        ("src_app", &rule.src_app, MAX_RULE_FIELD_BYTES),
        ("src_stream", &rule.src_stream, MAX_RULE_FIELD_BYTES),
        ("dest_addr", &rule.dest_addr, MAX_RULE_FIELD_BYTES),
        ("dest_app", &rule.dest_app, MAX_RULE_FIELD_BYTES),
        ("dest_stream", &rule.dest_stream, MAX_RULE_FIELD_BYTES),
        (
            "dest_app_params",
            &rule.dest_app_params,
            MAX_RULE_PARAMS_BYTES,
        ),
        (
            "dest_stream_params",
            &rule.dest_stream_params,
            MAX_RULE_PARAMS_BYTES,
        ),
        ("dest_login", &rule.dest_login, MAX_RULE_FIELD_BYTES),
        ("dest_password", &rule.dest_password, MAX_RULE_FIELD_BYTES),
    ];
    match fields
        .into_iter()
        .find(|(_, value, max)| value.len() > *max)
    {
        Some((field, value, max)) => Err(FieldError::new(
            field,
            format!("{} bytes long; the limit is {max} bytes", value.len()),
        )),
        None => Ok(()),
    }
}

/// An optional string field; absent and `null` are empty.
fn string(fields: &mut Map<String, Value>, name: &str) -> Result<String, FieldError> {
    match fields.remove(name) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s),
        Some(other) => {
            let message = format!("expected a string, got {}", kind(&other));
            Err(FieldError::new(name, message))
        }
    }
}

fn required(fields: &mut Map<String, Value>, name: &str) -> Result<String, FieldError> {
    if fields.get(name).is_none_or(Value::is_null) {
        return Err(FieldError::new(name, "required"));
    }
    let value = string(fields, name)?;
    if value.is_empty() {
        return Err(FieldError::new(name, "must not be empty"));
    }
    Ok(value)
}

fn boolean(fields: &mut Map<String, Value>, name: &str) -> Result<bool, FieldError> {
    match fields.remove(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(b),
        Some(other) => {
            let message = format!("expected true or false, got {}", kind(&other));
            Err(FieldError::new(name, message))
        }
    }
}

/// A port as a JSON number or, as the spec's create example sends it, a numeric string.
fn port(value: &Value) -> Result<u16, String> {
    let number = match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => match s.trim().parse::<u64>() {
            Ok(n) => Some(n),
            Err(_) => {
                return Err(format!(
                    "expected a port number or numeric string, got {s:?}"
                ));
            }
        },
        other => {
            let got = kind(other);
            return Err(format!(
                "expected a port number or numeric string, got {got}"
            ));
        }
    };
    number
        .and_then(|n| u16::try_from(n).ok())
        .filter(|&n| n != 0)
        .ok_or_else(|| format!("must be 1..=65535, got {value}"))
}
