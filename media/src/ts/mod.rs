//! MPEG-TS muxing for HLS segments (ISO/IEC 13818-1, HLS's `.ts` segments) and for live
//! TS outputs ([`live`], with per-receiver [`continuity`] and the [`cbr`] mux).
//!
//! One program (number 1, PMT on PID 0x1000) with up to two streams:
//!
//! | stream | PID   | stream_type                 | PES stream_id |
//! |--------|-------|-----------------------------|---------------|
//! | video  | 0x100 | 0x1B H.264, 0x24 H.265      | 0xE0          |
//! | audio  | 0x101 | 0x0F AAC in ADTS; MP3: 0x03 MPEG-1, 0x04 MPEG-2 audio | 0xC0 |
//! | ID3    | 0x103 | 0x15 metadata in PES        | 0xBD          |
//!
//! [`TsMuxer::write_segment`] writes one self-contained segment: PAT and PMT first, then the
//! samples as PES packets. Continuity counters live in the muxer, so consecutive segments
//! concatenate into one continuous transport stream.
//!
//! - **Video**: each sample becomes one PES (PES_packet_length 0, unbounded) holding the
//!   access unit in Annex B form: an access unit delimiter first (the sample's own, if it
//!   starts with one; stray AUDs later in the sample are dropped), then — on keyframes
//!   whose sample carries no SPS — the parameter sets from the decoder configuration
//!   (H.264 SPS+PPS, H.265 VPS+SPS+PPS), then the sample's NAL units.
//! - **Audio**: each raw AAC frame gets a 7-byte ADTS header (MP3 frames carry their
//!   own header and go as they are; only the DVR's playback has MP3 tracks). Up to
//!   [`MAX_AUDIO_FRAMES_PER_PES`] audio frames share one PES (exact PES_packet_length)
//!   when their timestamps are contiguous (each frame one frame duration, ±25 %, after
//!   the previous one). The PES is written where the first of its frames appears in
//!   the sample order, so later audio frames move *ahead* of the video samples between
//!   them (at most ~100 ms at 48 kHz); the PES carries the first frame's PTS and the
//!   decoder derives the others from the frame duration. This cuts the per-PES overhead
//!   (PES header, ADTS and TS headers, on average half a TS packet of stuffing) from about
//!   a third of a 128 kbit/s 44.1 kHz stream with one frame per PES to about a tenth.
//! - **PCR**: on the video PID, or the audio PID when there is no video, in the
//!   adaptation field of the first TS packet of every PES of that PID. PCR = DTS of
//!   that PES − [`PCR_DELAY`] (100 ms), but never below 0 when the DTS is not negative;
//!   the small lead keeps the PCR before the DTS, as the decoder buffer model wants.
//! - **random_access_indicator**: on the first packet of keyframe PES, and of every
//!   audio PES when audio carries the PCR (an audio-only stream: each AAC frame is a
//!   random access point).
//! - Timestamps (PTS, DTS, PCR base) are written modulo 2^33; samples carry unwrapped
//!   64-bit 90 kHz times.
//! - Samples with empty data (video: no non-empty NAL unit) are skipped.
//! - **Timed metadata** (stream titles as ID3 tags, [`timed_id3`]): each tag is one PES
//!   with its PTS on [`ID3_PID`], written before the first sample decoded at or after
//!   it; from the first tag on, the PMT lists that PID (stream_type 0x15 with Apple's
//!   `ID3 ` metadata descriptors).

mod access_unit;
pub mod cbr;
pub mod continuity;
pub mod live;
mod packet;
mod pes;
pub(crate) mod psi;
pub mod timed_id3;

#[cfg(test)]
mod ffmpeg_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod timed_id3_tests;

use crate::ParseError;
use crate::aac::write_adts_header;
use crate::sample::{AudioConfig, AudioTrack, Sample, TrackKind, Tracks, VideoConfig, VideoTrack};

use access_unit::write_access_unit;
use packet::{PesStart, write_pes_packets};
use pes::{AUDIO_STREAM_ID, VIDEO_STREAM_ID, write_pes_header};
pub use timed_id3::{ID3_PID, STREAM_TYPE_METADATA};

/// program_number of the one program.
pub const PROGRAM_NUMBER: u16 = 1;
pub const PAT_PID: u16 = 0x0000;
pub const PMT_PID: u16 = 0x1000;
pub const VIDEO_PID: u16 = 0x0100;
pub const AUDIO_PID: u16 = 0x0101;
/// SCTE-35 sections, in live outputs of streams that carry markers.
pub const SCTE35_PID: u16 = 0x0102;
/// stream_type of SCTE-35 sections (ANSI/SCTE 35 §8.1).
pub const STREAM_TYPE_SCTE35: u8 = 0x86;
/// The registration descriptor with format_identifier `CUEI` that SCTE 35 §8.1 asks
/// for in the program loop of a program that carries SCTE-35.
const CUEI_REGISTRATION: [u8; 6] = [0x05, 0x04, b'C', b'U', b'E', b'I'];
/// PMT PCR_PID when the program has no streams.
const NO_PCR_PID: u16 = 0x1fff;

