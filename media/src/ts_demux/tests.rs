//! Unit tests: round trips through the crate's own [`TsMuxer`], hand-built
//! PSI/PES for multi-program streams, SCTE-35, PMT changes, timestamp wraps and
//! jumps, and hostile input (garbage, truncation, lost packets, oversized PES).

use bytes::Bytes;

use super::*;
use crate::sample::{Sample, TrackKind, Tracks};
use crate::test_vectors::{aac_track, h264_track, h265_track, length_prefixed};
use crate::track_info::{self, TrackInfo};
use crate::ts::TsMuxer;

// ---- helpers ---------------------------------------------------------------

fn video(dts: i64, pts: i64, keyframe: bool, n: u8) -> Sample {
    let first: u8 = if keyframe { 0x65 } else { 0x41 };
    let slice: Vec<u8> = std::iter::once(first)
        .chain((0..300u16 + u16::from(n) * 7).map(|i| (i as u8) | 0x80))
        .collect();
    Sample {
        kind: TrackKind::Video,
        dts,
        pts,
        keyframe,
        data: length_prefixed(&[&[0x06, 0x05, 0x01, 0x80], &slice]),
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

/// 48 kHz: one AAC frame is exactly 1920 ticks.
const AAC_48K: &str = "1190";
const AUDIO_STEP: i64 = 1920;

fn tracks(video: bool, audio: bool) -> Tracks {
    Tracks {
        video: video.then(h264_track),
        audio: audio.then(|| aac_track(AAC_48K)),
    }
}

/// 2 s of 25 fps video (keyframes every 25, B-frame style pts) and 48 kHz audio,
/// interleaved by dts, starting at `start`.
fn samples(start: i64) -> Vec<Sample> {
    let mut all = Vec::new();
    for i in 0..50i64 {
        let dts = start + i * 3600;
        all.push(video(dts, dts + 7200 * (i % 2), i % 25 == 0, i as u8));
    }
    for i in 0..94i64 {
        all.push(audio(start + i * AUDIO_STEP, 200 + (i as usize % 50)));
    }
    all.sort_by_key(|s| s.dts);
    all
}

fn mux(tracks: &Tracks, samples: &[Sample]) -> Vec<u8> {
    let mut out = Vec::new();
    TsMuxer::new(tracks)
        .write_segment(tracks, samples, &mut out)
        .unwrap();
    out
}

fn demux_all(demuxer: &mut TsDemuxer) -> (Vec<Frame>, Vec<DemuxEvent>) {
    demuxer.flush();
    let frames = std::iter::from_fn(|| demuxer.next_frame()).collect();
    let events = std::iter::from_fn(|| demuxer.next_event()).collect();
    (frames, events)
}

fn demux(ts: &[u8]) -> (Vec<Frame>, Vec<DemuxEvent>, DemuxState) {
    let mut demuxer = TsDemuxer::new(None);
    demuxer.push(ts);
    let (frames, events) = demux_all(&mut demuxer);
    (frames, events, demuxer.state())
}

fn media(frames: &[Frame], track: Track) -> Vec<&Frame> {
    frames
        .iter()
        .filter(|f| f.track == track && f.is_sample())
        .collect()
}

/// A transport packet on `pid` carrying `payload` (at most 184 bytes), padded
/// with adaptation-field stuffing.
fn ts_packet(pid: u16, unit_start: bool, cc: u8, payload: &[u8]) -> Vec<u8> {
    assert!(payload.len() <= 184);
    let mut p = vec![
        SYNC_BYTE,
        (u8::from(unit_start) << 6) | (pid >> 8) as u8,
        pid as u8,
        cc & 0x0f,
    ];
    let stuffing = 184 - payload.len();
    if stuffing == 0 {
        p[3] |= 0x10;
    } else {
        p[3] |= 0x30;
        p.push((stuffing - 1) as u8);
        if stuffing > 1 {
            p.push(0);
            p.resize(4 + stuffing, 0xff);
        }
    }
    p.extend_from_slice(payload);
    assert_eq!(p.len(), PACKET_SIZE);
    p
}

/// A long-form section with CRC: table_id, id, version, then `body`.
fn section(table_id: u8, id: u16, version: u8, body: &[u8]) -> Vec<u8> {
    let len = 5 + body.len() + 4;
    let mut s = vec![table_id, 0xb0 | (len >> 8) as u8, len as u8];
    s.extend_from_slice(&id.to_be_bytes());
    s.extend_from_slice(&[0xc1 | (version << 1), 0, 0]);
    s.extend_from_slice(body);
    let crc = crc::crc32_mpeg2(&s);
    s.extend_from_slice(&crc.to_be_bytes());
    s
}

fn psi_packet(pid: u16, cc: u8, section: &[u8]) -> Vec<u8> {
    let mut payload = vec![0];
    payload.extend_from_slice(section);
    payload.resize(184, 0xff);
    ts_packet(pid, true, cc, &payload)
}

fn pat(programs: &[(u16, u16)]) -> Vec<u8> {
    let body: Vec<u8> = programs
        .iter()
        .flat_map(|&(n, pid)| [(n >> 8) as u8, n as u8, 0xe0 | (pid >> 8) as u8, pid as u8])
        .collect();
    psi_packet(0, 0, &section(0, 1, 0, &body))
}

fn pmt(pmt_pid: u16, program: u16, version: u8, streams: &[(u8, u16)]) -> Vec<u8> {
    let mut body = vec![0xe1, 0x00, 0xf0, 0x00];
    for &(stream_type, pid) in streams {
        body.extend_from_slice(&[stream_type, 0xe0 | (pid >> 8) as u8, pid as u8, 0xf0, 0]);
    }
    psi_packet(pmt_pid, version, &section(2, program, version, &body))
}

/// A bounded PES with a PTS, as one or more packets.
fn pes_packets(pid: u16, stream_id: u8, pts: u64, payload: &[u8], cc: &mut u8) -> Vec<u8> {
    let len = (payload.len() + 8) as u16;
    let mut pes = vec![
        0,
        0,
        1,
        stream_id,
        (len >> 8) as u8,
        len as u8,
        0x80,
        0x80,
        5,
    ];
    pes.extend_from_slice(&[
        0x21 | ((pts >> 29) & 0x0e) as u8,
        (pts >> 22) as u8,
        ((pts >> 14) & 0xfe) as u8 | 1,
        (pts >> 7) as u8,
        ((pts << 1) & 0xfe) as u8 | 1,
    ]);
    pes.extend_from_slice(payload);
    let mut out = Vec::new();
    for (i, chunk) in pes.chunks(184).enumerate() {
        out.extend(ts_packet(pid, i == 0, *cc, chunk));
        *cc = (*cc + 1) & 0x0f;
    }
    out
}

// ---- round trips -------------------------------------------------------------

#[test]
fn round_trip_h264_aac() {
    let tracks = tracks(true, true);
    let input = samples(0);
    let ts = mux(&tracks, &input);
    let (frames, events, state) = demux(&ts);
    assert_eq!(state, DemuxState::Ready);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, DemuxEvent::ProgramChanged(p) if p.streams.len() == 2 && p.number == 1 && p.pmt_pid == 0x1000)),
        "{events:?}"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, DemuxEvent::ContinuityError { .. }))
    );

    // Config frames come first on each track and learn like the originals.
    let first_video = frames.iter().find(|f| f.track == Track::Video).unwrap();
    assert!(first_video.config);
    let Some(TrackInfo::Video(info)) = track_info::learn(first_video) else {
        panic!("no video info");
    };
    assert_eq!(info.codec_string, "avc1.64001e");
    assert_eq!((info.width, info.height), (640, 360));
    let first_audio = frames.iter().find(|f| f.track == Track::Audio).unwrap();
    assert!(first_audio.config);
    assert_eq!(first_audio.payload[..], [0x11, 0x90]);
    let Some(TrackInfo::Audio(info)) = track_info::learn(first_audio) else {
        panic!("no audio info");
    };
    assert_eq!(
        (info.codec_string.as_ref(), info.sample_rate),
        ("mp4a.40.2", 48_000)
    );

    for (kind, track, codec) in [
        (TrackKind::Video, Track::Video, Codec::H264),
        (TrackKind::Audio, Track::Audio, Codec::Aac),
    ] {
        let want: Vec<&Sample> = input.iter().filter(|s| s.kind == kind).collect();
        let got = media(&frames, track);
        assert_eq!(got.len(), want.len(), "{kind:?}");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.codec, codec);
            assert_eq!((g.dts, g.pts, g.keyframe), (w.dts, w.pts, w.keyframe));
            assert_eq!(g.payload, w.data, "{kind:?} at {}", w.dts);
        }
    }
}

