//! Sans-io media code shared by the workers: no sockets, no tokio.
//!
//! Protocol cores live here so they can be unit-tested and fuzzed on bytes alone.
//! Every parser returns [`ParseError`] instead of panicking, on any input.
//!
//! - [`frame`]: the protocol-neutral [`frame::Frame`] every producer and reader shares.
//! - [`track_info`]: learning a track's codec string, size and rate from its frames.
//! - [`track_builder`]: frames to muxer tracks and samples.
//! - [`flv`]: RTMP audio/video message payloads (legacy FLV and Enhanced RTMP).
//! - [`flv_adapter`]: FLV bodies to frames and back, byte for byte.
//! - [`avc`], [`sps`]: H.264 `avcC` records and SPS (picture size).
//! - [`hevc`]: H.265 `hvcC` records and SPS.
//! - [`decode_time`]: decode times for reordered video that arrives with presentation
//!   times only (RTP).
//! - [`aac`]: AudioSpecificConfig and ADTS headers.
//! - [`mpeg_audio`]: MPEG audio (MP3) frame headers.
//! - [`audio_stream`]: elementary MP3/ADTS byte streams (Icecast sources) to frames.
//! - [`icy_request`]: the request head of an Icecast source (`PUT`, `SOURCE`).
//! - [`annexb`]: length-prefixed NAL units to Annex B, key-frame detection.
//! - [`mp4`]: progressive MP4 files over samples left in place (DVR export).
//! - [`mp4_read`]: progressive MP4 files read sample by sample (server playlists).
//! - [`dash`]: MPEG-DASH live manifests.
//! - [`ts`]: MPEG-TS muxing of HLS segments.
//! - [`ts_demux`]: MPEG-TS demuxing into frames (TS ingest), [`ts_demux::strip_rtp`].
//! - [`scte35`]: SCTE-35 splice_info_sections, built and parsed.
//! - [`id3`], [`timed_metadata`]: stream titles as ID3 tags, timed metadata frames and
//!   their RTMP form.
//! - [`bits`]: the bit reader behind the codec header parsers.
//! - [`codec_string`] names codecs the way playlists and the management API do.

pub mod aac;
pub mod ad_break;
pub mod annexb;
pub mod annexb_h264;
pub mod audio_stream;
pub mod avc;
pub mod bits;
pub mod codec_string;
mod cursor;
pub mod dash;
pub mod decode_time;
pub mod dvr;
mod error;
pub mod flv;
pub mod flv_adapter;
pub mod flv_form;
pub mod fmp4;
pub mod frame;
pub mod hevc;
pub mod hls;
pub mod icy_request;
pub mod id3;
pub mod mp4;
pub mod mp4_read;
pub mod mpeg_audio;
pub mod rtp;
pub mod sample;
pub mod scte35;
pub mod sps;
mod sps_vui;
pub mod timed_metadata;
pub mod track_builder;
pub mod track_info;
pub mod ts;
pub mod ts_demux;

pub use error::ParseError;

#[cfg(test)]
mod robustness;
#[cfg(test)]
mod test_flv;
#[cfg(test)]
mod test_vectors;