pub const STREAM_TYPE_H264: u8 = 0x1b;
pub const STREAM_TYPE_H265: u8 = 0x24;
pub const STREAM_TYPE_AAC_ADTS: u8 = 0x0f;
/// MPEG-1 audio (ISO/IEC 11172-3): MP3 at 32, 44.1 and 48 kHz.
pub const STREAM_TYPE_MPEG1_AUDIO: u8 = 0x03;
/// MPEG-2 audio (ISO/IEC 13818-3): MP3 at the half and quarter (2.5) rates.
pub const STREAM_TYPE_MPEG2_AUDIO: u8 = 0x04;

/// How far the PCR runs ahead of the DTS it is sent with: 100 ms in 90 kHz ticks.
pub const PCR_DELAY: i64 = 9_000;
/// The most AAC frames one audio PES carries.
pub const MAX_AUDIO_FRAMES_PER_PES: usize = 5;

/// Streams in the PMT: what makes a new PMT version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    video_stream_type: Option<u8>,
    audio_stream_type: Option<u8>,
    /// SCTE-35 sections on [`SCTE35_PID`] (live outputs of streams that carry markers).
    scte35: bool,
    /// ID3 timed metadata on [`ID3_PID`].
    id3: bool,
}

impl Layout {
    fn of(tracks: &Tracks) -> Self {
        Self {
            video_stream_type: tracks.video.as_ref().map(|v| match v.config {
                VideoConfig::H264 { .. } => STREAM_TYPE_H264,
                VideoConfig::H265 { .. } => STREAM_TYPE_H265,
            }),
            audio_stream_type: tracks.audio.as_ref().map(|a| audio_stream_type(&a.config)),
            scte35: false,
            id3: false,
        }
    }

    fn pcr_pid(self) -> u16 {
        match (self.video_stream_type, self.audio_stream_type) {
            (Some(_), _) => VIDEO_PID,
            (None, Some(_)) => AUDIO_PID,
            (None, None) => NO_PCR_PID,
        }
    }
}

/// Continuity counters, one per PID, each counting mod 16.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counters {
    pat: u8,
    pmt: u8,
    video: u8,
    audio: u8,
    scte35: u8,
    id3: u8,
}

/// Writes HLS MPEG-TS segments for one stream; keep one per stream (rendition) so
/// that continuity counters run on across its segments.
#[derive(Debug)]
pub struct TsMuxer {
    cc: Counters,
    layout: Layout,
    /// PMT version_number (mod 32), bumped when the streams change.
    pmt_version: u8,
    /// Scratch buffer for one PES packet, reused across samples.
    pes: Vec<u8>,
    /// An SCTE-35 marker went out: the PMT keeps listing its PID.
    carries_markers: bool,
    /// A timed metadata tag went out: the PMT keeps listing its PID.
    carries_id3: bool,
}

impl TsMuxer {
    pub fn new(tracks: &Tracks) -> Self {
        Self {
            cc: Counters::default(),
            layout: Layout::of(tracks),
            pmt_version: 0,
            pes: Vec::new(),
            carries_markers: false,
            carries_id3: false,
        }
    }

    /// Appends one HLS segment to `out`: PAT and PMT first, then one PES per video
    /// sample and one per group of audio samples (see the module docs), in the order
    /// given (the caller interleaves by dts). `tracks` may differ from the ones the
    /// muxer was created with (a new PMT version is then written).
    ///
    /// Fails on a sample of a track that `tracks` lacks, on malformed NAL length
    /// framing, and on AAC configurations or frames ADTS cannot describe. On error
    /// nothing is appended to `out` and the muxer state is as before the call.
    pub fn write_segment(
        &mut self,
        tracks: &Tracks,
        samples: &[Sample],
        out: &mut Vec<u8>,
    ) -> Result<(), ParseError> {
        self.write_segment_with_markers(tracks, &[], samples, out)
    }

    /// [`Self::write_segment`] for a segment that starts at an SCTE-35 splice: the
    /// `markers` (whole sections) go on [`SCTE35_PID`] after the tables, and from the
    /// first marker on the PMT lists that PID with the `CUEI` registration descriptor.
    pub fn write_segment_with_markers(
        &mut self,
        tracks: &Tracks,
        markers: &[&[u8]],
        samples: &[Sample],
        out: &mut Vec<u8>,
    ) -> Result<(), ParseError> {
        self.write_segment_with_metadata(tracks, markers, &[], samples, out)
    }