#[test]
fn round_trip_h265() {
    let tracks = Tracks {
        video: Some(h265_track()),
        audio: None,
    };
    let input: Vec<Sample> = (0..10i64)
        .map(|i| {
            let first: &[u8] = if i % 5 == 0 {
                &[0x26, 0x01]
            } else {
                &[0x02, 0x01]
            };
            let mut nal = first.to_vec();
            nal.extend((0..100).map(|b| b as u8 | 0x80));
            Sample {
                kind: TrackKind::Video,
                dts: 1000 + i * 3000,
                pts: 1000 + i * 3000,
                keyframe: i % 5 == 0,
                data: length_prefixed(&[&nal]),
            }
        })
        .collect();
    let (frames, _, _) = demux(&mux(&tracks, &input));
    assert!(frames[0].config && frames[0].codec == Codec::H265);
    let Some(TrackInfo::Video(info)) = track_info::learn(&frames[0]) else {
        panic!("no video info");
    };
    assert_eq!((info.width, info.height), (640, 360));
    assert!(
        info.codec_string.starts_with("hvc1."),
        "{}",
        info.codec_string
    );
    let got = media(&frames, Track::Video);
    assert_eq!(got.len(), 10);
    for (g, w) in got.iter().zip(&input) {
        assert_eq!(
            (g.dts, g.keyframe, &g.payload),
            (w.dts, w.keyframe, &w.data)
        );
    }
}

