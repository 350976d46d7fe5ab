//! AAC to Opus, once per played stream: RTMP, SRT and RTSP publishers send AAC, WebRTC
//! players take Opus. This file owns that transcoder: FDK AAC decodes each raw access
//! unit (as MP4 and FLV carry them), the PCM goes to 48 kHz (`resample.rs`) at the Opus
//! channel count, and libopus encodes it in 20 ms frames, timed by `timeline.rs`.
//!
//! PCM never piles up: one decoded frame, one resampler chunk and one Opus frame are
//! held, all sized when the stream starts; each push drains what it completes.

use super::resample::{Input, To48k};
use super::timeline::{Placement, Timeline, ticks_after};
use super::{AudioError, EncodedAudio, OPUS_FRAME_SAMPLES, RATE_48K, TranscodeStats};
use bytes::Bytes;
use fdk_aac::dec::{Decoder, Transport};
use strom_media::aac::{AacConfig, SAMPLING_FREQUENCIES};

/// The most PCM frames (samples per channel) one access unit decodes to: 2048 for
/// HE-AAC, 4096 at most for USAC; larger would be a broken decoder, not audio.
const MAX_DECODED_FRAMES: usize = 4096;
/// FDK's decoder interleaves all channels it decodes before its own downmix to the two
/// it hands out: room for 8 (7.1) channels of the largest frame.
const PCM_BUFFER: usize = MAX_DECODED_FRAMES * 8;
/// FDK's raw-transport input buffer takes 8 KiB; an access unit is at most 6144 bits per
/// channel, so anything larger is not one.
const MAX_ACCESS_UNIT: usize = 8192;
/// The largest 20 ms Opus packet (RFC 6716: 1275 bytes a frame, plus the TOC byte).
const MAX_OPUS_PACKET: usize = 1500;

/// AAC (raw access units, as MP4/FLV carry them, with the AudioSpecificConfig) to Opus
/// 48 kHz, 20 ms frames, stereo when the source has 2+ channels (downmix >2), mono for
/// mono; bitrate ~96 kb/s stereo, 64 mono.
pub struct AacToOpus {
    /// Kept to open a new decoder after a bad access unit.
    asc: Box<[u8]>,
    /// What the Opus stream carries, 1 or 2; FDK downmixes to it.
    channels: u8,
    decoder: Decoder,
    /// Decoded frames still to drop after an anchor: the decoder's output delay, which
    /// holds audio of before the anchor (or a new decoder's silence), so Opus sample 0
    /// is the audio of the anchoring access unit.
    trim: usize,
    /// Decoded PCM, interleaved at the decoder's channel count.
    pcm: Vec<i16>,
    /// The same as f32 at the Opus channel count, what the resampler takes.
    staging: Vec<f32>,
    /// Built on the first decoded frame: only then is the rate known (implicit SBR
    /// doubles the configured one).
    resampler: Option<To48k>,
    /// In the decoded rate.
    timeline: Timeline,
    framer: OpusFramer,
    /// Time lines started: the first input and each re-anchor.
    anchors: u64,
    stats: TranscodeStats,
}

