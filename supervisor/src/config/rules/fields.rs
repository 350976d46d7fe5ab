//! Checks shared by every section of `rules.conf`: names, ranges, URLs, credentials,
//! and the list helpers that place an error under `name[i]`.

use super::super::error::FieldError;
use serde_json::Value;
use std::fmt::Display;
use std::ops::RangeInclusive;

pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// App and stream names are URL path segments.
pub(crate) fn check_name(field: &str, name: &str) -> Result<(), FieldError> {
    if name.is_empty() {
        return Err(FieldError::new(field, "must not be empty"));
    }
    if name
        .chars()
        .any(|c| c == '/' || c.is_whitespace() || c.is_control())
    {
        let message = format!("{name:?} must not contain '/' or whitespace");
        return Err(FieldError::new(field, message));
    }
    Ok(())
}

/// An application or stream name: the one rule of [`strom_ipc::names`], because such a
/// name ends up in URLs and in paths under `run_dir`.
pub(crate) fn check_media_name(field: &str, name: &str) -> Result<(), FieldError> {
    // The common mistakes keep their plain messages.
    check_name(field, name)?;
    let kind = if field.ends_with("stream") {
        strom_ipc::names::NameKind::Stream
    } else {
        strom_ipc::names::NameKind::App
    };
    strom_ipc::names::check(kind, name).map_err(|e| FieldError::new(field, e.to_string()))
}

/// Half a set of credentials would lock every publisher out or let every one in.
pub(crate) fn check_credentials(login: &str, password: &str) -> Result<(), FieldError> {
    match (login.is_empty(), password.is_empty()) {
        (false, true) => Err(FieldError::new("password", "must be set when login is")),
        (true, false) => Err(FieldError::new("login", "must be set when password is")),
        _ => Ok(()),
    }
}

pub(crate) fn check_http_url(field: &str, url: &str) -> Result<(), FieldError> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    if rest.is_none_or(str::is_empty) {
        let message = format!("expected an http:// or https:// URL, got {url:?}");
        return Err(FieldError::new(field, message));
    }
    Ok(())
}

pub(crate) fn in_range(
    field: &str,
    value: u32,
    range: RangeInclusive<u32>,
) -> Result<u32, FieldError> {
    if range.contains(&value) {
        return Ok(value);
    }
    let message = format!("must be {}..={}, got {value}", range.start(), range.end());
    Err(FieldError::new(field, message))
}

/// Validates every element, placing errors under `name[i]`.
pub(crate) fn each<R, T>(
    list: Vec<R>,
    name: &str,
    validate: impl Fn(R) -> Result<T, FieldError>,
) -> Result<Vec<T>, FieldError> {
    list.into_iter()
        .enumerate()
        .map(|(i, raw)| validate(raw).map_err(|e| e.under(&format!("{name}[{i}]"))))
        .collect()
}

/// Rejects the second of two elements with the same `key`, blaming `name[i].field`.
pub(crate) fn unique<T, K: PartialEq + Display>(
    items: &[T],
    name: &str,
    field: &str,
    key: impl Fn(&T) -> K,
) -> Result<(), FieldError> {
    let keys: Vec<K> = items.iter().map(key).collect();
    for (i, k) in keys.iter().enumerate() {
        if let Some(j) = keys[..i].iter().position(|other| other == k) {
            let message = format!("\"{k}\" is already used by {name}[{j}]");
            return Err(FieldError::new(format!("{name}[{i}].{field}"), message));
        }
    }
    Ok(())
}
