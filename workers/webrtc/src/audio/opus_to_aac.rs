//! Opus to AAC, for WHIP publishers: browsers publish Opus, HLS, DASH, RTMP and DVR
//! carry AAC. This file owns that transcoder: libopus decodes each depacketized packet
//! (concealing lost ones), FDK AAC encodes AAC-LC at the same 48 kHz, so no resampling,
//! in 1024-sample access units timed by `timeline.rs`, its encoder delay taken out of
//! their pts.
//!
//! PCM never piles up: one decoded packet (at most 120 ms) is held, FDK keeps at most
//! one frame plus its look-ahead, and each push drains what it completes.

use super::timeline::{Placement, REANCHOR_TICKS, TICKS_PER_SECOND, Timeline, ticks_after};
use super::{AudioError, EncodedAudio, RATE_48K, TranscodeStats};
use bytes::Bytes;
use fdk_aac::enc::{AudioObjectType, BitRate, ChannelMode, Encoder, EncoderParams, Transport};

/// The longest Opus packet: 120 ms at 48 kHz.
const MAX_PACKET_SAMPLES: usize = 5760;
/// AAC-LC's access unit.
const AAC_FRAME: u32 = 1024;
/// Opus conceals in steps of 2.5 ms; a gap shorter than one is left alone.
const CONCEAL_STEP: u32 = 120;
/// Concealment runs in pieces of 20 ms, the usual packet.
const CONCEAL_PIECE: u32 = 960;
/// The most concealed at once: a longer gap is a new time line, not a loss.
const MAX_CONCEAL: u32 = (REANCHOR_TICKS * RATE_48K as i64 / TICKS_PER_SECOND) as u32;
/// Room for one access unit: AAC allows 6144 bits per channel.
const MAX_ACCESS_UNIT: usize = 8192;

/// Opus (from a WebRTC publisher, 48 kHz, as RTP depacketized: one Opus packet per call)
/// to AAC-LC 48 kHz, 1024-sample access units.
pub struct OpusToAac {
    channels: u8,
    decoder: opus::Decoder,
    aac: AacEncoder,
    asc: Bytes,
    /// One decoded packet, interleaved.
    pcm: Vec<i16>,
    timeline: Timeline,
    /// Time lines started: the first input and each re-anchor.
    anchors: u64,
    stats: TranscodeStats,
}