impl std::fmt::Debug for AacToOpus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AacToOpus")
            .field("channels", &self.channels)
            .field("resampler", &self.resampler)
            .field("timeline", &self.timeline)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl AacToOpus {
    pub fn new(audio_specific_config: &[u8]) -> Result<Self, AudioError> {
        let config = AacConfig::parse(audio_specific_config)
            .map_err(|e| AudioError::Config(format!("{e} in {audio_specific_config:02x?}")))?;
        // Parametric stereo (object type 29) is stereo over a mono configuration; channel
        // configuration 0 (a program config element) is most likely stereo, and a stereo
        // Opus stream carries mono as well.
        let channels = match (config.object_type, config.channel_count()) {
            (29, _) => 2,
            (_, Some(1)) => 1,
            _ => 2,
        };
        let decoder = open_decoder(audio_specific_config, channels)?;
        Ok(Self {
            asc: audio_specific_config.into(),
            channels,
            decoder,
            trim: 0,
            pcm: vec![0; PCM_BUFFER],
            staging: vec![0.0; MAX_DECODED_FRAMES * usize::from(channels)],
            resampler: None,
            timeline: Timeline::new(RATE_48K),
            framer: OpusFramer::new(channels)?,
            anchors: 0,
            stats: TranscodeStats::default(),
        })
    }

    /// 1 or 2, what the Opus stream carries.
    pub fn channels(&self) -> u8 {
        self.channels
    }

    /// What the transcoder has had to drop, fill and re-anchor so far.
    pub fn stats(&self) -> TranscodeStats {
        TranscodeStats {
            reanchors: self.anchors.saturating_sub(1),
            ..self.stats
        }
    }

    /// Decodes one AAC access unit whose pts is `pts` (90 kHz) and returns every Opus
    /// frame completed by it (0, 1 or more). Other rates than 48000 are resampled to
    /// 48000. Output pts advance by exactly 20 ms (1800 ticks) per frame, anchored on the
    /// first input pts; an input more than 100 ms off from where the sample count says it
    /// should be re-anchors (the half-filled frame is dropped). Smaller gaps (a lost
    /// access unit) are filled with silence and smaller overlaps dropped, so the Opus
    /// stream keeps in step with the input.
    pub fn push(&mut self, aac: &[u8], pts: i64) -> Result<Vec<EncodedAudio>, AudioError> {
        if aac.is_empty() || aac.len() > MAX_ACCESS_UNIT {
            // Not handed to the decoder at all, so it needs no new one.
            self.stats.errors += 1;
            return Err(AudioError::AacDecode(format!(
                "a {} byte access unit (1 to {MAX_ACCESS_UNIT})",
                aac.len()
            )));
        }
        let decoded = match self.decode(aac) {
            Ok(decoded) => decoded,
            Err(e) => {
                self.stats.errors += 1;
                // FDK's transport buffer may hold the rest of the bad unit; a new decoder
                // keeps it from spoiling the next ones. The lost unit's time is filled
                // with silence when the next one comes, and the new decoder's first
                // output (its delay's worth of silence) stands in for what the old one
                // still held, so the audio after it keeps its place.
                if let Ok(decoder) = open_decoder(&self.asc, self.channels) {
                    self.decoder = decoder;
                }
                return Err(e);
            }
        };
        let frames = decoded.frames;
        let och = usize::from(self.channels);
        to_f32(
            &self.pcm[..frames * decoded.channels],
            decoded.channels,
            &mut self.staging[..frames * och],
            och,
        );

        let same_rate = self
            .resampler
            .as_ref()
            .is_some_and(|r| r.rate() == decoded.rate);
        let placement = if same_rate {
            // Half a frame of slack: FLV's millisecond pts are up to 1 ms off.
            self.timeline.place(pts, (frames / 2) as u32)
        } else {
            // The first frame, or the rate changed (a new configuration in-band): a
            // resampler for it, and a new time line in its rate.
            self.resampler = Some(To48k::new(decoded.rate, och, frames)?);
            self.timeline.reanchor(pts, decoded.rate);
            Placement::Anchored
        };
        let Some(resampler) = self.resampler.as_mut() else {
            return Ok(Vec::new());
        };

        let (mut start, mut silence) = (0, 0);
        match placement {
            Placement::Anchored => {
                self.anchors += 1;
                if same_rate {
                    resampler.reset();
                }
                self.stats.dropped_samples += self.framer.restart(pts);
                // The decoder still holds audio of before the jump: its delay's worth.
                self.trim = decoded.output_delay;
            }
            Placement::InStep => {}
            Placement::Gap(samples) => {
                silence = samples as usize;
                self.stats.filled_samples += u64::from(samples);
                self.timeline.advance(silence);
            }
            Placement::Overlap(samples) => {
                start = (samples as usize).min(frames);
                self.stats.dropped_samples += start as u64;
            }
        }
        let trimmed = self.trim.min(frames - start);
        self.trim -= trimmed;
        self.timeline.advance(frames - start);

        let mut out = Vec::new();
        let framer = &mut self.framer;
        let mut sink = |samples: &[f32]| framer.feed(samples, &mut out);
        if silence > 0 {
            resampler.push(Input::Silence(silence), &mut sink)?;
        }
        resampler.push(
            Input::Samples(&self.staging[(start + trimmed) * och..frames * och]),
            &mut sink,
        )?;
        Ok(out)
    }

    /// Decodes one access unit into `pcm`.
    fn decode(&mut self, aac: &[u8]) -> Result<Decoded, AudioError> {
        let consumed = self
            .decoder
            .fill(aac)
            .map_err(|e| AudioError::AacDecode(e.to_string()))?;
        if consumed != aac.len() {
            return Err(AudioError::AacDecode(format!(
                "took {consumed} of the {} bytes of an access unit",
                aac.len()
            )));
        }
        self.decoder
            .decode_frame(&mut self.pcm)
            .map_err(|e| AudioError::AacDecode(e.to_string()))?;
        let info = self.decoder.stream_info();
        let (rate, channels, frames) = (info.sampleRate, info.numChannels, info.frameSize);
        let decoded = Decoded {
            frames: usize::try_from(frames).unwrap_or(0),
            channels: usize::try_from(channels).unwrap_or(0),
            rate: u32::try_from(rate).unwrap_or(0),
            output_delay: info.outputDelay as usize,
        };
        if !SAMPLING_FREQUENCIES.contains(&decoded.rate)
            || decoded.channels == 0
            || decoded.frames == 0
            || decoded.frames > MAX_DECODED_FRAMES
            || decoded.frames * decoded.channels > self.pcm.len()
        {
            return Err(AudioError::Unsupported(format!(
                "decoded {} frames of {channels} channels at {rate} Hz",
                decoded.frames
            )));
        }
        Ok(decoded)
    }
}

