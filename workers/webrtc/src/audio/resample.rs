//! Sample-rate conversion to Opus's 48 kHz for AAC to Opus. rubato's FFT resampler does
//! the work (a fixed ratio, so the synchronous FFT one: alias-free and the cheapest of
//! rubato's good-quality resamplers); this file wraps it in a push interface that takes any
//! number of frames, hands on whatever output is ready, and trims the resampler's delay so
//! output sample 0 is input sample 0. At 48 kHz it passes samples straight through.
//!
//! All buffers are sized once, at construction: one resampler chunk in, at most one
//! chunk's output out.

use super::{AudioError, RATE_48K};
use rubato::audioadapter_buffers::direct::InterleavedSlice;
use rubato::{Fft, FixedSync, Resampler};

/// What to feed: decoded samples or a stretch of silence (a gap fill).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Input<'a> {
    /// Interleaved frames at the resampler's channel count.
    Samples(&'a [f32]),
    /// This many frames of silence.
    Silence(usize),
}

pub(crate) struct To48k {
    /// None when the input is 48 kHz already.
    fft: Option<Fft<f32>>,
    rate: u32,
    channels: usize,
    /// Input frames per resampler call.
    chunk: usize,
    /// One chunk of input, interleaved; all zeros in pass-through (the silence source).
    input: Vec<f32>,
    /// Frames of `input` filled so far.
    filled: usize,
    /// The most output one call can give, interleaved.
    output: Vec<f32>,
    /// Output frames still to drop: the resampler's delay after a start or reset.
    skip: usize,
}

impl std::fmt::Debug for To48k {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("To48k")
            .field("rate", &self.rate)
            .field("channels", &self.channels)
            .field("chunk", &self.chunk)
            .finish_non_exhaustive()
    }
}

impl To48k {
    /// `chunk` is the input frames per resampler call: the decoder's frame size, so each
    /// decoded frame goes through at once and adds no latency of its own.
    pub(crate) fn new(rate: u32, channels: usize, chunk: usize) -> Result<Self, AudioError> {
        if rate == 0 || channels == 0 || chunk == 0 {
            return Err(AudioError::Resample(format!(
                "{rate} Hz, {channels} channels, {chunk} frames per chunk"
            )));
        }
        if rate == RATE_48K {
            return Ok(Self {
                fft: None,
                rate,
                channels,
                chunk,
                input: vec![0.0; chunk * channels],
                filled: 0,
                output: Vec::new(),
                skip: 0,
            });
        }
        let fft = Fft::<f32>::new(
            rate as usize,
            RATE_48K as usize,
            chunk,
            channels,
            FixedSync::Input,
        )
        .map_err(|e| AudioError::Resample(format!("{rate} Hz to 48 kHz: {e}")))?;
        let output = vec![0.0; fft.output_frames_max() * channels];
        let skip = fft.output_delay();
        Ok(Self {
            fft: Some(fft),
            rate,
            channels,
            chunk,
            input: vec![0.0; chunk * channels],
            filled: 0,
            output,
            skip,
        })
    }

    pub(crate) fn rate(&self) -> u32 {
        self.rate
    }

    /// Forgets buffered input and the filter's history (a new time line starts).
    pub(crate) fn reset(&mut self) {
        self.filled = 0;
        if let Some(fft) = &mut self.fft {
            fft.reset();
            self.skip = fft.output_delay();
        }
    }