impl std::fmt::Debug for OpusToAac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpusToAac")
            .field("channels", &self.channels)
            .field("asc", &self.asc)
            .field("timeline", &self.timeline)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl OpusToAac {
    /// `channels` 1 or 2 (what the SDP's `opus/48000/2` and the packets say); ~128 kb/s
    /// stereo, 64 mono.
    pub fn new(channels: u8) -> Result<Self, AudioError> {
        let mode = match channels {
            1 => opus::Channels::Mono,
            2 => opus::Channels::Stereo,
            _ => {
                return Err(AudioError::Unsupported(format!(
                    "{channels} Opus channels (1 or 2)"
                )));
            }
        };
        let decoder = opus::Decoder::new(RATE_48K, mode)
            .map_err(|e| AudioError::OpusDecode(e.to_string()))?;
        let aac = AacEncoder::new(channels)?;
        let asc = aac.asc.clone();
        Ok(Self {
            channels,
            decoder,
            aac,
            asc,
            pcm: vec![0; MAX_PACKET_SAMPLES * usize::from(channels)],
            timeline: Timeline::new(RATE_48K),
            anchors: 0,
            stats: TranscodeStats::default(),
        })
    }

    /// The AudioSpecificConfig of the AAC it produces (2 bytes for AAC-LC 48 kHz).
    pub fn audio_specific_config(&self) -> Bytes {
        self.asc.clone()
    }

    /// What the transcoder has had to drop, fill and re-anchor so far.
    pub fn stats(&self) -> TranscodeStats {
        TranscodeStats {
            reanchors: self.anchors.saturating_sub(1),
            ..self.stats
        }
    }

    /// Decodes one Opus packet (pts in 90 kHz) and returns the AAC access units completed
    /// (raw, no ADTS header). Their pts advance by 1024 samples (1920 ticks) from the
    /// first input's, less the encoder's delay, so each unit's pts is the time of the
    /// audio it decodes to; an input more than 100 ms off from where the sample count
    /// says it should be re-anchors (a new encoder: the samples in flight are dropped).
    /// A smaller gap (lost packets) is concealed by the Opus decoder, a smaller overlap
    /// dropped, so the AAC stays in step with the input.
    pub fn push(&mut self, opus: &[u8], pts: i64) -> Result<Vec<EncodedAudio>, AudioError> {
        if let Err(e) = self.check(opus) {
            self.stats.errors += 1;
            return Err(e);
        }
        let placement = self.timeline.classify(pts, CONCEAL_STEP);
        if placement != Placement::InStep
            && let Err(e) = opus::packet::parse(opus)
        {
            // Fully checked before it moves the time line or starts concealment (the
            // quick check above reads only the packet's header).
            self.stats.errors += 1;
            return Err(AudioError::OpusDecode(e.to_string()));
        }
        let mut out = Vec::new();
        let mut start = 0;
        match placement {
            Placement::Anchored => {
                if self.anchors > 0 {
                    // The encoder's in-flight samples belong to the old time line.
                    self.stats.dropped_samples += self.aac.restart()?;
                    self.decoder
                        .reset_state()
                        .map_err(|e| AudioError::OpusDecode(e.to_string()))?;
                }
                self.anchors += 1;
                self.timeline.place(pts, CONCEAL_STEP);
                self.aac.anchor = pts;
            }
            Placement::InStep => {}
            Placement::Gap(samples) => self.conceal_into(samples, &mut out)?,
            Placement::Overlap(samples) => {
                start = samples as usize;
            }
        }
        let decoded = match self.decoder.decode(opus, &mut self.pcm, false) {
            Ok(decoded) => decoded.min(MAX_PACKET_SAMPLES),
            Err(e) => {
                self.stats.errors += 1;
                return Err(AudioError::OpusDecode(e.to_string()));
            }
        };
        let start = start.min(decoded);
        self.stats.dropped_samples += start as u64;
        self.timeline.advance(decoded - start);
        let ch = usize::from(self.channels);
        self.aac
            .encode(&self.pcm[start * ch..decoded * ch], &mut out)
            .inspect_err(|_| self.stats.errors += 1)?;
        Ok(out)
    }

    /// A lost packet: the Opus decoder's packet-loss concealment for `samples` (at
    /// 48 kHz) so the AAC timing stays continuous. Rounded down to Opus's 2.5 ms steps and
    /// at most 100 ms (a longer loss re-anchors on the next packet). Nothing before the
    /// first packet. `push` conceals gaps in the pts by itself; this is for a caller that
    /// knows of a loss first (RTP sequence numbers).
    pub fn conceal(&mut self, samples: u32) -> Result<Vec<EncodedAudio>, AudioError> {
        let mut out = Vec::new();
        if self.timeline.is_anchored() {
            self.conceal_into(samples, &mut out)?;
        }
        Ok(out)
    }

    fn conceal_into(
        &mut self,
        samples: u32,
        out: &mut Vec<EncodedAudio>,
    ) -> Result<(), AudioError> {
        let mut left = samples.min(MAX_CONCEAL) / CONCEAL_STEP * CONCEAL_STEP;
        let ch = usize::from(self.channels);
        while left > 0 {
            let piece = left.min(CONCEAL_PIECE) as usize;
            left -= piece as u32;
            // An empty packet asks libopus for concealment.
            let made = self
                .decoder
                .decode(&[], &mut self.pcm[..piece * ch], false)
                .map_err(|e| AudioError::OpusDecode(format!("concealment: {e}")))?
                .min(piece);
            self.stats.filled_samples += made as u64;
            self.timeline.advance(made);
            self.aac.encode(&self.pcm[..made * ch], out)?;
        }
        Ok(())
    }

    /// The quick check of every packet: not empty (libopus would take that for a loss)
    /// and a header that says 2.5 to 120 ms.
    fn check(&self, opus: &[u8]) -> Result<(), AudioError> {
        if opus.is_empty() {
            return Err(AudioError::OpusDecode("empty packet".into()));
        }
        match opus::packet::get_nb_samples(opus, RATE_48K) {
            Ok(1..=MAX_PACKET_SAMPLES) => Ok(()),
            Ok(samples) => Err(AudioError::OpusDecode(format!(
                "a packet of {samples} samples"
            ))),
            Err(e) => Err(AudioError::OpusDecode(e.to_string())),
        }
    }
}

/// FDK's AAC-LC encoder and the timing of what it makes.
struct AacEncoder {
    encoder: Encoder,
    channels: u8,
    asc: Bytes,
    /// Samples per channel between an input sample and the same sample decoded (FDK's
    /// priming): access unit k decodes to input samples k * 1024 - delay onwards.
    delay: u32,
    /// The pts of the encoder's first input sample.
    anchor: i64,
    /// Access units made since the encoder started.
    units: u64,
    /// Samples per channel fed since the encoder started.
    fed: u64,
    /// One access unit's bytes.
    unit: Vec<u8>,
}

