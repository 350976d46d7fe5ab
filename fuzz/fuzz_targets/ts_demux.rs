//! MPEG-TS bytes as a UDP/SRT ingest receives them, in arbitrary chunks: the first
//! byte seeds the chunk sizes (1..=400) and picks the program (first or 0..=3),
//! the rest is the stream. Every frame goes through the track learner.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strom_media::track_info;
use strom_media::ts_demux::{TsDemuxer, strip_rtp};

fuzz_target!(|data: &[u8]| {
    let Some((&seed, mut rest)) = data.split_first() else {
        return;
    };
    let program = (seed & 0x80 != 0).then_some(u16::from(seed & 0x03));
    let mut demuxer = TsDemuxer::new(program);
    let mut state = u32::from(seed) | 1;
    while !rest.is_empty() {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let len = (((state >> 16) % 400) as usize + 1).min(rest.len());
        let (chunk, tail) = rest.split_at(len);
        rest = tail;
        demuxer.push(if seed & 0x40 != 0 {
            strip_rtp(chunk)
        } else {
            chunk
        });
        while let Some(frame) = demuxer.next_frame() {
            let _ = track_info::learn(&frame);
        }
        while demuxer.next_event().is_some() {}
    }
    demuxer.flush();
    while let Some(frame) = demuxer.next_frame() {
        let _ = track_info::learn(&frame);
    }
    let _ = (demuxer.state(), demuxer.dropped_events());
});
