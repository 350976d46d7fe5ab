//! The init segment: `ftyp` and a `moov` with one `trak` per track, empty sample
//! tables, and `mvex`/`trex` announcing that the samples come in movie fragments.

use bytes::Bytes;
use mp4_atom::esds::{DecoderConfig, DecoderSpecific, EsDescriptor, SLConfig};
use mp4_atom::{
    Atom, Audio, Avc1, Avcc, Codec, Dinf, Dref, Encode, Esds, FixedPoint, FourCC, Ftyp, Hdlr, Hvc1,
    Hvcc, Mdhd, Mdia, Minf, Moov, Mp4a, Mvex, Mvhd, Smhd, Stbl, Stco, Stsd, Tkhd, Trak, Trex, Url,
    Visual, Vmhd,
};

use super::{AUDIO_TRACK_ID, Fmp4Error, VIDEO_TRACK_ID};
use crate::avc::AvcDecoderConfig;
use crate::hevc::HevcDecoderConfig;
use crate::sample::{AudioConfig, AudioTrack, TIMESCALE, Tracks, VideoConfig, VideoTrack};

/// HEVC NAL unit types whose `hvcC` arrays `hvc1` requires to be complete.
const HEVC_PARAMETER_SETS: [u8; 3] = [32, 33, 34];

/// `ftyp` + `moov` for the stream's tracks: video track id 1 (timescale 90000; `avc1`
/// with `avcC` or `hvc1` with `hvcC` from the records in [`VideoConfig`], width/height),
/// audio track id 2 (timescale = AAC sample rate; `mp4a` with `esds` carrying the
/// AudioSpecificConfig record, channel count, sample rate), `mvex`/`trex` for each.
///
/// Brands: `iso6` (major), `cmfc` (the CMAF structural brand: `mvex`/`trex`, no samples
/// in `moov`, fragments with `tfdt` and `default-base-is-moof`) and `mp41`. Players and
/// validators look for `cmfc`. An audio+video stream's header carries both tracks (HLS
/// plays its segments, one fragment per track, multiplexed); DASH gets each track alone
/// ([`super::track_init_segment`]).
pub fn init_segment(tracks: &Tracks) -> Result<Vec<u8>, Fmp4Error> {
    let mut trak = Vec::new();
    let mut trex = Vec::new();
    if let Some(video) = &tracks.video {
        trak.push(video_trak(video)?);
        trex.push(trex_for(VIDEO_TRACK_ID));
    }
    if let Some(audio) = &tracks.audio {
        trak.push(audio_trak(audio)?);
        trex.push(trex_for(AUDIO_TRACK_ID));
    }
    if trak.is_empty() {
        return Err(Fmp4Error::NoTracks);
    }

    let compatible_brands = vec![
        FourCC::new(b"iso6"),
        FourCC::new(b"cmfc"),
        FourCC::new(b"mp41"),
    ];
    let ftyp = Ftyp {
        major_brand: FourCC::new(b"iso6"),
        minor_version: 0,
        compatible_brands,
    };
    let moov = Moov {
        mvhd: Mvhd {
            timescale: 1000,
            rate: 1.into(),
            volume: 1.into(),
            next_track_id: AUDIO_TRACK_ID + 1,
            ..Default::default()
        },
        mvex: Some(Mvex { mehd: None, trex }),
        trak,
        ..Default::default()
    };

    let mut out = Vec::new();
    ftyp.encode(&mut out)?;
    moov.encode(&mut out)?;
    Ok(out)
}

fn trex_for(track_id: u32) -> Trex {
    Trex {
        track_id,
        default_sample_description_index: 1,
        ..Default::default()
    }
}

pub(crate) fn video_trak(video: &VideoTrack) -> Result<Trak, Fmp4Error> {
    let width = u16::try_from(video.width).map_err(|_| Fmp4Error::Config("video width"))?;
    let height = u16::try_from(video.height).map_err(|_| Fmp4Error::Config("video height"))?;
    let visual = Visual {
        data_reference_index: 1,
        width,
        height,
        ..Default::default()
    };
    let codec: Codec = match &video.config {
        VideoConfig::H264 { config, record } => Avc1 {
            visual,
            avcc: avcc(config, record)?,
            ..Default::default()
        }
        .into(),
        VideoConfig::H265 { config, record } => Hvc1 {
            visual,
            hvcc: hvcc(config, record)?,
            ..Default::default()
        }
        .into(),
    };
    let tkhd = Tkhd {
        track_id: VIDEO_TRACK_ID,
        enabled: true,
        in_movie: true,
        width: width.into(),
        height: height.into(),
        ..Default::default()
    };
    let minf = Minf {
        vmhd: Some(Vmhd::default()),
        ..minf(codec)
    };
    Ok(trak(tkhd, TIMESCALE, b"vide", "VideoHandler", minf))
}