/// What one access unit decoded to.
#[derive(Debug, Clone, Copy)]
struct Decoded {
    frames: usize,
    channels: usize,
    rate: u32,
    /// FDK's delay from input to output (one frame plus its limiter's look-ahead).
    output_delay: usize,
}

fn open_decoder(asc: &[u8], channels: u8) -> Result<Decoder, AudioError> {
    let mut decoder = Decoder::new(Transport::Raw);
    decoder
        .config_raw(asc)
        .map_err(|e| AudioError::Config(format!("{e} ({asc:02x?})")))?;
    // FDK downmixes (with the stream's own downmix metadata when it has some) to what
    // the Opus stream carries.
    decoder
        .set_max_output_channels(usize::from(channels))
        .map_err(|e| AudioError::AacDecode(e.to_string()))?;
    Ok(decoder)
}

/// i16 interleaved at `in_ch` channels to f32 at `out_ch` (1 or 2). FDK has already
/// downmixed to at most `out_ch`; the other cases are for a decoder that did not.
fn to_f32(pcm: &[i16], in_ch: usize, out: &mut [f32], out_ch: usize) {
    const SCALE: f32 = 1.0 / 32768.0;
    match (in_ch, out_ch) {
        (a, b) if a == b => {
            for (o, &s) in out.iter_mut().zip(pcm) {
                *o = f32::from(s) * SCALE;
            }
        }
        (_, 1) => {
            let scale = SCALE / in_ch as f32;
            for (o, frame) in out.iter_mut().zip(pcm.chunks_exact(in_ch)) {
                *o = frame.iter().map(|&s| f32::from(s)).sum::<f32>() * scale;
            }
        }
        (1, _) => {
            for (o, &s) in out.chunks_exact_mut(out_ch).zip(pcm) {
                o.fill(f32::from(s) * SCALE);
            }
        }
        _ => {
            for (o, frame) in out.chunks_exact_mut(out_ch).zip(pcm.chunks_exact(in_ch)) {
                for (o, &s) in o.iter_mut().zip(frame) {
                    *o = f32::from(s) * SCALE;
                }
            }
        }
    }
}

/// Gathers 48 kHz PCM into 20 ms frames and encodes each, timed from the anchor.
struct OpusFramer {
    encoder: opus::Encoder,
    /// One frame, interleaved.
    frame: Vec<f32>,
    /// Samples (all channels) of `frame` filled so far.
    filled: usize,
    packet: Vec<u8>,
    channels: usize,
    anchor: i64,
    /// Frames encoded since the anchor.
    frames: u64,
}

impl OpusFramer {
    fn new(channels: u8) -> Result<Self, AudioError> {
        let (mode, bitrate) = match channels {
            1 => (opus::Channels::Mono, 64_000),
            _ => (opus::Channels::Stereo, 96_000),
        };
        let error = |e: opus::Error| AudioError::OpusEncode(e.to_string());
        let mut encoder =
            opus::Encoder::new(RATE_48K, mode, opus::Application::Audio).map_err(error)?;
        encoder
            .set_bitrate(opus::Bitrate::Bits(bitrate))
            .map_err(error)?;
        let channels = usize::from(channels);
        Ok(Self {
            encoder,
            frame: vec![0.0; OPUS_FRAME_SAMPLES * channels],
            filled: 0,
            packet: vec![0; MAX_OPUS_PACKET],
            channels,
            anchor: 0,
            frames: 0,
        })
    }