#[test]
fn any_chunking_and_leading_garbage_give_the_same_frames() {
    let tracks = tracks(true, true);
    let ts = mux(&tracks, &samples(0));
    let (want, _, _) = demux(&ts);
    let mut garbage: Vec<u8> = (0..1000u32).map(|i| (i * 31 % 251) as u8).collect();
    garbage.extend_from_slice(&[0x47; 5]);
    garbage.extend_from_slice(&ts);
    for chunk in [1, 7, 100, 187, 188, 189, 1316, 5000] {
        let mut demuxer = TsDemuxer::new(None);
        for piece in garbage.chunks(chunk) {
            demuxer.push(piece);
        }
        let (frames, _) = demux_all(&mut demuxer);
        assert_eq!(frames, want, "chunk {chunk}");
    }
}

// ---- programs -----------------------------------------------------------------

fn two_programs() -> Vec<u8> {
    let mut ts = pat(&[(0, 0x10), (5, 0x1000), (7, 0x1100)]);
    ts.extend(pmt(0x1000, 5, 0, &[(0x0f, 0x101)]));
    ts.extend(pmt(0x1100, 7, 0, &[(0x03, 0x201), (0x99, 0x202)]));
    let mut cc = (0, 0);
    for i in 0..3u64 {
        let mut adts = [0u8; 7];
        crate::aac::write_adts_header(aac_track(AAC_48K).config.aac().unwrap(), 10, &mut adts)
            .unwrap();
        let mut frame = adts.to_vec();
        frame.extend_from_slice(&[i as u8; 10]);
        ts.extend(pes_packets(0x101, 0xc0, 9000 + i * 1920, &frame, &mut cc.0));
        ts.extend(pes_packets(
            0x201,
            0xc0,
            9000 + i * 2160,
            &[0xff, 0xfb, i as u8],
            &mut cc.1,
        ));
    }
    ts
}

