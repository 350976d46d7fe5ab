//! The HLS index (`index.json`) the packager restores from its disk mirror at start
//! (`store/mod.rs`: `Store::restore_all` reads it with [`parse_index`]): any bytes, then,
//! through [`exercise_restore`], a stream restored from what parses, its master and
//! media playlists and segments served, and more segments packaged until the restored
//! ones are evicted. The first input byte is the size of the segment files (taken from
//! the input's end), the rest the index. Seeds: `fuzz/corpus/hls_index` (indexes the
//! store wrote: `cargo run --example make_seeds`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use strom_worker_http::fuzzing::{exercise_restore, parse_index};

fuzz_target!(|data: &[u8]| {
    let Some((&size, rest)) = data.split_first() else {
        return;
    };
    let (index, file) = rest.split_at(rest.len() - usize::from(size).min(rest.len()));
    if let Ok(meta) = parse_index(index) {
        let _ = meta.segments.len();
    }
    exercise_restore(index, file);
});