impl AacEncoder {
    fn new(channels: u8) -> Result<Self, AudioError> {
        let error = |e: fdk_aac::enc::EncoderError| AudioError::AacEncode(e.to_string());
        let encoder = Encoder::new(EncoderParams {
            bit_rate: BitRate::Cbr(if channels == 1 { 64_000 } else { 128_000 }),
            sample_rate: RATE_48K,
            transport: Transport::Raw,
            channels: if channels == 1 {
                ChannelMode::Mono
            } else {
                ChannelMode::Stereo
            },
            audio_object_type: AudioObjectType::Mpeg4LowComplexity,
        })
        .map_err(error)?;
        let info = encoder.info().map_err(error)?;
        let asc = info
            .confBuf
            .get(..info.confSize as usize)
            .filter(|asc| !asc.is_empty())
            .ok_or_else(|| AudioError::AacEncode("no AudioSpecificConfig".into()))?;
        Ok(Self {
            encoder,
            channels,
            asc: Bytes::copy_from_slice(asc),
            delay: info.nDelay,
            anchor: 0,
            units: 0,
            fed: 0,
            unit: vec![0; MAX_ACCESS_UNIT.max(info.maxOutBufBytes as usize)],
        })
    }

    /// A new encoder for a new time line (the anchor is set by the caller); returns the
    /// samples per channel that were in flight in the old one.
    fn restart(&mut self) -> Result<u64, AudioError> {
        let coded = (self.units * u64::from(AAC_FRAME)).saturating_sub(u64::from(self.delay));
        let in_flight = self.fed.saturating_sub(coded);
        *self = Self::new(self.channels)?;
        Ok(in_flight)
    }

