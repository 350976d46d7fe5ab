//! Everything a client sends to the RTMP server on one connection: the handshake, then
//! the chunk stream through the chunk guard and the AMF guard, the `connect` facts,
//! `rml_rtmp`'s chunk decoding and AMF decoding, and its server session with every
//! connect, publish and play request accepted ([`server_input::exercise`]).
//!
//! The modules are the rtmp worker's own source files, compiled here by path: the input
//! path needs only `rml_rtmp`, `rml_amf0`, `thiserror` and `bytes`, while the worker crate
//! would bring its TLS and HTTP stack into every fuzz build. Seeds:
//! `fuzz/corpus/rtmp_server_input` (ffmpeg publishing, ffprobe playing).
#![no_main]
#![allow(dead_code)]

#[path = "../../workers/rtmp/src/amf_guard.rs"]
mod amf_guard;
#[path = "../../workers/rtmp/src/chunk_guard.rs"]
mod chunk_guard;
#[path = "../../workers/rtmp/src/chunking.rs"]
mod chunking;
#[path = "../../workers/rtmp/src/connect_info.rs"]
mod connect_info;
#[path = "../../workers/rtmp/src/server_input.rs"]
mod server_input;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    server_input::exercise(data);
});
