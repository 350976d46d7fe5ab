//! Reading progressive MP4 files sample by sample, for playing files out as live
//! streams (server playlists).
//!
//! [`Mp4Index::open`] reads only the `moov` box (bounded by [`MAX_MOOV_BYTES`]) and of it
//! only the boxes playing needs (`boxes`), checks that every video and audio track is
//! H.264, H.265 or AAC, and builds one sample list in decode order across the tracks
//! (`table`), with 90 kHz times from which the edit list's start is taken off so that
//! audio and video keep their sync. Sample bytes stay in the file: [`Mp4Index::read`]
//! fetches one sample when it is due, so a file of any length costs the memory of its
//! index only. The reader is any `Read + Seek` (a file, or a cursor in tests); callers
//! keep it off async runtimes.

mod boxes;
mod table;
#[cfg(test)]
mod tests;

use crate::frame::{Codec, Frame, SourceForm, Track};
use bytes::Bytes;
use std::io::{Read, Seek, SeekFrom};

/// The largest `moov` box read (its tables are the only part held in memory).
pub const MAX_MOOV_BYTES: u64 = 64 * 1024 * 1024;
/// Samples per file at most (30 hours of 25 fps video with 48 kHz AAC fit): the index
/// takes about 40 bytes per sample.
pub const MAX_SAMPLES: usize = 8_000_000;
/// The largest sample read.
pub const MAX_SAMPLE_BYTES: u32 = 16 * 1024 * 1024;

/// Why a file cannot be played.
#[derive(Debug, thiserror::Error)]
pub enum Mp4ReadError {
    #[error("cannot read the file: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a playable MP4 file: {0}")]
    Corrupt(String),
    #[error("unsupported codec {0} (only H.264, H.265 and AAC are played)")]
    Unsupported(String),
}

impl Mp4ReadError {
    fn corrupt(why: impl Into<String>) -> Self {
        Self::Corrupt(why.into())
    }
}

/// One sample: where it lies in the file and when it plays (90 kHz).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleRef {
    pub track: Track,
    pub offset: u64,
    pub size: u32,
    pub dts: i64,
    pub pts: i64,
    pub keyframe: bool,
}

/// A track's codec and its configuration record (`avcC`, `hvcC` body or the
/// AudioSpecificConfig), as a configuration frame carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackConfig {
    pub track: Track,
    pub codec: Codec,
    pub record: Bytes,
}

/// The playable index of one MP4 file.
#[derive(Debug, Clone)]
pub struct Mp4Index {
    pub video: Option<TrackConfig>,
    pub audio: Option<TrackConfig>,
    /// Every sample of both tracks in decode order.
    pub samples: Vec<SampleRef>,
    /// From the first picture or sound to the end of the last, 90 kHz.
    pub duration: i64,
}

impl Mp4Index {
    /// Reads the `moov` box of `reader` and indexes its samples.
    pub fn open<R: Read + Seek>(reader: &mut R) -> Result<Self, Mp4ReadError> {
        let file_len = reader.seek(SeekFrom::End(0))?;
        let moov = read_moov(reader, file_len)?;
        let traks = boxes::tracks(&moov)?;
        let mut video = None;
        let mut audio = None;
        let mut samples = Vec::new();
        let (mut start, mut end) = (i64::MAX, i64::MIN);
        for trak in &traks {
            let Some(config) = table::track_config(trak)? else {
                continue;
            };
            let slot = match config.track {
                Track::Video => &mut video,
                _ => &mut audio,
            };
            // A second track of a kind is not played (one output per kind).
            if slot.is_some() {
                continue;
            }
            let track_samples = table::samples(trak, config.track, file_len)?;
            if samples.len() + track_samples.len() > MAX_SAMPLES {
                return Err(Mp4ReadError::corrupt(format!(
                    "more than {MAX_SAMPLES} samples"
                )));
            }
            if let Some(last_pts) = track_samples.iter().map(|s| s.pts).max() {
                end = end.max(last_pts.saturating_add(table::last_duration(trak)));
                start = start.min(track_samples.iter().map(|s| s.pts).min().unwrap_or(0));
            }
            samples.extend(track_samples);
            *slot = Some(config);
        }
        if samples.is_empty() {
            return Err(Mp4ReadError::corrupt("no video or audio samples"));
        }
        // Decode order across tracks; video first at equal times (a keyframe starts).
        samples.sort_by_key(|s| (s.dts, s.track != Track::Video));
        Ok(Self {
            video,
            audio,
            duration: end.saturating_sub(start).max(0),
            samples,
        })
    }

    /// The configuration frames of the file's tracks, at `dts`.
    pub fn config_frames(&self, dts: i64) -> Vec<Frame> {
        [&self.video, &self.audio]
            .into_iter()
            .flatten()
            .map(|config| Frame {
                config: true,
                ..Frame::neutral(config.track, config.codec, dts, config.record.clone())
            })
            .collect()
    }

    /// The bytes of `sample` as a frame (the index checked its bounds against the file).
    pub fn read<R: Read + Seek>(
        &self,
        reader: &mut R,
        sample: &SampleRef,
    ) -> Result<Frame, Mp4ReadError> {
        let config = match sample.track {
            Track::Video => self.video.as_ref(),
            _ => self.audio.as_ref(),
        };
        let codec = config.map_or(Codec::Unknown, |c| c.codec);
        reader.seek(SeekFrom::Start(sample.offset))?;
        let mut payload = vec![0; sample.size as usize];
        reader.read_exact(&mut payload)?;
        Ok(Frame {
            track: sample.track,
            codec,
            dts: sample.dts,
            pts: sample.pts,
            keyframe: sample.keyframe && sample.track == Track::Video,
            config: false,
            control: false,
            payload: Bytes::from(payload),
            form: SourceForm::Neutral,
        })
    }
}

/// Finds the top-level `moov` box and reads its body.
fn read_moov<R: Read + Seek>(reader: &mut R, file_len: u64) -> Result<Vec<u8>, Mp4ReadError> {
    let mut position = 0u64;
    while position + 8 <= file_len {
        reader.seek(SeekFrom::Start(position))?;
        let mut header = [0u8; 16];
        reader.read_exact(&mut header[..8])?;
        let size32 = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
        let kind = [header[4], header[5], header[6], header[7]];
        let (header_len, size) = match size32 {
            0 => (8, file_len - position),
            1 => {
                reader.read_exact(&mut header[8..16])?;
                let mut large = [0u8; 8];
                large.copy_from_slice(&header[8..16]);
                (16, u64::from_be_bytes(large))
            }
            n => (8, u64::from(n)),
        };
        if size < header_len || position.saturating_add(size) > file_len {
            // The box type is not named: for a file that is no MP4 it is four bytes of
            // the file, and the error reaches the API and the log.
            return Err(Mp4ReadError::corrupt(format!(
                "a box at {position} runs past the end of the file (not an MP4 file?)"
            )));
        }
        if &kind == b"moov" {
            let body_len = size - header_len;
            if body_len > MAX_MOOV_BYTES {
                return Err(Mp4ReadError::corrupt(format!(
                    "moov of {body_len} bytes is over the limit of {MAX_MOOV_BYTES}"
                )));
            }
            let mut body = vec![0; body_len as usize];
            reader.read_exact(&mut body)?;
            return Ok(body);
        }
        position += size;
    }
    Err(Mp4ReadError::corrupt("no moov box"))
}
