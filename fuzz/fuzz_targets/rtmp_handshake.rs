//! The server side of the RTMP handshake (C0, C1, C2 from any client) as the rtmp
//! worker's `connection::handshake` drives `rml_rtmp`'s `Handshake`: the bytes arrive in
//! reads of 1..=4096 bytes (sizes drawn from the first input byte), every answer is
//! taken, and what follows C2 must come out as the leftover for the chunk stream,
//! byte for byte. Seeds: `fuzz/corpus/rtmp_handshake` (ffmpeg's C0+C1, C2 and the start
//! of its chunk stream).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rml_rtmp::handshake::{Handshake, HandshakeProcessResult, PeerType};

/// C0 (version), C1 and C2 (1536 bytes each).
const HANDSHAKE_BYTES: usize = 1 + 1536 + 1536;

fuzz_target!(|data: &[u8]| {
    let Some((&seed, mut rest)) = data.split_first() else {
        return;
    };
    let input = rest;
    let mut handshake = Handshake::new(PeerType::Server);
    let mut state = u32::from(seed) | 1;
    let mut answered = 0usize;
    while !rest.is_empty() {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        // Mostly whole socket reads (connection.rs reads into 4096 bytes), sometimes tiny.
        let limit = if seed & 0x80 != 0 { 4096 } else { 64 };
        let len = (((state >> 16) as usize) % limit + 1).min(rest.len());
        let (read, tail) = rest.split_at(len);
        rest = tail;
        match handshake.process_bytes(read) {
            Ok(HandshakeProcessResult::InProgress { response_bytes }) => {
                answered += response_bytes.len();
            }
            Ok(HandshakeProcessResult::Completed {
                response_bytes,
                remaining_bytes,
            }) => {
                answered += response_bytes.len();
                // S0 + S1 + S2 went out, and the chunk stream starts right after C2.
                assert_eq!(answered, HANDSHAKE_BYTES, "S0, S1 and S2 answered");
                let consumed = input.len() - rest.len();
                assert_eq!(consumed - remaining_bytes.len(), HANDSHAKE_BYTES);
                assert_eq!(&remaining_bytes[..], &input[HANDSHAKE_BYTES..consumed]);
                return;
            }
            Err(_) => return,
        }
    }
});
