//! What an HTTP client controls in the packager's requests: the `Range` header
//! ([`parse_range`], the byte range served out of a segment of any length), and the
//! request path split into `<app>/<stream>/<file>` as `http.rs` routes it, with the name
//! checks ([`strom_ipc::names`]) and the store's directory of a stream ([`stream_dir`]),
//! which must stay two plain components below the store's root for every name that
//! passes.
//!
//! The input: the first line is the `Range` value, the second the body length, the rest
//! the request target (`/<app>/<stream>/<file>?<query>`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::{Component, Path};
use strom_worker_http::fuzzing::{parse_range, stream_dir};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.splitn(3, '\n');
    let range = lines.next().unwrap_or_default();
    let length = lines.next().unwrap_or_default();
    let target = lines.next().unwrap_or_default();

    let lengths = [
        length.trim().parse::<usize>().unwrap_or(0),
        0,
        1,
        188 * 7,
        usize::MAX,
    ];
    for len in lengths {
        if let Some((start, end)) = parse_range(range, len) {
            // A range that is answered lies inside the body.
            assert!(
                start <= end && end < len,
                "{range:?} of {len}: {start}-{end}"
            );
        }
    }

    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let _sid = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("sid="))
        .and_then(|v| v.parse::<u64>().ok());
    let mut parts = path.trim_start_matches('/').split('/');
    let (Some(app), Some(stream), Some(file), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return;
    };
    for (prefix, suffix) in [("seg_", ".ts"), ("seg_", ".m4s"), ("init_", ".mp4")] {
        let _ = file
            .strip_prefix(prefix)
            .and_then(|f| f.strip_suffix(suffix))
            .and_then(|n| n.parse::<u64>().ok());
    }
    let checked = strom_ipc::names::check_pair(app, stream);
    let root = Path::new("/run/strom/hls");
    match stream_dir(root, app, stream) {
        Ok(dir) => {
            assert!(checked.is_ok());
            let below = dir.strip_prefix(root).expect("under the root");
            let components: Vec<_> = below.components().collect();
            assert_eq!(components.len(), 2, "{app:?}/{stream:?} -> {dir:?}");
            assert!(
                components.iter().all(|c| matches!(c, Component::Normal(_))),
                "{app:?}/{stream:?} -> {dir:?}"
            );
        }
        Err(_) => assert!(checked.is_err()),
    }
});
