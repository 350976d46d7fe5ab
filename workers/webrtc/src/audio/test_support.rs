//! Test helpers of the audio module: real inputs made with the codecs themselves (a sine
//! through FDK AAC's encoder, through libopus's), and the checks on what comes out (a
//! Goertzel filter for "the tone is there", zero crossings for its frequency).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use fdk_aac::enc::{AudioObjectType, BitRate, ChannelMode, Encoder, EncoderParams, Transport};
use std::f64::consts::PI;

/// `frames` frames of a sine at `freq`, all channels alike, as f32 in -1..1.
pub(crate) fn sine_f32(freq: f64, rate: u32, channels: usize, frames: usize, amp: f64) -> Vec<f32> {
    (0..frames)
        .flat_map(|i| {
            let v = (amp * (2.0 * PI * freq * i as f64 / f64::from(rate)).sin()) as f32;
            std::iter::repeat_n(v, channels)
        })
        .collect()
}

/// The same as i16.
pub(crate) fn sine_i16(freq: f64, rate: u32, channels: usize, frames: usize, amp: f64) -> Vec<i16> {
    sine_f32(freq, rate, channels, frames, amp)
        .into_iter()
        .map(|v| (v * 32767.0) as i16)
        .collect()
}

/// Power at `freq` (Goertzel, Hann window) over the strongest power at frequencies well
/// away from it: large when `samples` is a clean tone at `freq`.
pub(crate) fn goertzel_ratio(samples: &[f32], rate: u32, freq: f64) -> f64 {
    let others = [250.0, 500.0, 1500.0, 2000.0, 3000.0, 4500.0, 7000.0];
    let target = goertzel(samples, rate, freq);
    let worst = others
        .iter()
        .map(|&f| goertzel(samples, rate, f))
        .fold(1e-12, f64::max);
    target / worst
}

fn goertzel(samples: &[f32], rate: u32, freq: f64) -> f64 {
    let n = samples.len();
    let coeff = 2.0 * (2.0 * PI * freq / f64::from(rate)).cos();
    let (mut s1, mut s2) = (0.0, 0.0);
    for (i, &x) in samples.iter().enumerate() {
        let w = 0.5 - 0.5 * (2.0 * PI * i as f64 / n as f64).cos();
        let s = f64::from(x) * w + coeff * s1 - s2;
        s2 = s1;
        s1 = s;
    }
    s1 * s1 + s2 * s2 - coeff * s1 * s2
}

/// Frequency from the rising zero crossings.
pub(crate) fn zero_crossing_hz(samples: &[f32], rate: u32) -> f64 {
    let crossings: Vec<usize> = samples
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w[0] < 0.0 && w[1] >= 0.0)
        .map(|(i, _)| i)
        .collect();
    let (first, last) = (crossings[0], crossings[crossings.len() - 1]);
    f64::from(rate) * (crossings.len() - 1) as f64 / (last - first) as f64
}

/// One channel of interleaved samples.
pub(crate) fn channel(samples: &[f32], channels: usize, which: usize) -> Vec<f32> {
    samples
        .iter()
        .skip(which)
        .step_by(channels)
        .copied()
        .collect()
}

/// AAC-LC made by FDK's encoder from interleaved `pcm`: its AudioSpecificConfig, its
/// raw access units and its delay (samples per channel).
pub(crate) fn aac_encode(pcm: &[i16], rate: u32, channels: usize) -> (Vec<u8>, Vec<Vec<u8>>, u32) {
    let encoder = Encoder::new(EncoderParams {
        bit_rate: BitRate::Cbr(if channels == 1 { 64_000 } else { 128_000 }),
        sample_rate: rate,
        transport: Transport::Raw,
        channels: if channels == 1 {
            ChannelMode::Mono
        } else {
            ChannelMode::Stereo
        },
        audio_object_type: AudioObjectType::Mpeg4LowComplexity,
    })
    .unwrap();
    let info = encoder.info().unwrap();
    let asc = info.confBuf[..info.confSize as usize].to_vec();
    let mut out = vec![0u8; 8192];
    let mut aus = Vec::new();
    let mut input = pcm;
    while !input.is_empty() {
        let result = encoder.encode(input, &mut out).unwrap();
        if result.output_size > 0 {
            aus.push(out[..result.output_size].to_vec());
        }
        input = &input[result.input_consumed..];
    }
    (asc, aus, info.nDelay)
}

/// Decodes raw AAC access units with FDK's decoder into interleaved f32, with the
/// decoder's channel count, rate and output delay.
pub(crate) fn aac_decode(asc: &[u8], aus: &[&[u8]]) -> (Vec<f32>, usize, u32, u32) {
    let mut decoder = fdk_aac::dec::Decoder::new(fdk_aac::dec::Transport::Raw);
    decoder.config_raw(asc).unwrap();
    let mut pcm = vec![0i16; 8192];
    let mut out = Vec::new();
    let (mut channels, mut rate, mut delay) = (0, 0, 0);
    for au in aus {
        assert_eq!(decoder.fill(au).unwrap(), au.len());
        decoder.decode_frame(&mut pcm).unwrap();
        let n = decoder.decoded_frame_size();
        let info = decoder.stream_info();
        (channels, rate, delay) = (
            info.numChannels as usize,
            info.sampleRate as u32,
            info.outputDelay,
        );
        out.extend(pcm[..n].iter().map(|&v| f32::from(v) / 32768.0));
    }
    (out, channels, rate, delay)
}

/// Opus packets of 20 ms made by libopus from interleaved 48 kHz `pcm`, and the encoder's
/// lookahead (samples).
pub(crate) fn opus_encode(pcm: &[i16], channels: usize) -> (Vec<Vec<u8>>, u32) {
    let mut encoder = opus::Encoder::new(
        48_000,
        if channels == 1 {
            opus::Channels::Mono
        } else {
            opus::Channels::Stereo
        },
        opus::Application::Audio,
    )
    .unwrap();
    let lookahead = encoder.get_lookahead().unwrap() as u32;
    let mut out = vec![0u8; 1500];
    let packets = pcm
        .chunks_exact(960 * channels)
        .map(|frame| {
            let n = encoder.encode(frame, &mut out).unwrap();
            out[..n].to_vec()
        })
        .collect();
    (packets, lookahead)
}

/// Decodes Opus packets (48 kHz) into interleaved f32.
pub(crate) fn opus_decode(packets: &[&[u8]], channels: usize) -> Vec<f32> {
    let mut decoder = opus::Decoder::new(
        48_000,
        if channels == 1 {
            opus::Channels::Mono
        } else {
            opus::Channels::Stereo
        },
    )
    .unwrap();
    let mut pcm = vec![0f32; 5760 * channels];
    let mut out = Vec::new();
    for packet in packets {
        let n = decoder.decode_float(packet, &mut pcm, false).unwrap();
        out.extend_from_slice(&pcm[..n * channels]);
    }
    out
}

/// `n` byte strings of 1 to 400 pseudo-random bytes (a fixed seed: the same every run).
pub(crate) fn garbage(n: usize) -> Vec<Vec<u8>> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        (state >> 33) as u32
    };
    (0..n)
        .map(|_| {
            let len = 1 + next() as usize % 400;
            (0..len).map(|_| next() as u8).collect()
        })
        .collect()
}