    /// [`Self::write_segment_with_markers`] with timed metadata: `timed` holds ID3 tags
    /// and their PTS (ascending), each written as a PES on [`ID3_PID`] before the first
    /// sample decoded at or after it (see the module docs).
    pub fn write_segment_with_metadata(
        &mut self,
        tracks: &Tracks,
        markers: &[&[u8]],
        timed: &[(i64, &[u8])],
        samples: &[Sample],
        out: &mut Vec<u8>,
    ) -> Result<(), ParseError> {
        let start = out.len();
        let saved = (
            self.cc,
            self.layout,
            self.pmt_version,
            self.carries_markers,
            self.carries_id3,
        );
        self.carries_markers |= !markers.is_empty();
        self.carries_id3 |= !timed.is_empty();
        let result = self.write_segment_inner(tracks, markers, timed, samples, out);
        if result.is_err() {
            out.truncate(start);
            (
                self.cc,
                self.layout,
                self.pmt_version,
                self.carries_markers,
                self.carries_id3,
            ) = saved;
        }
        result
    }

    fn write_segment_inner(
        &mut self,
        tracks: &Tracks,
        markers: &[&[u8]],
        mut timed: &[(i64, &[u8])],
        samples: &[Sample],
        out: &mut Vec<u8>,
    ) -> Result<(), ParseError> {
        let layout = Layout {
            scte35: self.carries_markers,
            id3: self.carries_id3,
            ..Layout::of(tracks)
        };
        if layout != self.layout {
            self.layout = layout;
            self.pmt_version = (self.pmt_version + 1) & 0x1f;
        }
        self.write_psi(out);
        for marker in markers {
            self.write_scte35(marker, out);
        }
        let pcr_pid = layout.pcr_pid();
        // Audio samples before this index went out in an earlier audio PES.
        let mut audio_done = 0;
        for (i, sample) in samples.iter().enumerate() {
            if sample.data.is_empty() {
                continue;
            }
            while let Some(((pts, tag), rest)) = timed.split_first() {
                if *pts > sample.dts {
                    break;
                }
                timed_id3::write_id3_pes(*pts, tag, &mut self.cc.id3, &mut self.pes, out);
                timed = rest;
            }
            match sample.kind {
                TrackKind::Video => {
                    let video = tracks
                        .video
                        .as_ref()
                        .ok_or(ParseError::Invalid("video sample without a video track"))?;
                    self.write_video(video, sample, pcr_pid == VIDEO_PID, out)?;
                }
                TrackKind::Audio if i < audio_done => {}
                TrackKind::Audio => {
                    let audio = tracks
                        .audio
                        .as_ref()
                        .ok_or(ParseError::Invalid("audio sample without an audio track"))?;
                    let group = audio_group(audio, samples, i);
                    self.write_audio(audio, group, pcr_pid == AUDIO_PID, out)?;
                    audio_done = i + group.len();
                }
            }
        }
        for (pts, tag) in timed {
            timed_id3::write_id3_pes(*pts, tag, &mut self.cc.id3, &mut self.pes, out);
        }
        Ok(())
    }

    fn write_psi(&mut self, out: &mut Vec<u8>) {
        let layout = self.layout;
        let none: &[u8] = &[];
        let video = layout.video_stream_type.map(|t| (t, VIDEO_PID, none));
        let audio = layout
            .audio_stream_type
            .map(|stream_type| (stream_type, AUDIO_PID, none));
        let scte35 = layout
            .scte35
            .then_some((STREAM_TYPE_SCTE35, SCTE35_PID, none));
        let id3 = layout.id3.then_some((
            STREAM_TYPE_METADATA,
            ID3_PID,
            &timed_id3::METADATA_DESCRIPTOR[..],
        ));
        let streams: Vec<(u8, u16, &[u8])> = video
            .into_iter()
            .chain(audio)
            .chain(scte35)
            .chain(id3)
            .collect();
        let mut program_info = Vec::new();
        if layout.scte35 {
            program_info.extend_from_slice(&CUEI_REGISTRATION);
        }
        if layout.id3 {
            program_info.extend_from_slice(&timed_id3::metadata_pointer_descriptor(PROGRAM_NUMBER));
        }
        psi::write_pat(PROGRAM_NUMBER, PMT_PID, 0, &mut self.cc.pat, out);
        psi::write_pmt_described(
            PROGRAM_NUMBER,
            PMT_PID,
            self.pmt_version,
            layout.pcr_pid(),
            &program_info,
            &streams,
            &mut self.cc.pmt,
            out,
        );
    }

