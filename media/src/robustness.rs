//! Fuzz-style robustness test: every parser gets every prefix of every real
//! vector, bit-flipped mutations of them, and random bytes, and must return
//! (Ok or Err) without panicking. Run in debug, so arithmetic overflow panics too.

use bytes::Bytes;

use crate::aac::{AacConfig, write_adts_header};
use crate::annexb::{contains_hevc_irap, contains_idr, to_annexb};
use crate::avc::AvcDecoderConfig;
use crate::flv::{AudioTag, VideoTag};
use crate::flv_adapter::{audio_frame, to_body, video_frame};
use crate::hevc::{HevcDecoderConfig, HevcSpsInfo};
use crate::sps::SpsInfo;
use crate::test_vectors::{ASC, AVCC, HVCC, SPS_HIGH_720P, hex};
use crate::track_info;

/// xorshift64: deterministic, good enough to spray bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn feed_all(data: &[u8], rng: &mut Rng) {
    let bytes = Bytes::copy_from_slice(data);
    let ts = rng.next() as u32;
    let _ =
        VideoTag::parse(&bytes, ts).map(|t| (t.is_keyframe(), t.is_sequence_header(), t.pts_ms()));
    let _ = AudioTag::parse(&bytes, ts).map(|t| t.is_sequence_header());
    let dts = rng.next() as i64;
    for frame in [video_frame(&bytes, dts), audio_frame(&bytes, dts)]
        .into_iter()
        .flatten()
    {
        let _ = (to_body(&frame), track_info::learn(&frame));
    }
    if let Ok(c) = AvcDecoderConfig::parse(&bytes) {
        let _ = (c.codec_string(), c.sps_info());
        c.write_annexb_parameter_sets(&mut Vec::new());
    }
    let _ = SpsInfo::parse(data).map(|s| s.codec_string());
    if let Ok(c) = HevcDecoderConfig::parse(&bytes) {
        let _ = (c.codec_string(), c.sps_info());
        c.write_annexb_parameter_sets(&mut Vec::new());
    }
    let _ = HevcSpsInfo::parse(data).map(|s| s.codec_string());
    if let Ok(c) = AacConfig::parse(data) {
        let _ = (c.codec_string(), c.channel_count());
        let mut out = [0; 7];
        let _ = write_adts_header(&c, rng.below(10_000), &mut out);
        let _ = write_adts_header(&c, usize::MAX - rng.below(8), &mut out);
    }
    let mut out = Vec::new();
    for size in 0..=5 {
        let _ = to_annexb(data, size, &mut out);
        let _ = (contains_idr(data, size), contains_hevc_irap(data, size));
    }
}

fn vectors() -> Vec<Vec<u8>> {
    let mut v = vec![hex(SPS_HIGH_720P)];
    v.extend(AVCC.iter().map(|(r, ..)| hex(r)));
    v.extend(HVCC.iter().map(|(r, ..)| hex(r)));
    v.extend(ASC.iter().map(|(r, ..)| hex(r)));
    // Tag payloads wrapping the records, and bare parameter sets.
    for (r, ..) in AVCC.iter().chain(HVCC) {
        let r = hex(r);
        v.push([&hex("17 00 000000")[..], &r].concat());
        v.push([&hex("90 68766331")[..], &r].concat());
        v.push(r.get(8..).unwrap_or_default().to_vec());
        v.push(r.get(28..).unwrap_or_default().to_vec());
    }
    v.push(hex("af 00 1210"));
    v.push(hex("17 01 000050 00000002 6588 00000002 0910"));
    v.push(hex("91 68766331 000028 00000003 260188"));
    v
}

#[test]
fn prefixes_never_panic() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for v in vectors() {
        for end in 0..=v.len() {
            feed_all(&v[..end], &mut rng);
            feed_all(&v[end..], &mut rng);
        }
    }
}

#[test]
fn mutations_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let vectors = vectors();
    for _ in 0..20_000 {
        let mut v = vectors[rng.below(vectors.len())].clone();
        for _ in 0..1 + rng.below(4) {
            let i = rng.below(v.len());
            match rng.below(3) {
                0 => v[i] ^= 1 << rng.below(8),
                1 => v[i] = rng.next() as u8,
                _ => v[i] = [0x00, 0xff, 0x03, 0x80][rng.below(4)],
            }
        }
        feed_all(&v, &mut rng);
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    for _ in 0..20_000 {
        let len = rng.below(96);
        let data: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        feed_all(&data, &mut rng);
        // Streams of mostly zeros and ones stress the Exp-Golomb and length paths.
        let sparse: Vec<u8> = (0..len)
            .map(|_| {
                if rng.below(4) == 0 {
                    rng.next() as u8
                } else {
                    0
                }
            })
            .collect();
        feed_all(&sparse, &mut rng);
    }
}
