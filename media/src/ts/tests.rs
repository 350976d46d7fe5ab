//! Unit tests of [`TsMuxer`] on hand-built samples, checked with a small
//! transport stream reader (also used by the ffmpeg tests): packet framing,
//! continuity, PSI, PES headers, PCR, access units and ADTS audio.

use std::collections::HashMap;

use bytes::Bytes;

use super::access_unit::{AVC, HEVC};
use super::pes::read_timestamp;
use super::*;
use crate::aac::AacConfig;
use crate::test_vectors::{aac_track, h264_track, h265_track, hex, length_prefixed};

// ---- a minimal TS reader -------------------------------------------------

/// One transport packet, split into its fields.
#[derive(Debug)]
pub(super) struct Packet<'a> {
    pub pid: u16,
    pub unit_start: bool,
    pub cc: u8,
    /// The adaptation field after its length byte, if present.
    pub adaptation: Option<&'a [u8]>,
    pub payload: &'a [u8],
}

impl Packet<'_> {
    fn flags(&self) -> u8 {
        self.adaptation
            .and_then(|af| af.first())
            .copied()
            .unwrap_or(0)
    }

    pub fn random_access(&self) -> bool {
        self.flags() & 0x40 != 0
    }

    /// The PCR base, if the adaptation field carries one.
    pub fn pcr(&self) -> Option<u64> {
        if self.flags() & 0x10 == 0 {
            return None;
        }
        let af = self.adaptation?;
        let b: [u8; 6] = af.get(1..7)?.try_into().ok()?;
        assert_eq!((b[4] & 0x7e, b[4] & 1, b[5]), (0x7e, 0, 0), "extension 0");
        Some(
            (u64::from(b[0]) << 25)
                | (u64::from(b[1]) << 17)
                | (u64::from(b[2]) << 9)
                | (u64::from(b[3]) << 1)
                | u64::from(b[4] >> 7),
        )
    }
}

/// Splits a transport stream into packets, asserting size and sync bytes.
pub(super) fn packets(ts: &[u8]) -> Vec<Packet<'_>> {
    assert_eq!(ts.len() % 188, 0, "whole packets");
    ts.chunks(188)
        .map(|p| {
            assert_eq!(p.len(), 188);
            assert_eq!(p[0], 0x47, "sync byte");
            assert_eq!(p[1] & 0x80, 0, "transport_error_indicator");
            let control = (p[3] >> 4) & 3;
            assert!(control == 1 || control == 3, "always a payload");
            let (adaptation, payload) = if control == 3 {
                let len = usize::from(p[4]);
                assert!(len <= 183);
                (Some(&p[5..5 + len]), &p[5 + len..])
            } else {
                (None, &p[4..])
            };
            Packet {
                pid: u16::from_be_bytes([p[1] & 0x1f, p[2]]),
                unit_start: p[1] & 0x40 != 0,
                cc: p[3] & 0x0f,
                adaptation,
                payload,
            }
        })
        .collect()
}

/// Asserts that every PID's continuity counter goes up by one per packet
/// (mod 16), continuing from `last`.
pub(super) fn check_continuity(ts: &[u8], last: &mut HashMap<u16, u8>) {
    for (i, p) in packets(ts).iter().enumerate() {
        if let Some(prev) = last.insert(p.pid, p.cc) {
            assert_eq!(p.cc, (prev + 1) % 16, "packet {i} PID {:#x}", p.pid);
        }
    }
}

/// A reassembled PES packet and the TS packet it started in.
#[derive(Debug)]
pub(super) struct Pes {
    pub pid: u16,
    pub stream_id: u8,
    /// PES_packet_length as written.
    pub length: u16,
    pub pts: u64,
    pub dts: Option<u64>,
    pub pcr: Option<u64>,
    pub random_access: bool,
    pub payload: Vec<u8>,
}

