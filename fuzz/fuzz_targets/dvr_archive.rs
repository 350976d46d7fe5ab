//! DVR archive files as the dvr worker, the packager and the MP4 export read them: an
//! index (`strom_media::dvr::parse_index`) and a segment file
//! (`strom_media::dvr::parse_segment`) of any bytes, and the samples of a segment that
//! parses laid out as an MP4 (`strom_media::mp4::plan`). The first two input bytes are
//! the index length; the index, then the segment, follow. Seeds: `fuzz/corpus/dvr_archive`
//! (an archive the writer made: `cargo run --example make_seeds`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use strom_media::dvr::{parse_index, parse_segment};
use strom_media::mp4::{ExportSample, plan};

fuzz_target!(|data: &[u8]| {
    let Some((length, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let (index, segment) = rest.split_at(usize::from(u16::from_be_bytes(*length)).min(rest.len()));
    let (entries, valid) = parse_index(index);
    assert!(valid <= index.len());
    for entry in &entries {
        let _ = (entry.end_ms(), entry.to_line());
    }
    let Ok(contents) = parse_segment(segment) else {
        return;
    };
    let samples: Vec<ExportSample> = contents
        .samples
        .iter()
        .map(|record| {
            assert!(record.offset + u64::from(record.size) <= segment.len() as u64);
            ExportSample {
                kind: record.kind,
                dts: record.dts,
                pts: record.pts,
                keyframe: record.keyframe,
                size: record.size,
                file: 0,
                offset: record.offset,
            }
        })
        .collect();
    if let Ok(layout) = plan(&contents.tracks(), &samples, None) {
        let _ = layout.reads(0, layout.total_len.saturating_sub(1)).count();
    }
});
