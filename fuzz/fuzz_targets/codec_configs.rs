//! Codec configuration records from sequence headers: avcC (+SPS), hvcC (+SPS), AAC
//! AudioSpecificConfig, and NAL unit framing.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use strom_media::aac::AacConfig;
use strom_media::annexb::to_annexb;
use strom_media::avc::AvcDecoderConfig;
use strom_media::hevc::HevcDecoderConfig;

fuzz_target!(|data: &[u8]| {
    let record = Bytes::copy_from_slice(data);
    if let Ok(config) = AvcDecoderConfig::parse(&record) {
        let _ = (config.codec_string(), config.sps_info());
    }
    if let Ok(config) = HevcDecoderConfig::parse(&record) {
        let _ = (config.codec_string(), config.sps_info());
    }
    if let Ok(config) = AacConfig::parse(data) {
        let _ = config.codec_string();
    }
    let mut out = Vec::new();
    for size in 1..=4 {
        let _ = to_annexb(data, size, &mut out);
    }
});