/// The PES packets of the elementary PIDs (0x100, 0x101), in start order.
pub(super) fn pes_packets(ts: &[u8]) -> Vec<Pes> {
    let mut done: Vec<(Pes, Vec<u8>)> = Vec::new();
    let mut open: HashMap<u16, usize> = HashMap::new();
    for p in packets(ts) {
        if p.pid != VIDEO_PID && p.pid != AUDIO_PID {
            continue;
        }
        if p.unit_start {
            open.insert(p.pid, done.len());
            let pes = Pes {
                pid: p.pid,
                stream_id: 0,
                length: 0,
                pts: 0,
                dts: None,
                pcr: p.pcr(),
                random_access: p.random_access(),
                payload: Vec::new(),
            };
            done.push((pes, p.payload.to_vec()));
        } else {
            assert_eq!(p.flags(), 0, "only a PES's first packet has AF flags");
            let i = open[&p.pid];
            done[i].1.extend_from_slice(p.payload);
        }
    }
    done.into_iter()
        .map(|(mut pes, raw)| {
            assert_eq!(raw[..3], [0, 0, 1], "PES start code");
            pes.stream_id = raw[3];
            pes.length = u16::from_be_bytes([raw[4], raw[5]]);
            assert_eq!(raw[6], 0x84, "marker bits and data_alignment_indicator");
            let header_len = usize::from(raw[8]);
            match raw[7] {
                0x80 => {
                    assert_eq!((header_len, raw[9] >> 4), (5, 0b0010));
                    pes.pts = read_timestamp(&raw[9..14]);
                }
                0xc0 => {
                    assert_eq!(
                        (header_len, raw[9] >> 4, raw[14] >> 4),
                        (10, 0b0011, 0b0001)
                    );
                    pes.pts = read_timestamp(&raw[9..14]);
                    pes.dts = Some(read_timestamp(&raw[14..19]));
                    assert_ne!(pes.dts, Some(pes.pts), "DTS only when it differs");
                }
                flags => panic!("PTS_DTS_flags {flags:#x}"),
            }
            pes.payload = raw[9 + header_len..].to_vec();
            if pes.length != 0 {
                assert_eq!(usize::from(pes.length), raw.len() - 6, "PES_packet_length");
            }
            pes
        })
        .collect()
}

// ---- fixtures ------------------------------------------------------------

fn tracks(video: Option<VideoTrack>, audio: bool) -> Tracks {
    Tracks {
        video,
        audio: audio.then(|| aac_track("1210")),
    }
}

fn video(dts: i64, pts: i64, keyframe: bool, nals: &[&[u8]]) -> Sample {
    Sample {
        kind: TrackKind::Video,
        dts,
        pts,
        keyframe,
        data: length_prefixed(nals),
    }
}

fn audio(dts: i64, len: usize) -> Sample {
    Sample {
        kind: TrackKind::Audio,
        dts,
        pts: dts,
        keyframe: false,
        data: Bytes::from((0..len).map(|i| (i * 7) as u8).collect::<Vec<u8>>()),
    }
}

/// One 44.1 kHz AAC frame in 90 kHz ticks, as RTMP's millisecond clock rounds it.
fn audio_dts(n: i64) -> i64 {
    n * 1024 * 1000 / 44_100 * 90
}

fn mux(tracks: &Tracks, samples: &[Sample]) -> Vec<u8> {
    let mut out = Vec::new();
    TsMuxer::new(tracks)
        .write_segment(tracks, samples, &mut out)
        .unwrap();
    out
}

fn annexb(nals: &[&[u8]]) -> Vec<u8> {
    nals.iter()
        .flat_map(|n| [&[0, 0, 0, 1], *n].concat())
        .collect()
}

fn parameter_sets(track: &VideoTrack) -> Vec<u8> {
    let mut out = Vec::new();
    match &track.config {
        VideoConfig::H264 { config, .. } => config.write_annexb_parameter_sets(&mut out),
        VideoConfig::H265 { config, .. } => config.write_annexb_parameter_sets(&mut out),
    }
    out
}

// ---- tests ---------------------------------------------------------------

