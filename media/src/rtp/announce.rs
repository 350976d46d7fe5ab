//! The SDP an RTSP publisher announces (RFC 8866): per media section its payload
//! type, codec, clock rate, control URL and configuration (RFC 6184
//! `sprop-parameter-sets`, RFC 7798 `sprop-vps/sps/pps`, RFC 3640 `config`). Bounded:
//! at most [`MAX_TRACKS`] sections are read.

use crate::error::ParseError;
use crate::frame::Codec;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;

/// Media sections read from one description.
pub const MAX_TRACKS: usize = 8;

/// One announced media section.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AnnouncedTrack {
    /// `None` for a codec strom does not take over RTSP.
    pub codec: Option<Codec>,
    pub payload_type: u8,
    pub clock_rate: u32,
    /// The `a=control` value (often `streamid=0` or `trackID=1`).
    pub control: String,
    /// Video: parameter sets, each a NAL unit.
    pub parameter_sets: Vec<Bytes>,
    /// AAC: the AudioSpecificConfig.
    pub audio_config: Option<Bytes>,
}

/// The media sections of `sdp`.
pub fn parse(sdp: &str) -> Result<Vec<AnnouncedTrack>, ParseError> {
    let mut tracks: Vec<AnnouncedTrack> = Vec::new();
    for line in sdp.lines().map(str::trim) {
        if let Some(media) = line.strip_prefix("m=") {
            if tracks.len() == MAX_TRACKS {
                break;
            }
            let payload_type = media
                .split_whitespace()
                .nth(3)
                .and_then(|pt| pt.parse().ok())
                .ok_or(ParseError::Invalid("SDP media line"))?;
            tracks.push(AnnouncedTrack {
                payload_type,
                ..AnnouncedTrack::default()
            });
            continue;
        }
        let Some(track) = tracks.last_mut() else {
            continue;
        };
        if let Some(control) = line.strip_prefix("a=control:") {
            track.control = control.trim().to_owned();
        } else if let Some(map) = line.strip_prefix("a=rtpmap:") {
            let Some((pt, encoding)) = map.split_once(' ') else {
                continue;
            };
            if pt.trim().parse::<u8>().ok() != Some(track.payload_type) {
                continue;
            }
            let mut parts = encoding.trim().split('/');
            let name = parts.next().unwrap_or("").to_ascii_uppercase();
            track.clock_rate = parts.next().and_then(|r| r.parse().ok()).unwrap_or(0);
            track.codec = match name.as_str() {
                "H264" => Some(Codec::H264),
                "H265" => Some(Codec::H265),
                "MPEG4-GENERIC" => Some(Codec::Aac),
                _ => None,
            };
        } else if let Some(fmtp) = line.strip_prefix("a=fmtp:") {
            let Some((pt, params)) = fmtp.split_once(' ') else {
                continue;
            };
            if pt.trim().parse::<u8>().ok() != Some(track.payload_type) {
                continue;
            }
            for param in params.split(';') {
                let Some((key, value)) = param.trim().split_once('=') else {
                    continue;
                };
                match key.trim().to_ascii_lowercase().as_str() {
                    "sprop-parameter-sets" | "sprop-vps" | "sprop-sps" | "sprop-pps" => {
                        for set in value.split(',') {
                            if let Ok(nal) = STANDARD.decode(set.trim()) {
                                track.parameter_sets.push(Bytes::from(nal));
                            }
                        }
                    }
                    "config" => track.audio_config = hex(value.trim()).map(Bytes::from),
                    "mode" if !value.trim().eq_ignore_ascii_case("AAC-hbr") => {
                        // Only AAC-hbr is depacketized; other modes are not taken.
                        track.codec = None;
                    }
                    _ => {}
                }
            }
        }
    }
    for track in &mut tracks {
        if track.codec == Some(Codec::Aac) && track.audio_config.is_none() {
            track.codec = None;
        }
        if track.clock_rate == 0 {
            track.codec = None;
        }
    }
    Ok(tracks)
}

fn hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > 256 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}