    /// Feeds frames in; `sink` gets the 48 kHz frames that are ready (interleaved), in
    /// order, possibly in several pieces.
    pub(crate) fn push<F>(&mut self, input: Input<'_>, sink: &mut F) -> Result<(), AudioError>
    where
        F: FnMut(&[f32]) -> Result<(), AudioError>,
    {
        let ch = self.channels;
        let mut remaining = match input {
            Input::Samples(samples) => samples.len() / ch,
            Input::Silence(frames) => frames,
        };
        if self.fft.is_none() {
            return match input {
                Input::Samples(samples) => sink(&samples[..remaining * ch]),
                Input::Silence(_) => {
                    // `input` stays all zeros in pass-through.
                    while remaining > 0 {
                        let take = remaining.min(self.chunk);
                        sink(&self.input[..take * ch])?;
                        remaining -= take;
                    }
                    Ok(())
                }
            };
        }
        let mut offset = 0;
        while remaining > 0 {
            let take = remaining.min(self.chunk - self.filled);
            let to = &mut self.input[self.filled * ch..(self.filled + take) * ch];
            match input {
                Input::Samples(samples) => to.copy_from_slice(&samples[offset * ch..][..take * ch]),
                Input::Silence(_) => to.fill(0.0),
            }
            self.filled += take;
            offset += take;
            remaining -= take;
            if self.filled == self.chunk {
                self.filled = 0;
                self.process(sink)?;
            }
        }
        Ok(())
    }

    /// Resamples the full input chunk.
    fn process<F>(&mut self, sink: &mut F) -> Result<(), AudioError>
    where
        F: FnMut(&[f32]) -> Result<(), AudioError>,
    {
        let Some(fft) = &mut self.fft else {
            return Ok(());
        };
        let ch = self.channels;
        let error = |e: &dyn std::fmt::Display| AudioError::Resample(e.to_string());
        let input =
            InterleavedSlice::new(&self.input[..], ch, self.chunk).map_err(|e| error(&e))?;
        let capacity = self.output.len() / ch;
        let mut output =
            InterleavedSlice::new_mut(&mut self.output[..], ch, capacity).map_err(|e| error(&e))?;
        let (_, written) = fft
            .process_into_buffer(&input, &mut output, None)
            .map_err(|e| error(&e))?;
        let trimmed = written.min(self.skip);
        self.skip -= trimmed;
        if written > trimmed {
            sink(&self.output[trimmed * ch..written * ch])?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audio::test_support::{goertzel_ratio, sine_f32};

    fn run(rate: u32, channels: usize, chunk: usize, frames: usize, piece: usize) -> Vec<f32> {
        let mut resampler = To48k::new(rate, channels, chunk).unwrap();
        let input = sine_f32(1000.0, rate, channels, frames, 0.5);
        let mut out = Vec::new();
        for piece in input.chunks(piece * channels) {
            resampler
                .push(Input::Samples(piece), &mut |s: &[f32]| {
                    out.extend_from_slice(s);
                    Ok(())
                })
                .unwrap();
        }
        out
    }

    #[test]
    fn converts_to_48k_with_the_delay_trimmed() {
        for (rate, channels) in [(44_100, 2), (32_000, 1), (22_050, 2), (16_000, 1)] {
            // One second in pieces that do not line up with the chunk.
            let out = run(rate, channels, 1024, rate as usize, 700);
            let frames = out.len() / channels;
            // All but what is still in the resampler (its delay plus part of one chunk).
            assert!(
                frames > 48_000 - 2 * 1024 * 48_000 / rate as usize && frames <= 48_000,
                "{rate} Hz: {frames} frames"
            );
            let left: Vec<f32> = out.iter().step_by(channels).copied().collect();
            assert!(goertzel_ratio(&left[2000..], 48_000, 1000.0) > 1000.0);
            // The delay is trimmed: the sine starts at the first output sample, as in
            // the input (sin(0) = 0, rising).
            assert!(
                left[0].abs() < 0.05 && left[3] > 0.0,
                "{rate}: {:?}",
                &left[..4]
            );
        }
    }

    #[test]
    fn passes_48k_through_and_makes_silence() {
        let out = run(48_000, 2, 1024, 4800, 333);
        assert_eq!(out, sine_f32(1000.0, 48_000, 2, 4800, 0.5));
        for rate in [48_000, 44_100] {
            let mut resampler = To48k::new(rate, 1, 1024).unwrap();
            let mut total = 0;
            resampler
                .push(Input::Silence(rate as usize), &mut |s: &[f32]| {
                    assert!(s.iter().all(|&v| v == 0.0));
                    total += s.len();
                    Ok(())
                })
                .unwrap();
            assert!(total > 45_000 && total <= 48_000, "{rate}: {total}");
        }
    }
}