#[test]
fn packets_are_188_bytes_and_payloads_survive() {
    let cases = [
        ("h264+aac", tracks(Some(h264_track()), true)),
        ("h265+aac", tracks(Some(h265_track()), true)),
        ("h264", tracks(Some(h264_track()), false)),
        ("aac", tracks(None, true)),
    ];
    for (name, tracks) in &cases {
        // Sizes around every stuffing boundary of the first and later packets.
        for size in 1..=420 {
            let mut samples = Vec::new();
            if tracks.video.is_some() {
                let nal = vec![0x41; size];
                samples.push(video(0, 3600, false, &[&nal]));
            }
            if tracks.audio.is_some() {
                samples.push(audio(0, size));
            }
            let ts = mux(tracks, &samples);
            let pes = pes_packets(&ts);
            assert_eq!(pes.len(), samples.len(), "{name} {size}");
            for (pes, sample) in pes.iter().zip(&samples) {
                let want = match sample.kind {
                    TrackKind::Video => {
                        let aud: &[u8] = if name.starts_with("h265") {
                            HEVC.aud
                        } else {
                            AVC.aud
                        };
                        annexb(&[aud, &vec![0x41; size]])
                    }
                    TrackKind::Audio => {
                        let mut adts = [0; 7];
                        write_adts_header(aac_track("1210").config.aac().unwrap(), size, &mut adts)
                            .unwrap();
                        [&adts[..], &sample.data].concat()
                    }
                };
                assert_eq!(pes.payload, want, "{name} {size}");
            }
        }
    }
}

#[test]
fn continuity_counters_run_across_segments() {
    let tracks = tracks(Some(h264_track()), true);
    let mut muxer = TsMuxer::new(&tracks);
    let big = vec![0x41; 3000];
    let segment = |base: i64| {
        let mut samples = vec![video(base, base, true, &[&[0x65, 0x88]])];
        for i in 0..20 {
            samples.push(audio(base + audio_dts(i), 300));
            samples.push(video(
                base + 3600 * (i + 1),
                base + 3600 * (i + 1),
                false,
                &[&big],
            ));
        }
        samples
    };
    let mut last = HashMap::new();
    let mut whole = Vec::new();
    for n in 0..3 {
        let mut out = Vec::new();
        muxer
            .write_segment(&tracks, &segment(n * 90_000), &mut out)
            .unwrap();
        let ps = packets(&out);
        assert_eq!((ps[0].pid, ps[1].pid), (PAT_PID, PMT_PID), "PSI first");
        assert_eq!((ps[0].cc, ps[1].cc), (n as u8, n as u8));
        check_continuity(&out, &mut last);
        whole.extend_from_slice(&out);
    }
    // Enough packets that the video and audio counters wrapped several times.
    let ps = packets(&whole);
    let video = ps.iter().filter(|p| p.pid == VIDEO_PID).count();
    assert!(video > 3 * 16 * 17, "{video}");
    check_continuity(&whole, &mut HashMap::new());
}

