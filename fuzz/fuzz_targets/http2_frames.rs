//! HTTP/2 framing as a client controls it on the delivery port: the bytes after the
//! connection preface, served by hyper's HTTP/2 server with strom's limits
//! ([`exercise_http2`]): frames of any type, size, flags and stream, HPACK blocks,
//! CONTINUATION, resets and window updates in any order.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strom_worker_http::fuzzing::exercise_http2;

fuzz_target!(|data: &[u8]| {
    exercise_http2(data);
});
