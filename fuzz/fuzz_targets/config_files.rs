//! The configuration files an operator writes: `rules.conf` (JSON, run-time rules),
//! `strom.conf` (key = value instance settings) and the DRM settings file, each through
//! the supervisor's own parser and validation (`supervisor/src/config`, compiled by path:
//! it uses only `serde`, `serde_json`, `thiserror` and `strom_ipc`, while the supervisor
//! is a binary crate that brings every worker). What parses is used as the supervisor
//! uses it: the instance's effective settings are rendered, the rules are sent to the
//! workers (encoded and decoded as a control message). Seeds: `fuzz/corpus/config_files`
//! (`packaging/rules.conf`, `packaging/strom.conf` and the README's examples).
#![no_main]
#![allow(dead_code, unused_imports)]

#[path = "../../supervisor/src/config/mod.rs"]
mod config;

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(rules) = config::rules::parse(text, Path::new("rules.conf"))
        && let Ok(frame) = strom_ipc::frame::encode(&rules, 0)
    {
        let payload = &frame[strom_ipc::frame::HEADER_LEN..];
        let decoded: strom_ipc::rules::Rules =
            strom_ipc::frame::decode(payload).expect("encoded rules decode");
        assert_eq!(decoded, rules);
    }
    if let Ok(instance) = config::instance::parse(text, Path::new("strom.conf")) {
        let _ = instance.effective_settings();
    }
    let _ = config::drm::parse(text, Path::new("drm.json"));
});