#[test]
fn psi_matches_ffmpeg_and_follows_the_tracks() {
    // PAT and PMT of `ffmpeg -c:v libx264 -c:a aac -f mpegts`, padded with 0xFF.
    let pat = "474000 10 00 00b00d0001c100000001f0002ab104b2";
    let pmt = "475000 10 00 02b0170001c10000e100f0001be100f0000fe101f0002f44b99b";
    let ts = mux(&tracks(Some(h264_track()), true), &[]);
    assert_eq!(ts.len(), 2 * 188);
    for (packet, want) in ts.chunks(188).zip([pat, pmt]) {
        let want = hex(want);
        assert_eq!(packet[..want.len()], want[..]);
        assert!(packet[want.len()..].iter().all(|&b| b == 0xff));
    }

    // (tracks, PCR PID, streams) of the PMT.
    type Streams = &'static [(u8, u16)];
    let cases: &[(Tracks, u16, Streams)] = &[
        (
            tracks(Some(h265_track()), true),
            0x100,
            &[(0x24, 0x100), (0x0f, 0x101)],
        ),
        (tracks(Some(h264_track()), false), 0x100, &[(0x1b, 0x100)]),
        (tracks(None, true), 0x101, &[(0x0f, 0x101)]),
        (tracks(None, false), 0x1fff, &[]),
    ];
    for (tracks, pcr_pid, streams) in cases {
        let ts = mux(tracks, &[]);
        let pmt = &packets(&ts)[1];
        let section = &pmt.payload[1..];
        let len = usize::from(u16::from_be_bytes([section[1], section[2]]) & 0xfff);
        assert_eq!(psi::crc32_mpeg2(&section[..3 + len]), 0);
        assert_eq!(
            u16::from_be_bytes([section[8], section[9]]) & 0x1fff,
            *pcr_pid
        );
        let got: Vec<(u8, u16)> = section[12..3 + len - 4]
            .chunks(5)
            .map(|e| (e[0], u16::from_be_bytes([e[1], e[2]]) & 0x1fff))
            .collect();
        assert_eq!(got, *streams);
    }

    // A change of tracks bumps the PMT version; the same tracks keep it.
    let av = tracks(Some(h264_track()), true);
    let mut muxer = TsMuxer::new(&av);
    let version = |muxer: &mut TsMuxer, tracks: &Tracks| {
        let mut out = Vec::new();
        muxer.write_segment(tracks, &[], &mut out).unwrap();
        (out[188 + 10] >> 1) & 0x1f
    };
    assert_eq!(version(&mut muxer, &av), 0);
    assert_eq!(version(&mut muxer, &av), 0);
    assert_eq!(version(&mut muxer, &tracks(Some(h265_track()), true)), 1);
    assert_eq!(version(&mut muxer, &av), 2);
}

#[test]
fn timestamps_pcr_and_random_access() {
    const WRAP: i64 = 1 << 33;
    let av = tracks(Some(h264_track()), true);
    let audio_only = tracks(None, true);
    let idr: &[&[u8]] = &[&[0x65, 0x88]];
    let p: &[&[u8]] = &[&[0x41, 0x9a]];
    // (tracks, sample, PES PTS, DTS, PCR, random access)
    type Case = (Tracks, Sample, u64, Option<u64>, Option<u64>, bool);
    let cases: Vec<Case> = vec![
        (av.clone(), video(0, 0, true, idr), 0, None, Some(0), true),
        (
            av.clone(),
            video(3600, 10_800, false, p),
            10_800,
            Some(3600),
            Some(0),
            false,
        ),
        (
            av.clone(),
            video(90_000, 93_600, false, p),
            93_600,
            Some(90_000),
            Some(81_000),
            false,
        ),
        (
            av.clone(),
            video(-3600, 0, true, idr),
            0,
            Some((WRAP - 3600) as u64),
            Some((WRAP - 12_600) as u64),
            true,
        ),
        (
            av.clone(),
            video(WRAP + 9000, WRAP + 12_600, true, idr),
            12_600,
            Some(9000),
            Some(0),
            true,
        ),
        (
            av.clone(),
            video(WRAP - 1, WRAP - 1, false, p),
            (WRAP - 1) as u64,
            None,
            Some((WRAP - 9001) as u64),
            false,
        ),
        (av.clone(), audio(90_000, 10), 90_000, None, None, false),
        (
            audio_only.clone(),
            audio(90_000, 10),
            90_000,
            None,
            Some(81_000),
            true,
        ),
        (
            audio_only,
            audio(WRAP + 100, 10),
            100,
            None,
            Some((WRAP - 8900) as u64),
            true,
        ),
    ];
    for (tracks, sample, pts, dts, pcr, random_access) in cases {
        let ts = mux(&tracks, std::slice::from_ref(&sample));
        let pes = pes_packets(&ts);
        assert_eq!(pes.len(), 1);
        let pes = &pes[0];
        let what = format!("{:?} dts {}", sample.kind, sample.dts);
        assert_eq!((pes.pts, pes.dts), (pts, dts), "{what}");
        assert_eq!((pes.pcr, pes.random_access), (pcr, random_access), "{what}");
        match sample.kind {
            TrackKind::Video => assert_eq!((pes.pid, pes.stream_id, pes.length), (0x100, 0xe0, 0)),
            TrackKind::Audio => {
                assert_eq!((pes.pid, pes.stream_id), (0x101, 0xc0));
                assert_eq!(usize::from(pes.length), 3 + 5 + 7 + 10);
            }
        }
    }
}

