//! Packetization round trips (payloads reassembled as a receiver would), header and
//! sender-report layouts, and the SDP of the test vectors' configurations.

use super::*;
use crate::test_vectors::{ASC, AVCC, HVCC, hex, length_prefixed};

/// Reassembles H.264 payloads into NAL units the way an RFC 6184 receiver does.
fn depacketize_h264(payloads: &[RtpPayload]) -> Vec<Vec<u8>> {
    let mut units = Vec::new();
    let mut partial: Option<Vec<u8>> = None;
    for payload in payloads {
        let mut packet = payload.prefix.as_slice().to_vec();
        packet.extend_from_slice(&payload.body);
        if packet[0] & 0x1f == 28 {
            let (indicator, header) = (packet[0], packet[1]);
            if header & 0x80 != 0 {
                partial = Some(vec![(indicator & 0xe0) | (header & 0x1f)]);
            }
            let unit = partial.as_mut().unwrap();
            unit.extend_from_slice(&packet[2..]);
            if header & 0x40 != 0 {
                units.push(partial.take().unwrap());
            }
        } else {
            units.push(packet);
        }
    }
    units
}

#[test]
fn h264_small_units_go_alone_and_large_ones_in_fu_a() {
    let small = [0x65u8, 1, 2, 3];
    let large: Vec<u8> = std::iter::once(0x65)
        .chain((0..3000).map(|i| i as u8))
        .collect();
    let sample = length_prefixed(&[&small, &large]);
    let sps = bytes::Bytes::from_static(&[0x67, 0x64, 0, 0x1f]);
    let payloads = packetize_h264(&sample, 4, std::slice::from_ref(&sps), MAX_PAYLOAD).unwrap();
    assert!(payloads.iter().all(|p| p.len() <= MAX_PAYLOAD));
    assert_eq!(payloads.iter().filter(|p| p.marker).count(), 1);
    assert!(payloads.last().unwrap().marker);
    let units = depacketize_h264(&payloads);
    assert_eq!(units, vec![sps.to_vec(), small.to_vec(), large]);
}

#[test]
fn h265_fragments_keep_the_nal_type_and_layer() {
    let large: Vec<u8> = [0x26u8, 0x01]
        .into_iter()
        .chain((0..4000).map(|i| i as u8))
        .collect();
    let payloads = packetize_h265(&length_prefixed(&[&large]), 4, &[], MAX_PAYLOAD).unwrap();
    assert!(payloads.len() >= 3);
    let mut rebuilt = Vec::new();
    for (i, payload) in payloads.iter().enumerate() {
        let prefix = payload.prefix.as_slice();
        assert_eq!((prefix[0] >> 1) & 0x3f, 49, "FU payload header");
        assert_eq!(prefix[1], 0x01);
        assert_eq!(
            prefix[2] & 0x3f,
            19,
            "the IDR_W_RADL type travels in the FU header"
        );
        assert_eq!(prefix[2] & 0x80 != 0, i == 0);
        assert_eq!(prefix[2] & 0x40 != 0, i == payloads.len() - 1);
        rebuilt.extend_from_slice(&payload.body);
    }
    assert_eq!(rebuilt, large[2..]);
}

#[test]
fn malformed_samples_are_errors() {
    let truncated = bytes::Bytes::from_static(&[0, 0, 0, 9, 0x65]);
    assert!(packetize_h264(&truncated, 4, &[], MAX_PAYLOAD).is_err());
    assert!(packetize_h264(&truncated, 3, &[], MAX_PAYLOAD).is_err());
    assert!(packetize_h265(&bytes::Bytes::from_static(&[0, 0]), 4, &[], MAX_PAYLOAD).is_err());
}

#[test]
fn aac_carries_one_au_header_and_fragments_large_frames() {
    let frame = bytes::Bytes::from(vec![7u8; 371]);
    let payloads = packetize_aac(&frame, MAX_PAYLOAD).unwrap();
    assert_eq!(payloads.len(), 1);
    assert_eq!(
        payloads[0].prefix.as_slice(),
        &[
            0x00,
            0x10,
            (371u16 >> 5) as u8,
            ((371u16 << 3) & 0xff) as u8
        ]
    );
    assert!(payloads[0].marker);
    let big = bytes::Bytes::from(vec![1u8; 3000]);
    let payloads = packetize_aac(&big, MAX_PAYLOAD).unwrap();
    assert_eq!(payloads.len(), 3);
    assert_eq!(payloads.iter().map(|p| p.body.len()).sum::<usize>(), 3000);
    assert_eq!(
        payloads.iter().map(|p| p.marker).collect::<Vec<_>>(),
        [false, false, true]
    );
    assert!(packetize_aac(&bytes::Bytes::from(vec![0u8; 9000]), MAX_PAYLOAD).is_none());
}

