//! H.264 access units in Annex B form (what a WebRTC publisher's RTP depacketizes to)
//! into MP4-sample form with their `avcC` record: the conversion MPEG-TS input gets
//! (`ts_demux::video`), for producers that are not MPEG-TS. Apart from `annexb`, which
//! `ts_demux` itself builds on, so that neither module imports the other.

use crate::ts_demux::video::{NalCodec, VideoState};

/// H.264 access units in Annex B form (what a WebRTC publisher's RTP depacketizes to)
/// into MP4-sample form, with the `avcC` record whenever the parameter sets change: the
/// same conversion MPEG-TS input gets (`ts_demux`).
#[derive(Debug, Default)]
pub struct AnnexbH264 {
    state: VideoState,
}

/// What one access unit became.
#[derive(Debug, Default)]
pub struct ConvertedAccessUnit {
    /// A new `avcC` record, to publish before the sample.
    pub config: Option<bytes::Bytes>,
    /// The sample in MP4 form and whether it is a keyframe; `None` before the first
    /// parameter sets (nothing could decode it) or for an access unit of parameter sets
    /// only.
    pub sample: Option<(bytes::Bytes, bool)>,
}

impl AnnexbH264 {
    pub fn convert(&mut self, access_unit: &[u8]) -> ConvertedAccessUnit {
        let converted = self.state.convert(NalCodec::H264, access_unit);
        ConvertedAccessUnit {
            config: converted.config,
            sample: converted.sample,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::hex;

    #[test]
    fn a_webrtc_publishers_access_units_become_samples_and_a_record() {
        let mut converter = AnnexbH264::default();
        // A P-frame before any parameter set decodes nowhere: dropped.
        let early = converter.convert(&hex("00000001 41 9a 00"));
        assert!(early.config.is_none() && early.sample.is_none());
        let sps = crate::test_vectors::SPS_HIGH_720P;
        let keyframe = hex(&format!(
            "00000001 {sps} 00000001 68ebe3cb 00000001 65 88 84 01"
        ));
        let converted = converter.convert(&keyframe);
        let record = converted
            .config
            .expect("an avcC record for the new parameter sets");
        let config = crate::avc::AvcDecoderConfig::parse(&record).unwrap();
        assert_eq!(config.sps.len(), 1);
        assert_eq!(config.sps_info().unwrap().width, 1280);
        let (sample, key) = converted.sample.expect("the IDR slice");
        assert!(key);
        assert_eq!(
            &sample[..],
            &hex("00000004 65888401")[..],
            "MP4 form, sets kept out"
        );
        let next = converter.convert(&hex("00000001 41 9a 01"));
        assert!(next.config.is_none(), "same parameter sets: no new record");
        assert_eq!(next.sample.map(|(s, k)| (s.len(), k)), Some((7, false)));
    }
}