#[test]
fn pcr_on_every_video_pes() {
    let tracks = tracks(Some(h264_track()), true);
    let mut samples = Vec::new();
    for i in 0..50 {
        samples.push(video(
            i * 3600,
            i * 3600 + 7200,
            i % 25 == 0,
            &[&vec![0x41; 500]],
        ));
        samples.push(audio(audio_dts(i), 200));
    }
    let ts = mux(&tracks, &samples);
    let pes = pes_packets(&ts);
    let video: Vec<&Pes> = pes.iter().filter(|p| p.pid == VIDEO_PID).collect();
    assert_eq!(video.len(), 50);
    for (i, p) in video.iter().enumerate() {
        let dts = i as u64 * 3600;
        assert_eq!(p.pcr, Some(dts.saturating_sub(9000)), "{i}");
        assert_eq!(p.random_access, i % 25 == 0, "{i}");
    }
    assert!(
        pes.iter()
            .filter(|p| p.pid == AUDIO_PID)
            .all(|p| p.pcr.is_none() && !p.random_access)
    );
    // Nothing else carries a PCR.
    let with_pcr = packets(&ts).iter().filter(|p| p.pcr().is_some()).count();
    assert_eq!(with_pcr, 50);
}

/// Splits an audio PES payload into its ADTS frames, checking each header.
fn adts_frames(payload: &[u8]) -> Vec<&[u8]> {
    let mut frames = Vec::new();
    let mut rest = payload;
    while !rest.is_empty() {
        assert_eq!(rest[..2], [0xff, 0xf1], "ADTS sync, MPEG-4, no CRC");
        assert_eq!(rest[2], 0x50, "LC, 44.1 kHz");
        let len = (usize::from(rest[3] & 3) << 11)
            | (usize::from(rest[4]) << 3)
            | usize::from(rest[5] >> 5);
        frames.push(&rest[7..len]);
        rest = &rest[len..];
    }
    frames
}