#[test]
fn picks_the_first_program_or_the_one_asked_for() {
    let ts = two_programs();
    for (wanted, codec, count) in [
        (None, Codec::Aac, 4),
        (Some(5), Codec::Aac, 4),
        (Some(7), Codec::Mp3, 3),
    ] {
        let mut demuxer = TsDemuxer::new(wanted);
        demuxer.push(&ts);
        let (frames, events) = demux_all(&mut demuxer);
        assert_eq!(frames.len(), count, "{wanted:?}");
        assert!(frames.iter().all(|f| f.codec == codec));
        let unknown = events.iter().any(|e| {
            *e == DemuxEvent::UnknownStreamType {
                pid: 0x202,
                stream_type: 0x99,
            }
        });
        assert_eq!(unknown, wanted == Some(7));
        if codec == Codec::Mp3 {
            assert_eq!(frames[2].payload[..], [0xff, 0xfb, 2]);
            assert_eq!(frames[2].dts, 9000 + 2 * 2160);
            assert!(track_info::learn(&frames[0]).is_some());
        }
    }
    let mut demuxer = TsDemuxer::new(Some(9));
    demuxer.push(&ts);
    let (frames, events) = demux_all(&mut demuxer);
    assert!(frames.is_empty());
    assert!(events.contains(&DemuxEvent::ProgramNotFound { program_number: 9 }));
    assert_eq!(demuxer.state(), DemuxState::NoProgram);
}

#[test]
fn no_pat_emits_nothing_and_says_so() {
    let tracks = tracks(true, true);
    let mut ts = Vec::new();
    for segment in 0..8 {
        ts.extend(mux(&tracks, &samples(segment * 180_000)));
    }
    let without_pat: Vec<u8> = ts
        .chunks(PACKET_SIZE)
        .filter(|p| !(p[1] & 0x1f == 0 && p[2] == 0))
        .flatten()
        .copied()
        .collect();
    assert!(without_pat.len() / PACKET_SIZE > NO_PAT_PACKETS as usize);
    let (frames, events, state) = demux(&without_pat);
    assert!(frames.is_empty());
    assert_eq!(state, DemuxState::NoPat);
    assert_eq!(events, [DemuxEvent::Synced, DemuxEvent::NoPat]);
    assert_eq!(demux(&[]).2, DemuxState::NoSync);
}

#[test]
fn pmt_version_change_resets_the_changed_streams() {
    let both = tracks(true, true);
    let audio_only = tracks(false, true);
    let mut muxer = TsMuxer::new(&both);
    let mut ts = Vec::new();
    muxer.write_segment(&both, &samples(0), &mut ts).unwrap();
    let later: Vec<Sample> = samples(180_000)
        .into_iter()
        .filter(|s| s.kind == TrackKind::Audio)
        .collect();
    muxer.write_segment(&audio_only, &later, &mut ts).unwrap();
    let (frames, events, _) = demux(&ts);
    let changes: Vec<&DemuxEvent> = events
        .iter()
        .filter(|e| matches!(e, DemuxEvent::ProgramChanged(_)))
        .collect();
    assert_eq!(changes.len(), 2, "{events:?}");
    assert!(
        matches!(changes[1], DemuxEvent::ProgramChanged(p) if p.version == 1 && p.streams.len() == 1)
    );
    assert!(events.contains(&DemuxEvent::StreamReset { pid: 0x100 }));
    // The audio stream went on untouched: no second config, every frame.
    assert_eq!(media(&frames, Track::Audio).len(), 94 * 2);
    assert_eq!(
        frames
            .iter()
            .filter(|f| f.config && f.track == Track::Audio)
            .count(),
        1
    );
}

// ---- timestamps ----------------------------------------------------------------

#[test]
fn unwraps_33_bit_timestamps() {
    let tracks = tracks(true, true);
    let start = (1 << 33) - 90_000; // wraps after one second
    let input = samples(start);
    let (frames, events, _) = demux(&mux(&tracks, &input));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, DemuxEvent::TimestampJump { .. }))
    );
    let video = media(&frames, Track::Video);
    assert_eq!(video.len(), 50);
    for (i, f) in video.iter().enumerate() {
        assert_eq!(f.dts, start + i as i64 * 3600);
    }
    assert!(video.last().unwrap().dts > 1 << 33);
    let audio = media(&frames, Track::Audio);
    assert!(audio.windows(2).all(|w| w[1].dts - w[0].dts == AUDIO_STEP));
}

