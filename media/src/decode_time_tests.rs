//! Decode times derived for B-frame orders: increasing, never past the presentation
//! time, and equal to it where nothing is reordered.

use super::*;
use crate::test_vectors::{AVCC, HVCC, hex};

/// Decode times for `pts` (frame numbers, 3600 ticks apart) at `depth`.
fn derive(depth: usize, pts: &[i64]) -> Vec<i64> {
    let mut times = DecodeTimes {
        depth,
        ..DecodeTimes::default()
    };
    pts.iter().map(|p| times.next(p * 3600)).collect()
}

fn assert_valid(pts: &[i64], dts: &[i64]) {
    for (i, (p, d)) in pts.iter().zip(dts).enumerate() {
        assert!(*d <= p * 3600, "frame {i}: dts {d} > pts {}", p * 3600);
    }
    // At least a millisecond apart: FLV's clock.
    assert!(
        dts.windows(2).all(|w| w[0] + 90 <= w[1]),
        "increasing: {dts:?}"
    );
}

#[test]
fn without_reordering_dts_is_pts() {
    let pts: Vec<i64> = (0..50).collect();
    assert_eq!(
        derive(0, &pts),
        pts.iter().map(|p| p * 3600).collect::<Vec<_>>()
    );
}

#[test]
fn b_frame_pyramids_get_increasing_decode_times() {
    // x264's default: I P B(ref) b b, pyramid, GOP after GOP; decoding order.
    let pts = [0, 4, 2, 1, 3, 8, 6, 5, 7, 12, 10, 9, 11, 13, 14, 16, 15];
    let dts = derive(2, &pts);
    assert_valid(&pts, &dts);
    // Once the window is full, the decode times are the presentation times in order,
    // two frames behind.
    assert_eq!(&dts[2..6], &[0, 3600, 7200, 10800]);
}

#[test]
fn deeper_reordering_than_declared_widens_the_window() {
    let pts: Vec<i64> = [0, 3, 1, 2]
        .into_iter()
        .chain((1..10).flat_map(|g| {
            let b = g * 3;
            [b + 3, b + 1, b + 2]
        }))
        .collect();
    let dts = derive(0, &pts);
    // One frame out of order when the reordering first shows, then none.
    assert!(dts[3..].windows(2).all(|w| w[0] < w[1]), "{dts:?}");
    for (p, d) in pts.iter().zip(&dts) {
        assert!(*d <= p * 3600);
    }
}

#[test]
fn depth_comes_from_the_parameter_sets() {
    for (record, codec, ..) in AVCC {
        let mut times = DecodeTimes::default();
        times.configure(Codec::H264, &Bytes::from(hex(record)));
        // libx264's defaults; Baseline has no B-frames.
        let depth = if codec.starts_with("avc1.42") { 0 } else { 2 };
        assert_eq!(times.depth, depth, "{codec}");
    }
    for (record, ..) in HVCC {
        let mut times = DecodeTimes::default();
        times.configure(Codec::H265, &Bytes::from(hex(record)));
        assert!((1..=MAX_DEPTH).contains(&times.depth), "libx265 defaults");
    }
    let mut times = DecodeTimes::default();
    times.configure(Codec::H264, &Bytes::from_static(b"not a record"));
    assert_eq!(times.depth, UNKNOWN_DEPTH);
}