#[test]
fn audio_frames_get_adts_headers_and_share_pes() {
    let v = |dts| video(dts, dts, false, &[&[0x41, 0x9a]]);
    let gap = audio_dts(20);
    // (samples, frames per audio PES in order, PES position among all PES)
    type Case = (Vec<Sample>, &'static [usize]);
    let cases: Vec<Case> = vec![
        (
            (0..12)
                .map(|i| audio(audio_dts(i), 100 + i as usize))
                .collect(),
            &[5, 5, 2],
        ),
        // Interleaved with video: grouped across the video samples.
        (
            (0..6)
                .flat_map(|i| [audio(audio_dts(i), 50), v(audio_dts(i))])
                .collect(),
            &[5, 1],
        ),
        // A gap in the timestamps starts a new PES.
        (
            vec![
                audio(0, 9),
                audio(audio_dts(1), 9),
                audio(gap, 9),
                audio(gap + audio_dts(1), 9),
            ],
            &[2, 2],
        ),
        // So do a step back and an empty frame (which is skipped).
        (
            vec![
                audio(audio_dts(2), 9),
                audio(audio_dts(1), 9),
                audio(audio_dts(2), 0),
                audio(audio_dts(3), 9),
            ],
            &[1, 1, 1],
        ),
        (vec![audio(0, 8184)], &[1]),
    ];
    for (samples, groups) in cases {
        let ts = mux(&tracks(Some(h264_track()), true), &samples);
        let pes = pes_packets(&ts);
        let audio_pes: Vec<&Pes> = pes.iter().filter(|p| p.pid == AUDIO_PID).collect();
        let got: Vec<usize> = audio_pes
            .iter()
            .map(|p| adts_frames(&p.payload).len())
            .collect();
        assert_eq!(got, groups);
        // The frames come out whole and in order, each PES with its first frame's PTS.
        let frames: Vec<&Sample> = samples
            .iter()
            .filter(|s| s.kind == TrackKind::Audio && !s.data.is_empty())
            .collect();
        let mut n = 0;
        for p in &audio_pes {
            assert_eq!(p.pts, frames[n].pts as u64);
            for frame in adts_frames(&p.payload) {
                assert_eq!(frame, &frames[n].data[..]);
                n += 1;
            }
        }
        assert_eq!(n, frames.len());
    }
    // An audio PES is written where its first frame is.
    let samples = vec![v(0), audio(0, 10), v(3600), audio(audio_dts(1), 10)];
    let kinds: Vec<u16> = pes_packets(&mux(&tracks(Some(h264_track()), true), &samples))
        .iter()
        .map(|p| p.pid)
        .collect();
    assert_eq!(kinds, [VIDEO_PID, AUDIO_PID, VIDEO_PID]);
}

#[test]
fn access_units() {
    let avc = h264_track();
    let hevc = h265_track();
    let avc_ps = parameter_sets(&avc);
    let hevc_ps = parameter_sets(&hevc);
    let avc_aud: &[u8] = &[0x09, 0xf0];
    let own_aud: &[u8] = &[0x09, 0x10];
    let hevc_aud: &[u8] = &[0x46, 0x01, 0x50];
    let sei: &[u8] = &[0x06, 0x05, 0x01];
    let idr: &[u8] = &[0x65, 0x88, 0x84];
    let slice: &[u8] = &[0x41, 0x9a];
    let sps: &[u8] = &[0x67, 0x64, 0x00];
    let pps: &[u8] = &[0x68, 0xeb];
    let h_idr: &[u8] = &[0x26, 0x01, 0xaf];
    let h_trail: &[u8] = &[0x02, 0x01, 0xd0];
    let h_sps: &[u8] = &[0x42, 0x01, 0x01];
    // (track, keyframe, sample NAL units, expected: Annex B before / after the parameter sets)
    type Case<'a> = (
        &'a VideoTrack,
        bool,
        Vec<&'a [u8]>,
        Vec<&'a [u8]>,
        Vec<&'a [u8]>,
    );
    let cases: Vec<Case> = vec![
        // AUD and parameter sets inserted before an IDR.
        (&avc, true, vec![sei, idr], vec![avc_aud], vec![sei, idr]),
        // No parameter sets before other frames.
        (&avc, false, vec![slice], vec![avc_aud, slice], vec![]),
        // The sample's own leading AUD is kept; a later stray AUD dropped.
        (
            &avc,
            false,
            vec![own_aud, slice, avc_aud],
            vec![own_aud, slice],
            vec![],
        ),
        (&avc, true, vec![own_aud, idr], vec![own_aud], vec![idr]),
        // In-band SPS: no parameter sets from the record.
        (
            &avc,
            true,
            vec![sps, pps, idr],
            vec![avc_aud, sps, pps, idr],
            vec![],
        ),
        // Empty NAL units are dropped.
        (
            &avc,
            false,
            vec![&[], slice, &[]],
            vec![avc_aud, slice],
            vec![],
        ),
        // H.265: AUD, VPS/SPS/PPS before IRAP pictures.
        (&hevc, true, vec![h_idr], vec![hevc_aud], vec![h_idr]),
        (&hevc, false, vec![h_trail], vec![hevc_aud, h_trail], vec![]),
        (
            &hevc,
            false,
            vec![hevc_aud, h_trail],
            vec![hevc_aud, h_trail],
            vec![],
        ),
        (
            &hevc,
            true,
            vec![h_sps, h_idr],
            vec![hevc_aud, h_sps, h_idr],
            vec![],
        ),
    ];
    for (track, keyframe, nals, before, after) in cases {
        let tracks = tracks(Some(track.clone()), false);
        let ts = mux(&tracks, &[video(0, 0, keyframe, &nals)]);
        let pes = pes_packets(&ts);
        let ps = match (&after[..], &track.config) {
            ([], _) => Vec::new(),
            (_, VideoConfig::H264 { .. }) => avc_ps.clone(),
            (_, VideoConfig::H265 { .. }) => hevc_ps.clone(),
        };
        let want = [annexb(&before), ps, annexb(&after)].concat();
        assert_eq!(pes[0].payload, want, "{nals:02x?}");
    }
    // A sample with no NAL unit at all writes no PES.
    let tracks = tracks(Some(avc), false);
    for data in [Bytes::new(), Bytes::from(hex("00000000 00000000"))] {
        let sample = Sample {
            data,
            ..video(0, 0, true, &[])
        };
        assert!(pes_packets(&mux(&tracks, &[sample])).is_empty());
    }
}