    /// Starts a new time line at `anchor`; returns the samples per channel of the
    /// half-filled frame dropped.
    fn restart(&mut self, anchor: i64) -> u64 {
        let dropped = self.filled / self.channels;
        self.filled = 0;
        self.anchor = anchor;
        self.frames = 0;
        dropped as u64
    }

    fn feed(&mut self, mut samples: &[f32], out: &mut Vec<EncodedAudio>) -> Result<(), AudioError> {
        while !samples.is_empty() {
            let take = samples.len().min(self.frame.len() - self.filled);
            self.frame[self.filled..self.filled + take].copy_from_slice(&samples[..take]);
            self.filled += take;
            samples = &samples[take..];
            if self.filled == self.frame.len() {
                self.filled = 0;
                let pts = ticks_after(
                    self.anchor,
                    i128::from(self.frames) * OPUS_FRAME_SAMPLES as i128,
                    RATE_48K,
                );
                // Counted even if it fails, so the frames after it keep their time.
                self.frames += 1;
                let len = self
                    .encoder
                    .encode_float(&self.frame, &mut self.packet)
                    .map_err(|e| AudioError::OpusEncode(e.to_string()))?;
                out.push(EncodedAudio {
                    data: Bytes::copy_from_slice(&self.packet[..len]),
                    pts,
                    samples: OPUS_FRAME_SAMPLES as u32,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::audio::test_support::{
        aac_encode, channel, garbage, goertzel_ratio, opus_decode, sine_i16, zero_crossing_hz,
    };

    /// 10 s: any pts, as a publisher's clock would be.
    const BASE: i64 = 900_000;

    /// Access units with their pts.
    type Units = Vec<(Vec<u8>, i64)>;

    /// AAC-LC of a 1 kHz sine (after `silence` seconds of silence) lasting `seconds` in
    /// all: its AudioSpecificConfig, its access units with their pts (as MP4 or FLV give
    /// them: unit k at k * 1024 samples), and FDK's encoder delay.
    fn aac_tone(rate: u32, channels: usize, seconds: f64, silence: f64) -> (Vec<u8>, Units, u32) {
        let frames = (seconds * f64::from(rate)) as usize;
        let quiet = (silence * f64::from(rate)) as usize;
        let mut pcm = vec![0i16; quiet * channels];
        pcm.extend(sine_i16(1000.0, rate, channels, frames - quiet, 0.5));
        let (asc, units, delay) = aac_encode(&pcm, rate, channels);
        let units = units
            .into_iter()
            .enumerate()
            .map(|(k, au)| (au, BASE + ticks_after(0, k as i128 * 1024, rate)))
            .collect();
        (asc, units, delay)
    }

    fn push_all(transcoder: &mut AacToOpus, units: &[(Vec<u8>, i64)]) -> Vec<EncodedAudio> {
        let mut out = Vec::new();
        for (au, pts) in units {
            out.extend(transcoder.push(au, *pts).unwrap());
        }
        out
    }

    fn decode(frames: &[EncodedAudio], channels: usize) -> Vec<f32> {
        let packets: Vec<&[u8]> = frames.iter().map(|f| &f.data[..]).collect();
        opus_decode(&packets, channels)
    }

    fn assert_tone(pcm: &[f32], channels: usize, what: &str) {
        for c in 0..channels {
            let samples = channel(pcm, channels, c);
            let ratio = goertzel_ratio(&samples, 48_000, 1000.0);
            assert!(
                ratio > 1000.0,
                "{what}, channel {c}: 1 kHz only {ratio:.0}x the rest"
            );
            let hz = zero_crossing_hz(&samples, 48_000);
            assert!((hz - 1000.0).abs() < 2.0, "{what}, channel {c}: {hz:.1} Hz");
        }
    }

    /// Checks that `frames` play the same audio at the same times as `reference` over
    /// their last 0.2 s: a tone shifted by some samples would be out of phase.
    fn assert_aligned(frames: &[EncodedAudio], reference: &[EncodedAudio], what: &str) {
        let (a, b) = (decode(frames, 2), decode(reference, 2));
        assert_eq!(
            frames.last().unwrap().pts,
            reference.last().unwrap().pts,
            "{what}"
        );
        let n = 9600 * 2;
        let (a, b) = (&a[a.len() - n..], &b[b.len() - n..]);
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let norm =
            (a.iter().map(|x| x * x).sum::<f32>() * b.iter().map(|y| y * y).sum::<f32>()).sqrt();
        assert!(dot / norm > 0.99, "{what}: correlation {}", dot / norm);
    }

    fn assert_steady_pts(frames: &[EncodedAudio], first: i64, what: &str) {
        for (i, frame) in frames.iter().enumerate() {
            assert_eq!(frame.pts, first + i as i64 * 1800, "{what}: frame {i}");
            assert_eq!(frame.samples, 960, "{what}: frame {i}");
        }
    }

    #[test]
    fn transcodes_a_tone_at_each_rate_and_channel_count() {
        for (rate, channels) in [
            (44_100, 2),
            (48_000, 2),
            (44_100, 1),
            (48_000, 1),
            (32_000, 2),
        ] {
            let what = format!("{rate} Hz, {channels} channels");
            let (asc, units, _) = aac_tone(rate, channels, 1.0, 0.0);
            let mut transcoder = AacToOpus::new(&asc).unwrap();
            assert_eq!(usize::from(transcoder.channels()), channels, "{what}");
            let frames = push_all(&mut transcoder, &units);
            assert_steady_pts(&frames, BASE, &what);
            // All the input's time, less what the decoder (its delay) and the resampler
            // (part of a chunk) still hold: at most a frame and a half at 32 kHz.
            let input = units.len() as f64 * 1024.0 / f64::from(rate);
            let output = frames.len() as f64 * 0.02;
            assert!(
                output <= input && output > input - 0.02 - 1.5 * 1024.0 / f64::from(rate) - 0.04,
                "{what}: {output} s of Opus for {input} s of AAC"
            );
            let pcm = decode(&frames, channels);
            // Past FDK's 2048 samples of priming and the resampler's start.
            assert_tone(&pcm[4800 * channels..], channels, &what);
            assert_eq!(transcoder.stats(), TranscodeStats::default(), "{what}");
        }
    }

    /// First sample of the tone: the first well above AAC's and Opus's noise.
    fn onset(samples: &[f32]) -> usize {
        samples.iter().position(|v| v.abs() > 0.25).unwrap()
    }

    #[test]
    fn output_time_matches_input_time() {
        for (rate, channels) in [(44_100, 2), (48_000, 1), (22_050, 2)] {
            let what = format!("{rate} Hz, {channels} channels");
            let (asc, units, delay) = aac_tone(rate, channels, 0.6, 0.3);
            let mut transcoder = AacToOpus::new(&asc).unwrap();
            let frames = push_all(&mut transcoder, &units);
            let pcm = channel(&decode(&frames, channels), channels, 0);
            // The tone starts 0.3 s in, which a decoder plays after the AAC encoder's
            // priming: at BASE + (0.3 s + delay) in the units' time.
            let source = (0.3 * f64::from(rate)) as i128 + i128::from(delay);
            let expected = ticks_after(BASE, source, rate);
            // Opus decoders play its encoder's look-ahead first (WebRTC leaves it in).
            let lookahead = transcoder.framer.encoder.get_lookahead().unwrap() as i128;
            let heard = ticks_after(frames[0].pts, onset(&pcm) as i128 - lookahead, 48_000);
            assert!(
                (heard - expected).abs() <= 90,
                "{what}: the tone is heard at {heard}, played at {expected}"
            );
        }
    }

    #[test]
    fn a_lost_unit_is_filled_and_time_goes_on() {
        let (asc, mut units, _) = aac_tone(44_100, 2, 1.0, 0.0);
        let mut transcoder = AacToOpus::new(&asc).unwrap();
        let all = units.len();
        units.remove(20);
        let frames = push_all(&mut transcoder, &units);
        assert_steady_pts(&frames, BASE, "a lost unit");
        let stats = transcoder.stats();
        assert_eq!(stats.filled_samples, 1024, "{stats:?}");
        assert_eq!(stats.reanchors, 0, "{stats:?}");
        // As many frames as without the loss.
        let (_, whole, _) = aac_tone(44_100, 2, 1.0, 0.0);
        let mut reference = AacToOpus::new(&asc).unwrap();
        let reference = push_all(&mut reference, &whole);
        assert_eq!(reference.len(), frames.len());
        assert_eq!(whole.len(), all);
        assert_aligned(&frames, &reference, "a lost unit");
    }

    #[test]
    fn garbage_is_an_error_and_the_next_unit_decodes() {
        let (asc, units, _) = aac_tone(48_000, 2, 1.0, 0.0);
        let mut transcoder = AacToOpus::new(&asc).unwrap();
        let mut frames = push_all(&mut transcoder, &units[..20]);
        // In place of unit 20: random bytes, an empty unit, an absurdly long one.
        let garbage: Vec<u8> = (0..300u32).map(|i| (i * 7919 % 251) as u8).collect();
        for bad in [&garbage[..], &[0xff; 64], &[], &[0u8; 20_000][..]] {
            assert!(transcoder.push(bad, units[20].1).is_err());
        }
        assert_eq!(transcoder.stats().errors, 4, "{:?}", transcoder.stats());
        frames.extend(push_all(&mut transcoder, &units[21..]));
        assert_steady_pts(&frames, BASE, "garbage");
        assert_eq!(transcoder.stats().reanchors, 0);
        // The units after the garbage still make the tone.
        let tail: Vec<EncodedAudio> = frames[frames.len() - 20..].to_vec();
        assert_tone(&decode(&tail, 2)[4800..], 2, "after garbage");
        assert_eq!(transcoder.stats().filled_samples, 1024);
        let reference = push_all(&mut AacToOpus::new(&asc).unwrap(), &units);
        assert_aligned(&frames, &reference, "garbage");
    }

    #[test]
    fn a_pts_jump_re_anchors() {
        let (asc, units, _) = aac_tone(44_100, 2, 1.0, 0.0);
        let mut transcoder = AacToOpus::new(&asc).unwrap();
        let before = push_all(&mut transcoder, &units[..22]);
        assert_steady_pts(&before, BASE, "before the jump");
        // A publisher restart: the same units, 60 s later.
        let jump = 60 * 90_000;
        let moved: Units = units[22..]
            .iter()
            .map(|(au, pts)| (au.clone(), pts + jump))
            .collect();
        let after = push_all(&mut transcoder, &moved);
        assert_steady_pts(&after, moved[0].1, "after the jump");
        let stats = transcoder.stats();
        assert_eq!(stats.reanchors, 1, "{stats:?}");
        assert!(stats.dropped_samples < 960, "{stats:?}");
        assert_tone(&decode(&after, 2)[4800..], 2, "after the jump");
        // Backwards too, and a small repeat is dropped rather than re-anchored.
        let again = transcoder.push(&units[30].0, moved[0].1 - 90_000).unwrap();
        assert_eq!(transcoder.stats().reanchors, 2);
        assert!(again.is_empty());
        let repeat = transcoder.push(&units[31].0, moved[0].1 - 90_000).unwrap();
        assert!(repeat.is_empty());
        assert_eq!(transcoder.stats().reanchors, 2);
        assert!(transcoder.stats().dropped_samples >= 1024);
    }

    #[test]
    fn survives_random_and_truncated_units() {
        let (asc, units, _) = aac_tone(44_100, 2, 0.5, 0.0);
        let mut transcoder = AacToOpus::new(&asc).unwrap();
        let mut pts = BASE;
        for (i, bad) in garbage(300).iter().enumerate() {
            // Errors or noise, never a panic; time goes on either way.
            let _ = transcoder.push(bad, pts);
            let (au, _) = &units[i % units.len()];
            let _ = transcoder.push(&au[..au.len() / 2], pts + 2089);
            pts += 2 * 2089;
        }
        // And valid units after all that still decode.
        let moved: Units = units
            .iter()
            .map(|(au, p)| (au.clone(), p + pts - BASE))
            .collect();
        let frames = push_all(&mut transcoder, &moved);
        assert!(frames.len() > 15, "{}", frames.len());
    }

    #[test]
    fn bad_configs_are_refused() {
        for asc in [&[][..], &[0x12][..], &[0xff, 0xff][..], &[0x17, 0x90][..]] {
            assert!(AacToOpus::new(asc).is_err(), "{asc:02x?}");
        }
    }

    #[test]
    fn is_send() {
        fn send<T: Send>() {}
        send::<AacToOpus>();
    }
}