/// The `avcC` box: the record as received. A record `mp4-atom` cannot read (garbage
/// where the High-profile extension would be) is rebuilt from the parsed fields
/// without the extension, which decoders do not need.
fn avcc(config: &AvcDecoderConfig, record: &Bytes) -> Result<Avcc, Fmp4Error> {
    let avcc = Avcc::decode_body(&mut record.as_ref()).unwrap_or_else(|_| Avcc {
        configuration_version: 1,
        avc_profile_indication: config.profile_idc,
        profile_compatibility: config.profile_compatibility,
        avc_level_indication: config.level_idc,
        length_size: config.nal_length_size,
        sequence_parameter_sets: config.sps.iter().map(|n| n.to_vec()).collect(),
        picture_parameter_sets: config.pps.iter().map(|n| n.to_vec()).collect(),
        ext: None,
    });
    if avcc.length_size != config.nal_length_size {
        return Err(Fmp4Error::Config(
            "avcC NAL length size differs from config",
        ));
    }
    if avcc.sequence_parameter_sets.is_empty() || avcc.picture_parameter_sets.is_empty() {
        return Err(Fmp4Error::Config("avcC without SPS or PPS"));
    }
    Ok(avcc)
}

/// The `hvcC` box: the record as received, with the VPS/SPS/PPS arrays marked
/// complete as `hvc1` requires (parameter sets also sent in-band stay valid).
fn hvcc(config: &HevcDecoderConfig, record: &Bytes) -> Result<Hvcc, Fmp4Error> {
    let mut hvcc =
        Hvcc::decode_body(&mut record.as_ref()).map_err(|_| Fmp4Error::Config("hvcC record"))?;
    if hvcc.length_size_minus_one + 1 != config.nal_length_size {
        return Err(Fmp4Error::Config(
            "hvcC NAL length size differs from config",
        ));
    }
    for array in &mut hvcc.arrays {
        if HEVC_PARAMETER_SETS.contains(&array.nal_unit_type) {
            array.completeness = true;
        }
    }
    Ok(hvcc)
}

/// The timescale of the audio track: its (AAC core) sampling frequency.
pub(crate) fn audio_timescale(config: &AudioConfig) -> Result<u32, Fmp4Error> {
    match config.sampling_frequency() {
        0 => Err(Fmp4Error::Config("audio sampling frequency 0")),
        rate => Ok(rate),
    }
}

/// The audio track's `trak`: an `mp4a` sample entry whose `esds` says MPEG-4 Audio with
/// the AudioSpecificConfig for AAC, or MPEG-1 / MPEG-2 audio (object types 0x6B / 0x69,
/// no decoder-specific info) for MP3. That is how ffmpeg's MP4 muxer writes MP3 and what
/// MP4 readers expect; `.mp3` is QuickTime's sample entry (ffmpeg writes it in `.mov`).
pub(crate) fn audio_trak(audio: &AudioTrack) -> Result<Trak, Fmp4Error> {
    let config = &audio.config;
    let timescale = audio_timescale(config)?;
    let (object_type_indication, dec_specific) = match config {
        AudioConfig::Aac(aac) => {
            if audio.record.is_empty() {
                return Err(Fmp4Error::Config("empty AudioSpecificConfig"));
            }
            let dec_specific = DecoderSpecific {
                profile: aac.object_type,
                freq_index: aac.sampling_frequency_index,
                chan_conf: aac.channel_config,
                raw: audio.record.to_vec(),
            };
            (0x40, Some(dec_specific)) // MPEG-4 Audio
        }
        AudioConfig::Mp3(mp3) if mp3.mpeg1() => (0x6b, None),
        AudioConfig::Mp3(_) => (0x69, None),
    };
    let esds = Esds {
        es_desc: EsDescriptor {
            dec_config: DecoderConfig {
                object_type_indication,
                stream_type: 0x05, // audio stream
                dec_specific,
                ..Default::default()
            },
            sl_config: SLConfig {},
            ..Default::default()
        },
    };
    let mp4a = Mp4a {
        audio: Audio {
            data_reference_index: 1,
            channel_count: config.channel_count().map_or(2, u16::from),
            sample_size: 16,
            // 16.16 fixed point: rates above 65535 Hz do not fit; like ffmpeg, write 0
            // there (decoders take the rate from the AudioSpecificConfig).
            sample_rate: u16::try_from(timescale).unwrap_or(0).into(),
        },
        esds,
        btrt: None,
        taic: None,
    };
    let tkhd = Tkhd {
        track_id: AUDIO_TRACK_ID,
        enabled: true,
        in_movie: true,
        volume: FixedPoint::new(1, 0),
        ..Default::default()
    };
    let minf = Minf {
        smhd: Some(Smhd::default()),
        ..minf(mp4a.into())
    };
    Ok(trak(tkhd, timescale, b"soun", "SoundHandler", minf))
}

fn minf(codec: Codec) -> Minf {
    Minf {
        dinf: Dinf {
            dref: Dref {
                entries: vec![Url::default().into()],
            },
        },
        stbl: Stbl {
            stsd: Stsd {
                codecs: vec![codec],
            },
            stco: Some(Stco::default()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn trak(tkhd: Tkhd, timescale: u32, handler: &[u8; 4], name: &str, minf: Minf) -> Trak {
    Trak {
        tkhd,
        mdia: Mdia {
            mdhd: Mdhd {
                timescale,
                language: "und".into(),
                ..Default::default()
            },
            hdlr: Hdlr {
                handler: FourCC::new(handler),
                name: name.into(),
            },
            minf,
        },
        ..Default::default()
    }
}