#[test]
fn header_and_sender_report_layouts() {
    let header = header::write(true, 96, 0x1234, 0xdead_beef, 7);
    assert_eq!(
        header,
        [0x80, 0xe0, 0x12, 0x34, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 7]
    );
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1500);
    let ntp = rtcp::ntp_time(time);
    assert_eq!(ntp >> 32, 2_208_988_801);
    assert_eq!(ntp & 0xffff_ffff, 1 << 31, "half a second");
    let report = rtcp::sender_report(7, ntp, 90_000, 10, 1000);
    assert_eq!(&report[..4], &[0x80, 200, 0, 6]);
    assert_eq!(&report[16..20], &90_000u32.to_be_bytes());
}

#[test]
fn sdp_describes_each_codec() {
    let avcc = bytes::Bytes::from(hex(AVCC[0].0));
    let video = sdp::h264(&avcc, 96).unwrap();
    assert_eq!(video.rtpmap, "H264/90000");
    assert!(
        video.fmtp.contains("profile-level-id=64001E"),
        "{}",
        video.fmtp
    );
    assert!(
        video
            .fmtp
            .contains("sprop-parameter-sets=Z2QAHqzZQKAv+XARAAADAAEAAAMAMg8WLZY=,aOvjyyLA"),
        "{}",
        video.fmtp
    );
    let hvcc = bytes::Bytes::from(hex(HVCC[0].0));
    let h265 = sdp::h265(&hvcc, 96).unwrap();
    assert!(h265.fmtp.starts_with("sprop-vps=QAEM"), "{}", h265.fmtp);
    let asc = bytes::Bytes::from(hex(ASC[0].0));
    let audio = sdp::aac(&asc, 97).unwrap();
    assert_eq!(audio.rtpmap, "MPEG4-GENERIC/44100/2");
    assert_eq!(audio.clock_rate, 44_100);
    assert!(audio.fmtp.ends_with("config=1210"));
    let text = sdp::session(
        1,
        "live/cam",
        &[
            (video, "rtsp://h/live/cam/trackID=0".into()),
            (audio, "rtsp://h/live/cam/trackID=1".into()),
        ],
    );
    assert!(text.starts_with("v=0\r\n"));
    assert!(text.contains("m=video 0 RTP/AVP 96\r\n"));
    assert!(text.contains("a=control:rtsp://h/live/cam/trackID=1\r\n"));
    assert!(sdp::h264(&bytes::Bytes::from_static(&[1, 2]), 96).is_err());
}

/// Packets of `payloads` as a sender would put them on the wire.
fn wire(payloads: &[RtpPayload], timestamp: u32, first_sequence: u16) -> Vec<packet::RtpPacket> {
    payloads
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut data = header::write(
                p.marker,
                96,
                first_sequence.wrapping_add(i as u16),
                timestamp,
                1,
            )
            .to_vec();
            data.extend_from_slice(p.prefix.as_slice());
            data.extend_from_slice(&p.body);
            packet::parse(&bytes::Bytes::from(data)).unwrap()
        })
        .collect()
}

#[test]
fn h264_access_units_survive_packetization_and_back() {
    let config = crate::avc::AvcDecoderConfig::parse(&bytes::Bytes::from(hex(AVCC[0].0))).unwrap();
    let idr: Vec<u8> = std::iter::once(0x65)
        .chain((0..5000).map(|i| (i % 251) as u8))
        .collect();
    let slice = [0x41u8, 9, 8, 7];
    let sample = length_prefixed(&[&idr]);
    let mut receiver = depacketize::VideoDepacketizer::h264();
    receiver.prime(&[config.sps[0].clone(), config.pps[0].clone()]);
    let mut out = Vec::new();
    for packet in wire(
        &packetize_h264(&sample, 4, &[], MAX_PAYLOAD).unwrap(),
        3000,
        65530,
    ) {
        out.extend(receiver.push(&packet));
    }
    let next = length_prefixed(&[&slice]);
    for packet in wire(
        &packetize_h264(&next, 4, &[], MAX_PAYLOAD).unwrap(),
        6000,
        65534,
    ) {
        out.extend(receiver.push(&packet));
    }
    assert!(
        matches!(&out[0], depacketize::Depacketized::Config(_)),
        "{out:?}"
    );
    assert_eq!(
        out[1],
        depacketize::Depacketized::Sample {
            timestamp: 3000,
            payload: sample,
            keyframe: true
        }
    );
    assert_eq!(
        out[2],
        depacketize::Depacketized::Sample {
            timestamp: 6000,
            payload: next,
            keyframe: false
        }
    );
    // A lost fragment loses its NAL unit, not the stream.
    let mut lossy = wire(
        &packetize_h264(&length_prefixed(&[&idr]), 4, &[], MAX_PAYLOAD).unwrap(),
        9000,
        10,
    );
    lossy.remove(1);
    let out: Vec<_> = lossy.iter().flat_map(|p| receiver.push(p)).collect();
    assert!(out.is_empty(), "{out:?}");
}