#[test]
fn jumps_are_rebased_and_reported() {
    let tracks = tracks(true, false);
    let video_only = |start| -> Vec<Sample> {
        samples(start)
            .into_iter()
            .filter(|s| s.kind == TrackKind::Video)
            .collect()
    };
    let mut muxer = TsMuxer::new(&tracks);
    let mut ts = Vec::new();
    muxer
        .write_segment(&tracks, &video_only(0), &mut ts)
        .unwrap();
    // The encoder's clock jumps 10 h ahead.
    let later = video_only(10 * 3600 * 90_000);
    muxer.write_segment(&tracks, &later, &mut ts).unwrap();
    let (frames, events, _) = demux(&ts);
    let video = media(&frames, Track::Video);
    assert_eq!(video.len(), 100);
    assert!(
        video
            .windows(2)
            .all(|w| w[1].dts > w[0].dts && w[1].dts - w[0].dts <= 7200)
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, DemuxEvent::TimestampJump { pid: 0x100, .. }))
    );
}

// ---- SCTE-35 -------------------------------------------------------------------

#[test]
fn scte35_sections_become_data_frames() {
    let mut ts = pat(&[(1, 0x1000)]);
    ts.extend(pmt(0x1000, 1, 0, &[(0x0f, 0x101), (0x86, 0x102)]));
    let mut cc = 0;
    let mut adts = [0u8; 7];
    crate::aac::write_adts_header(aac_track(AAC_48K).config.aac().unwrap(), 4, &mut adts).unwrap();
    let mut frame = adts.to_vec();
    frame.extend_from_slice(&[1, 2, 3, 4]);
    ts.extend(pes_packets(0x101, 0xc0, 123_456, &frame, &mut cc));
    // A splice_null with the short-form flag clear is not needed: any 0xFC
    // section with a valid CRC passes through whole.
    let mut splice = vec![
        0xfc, 0x30, 0x12, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xf0, 0, 0, 0, 0, 0,
    ];
    let crc = crc::crc32_mpeg2(&splice);
    splice.extend_from_slice(&crc.to_be_bytes());
    ts.extend(psi_packet(0x102, 0, &splice));
    let mut bad = splice.clone();
    bad[12] ^= 1;
    ts.extend(psi_packet(0x102, 1, &bad));
    let (frames, events, _) = demux(&ts);
    let data: Vec<&Frame> = frames.iter().filter(|f| f.track == Track::Data).collect();
    assert_eq!(data.len(), 1);
    assert_eq!(data[0].codec, Codec::Scte35);
    assert_eq!(data[0].payload[..], splice[..]);
    assert_eq!(data[0].dts, 123_456);
    assert!(events.contains(&DemuxEvent::BadSection { pid: 0x102 }));
}

// ---- hostile input ---------------------------------------------------------------

fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *seed >> 33
}

#[test]
fn random_and_damaged_input_never_panics() {
    let mut seed = 7;
    // Pure noise, with and without sync bytes every 188.
    for round in 0..20 {
        let mut data: Vec<u8> = (0..20_000).map(|_| lcg(&mut seed) as u8).collect();
        if round % 2 == 0 {
            for p in data.chunks_mut(PACKET_SIZE) {
                p[0] = SYNC_BYTE;
                if round % 4 == 0 && p.len() > 3 {
                    p[1] &= 0xe0; // PID 0..=255: hits PAT and the streams
                }
            }
        }
        let mut demuxer = TsDemuxer::new(None);
        for piece in data.chunks(1 + round * 37) {
            demuxer.push(piece);
        }
        demux_all(&mut demuxer);
    }
    // A real stream, damaged: bytes flipped, cut, truncated packets.
    let ts = mux(&tracks(true, true), &samples(0));
    for round in 0..200 {
        let mut damaged = ts.clone();
        for _ in 0..(1 + round % 10) {
            let at = lcg(&mut seed) as usize % damaged.len();
            match round % 3 {
                0 => damaged[at] ^= 1 << (lcg(&mut seed) % 8),
                1 => {
                    let end = (at + lcg(&mut seed) as usize % 300).min(damaged.len());
                    damaged.drain(at..end);
                }
                _ => damaged.truncate(at.max(1)),
            }
        }
        let mut demuxer = TsDemuxer::new(None);
        demuxer.push(&damaged);
        let (frames, _) = demux_all(&mut demuxer);
        for f in frames {
            let _ = track_info::learn(&f);
        }
    }
}