#[test]
fn errors_leave_output_and_state_untouched() {
    let av = tracks(Some(h264_track()), true);
    let he_aac_explicit_frequency = Tracks {
        audio: Some(AudioTrack {
            config: crate::sample::AudioConfig::Aac(
                AacConfig::parse(&hex("17 80 56 22 10")).unwrap(),
            ),
            record: Bytes::from(hex("17 80 56 22 10")),
        }),
        ..av.clone()
    };
    let good = [video(0, 0, true, &[&[0x65]]), audio(0, 10)];
    let bad_nal = Sample {
        data: Bytes::from(hex("00000009 6588")),
        ..video(0, 0, false, &[])
    };
    let cases: Vec<(Tracks, Sample, ParseError)> = vec![
        (av.clone(), bad_nal, ParseError::Truncated("NAL unit")),
        (
            tracks(None, true),
            video(0, 0, false, &[&[0x41]]),
            ParseError::Invalid("video sample without a video track"),
        ),
        (
            tracks(Some(h264_track()), false),
            audio(0, 1),
            ParseError::Invalid("audio sample without an audio track"),
        ),
        (
            av.clone(),
            audio(0, 8185),
            ParseError::Unsupported("ADTS frame longer than 8191 bytes"),
        ),
        (
            he_aac_explicit_frequency,
            audio(0, 1),
            ParseError::Unsupported("explicit sampling frequency in ADTS"),
        ),
    ];
    for (tracks, bad, err) in cases {
        let mut muxer = TsMuxer::new(&av);
        let mut out = Vec::new();
        muxer.write_segment(&av, &good, &mut out).unwrap();
        let first = out.clone();
        let samples = [good[0].clone(), good[1].clone(), bad];
        assert_eq!(muxer.write_segment(&tracks, &samples, &mut out), Err(err));
        assert_eq!(out, first, "{err}");
        // The next segment continues the counters of the first.
        muxer.write_segment(&av, &good, &mut out).unwrap();
        check_continuity(&out, &mut HashMap::new());
        assert_eq!((out[188 * 5 + 10] >> 1) & 0x1f, 0, "PMT version unchanged");
    }
}

#[test]
fn arbitrary_samples_never_panic() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let all = [
        tracks(Some(h264_track()), true),
        tracks(Some(h265_track()), true),
        tracks(None, true),
        tracks(None, false),
    ];
    let mut muxer = TsMuxer::new(&all[0]);
    let mut last = HashMap::new();
    for round in 0..3000 {
        let tracks = &all[round % all.len()];
        let samples: Vec<Sample> = (0..next() % 6)
            .map(|_| {
                let len = (next() % 300) as usize;
                let mut data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                if next() % 2 == 0 && len >= 4 {
                    // A plausible length prefix now and then.
                    data[..4].copy_from_slice(&((len - 4) as u32).to_be_bytes());
                }
                let extreme = [i64::MIN, i64::MAX, -1, 0, 1 << 33];
                let dts = match next() % 3 {
                    0 => extreme[(next() % 5) as usize],
                    _ => (next() % 1_000_000) as i64,
                };
                Sample {
                    kind: if next() % 2 == 0 {
                        TrackKind::Video
                    } else {
                        TrackKind::Audio
                    },
                    dts,
                    pts: dts.wrapping_add((next() % 10_000) as i64),
                    keyframe: next() % 3 == 0,
                    data: Bytes::from(data),
                }
            })
            .collect();
        let mut out = Vec::new();
        if muxer.write_segment(tracks, &samples, &mut out).is_ok() {
            check_continuity(&out, &mut last);
            pes_packets(&out);
        } else {
            assert!(out.is_empty());
        }
    }
}
