//! The SDP (RFC 8866) a DESCRIBE answers with: one media description per track, built
//! from the track's configuration record (`avcC`, `hvcC`, AudioSpecificConfig) with the
//! payload formats' parameters (RFC 6184 `sprop-parameter-sets`, RFC 7798
//! `sprop-vps/sps/pps`, RFC 3640 `config`).

use crate::aac::AacConfig;
use crate::avc::AvcDecoderConfig;
use crate::error::ParseError;
use crate::hevc::HevcDecoderConfig;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use std::fmt::Write;

/// One `m=` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaDescription {
    /// `video` or `audio`.
    pub media: &'static str,
    pub payload_type: u8,
    /// The RTP clock: 90 kHz for video, the sampling rate for AAC.
    pub clock_rate: u32,
    /// `a=rtpmap` after the payload type, e.g. `H264/90000`.
    pub rtpmap: String,
    /// `a=fmtp` after the payload type.
    pub fmtp: String,
}

fn base64_list<'a>(units: impl IntoIterator<Item = &'a Bytes>) -> String {
    units
        .into_iter()
        .map(|unit| STANDARD.encode(unit))
        .collect::<Vec<_>>()
        .join(",")
}

/// H.264 from an `avcC` record (packetization mode 1: single NAL units and FU-A).
pub fn h264(record: &Bytes, payload_type: u8) -> Result<MediaDescription, ParseError> {
    let config = AvcDecoderConfig::parse(record)?;
    let sets = base64_list(config.sps.iter().chain(&config.pps));
    Ok(MediaDescription {
        media: "video",
        payload_type,
        clock_rate: 90_000,
        rtpmap: "H264/90000".to_owned(),
        fmtp: format!(
            "packetization-mode=1;profile-level-id={:02X}{:02X}{:02X};sprop-parameter-sets={sets}",
            config.profile_idc, config.profile_compatibility, config.level_idc
        ),
    })
}

/// H.265 from an `hvcC` record.
pub fn h265(record: &Bytes, payload_type: u8) -> Result<MediaDescription, ParseError> {
    let config = HevcDecoderConfig::parse(record)?;
    Ok(MediaDescription {
        media: "video",
        payload_type,
        clock_rate: 90_000,
        rtpmap: "H265/90000".to_owned(),
        fmtp: format!(
            "sprop-vps={};sprop-sps={};sprop-pps={}",
            base64_list(&config.vps),
            base64_list(&config.sps),
            base64_list(&config.pps)
        ),
    })
}

/// AAC from an AudioSpecificConfig, as `mpeg4-generic` AAC-hbr.
pub fn aac(
    audio_specific_config: &Bytes,
    payload_type: u8,
) -> Result<MediaDescription, ParseError> {
    let config = AacConfig::parse(audio_specific_config)?;
    let channels = config.channel_count().unwrap_or(2);
    let hex: String = audio_specific_config
        .iter()
        .fold(String::new(), |mut hex, byte| {
            let _ = write!(hex, "{byte:02X}");
            hex
        });
    Ok(MediaDescription {
        media: "audio",
        payload_type,
        clock_rate: config.sampling_frequency,
        rtpmap: format!("MPEG4-GENERIC/{}/{channels}", config.sampling_frequency),
        fmtp: format!(
            "profile-level-id=1;mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3;config={hex}"
        ),
    })
}

/// The session description: `session_id` for the origin line, `name` for `s=`, and each
/// track with its `a=control` URL (absolute, so players need no base-URL guessing).
pub fn session(session_id: u64, name: &str, tracks: &[(MediaDescription, String)]) -> String {
    let mut sdp = String::new();
    // Writing to a String cannot fail.
    let _ = write!(
        sdp,
        "v=0\r\no=- {session_id} 1 IN IP4 0.0.0.0\r\ns={name}\r\nc=IN IP4 0.0.0.0\r\nt=0 0\r\n\
         a=tool:strom\r\na=range:npt=0-\r\n"
    );
    for (media, control) in tracks {
        let pt = media.payload_type;
        let _ = write!(
            sdp,
            "m={} 0 RTP/AVP {pt}\r\na=rtpmap:{pt} {}\r\na=fmtp:{pt} {}\r\na=control:{control}\r\n",
            media.media, media.rtpmap, media.fmtp
        );
    }
    sdp
}