    /// Encodes interleaved 48 kHz PCM; `out` gets the access units completed.
    fn encode(&mut self, mut pcm: &[i16], out: &mut Vec<EncodedAudio>) -> Result<(), AudioError> {
        self.fed += (pcm.len() / usize::from(self.channels)) as u64;
        while !pcm.is_empty() {
            // FDK takes what fits its frame buffer and encodes when the frame is full.
            let info = self
                .encoder
                .encode(pcm, &mut self.unit)
                .map_err(|e| AudioError::AacEncode(e.to_string()))?;
            if info.output_size > 0 {
                let k = self.units;
                self.units += 1;
                // Units that decode to priming only, and whose next unit does too, carry
                // nothing a decoder needs: the first AU of FDK's 2048 samples of delay.
                // The first one kept decodes to priming and then the input's start, so
                // output starts at most one frame before the first input.
                if (k + 2) * u64::from(AAC_FRAME) > u64::from(self.delay) {
                    let at = i128::from(k) * i128::from(AAC_FRAME) - i128::from(self.delay);
                    out.push(EncodedAudio {
                        data: Bytes::copy_from_slice(
                            &self.unit[..info.output_size.min(self.unit.len())],
                        ),
                        pts: ticks_after(self.anchor, at, RATE_48K),
                        samples: AAC_FRAME,
                    });
                }
            } else if info.input_consumed == 0 {
                return Err(AudioError::AacEncode("took no input".into()));
            }
            pcm = &pcm[info.input_consumed.min(pcm.len())..];
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::audio::test_support::{
        aac_decode, channel, garbage, goertzel_ratio, opus_encode, sine_i16, zero_crossing_hz,
    };
    use strom_media::aac::AacConfig;

    /// 10 s: any pts, as a publisher's RTP clock would give.
    const BASE: i64 = 900_000;

    /// Opus packets of 20 ms of a 1 kHz sine (after `silence` seconds of silence) lasting
    /// `seconds` in all, with their pts, and the Opus encoder's look-ahead.
    fn opus_tone(channels: usize, seconds: f64, silence: f64) -> (Vec<(Vec<u8>, i64)>, u32) {
        let frames = (seconds * 48_000.0) as usize;
        let quiet = (silence * 48_000.0) as usize;
        let mut pcm = vec![0i16; quiet * channels];
        pcm.extend(sine_i16(1000.0, 48_000, channels, frames - quiet, 0.5));
        let (packets, lookahead) = opus_encode(&pcm, channels);
        let packets = packets
            .into_iter()
            .enumerate()
            .map(|(k, packet)| (packet, BASE + k as i64 * 1800))
            .collect();
        (packets, lookahead)
    }

    fn push_all(transcoder: &mut OpusToAac, packets: &[(Vec<u8>, i64)]) -> Vec<EncodedAudio> {
        let mut out = Vec::new();
        for (packet, pts) in packets {
            out.extend(transcoder.push(packet, *pts).unwrap());
        }
        out
    }

    /// The AAC decoded (FDK), its own output delay taken off, one channel.
    fn decode(transcoder: &OpusToAac, units: &[EncodedAudio], which: usize) -> Vec<f32> {
        let refs: Vec<&[u8]> = units.iter().map(|u| &u.data[..]).collect();
        let (pcm, channels, rate, delay) = aac_decode(&transcoder.audio_specific_config(), &refs);
        assert_eq!((channels, rate), (usize::from(transcoder.channels), 48_000));
        channel(&pcm, channels, which)[delay as usize..].to_vec()
    }

    fn assert_tone(samples: &[f32], what: &str) {
        let ratio = goertzel_ratio(samples, 48_000, 1000.0);
        assert!(ratio > 1000.0, "{what}: 1 kHz only {ratio:.0}x the rest");
        let hz = zero_crossing_hz(samples, 48_000);
        assert!((hz - 1000.0).abs() < 2.0, "{what}: {hz:.1} Hz");
    }

    fn assert_steady_pts(units: &[EncodedAudio], first: i64, what: &str) {
        for (i, unit) in units.iter().enumerate() {
            assert_eq!(unit.pts, first + i as i64 * 1920, "{what}: unit {i}");
            assert_eq!(unit.samples, 1024, "{what}: unit {i}");
        }
    }

    #[test]
    fn transcodes_a_tone_in_mono_and_stereo() {
        for channels in [1, 2] {
            let what = format!("{channels} channels");
            let (packets, _) = opus_tone(channels, 1.0, 0.0);
            let mut transcoder = OpusToAac::new(channels as u8).unwrap();
            let asc = transcoder.audio_specific_config();
            assert_eq!(asc.len(), 2, "{what}");
            let config = AacConfig::parse(&asc).unwrap();
            assert_eq!(config.object_type, 2, "{what}: AAC-LC");
            assert_eq!(config.sampling_frequency, 48_000, "{what}");
            assert_eq!(config.channel_count(), Some(channels as u8), "{what}");

            let units = push_all(&mut transcoder, &packets);
            // The first unit kept starts one frame before the input: FDK's priming.
            assert_steady_pts(&units, BASE - 1920, &what);
            // All the input (1 s) but what the encoder still holds: its delay and part
            // of a frame.
            let end = units.last().unwrap().pts + 1920;
            let input_end = BASE + 90_000;
            assert!(
                end <= input_end && end > input_end - 2 * 1920 - 3840,
                "{what}: AAC up to {end}, Opus up to {input_end}"
            );
            let pcm = decode(&transcoder, &units, 0);
            assert_tone(&pcm[4800..], &what);
            if channels == 2 {
                assert_tone(&decode(&transcoder, &units, 1)[4800..], &what);
            }
            assert_eq!(transcoder.stats(), TranscodeStats::default(), "{what}");
        }
    }

    /// First sample of the tone: the first well above AAC's and Opus's noise.
    fn onset(samples: &[f32]) -> usize {
        samples.iter().position(|v| v.abs() > 0.25).unwrap()
    }

    #[test]
    fn output_time_matches_input_time() {
        let (packets, lookahead) = opus_tone(2, 0.6, 0.3);
        let mut transcoder = OpusToAac::new(2).unwrap();
        let units = push_all(&mut transcoder, &packets);
        // The tone starts 0.3 s in; an Opus decoder plays it after the Opus encoder's
        // look-ahead (WebRTC leaves that in).
        let played = ticks_after(BASE, 14_400 + i128::from(lookahead), 48_000);
        // The AAC decoder plays unit 0's audio from its pts on.
        let pcm = decode(&transcoder, &units, 0);
        let heard = ticks_after(units[0].pts, onset(&pcm) as i128, 48_000);
        assert!(
            (heard - played).abs() <= 90,
            "the tone is heard at {heard}, played at {played}"
        );
    }

    #[test]
    fn lost_packets_are_concealed_and_time_goes_on() {
        let (mut packets, _) = opus_tone(2, 1.0, 0.0);
        let mut transcoder = OpusToAac::new(2).unwrap();
        // Packet 10 lost with no word; packet 20 lost and told with `conceal`.
        let mut units = push_all(&mut transcoder, &packets[..10]);
        units.extend(push_all(&mut transcoder, &packets[11..20]));
        units.extend(transcoder.conceal(960).unwrap());
        units.extend(push_all(&mut transcoder, &packets[21..]));
        assert_steady_pts(&units, BASE - 1920, "lost packets");
        let stats = transcoder.stats();
        assert_eq!(stats.filled_samples, 1920, "{stats:?}");
        assert_eq!(stats.reanchors, 0, "{stats:?}");
        // As many units as without the losses.
        let reference = push_all(&mut OpusToAac::new(2).unwrap(), &packets);
        assert_eq!(units.len(), reference.len());
        assert_tone(
            &decode(&transcoder, &units, 0)[48_000 / 2..],
            "after the losses",
        );
        // Nothing to conceal before the first packet.
        assert!(OpusToAac::new(1).unwrap().conceal(960).unwrap().is_empty());
        packets.clear();
    }

    #[test]
    fn garbage_is_an_error_and_the_next_packet_decodes() {
        let (packets, _) = opus_tone(2, 1.0, 0.0);
        let mut transcoder = OpusToAac::new(2).unwrap();
        let mut units = push_all(&mut transcoder, &packets[..20]);
        // In place of packet 20: an empty one, a code 3 packet claiming 48 frames
        // of 60 ms, a code 2 packet whose first frame overruns it.
        for bad in [&[][..], &[0xfb, 0x30][..], &[0xfa, 0xff, 0xff, 1, 2][..]] {
            assert!(transcoder.push(bad, packets[20].1).is_err(), "{bad:02x?}");
        }
        assert_eq!(transcoder.stats().errors, 3);
        units.extend(push_all(&mut transcoder, &packets[21..]));
        assert_steady_pts(&units, BASE - 1920, "garbage");
        let stats = transcoder.stats();
        assert_eq!(stats.filled_samples, 960, "{stats:?}");
        assert_eq!(stats.reanchors, 0, "{stats:?}");
        assert_tone(
            &decode(&transcoder, &units, 1)[48_000 / 2..],
            "after garbage",
        );
    }

    #[test]
    fn a_pts_jump_re_anchors() {
        let (packets, _) = opus_tone(1, 1.0, 0.0);
        let mut transcoder = OpusToAac::new(1).unwrap();
        let before = push_all(&mut transcoder, &packets[..25]);
        assert_steady_pts(&before, BASE - 1920, "before the jump");
        // A publisher restart: 60 s later.
        let jump = 60 * 90_000;
        let moved: Vec<(Vec<u8>, i64)> = packets[25..]
            .iter()
            .map(|(packet, pts)| (packet.clone(), pts + jump))
            .collect();
        let after = push_all(&mut transcoder, &moved);
        // A new encoder, timed from the new anchor as the first one was.
        assert_steady_pts(&after, moved[0].1 - 1920, "after the jump");
        let stats = transcoder.stats();
        assert_eq!(stats.reanchors, 1, "{stats:?}");
        // What the old encoder held: its delay and part of a frame.
        assert!(
            stats.dropped_samples >= 2048 && stats.dropped_samples < 2048 + 1024,
            "{stats:?}"
        );
        // A repeated packet is dropped, not re-anchored on.
        let (last, pts) = moved.last().unwrap();
        assert!(transcoder.push(last, *pts).unwrap().is_empty());
        assert_eq!(transcoder.stats().reanchors, 1);
        assert_eq!(
            transcoder.stats().dropped_samples,
            stats.dropped_samples + 960
        );
    }

    #[test]
    fn survives_random_and_truncated_packets() {
        let (packets, _) = opus_tone(2, 0.5, 0.0);
        let mut transcoder = OpusToAac::new(2).unwrap();
        let mut pts = BASE;
        for (i, bad) in garbage(300).iter().enumerate() {
            // Errors or noise, never a panic; time goes on either way.
            let _ = transcoder.push(bad, pts);
            let (packet, _) = &packets[i % packets.len()];
            let _ = transcoder.push(&packet[..packet.len() / 2], pts + 1800);
            pts += 3600;
        }
        let moved: Vec<(Vec<u8>, i64)> = packets
            .iter()
            .map(|(packet, p)| (packet.clone(), p + pts - BASE))
            .collect();
        let units = push_all(&mut transcoder, &moved);
        assert!(units.len() > 15, "{}", units.len());
    }

    #[test]
    fn bad_channel_counts_are_refused() {
        assert!(OpusToAac::new(0).is_err());
        assert!(OpusToAac::new(3).is_err());
    }

    #[test]
    fn is_send() {
        fn send<T: Send>() {}
        send::<OpusToAac>();
    }
}
