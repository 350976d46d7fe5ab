//! The DRM settings file (`drm_settings_path`, JSON): HLS AES-128 keys per app or stream,
//! validated into [`strom_ipc::messages::DrmSettings`].
//!
//! ```json
//! {"hls_aes128": [{"app": "live", "stream": "", "key": "<32 hex digits>",
//!                  "key_uri": "https://keys.example.com/live.key"}]}
//! ```
//!
//! An empty or missing `stream` covers every stream of the app. Key values never appear
//! in error messages.

use super::error::{ConfigError, FieldError};
use super::rules::{check_http_url, check_media_name, each, unique};
use serde::Deserialize;
use std::path::Path;
use strom_ipc::messages::{DrmSettings, HlsAes128Key};

/// Reads and validates `path`.
pub fn load(path: &Path) -> Result<DrmSettings, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|error| ConfigError::io(path, error))?;
    parse(&text, path)
}

/// Validates `text`; `path` only names the source in errors.
pub fn parse(text: &str, path: &Path) -> Result<DrmSettings, ConfigError> {
    let raw: RawDrm = serde_json::from_str(text).map_err(|e| ConfigError::json(path, &e))?;
    let hls_aes128 = each(raw.hls_aes128, "hls_aes128", RawKey::validate)
        .and_then(|keys| {
            unique(&keys, "hls_aes128", "stream", |k| {
                format!("{}/{}", k.app, k.stream)
            })?;
            Ok(keys)
        })
        .map_err(|e| e.in_file(path))?;
    Ok(DrmSettings { hls_aes128 })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDrm {
    #[serde(default)]
    hls_aes128: Vec<RawKey>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKey {
    app: String,
    #[serde(default)]
    stream: String,
    key: String,
    key_uri: String,
}

impl RawKey {
    fn validate(self) -> Result<HlsAes128Key, FieldError> {
        check_media_name("app", &self.app)?;
        if !self.stream.is_empty() {
            check_media_name("stream", &self.stream)?;
        }
        let mut key = [0u8; 16];
        if self.key.len() != 2 * key.len() {
            let message = format!("expected 32 hex digits (16 bytes), got {}", self.key.len());
            return Err(FieldError::new("key", message));
        }
        hex::decode_to_slice(&self.key, &mut key)
            .map_err(|_| FieldError::new("key", "expected 32 hex digits (0-9, a-f)"))?;
        check_http_url("key_uri", &self.key_uri)?;
        Ok(HlsAes128Key {
            app: self.app,
            stream: self.stream,
            key,
            key_uri: self.key_uri,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "00112233445566778899aabbccddeeff";

    fn entry(app: &str, stream: &str, key: &str, uri: &str) -> String {
        format!(r#"{{"app": "{app}", "stream": "{stream}", "key": "{key}", "key_uri": "{uri}"}}"#)
    }

    #[test]
    fn parses_keys() {
        let text = format!(
            r#"{{"hls_aes128": [{}, {{"app": "vod", "key": "{}", "key_uri": "http://k"}}]}}"#,
            entry("live", "s", KEY, "https://keys/1"),
            KEY.to_uppercase()
        );
        let settings = parse(&text, Path::new("drm.json")).unwrap();
        let [live, vod] = &settings.hls_aes128[..] else {
            panic!("{settings:?}")
        };
        assert_eq!((live.app.as_str(), live.stream.as_str()), ("live", "s"));
        assert_eq!(live.key, hex::decode(KEY).unwrap()[..]);
        assert_eq!(live.key_uri, "https://keys/1");
        assert_eq!((vod.stream.as_str(), vod.key), ("", live.key));
        assert_eq!(parse("{}", Path::new("drm.json")).unwrap().hls_aes128, []);
    }

    #[test]
    fn errors_name_file_and_path() {
        let wrap = |entries: &[String]| format!(r#"{{"hls_aes128": [{}]}}"#, entries.join(","));
        let cases = [
            (
                wrap(&[entry("live", "", &KEY[2..], "https://k")]),
                "drm.json: hls_aes128[0].key: expected 32 hex digits (16 bytes), got 30",
            ),
            (
                wrap(&[entry("live", "", &format!("{KEY}00"), "https://k")]),
                "drm.json: hls_aes128[0].key: expected 32 hex digits (16 bytes), got 34",
            ),
            (
                wrap(&[entry("live", "", &KEY.replace('0', "g"), "https://k")]),
                "drm.json: hls_aes128[0].key: expected 32 hex digits (0-9, a-f)",
            ),
            (
                wrap(&[entry("live", "", KEY, "keys/1")]),
                "drm.json: hls_aes128[0].key_uri: expected an http:// or https:// URL",
            ),
            (
                wrap(&[entry("", "", KEY, "https://k")]),
                "drm.json: hls_aes128[0].app: must not be empty",
            ),
            (
                wrap(&[
                    entry("a", "", KEY, "https://k"),
                    entry("a", "", KEY, "https://k"),
                ]),
                "drm.json: hls_aes128[1].stream: \"a/\" is already used by hls_aes128[0]",
            ),
            (
                r#"{"hls_aes128": [{"app": "a"}]}"#.to_owned(),
                "drm.json:1:28: missing field `key`",
            ),
            (
                r#"{"aes": []}"#.to_owned(),
                "drm.json:1:6: unknown field `aes`",
            ),
            (
                "{".to_owned(),
                "drm.json:1:1: invalid JSON: EOF while parsing an object",
            ),
        ];
        for (text, expected) in cases {
            let message = parse(&text, Path::new("drm.json")).unwrap_err().to_string();
            assert!(message.starts_with(expected), "{text}: {message}");
            assert!(!message.contains(&KEY[4..]), "{message}");
        }
    }

    #[test]
    fn load_names_the_file() {
        let path = Path::new("/nonexistent/drm.json");
        let error = load(path).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("/nonexistent/drm.json: cannot read:")
        );
    }
}