    fn write_video(
        &mut self,
        video: &VideoTrack,
        sample: &Sample,
        carries_pcr: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), ParseError> {
        self.pes.clear();
        write_pes_header(VIDEO_STREAM_ID, sample.pts, sample.dts, None, &mut self.pes)?;
        if !write_access_unit(&video.config, sample, &mut self.pes)? {
            return Ok(());
        }
        let start = PesStart {
            pcr: carries_pcr.then(|| pcr_for(sample.dts)),
            random_access: sample.keyframe,
        };
        write_pes_packets(VIDEO_PID, &mut self.cc.video, &self.pes, start, out);
        Ok(())
    }

    /// Writes the audio frames of `group` (see [`audio_group`]) as one PES.
    fn write_audio(
        &mut self,
        audio: &AudioTrack,
        group: &[Sample],
        carries_pcr: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), ParseError> {
        let mut frames = group
            .iter()
            .filter(|s| s.kind == TrackKind::Audio && !s.data.is_empty());
        let Some(first) = frames.clone().next() else {
            return Ok(());
        };
        // AAC frames get an ADTS header; MP3 frames carry their own header.
        let aac = audio.config.aac();
        let header_len = if aac.is_some() { 7 } else { 0 };
        let payload_len = frames.clone().map(|s| s.data.len() + header_len).sum();
        self.pes.clear();
        write_pes_header(
            AUDIO_STREAM_ID,
            first.pts,
            first.pts,
            Some(payload_len),
            &mut self.pes,
        )?;
        frames.try_for_each(|frame| {
            if let Some(aac) = aac {
                let mut adts = [0; 7];
                write_adts_header(aac, frame.data.len(), &mut adts)?;
                self.pes.extend_from_slice(&adts);
            }
            self.pes.extend_from_slice(&frame.data);
            Ok::<_, ParseError>(())
        })?;
        let start = PesStart {
            pcr: carries_pcr.then(|| pcr_for(first.dts)),
            random_access: carries_pcr,
        };
        write_pes_packets(AUDIO_PID, &mut self.cc.audio, &self.pes, start, out);
        Ok(())
    }
}

/// The PMT stream_type of an audio track.
fn audio_stream_type(config: &AudioConfig) -> u8 {
    match config {
        AudioConfig::Aac(_) => STREAM_TYPE_AAC_ADTS,
        AudioConfig::Mp3(mp3) if mp3.mpeg1() => STREAM_TYPE_MPEG1_AUDIO,
        AudioConfig::Mp3(_) => STREAM_TYPE_MPEG2_AUDIO,
    }
}

/// The PCR sent with a PES decoded at `dts`: [`PCR_DELAY`] earlier, held at 0
/// rather than wrapping below 0 at the start of a stream.
fn pcr_for(dts: i64) -> i64 {
    if dts >= 0 {
        dts.saturating_sub(PCR_DELAY).max(0)
    } else {
        dts.saturating_sub(PCR_DELAY)
    }
}

/// The samples from `samples[first]` (an audio frame) up to and including the
/// last audio frame that joins its PES: the following non-empty audio frames,
/// at most [`MAX_AUDIO_FRAMES_PER_PES`] in all, each one frame duration (±25 %)
/// after the previous one. Samples of other kinds in between are not part of
/// the PES; they are written on their own.
fn audio_group<'a>(audio: &AudioTrack, samples: &'a [Sample], first: usize) -> &'a [Sample] {
    let rest = samples.get(first..).unwrap_or_default();
    let frequency = i64::from(audio.config.sampling_frequency());
    let duration = if frequency > 0 {
        i64::from(audio.config.frame_samples()) * i64::from(crate::sample::TIMESCALE) / frequency
    } else {
        0
    };
    let (min_step, max_step) = (duration - duration / 4, duration + duration / 4);
    let mut end = 1; // samples in the group so far, as a prefix of `rest`
    let mut count = 1;
    let mut previous_dts = rest.first().map_or(0, |s| s.dts);
    for (i, sample) in rest.iter().enumerate().skip(1) {
        if count >= MAX_AUDIO_FRAMES_PER_PES || duration == 0 {
            break;
        }
        if sample.kind != TrackKind::Audio {
            continue;
        }
        let contiguous = sample
            .dts
            .checked_sub(previous_dts)
            .is_some_and(|step| (min_step..=max_step).contains(&step));
        if sample.data.is_empty() || !contiguous {
            break;
        }
        previous_dts = sample.dts;
        count += 1;
        end = i + 1;
    }
    rest.get(..end).unwrap_or_default()
}