#[test]
fn stap_a_and_aac_au_headers_are_split() {
    let mut receiver = depacketize::VideoDepacketizer::h264();
    let config = crate::avc::AvcDecoderConfig::parse(&bytes::Bytes::from(hex(AVCC[0].0))).unwrap();
    let (sps, pps) = (&config.sps[0], &config.pps[0]);
    let mut stap = vec![24u8];
    for nal in [&sps[..], &pps[..], &[0x65, 1, 2][..]] {
        stap.extend_from_slice(&(nal.len() as u16).to_be_bytes());
        stap.extend_from_slice(nal);
    }
    let mut data = header::write(true, 96, 1, 90, 1).to_vec();
    data.extend_from_slice(&stap);
    let out = receiver.push(&packet::parse(&bytes::Bytes::from(data)).unwrap());
    assert_eq!(out.len(), 2, "{out:?}");

    let mut aac = depacketize::AacDepacketizer::default();
    let mut data = header::write(true, 97, 1, 1000, 1).to_vec();
    data.extend_from_slice(&[0x00, 0x20, 0x00, 0x18, 0x00, 0x10, 1, 2, 3, 4, 5]);
    let out = aac.push(&packet::parse(&bytes::Bytes::from(data)).unwrap());
    assert_eq!(
        out,
        [
            depacketize::Depacketized::Sample {
                timestamp: 1000,
                payload: bytes::Bytes::from_static(&[1, 2, 3]),
                keyframe: false
            },
            depacketize::Depacketized::Sample {
                timestamp: 2024,
                payload: bytes::Bytes::from_static(&[4, 5]),
                keyframe: false
            },
        ]
    );
    let frame = bytes::Bytes::from(vec![9u8; 3000]);
    let out: Vec<_> = wire(&packetize_aac(&frame, MAX_PAYLOAD).unwrap(), 7, 1)
        .iter()
        .flat_map(|p| aac.push(p))
        .collect();
    assert_eq!(
        out,
        [depacketize::Depacketized::Sample {
            timestamp: 7,
            payload: frame,
            keyframe: false
        }]
    );
}

#[test]
fn announced_sdp_of_ffmpeg_is_read() {
    let sdp = "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=No Name\r\nt=0 0\r\n\
        m=video 0 RTP/AVP 96\r\nb=AS:200\r\na=rtpmap:96 H264/90000\r\n\
        a=fmtp:96 packetization-mode=1; sprop-parameter-sets=Z2QAHqzZQKAv+XARAAADAAEAAAMAMg8WLZY=,aOvjyyLA; profile-level-id=64001E\r\n\
        a=control:streamid=0\r\nm=audio 0 RTP/AVP 97\r\n\
        a=rtpmap:97 MPEG4-GENERIC/44100/2\r\n\
        a=fmtp:97 profile-level-id=1;mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3; config=1210\r\n\
        a=control:streamid=1\r\nm=application 0 RTP/AVP 98\r\na=rtpmap:98 t140/1000\r\n";
    let tracks = announce::parse(sdp).unwrap();
    assert_eq!(tracks.len(), 3);
    assert_eq!(tracks[0].codec, Some(crate::frame::Codec::H264));
    assert_eq!(tracks[0].parameter_sets.len(), 2);
    assert_eq!(tracks[0].control, "streamid=0");
    assert_eq!(tracks[1].codec, Some(crate::frame::Codec::Aac));
    assert_eq!((tracks[1].clock_rate, tracks[1].payload_type), (44_100, 97));
    assert_eq!(tracks[1].audio_config.as_deref(), Some(&[0x12u8, 0x10][..]));
    assert_eq!(tracks[2].codec, None);
    assert!(announce::parse("m=video 0 RTP/AVP\r\n").is_err());
}

#[test]
fn rtp_packets_skip_csrcs_extensions_and_padding() {
    let mut data = vec![0xb1, 0x60, 0, 5, 0, 0, 0, 9, 0, 0, 0, 1];
    data.extend_from_slice(&[0, 0, 0, 7]); // one CSRC
    data.extend_from_slice(&[0xbe, 0xde, 0, 1, 1, 2, 3, 4]); // one extension word
    data.extend_from_slice(&[0xaa, 0xbb, 0, 2]); // payload, then 2 bytes of padding
    let packet = packet::parse(&bytes::Bytes::from(data)).unwrap();
    assert_eq!(packet.payload.as_ref(), &[0xaa, 0xbb]);
    assert_eq!(
        (packet.sequence, packet.timestamp, packet.payload_type),
        (5, 9, 96)
    );
    assert!(packet::parse(&bytes::Bytes::from_static(&[0x80, 0, 0])).is_err());
    assert!(
        packet::parse(&bytes::Bytes::from_static(&[
            0xa0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9
        ]))
        .is_err()
    );
}