#[test]
fn lost_packets_are_reported_and_the_stream_goes_on() {
    let ts = mux(&tracks(true, true), &samples(0));
    let mut packets: Vec<&[u8]> = ts.chunks(PACKET_SIZE).collect();
    // Drop one video packet in the middle (a continuation, not a unit start).
    let victim = (packets.len() / 2..)
        .find(|&i| packets[i][1] & 0x40 == 0 && packets[i][2] == 0x00 && packets[i][1] & 0x1f == 1)
        .unwrap();
    packets.remove(victim);
    let damaged: Vec<u8> = packets.concat();
    let (frames, events, _) = demux(&damaged);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, DemuxEvent::ContinuityError { pid: 0x100, .. })),
        "{events:?}"
    );
    assert_eq!(media(&frames, Track::Video).len(), 49);
    assert_eq!(media(&frames, Track::Audio).len(), 94);
}

#[test]
fn oversized_pes_is_dropped() {
    let mut ts = pat(&[(1, 0x1000)]);
    ts.extend(pmt(0x1000, 1, 0, &[(0x1b, 0x100)]));
    // An unbounded video PES that never ends.
    let mut first = vec![0, 0, 1, 0xe0, 0, 0, 0x80, 0x80, 5, 0x21, 0, 1, 0, 1];
    first.resize(184, 0);
    ts.extend(ts_packet(0x100, true, 0, &first));
    let filler = [0u8; 184];
    for i in 0..(MAX_PES / 184 + 10) {
        ts.extend(ts_packet(0x100, false, (i + 1) as u8, &filler));
    }
    let (frames, events, _) = demux(&ts);
    assert!(frames.is_empty());
    assert!(events.contains(&DemuxEvent::PesTooLarge { pid: 0x100 }));
}

#[test]
fn events_are_bounded() {
    // Every packet a continuity error.
    let mut ts = pat(&[(1, 0x1000)]);
    ts.extend(pmt(0x1000, 1, 0, &[(0x0f, 0x101)]));
    for i in 0..3000u32 {
        ts.extend(ts_packet(0x101, false, (i * 2) as u8, &[0; 184]));
    }
    let mut demuxer = TsDemuxer::new(None);
    demuxer.push(&ts);
    let (_, events) = demux_all(&mut demuxer);
    assert_eq!(events.len(), MAX_EVENTS);
    assert!(demuxer.dropped_events() > 0);
}

// ---- RTP -----------------------------------------------------------------------

#[test]
fn strips_rtp_headers() {
    let ts = pat(&[(1, 0x1000)]);
    assert_eq!(strip_rtp(&ts), &ts[..]);
    let mut rtp = vec![0x80, 33, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1];
    rtp.extend_from_slice(&ts);
    assert_eq!(strip_rtp(&rtp), &ts[..]);
    // Two CSRCs, a one-word extension, padding and a dynamic payload type.
    let mut rtp = vec![0xb2, 96 | 0x80, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1];
    rtp.extend_from_slice(&[0; 8]);
    rtp.extend_from_slice(&[0xbe, 0xde, 0, 1, 1, 2, 3, 4]);
    rtp.extend_from_slice(&ts);
    rtp.extend_from_slice(&[0, 0, 3]);
    assert_eq!(strip_rtp(&rtp), &ts[..]);
    // Not RTP, or RTP without TS behind it: unchanged.
    for other in [
        &[0x80u8, 33, 0][..],
        &[0x80, 14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x47],
        &[],
    ] {
        assert_eq!(strip_rtp(other), other);
    }
}
