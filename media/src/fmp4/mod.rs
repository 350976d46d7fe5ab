//! Fragmented MP4 for HLS and DASH: the init segment ([`init_segment`]: `ftyp` +
//! `moov`; [`track_init_segment`] for one track alone) and media segments
//! ([`Fragmenter::fragment`]: `moof` + `mdat`; [`Fragmenter::fragment_track`]: one
//! track's CMAF fragment), built with `mp4-atom`.
//!
//! Track layout, fixed whatever the stream carries:
//!
//! - video: track id [`VIDEO_TRACK_ID`], timescale 90 kHz ([`TIMESCALE`]), sample entry
//!   `avc1` + `avcC` or `hvc1` + `hvcC` from the record in [`VideoConfig`];
//! - audio: track id [`AUDIO_TRACK_ID`], timescale = the AAC sampling frequency, sample
//!   entry `mp4a` + `esds` carrying the AudioSpecificConfig as received.
//!
//! An audio-only or video-only stream simply has one `trak`/`trex`/`traf`; the ids do not
//! change. [`Fragmenter::fragment`] writes one `moof` holding a `traf` per track that has
//! samples (video first), followed by one `mdat` (video data, then audio data), the
//! layout ffmpeg's own fragmenting muxer writes; the live packager writes a fragment per
//! track instead ([`Fragmenter::fragment_track`], video then audio), which ffmpeg,
//! hls.js and dash.js read, and which DASH serves track by track. `trun` data offsets are
//! relative to the `moof` (`default-base-is-moof`).
//!
//! Video samples are written as given: length-prefixed NAL units, whose length size is
//! the one of the `avcC`/`hvcC` record the init segment carries. Audio samples are raw
//! AAC frames.
//!
//! A media segment opens with an `styp` ([`segment_type`]), then any `emsg` boxes, then
//! the `moof`. Timed ID3 metadata (stream titles) goes in those `emsg` boxes ([`emsg`]).
//!
//! [`TIMESCALE`]: crate::sample::TIMESCALE
//! [`VideoConfig`]: crate::sample::VideoConfig

pub mod emsg;
mod fragment;
pub(crate) mod init;
#[cfg(test)]
mod tests;

pub use fragment::{Fragmenter, TrackSpan};
pub use init::init_segment;

use crate::sample::{TrackKind, Tracks, VideoConfig};

/// Track id of the video track in init and media segments.
pub const VIDEO_TRACK_ID: u32 = 1;
/// Track id of the audio track in init and media segments (also without video).
pub const AUDIO_TRACK_ID: u32 = 2;

/// Why an init or media segment could not be written. Nothing is appended to the
/// output on error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fmp4Error {
    /// [`init_segment`] was given neither a video nor an audio track.
    #[error("no tracks")]
    NoTracks,
    /// Samples of a kind whose track is absent from [`Tracks`].
    #[error("samples for a missing {0:?} track")]
    MissingTrack(TrackKind),
    /// [`Fragmenter::fragment`] was given no samples.
    #[error("no samples")]
    NoSamples,
    /// A codec configuration that cannot be put in a sample entry.
    #[error("invalid codec configuration: {0}")]
    Config(&'static str),
    /// Times that MP4 cannot express: negative decode times, decreasing decode
    /// times, durations or composition offsets out of range.
    #[error("invalid timestamps: {0}")]
    Timestamp(&'static str),
    /// A sample or segment larger than MP4's 32-bit sizes and offsets allow.
    #[error("too large: {0}")]
    TooLarge(&'static str),
    /// `mp4-atom` refused to encode a box.
    #[error("mp4 encoding: {0}")]
    Encode(String),
}

impl From<mp4_atom::Error> for Fmp4Error {
    fn from(err: mp4_atom::Error) -> Self {
        Fmp4Error::Encode(err.to_string())
    }
}

/// The init segment of one track alone (`None` when the stream lacks it): what a DASH
/// representation of that track initialises with. Track ids stay as in
/// [`init_segment`], so the track's fragments fit both.
pub fn track_init_segment(tracks: &Tracks, kind: TrackKind) -> Option<Result<Vec<u8>, Fmp4Error>> {
    let alone = match kind {
        TrackKind::Video => Tracks {
            video: Some(tracks.video.clone()?),
            audio: None,
        },
        TrackKind::Audio => Tracks {
            video: None,
            audio: Some(tracks.audio.clone()?),
        },
    };
    Some(init_segment(&alone))
}

/// Appends the `styp` box a media segment starts with: `msdh` (a media segment), `msix`
/// (indexable) and `cmfs` (a CMAF segment).
pub fn segment_type(out: &mut Vec<u8>) {
    let styp = mp4_atom::Styp {
        major_brand: mp4_atom::FourCC::new(b"msdh"),
        minor_version: 0,
        compatible_brands: [b"msdh", b"msix", b"cmfs"]
            .into_iter()
            .map(mp4_atom::FourCC::new)
            .collect(),
    };
    // Encoding fixed-size fields into a Vec cannot fail.
    let _ = mp4_atom::Encode::encode(&styp, out);
}

/// The HLS `CODECS` attribute for the tracks, video first: e.g. `avc1.64001f,mp4a.40.2`
/// or `hvc1.1.6.L93.B0,mp4a.40.2` (the `hvc1` form matches the sample entry written here).
pub fn codecs(tracks: &Tracks) -> String {
    let video = tracks.video.as_ref().map(|v| match &v.config {
        VideoConfig::H264 { config, .. } => config.codec_string(),
        VideoConfig::H265 { config, .. } => config.codec_string(),
    });
    let audio = tracks.audio.as_ref().map(|a| a.config.codec_string());
    video.into_iter().chain(audio).collect::<Vec<_>>().join(",")
}
