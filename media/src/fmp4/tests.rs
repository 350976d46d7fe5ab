//! Init and media segments decoded back with `mp4-atom`, and a real H.264 + AAC stream
//! from ffmpeg written as fMP4 and checked with ffprobe/ffmpeg.

use bytes::Bytes;
use mp4_atom::{Codec, Decode, FourCC, Ftyp, Mdat, Moof, Moov, TrunEntry};

use super::*;
use crate::avc::AvcDecoderConfig;
use crate::sample::{Sample, TrackKind, VideoTrack};
use crate::test_flv::{TempDir, make_h264_aac_flv, read_flv, run_ffmpeg_tool};
use crate::test_vectors::{ASC, AVCC, HVCC, aac_track, h264_track, h265_track, hex};

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Decodes an init segment, checking nothing is left over.
fn parse_init(init: &[u8]) -> (Ftyp, Moov) {
    let mut buf = init;
    let ftyp = Ftyp::decode(&mut buf).unwrap();
    let moov = Moov::decode(&mut buf).unwrap();
    assert!(buf.is_empty(), "{} trailing bytes", buf.len());
    (ftyp, moov)
}

/// Decodes a media segment into its moof, the moof's size and the mdat payload.
fn parse_segment(segment: &[u8]) -> (Moof, usize, Vec<u8>) {
    let mut buf = segment;
    let moof = Moof::decode(&mut buf).unwrap();
    let moof_len = segment.len() - buf.len();
    let mdat = Mdat::decode(&mut buf).unwrap();
    assert!(buf.is_empty(), "{} trailing bytes", buf.len());
    (moof, moof_len, mdat.data)
}

#[test]
fn init_h264_aac() {
    let tracks = Tracks {
        video: Some(h264_track()),
        audio: Some(aac_track(ASC[0].0)),
    };
    let init = init_segment(&tracks).unwrap();
    let (ftyp, moov) = parse_init(&init);
    assert_eq!(ftyp.major_brand, FourCC::new(b"iso6"));
    assert!(ftyp.compatible_brands.contains(&FourCC::new(b"cmfc")));
    assert_eq!(moov.trak.len(), 2);
    let trex: Vec<u32> = moov.mvex.unwrap().trex.iter().map(|t| t.track_id).collect();
    assert_eq!(trex, [1, 2]);

    let video = &moov.trak[0];
    assert_eq!(video.tkhd.track_id, 1);
    assert_eq!(
        (video.tkhd.width.integer(), video.tkhd.height.integer()),
        (640, 360)
    );
    assert_eq!(video.mdia.mdhd.timescale, 90_000);
    assert_eq!(video.mdia.hdlr.handler, FourCC::new(b"vide"));
    assert!(video.mdia.minf.vmhd.is_some());
    let [Codec::Avc1(avc1)] = video.mdia.minf.stbl.stsd.codecs.as_slice() else {
        panic!("{:?}", video.mdia.minf.stbl.stsd)
    };
    assert_eq!((avc1.visual.width, avc1.visual.height), (640, 360));
    assert_eq!(avc1.avcc.length_size, 4);
    assert_eq!(avc1.avcc.avc_profile_indication, 0x64);
    // The record goes in verbatim, High-profile extension included.
    let record = hex(AVCC[0].0);
    let mut avcc_box = u32::try_from(8 + record.len())
        .unwrap()
        .to_be_bytes()
        .to_vec();
    avcc_box.extend_from_slice(b"avcC");
    avcc_box.extend_from_slice(&record);
    assert!(contains(&init, &avcc_box));

    let audio = &moov.trak[1];
    assert_eq!(audio.tkhd.track_id, 2);
    assert_eq!(audio.mdia.mdhd.timescale, 44_100);
    assert_eq!(audio.mdia.hdlr.handler, FourCC::new(b"soun"));
    assert!(audio.mdia.minf.smhd.is_some());
    let [Codec::Mp4a(mp4a)] = audio.mdia.minf.stbl.stsd.codecs.as_slice() else {
        panic!("{:?}", audio.mdia.minf.stbl.stsd)
    };
    assert_eq!(mp4a.audio.channel_count, 2);
    assert_eq!(mp4a.audio.sample_rate.integer(), 44_100);
    let config = &mp4a.esds.es_desc.dec_config;
    assert_eq!(
        (config.object_type_indication, config.stream_type),
        (0x40, 5)
    );
    assert_eq!(config.dec_specific.as_ref().unwrap().raw, hex(ASC[0].0));
    assert_eq!(codecs(&tracks), "avc1.64001e,mp4a.40.2");
}

#[test]
fn init_hevc_video_only() {
    let tracks = Tracks {
        video: Some(h265_track()),
        audio: None,
    };
    let (ftyp, moov) = parse_init(&init_segment(&tracks).unwrap());
    assert!(ftyp.compatible_brands.contains(&FourCC::new(b"cmfc")));
    assert_eq!(moov.trak.len(), 1);
    assert_eq!(moov.mvex.unwrap().trex.len(), 1);
    let [Codec::Hvc1(hvc1)] = moov.trak[0].mdia.minf.stbl.stsd.codecs.as_slice() else {
        panic!("{:?}", moov.trak[0].mdia.minf.stbl.stsd)
    };
    assert_eq!(hvc1.hvcc.length_size_minus_one, 3);
    assert_eq!(hvc1.hvcc.general_profile_idc, 1);
    let types: Vec<(u8, bool)> = hvc1
        .hvcc
        .arrays
        .iter()
        .map(|a| (a.nal_unit_type, a.completeness))
        .collect();
    assert_eq!(types, [(32, true), (33, true), (34, true)]);
    assert_eq!(codecs(&tracks), HVCC[0].1);
}

#[test]
fn init_audio_only() {
    // AAC LC 96 kHz stereo: too fast for the 16.16 rate field, written as 0.
    let tracks = Tracks {
        video: None,
        audio: Some(aac_track("10 10")),
    };
    let (_, moov) = parse_init(&init_segment(&tracks).unwrap());
    assert_eq!(moov.trak.len(), 1);
    let audio = &moov.trak[0];
    assert_eq!(audio.tkhd.track_id, AUDIO_TRACK_ID);
    assert_eq!(audio.mdia.mdhd.timescale, 96_000);
    let [Codec::Mp4a(mp4a)] = audio.mdia.minf.stbl.stsd.codecs.as_slice() else {
        panic!()
    };
    assert_eq!(mp4a.audio.sample_rate.integer(), 0);
    assert_eq!(codecs(&tracks), "mp4a.40.2");
}

#[test]
fn init_errors() {
    assert_eq!(init_segment(&Tracks::default()), Err(Fmp4Error::NoTracks));
    let mut video = h264_track();
    video.width = 70_000;
    let tracks = Tracks {
        video: Some(video),
        audio: None,
    };
    assert_eq!(init_segment(&tracks), Err(Fmp4Error::Config("video width")));
    // A hand-made config that disagrees with its record.
    let mut video = h264_track();
    if let VideoConfig::H264 { config, .. } = &mut video.config {
        config.nal_length_size = 2;
    }
    let tracks = Tracks {
        video: Some(video),
        audio: None,
    };
    assert!(matches!(init_segment(&tracks), Err(Fmp4Error::Config(_))));
    // Trailing garbage after the PPS: rebuilt from the parsed fields.
    let mut record = hex(AVCC[2].0);
    record.extend_from_slice(&[0xff]);
    let record = Bytes::from(record);
    let tracks = Tracks {
        video: Some(VideoTrack {
            config: VideoConfig::H264 {
                config: AvcDecoderConfig::parse(&record).unwrap(),
                record,
            },
            width: 318,
            height: 238,
        }),
        audio: None,
    };
    let (_, moov) = parse_init(&init_segment(&tracks).unwrap());
    let [Codec::Avc1(avc1)] = moov.trak[0].mdia.minf.stbl.stsd.codecs.as_slice() else {
        panic!()
    };
    assert_eq!(avc1.avcc.ext, None);
    assert_eq!(avc1.avcc.sequence_parameter_sets.len(), 1);
}

fn video(dts: i64, pts: i64, keyframe: bool, len: usize) -> Sample {
    Sample {
        kind: TrackKind::Video,
        dts,
        pts,
        keyframe,
        data: Bytes::from(vec![0x11; len]),
    }
}

fn audio(ms: i64, len: usize) -> Sample {
    Sample {
        kind: TrackKind::Audio,
        dts: ms * 90,
        pts: ms * 90,
        keyframe: false,
        data: Bytes::from(vec![0x22; len]),
    }
}

fn av_tracks() -> Tracks {
    Tracks {
        video: Some(h264_track()),
        audio: Some(aac_track(ASC[0].0)),
    }
}

fn durations(entries: &[TrunEntry]) -> Vec<u32> {
    entries.iter().map(|e| e.duration.unwrap()).collect()
}

#[test]
fn fragments_audio_and_video() {
    let tracks = av_tracks();
    // 25 fps with one B-frame: decode order I P B, presentation I B P.
    let samples = vec![
        video(90_000, 93_600, true, 100),
        audio(1000, 10),
        video(93_600, 100_800, false, 50),
        audio(1023, 11),
        video(97_200, 97_200, false, 20),
        audio(1046, 12),
    ];
    let mut fragmenter = Fragmenter::new();
    let mut out = vec![0xaa; 3]; // appended to, not replaced
    fragmenter
        .fragment(&tracks, &samples, Some(100_800), Some(1070 * 90), &mut out)
        .unwrap();
    assert_eq!(&out[..3], [0xaa; 3]);
    let (moof, moof_len, mdat) = parse_segment(&out[3..]);
    assert_eq!(moof.mfhd.sequence_number, 1);
    assert_eq!(moof.traf.len(), 2);

    let v = &moof.traf[0];
    assert_eq!(v.tfhd.track_id, VIDEO_TRACK_ID);
    assert!(v.tfhd.default_base_is_moof);
    assert_eq!(v.tfdt.as_ref().unwrap().base_media_decode_time, 90_000);
    let run = &v.trun[0];
    let entries: Vec<TrunEntry> = run.samples.iter().collect();
    assert_eq!(entries.len(), 3);
    assert_eq!(durations(&entries), [3600, 3600, 3600]);
    let sizes: Vec<u32> = entries.iter().map(|e| e.size.unwrap()).collect();
    assert_eq!(sizes, [100, 50, 20]);
    let cts: Vec<i64> = entries.iter().map(|e| e.cts.unwrap()).collect();
    assert_eq!(cts, [3600, 7200, 0]);
    let flags: Vec<u32> = entries.iter().map(|e| e.flags.unwrap()).collect();
    assert_eq!(flags, [0x0200_0000, 0x0101_0000, 0x0101_0000]);
    // Offsets from the moof start to the samples in the mdat.
    let video_offset = usize::try_from(run.data_offset.unwrap()).unwrap();
    assert_eq!(video_offset, moof_len + 8);
    assert_eq!(&out[3 + video_offset..][..170], &[0x11; 170]);

    let a = &moof.traf[1];
    assert_eq!(a.tfhd.track_id, AUDIO_TRACK_ID);
    assert_eq!(a.tfhd.default_sample_flags, Some(0x0200_0000));
    // 1 s at 44.1 kHz.
    assert_eq!(a.tfdt.as_ref().unwrap().base_media_decode_time, 44_100);
    let entries: Vec<TrunEntry> = a.trun[0].samples.iter().collect();
    assert_eq!(entries.len(), 3);
    // One AAC frame each, whatever the ms timestamps say (23 ms = 1014 ticks).
    assert_eq!(durations(&entries), [1024, 1024, 1024]);
    assert!(entries.iter().all(|e| e.cts.is_none() && e.flags.is_none()));
    let audio_offset = usize::try_from(a.trun[0].data_offset.unwrap()).unwrap();
    assert_eq!(audio_offset, video_offset + 170);
    assert_eq!(&out[3 + audio_offset..], &[0x22; 33]);
    assert_eq!(mdat.len(), 203);

    // The next segments count on.
    for seq in 2..=3 {
        let mut out = Vec::new();
        let samples = [video(100_800, 100_800, true, 5)];
        fragmenter
            .fragment(&tracks, &samples, None, None, &mut out)
            .unwrap();
        let (moof, _, _) = parse_segment(&out);
        assert_eq!(moof.mfhd.sequence_number, seq);
        // Video only here: no audio traf.
        assert_eq!(moof.traf.len(), 1);
    }
    assert_eq!(fragmenter.sequence_number(), 4);
}

#[test]
fn last_sample_duration() {
    let tracks = av_tracks();
    let mut fragmenter = Fragmenter::new();
    let cases: &[(Vec<Sample>, Option<i64>, Vec<u32>)] = &[
        // Unknown next dts: the previous duration again.
        (
            vec![video(0, 0, true, 1), video(3000, 3000, false, 1)],
            None,
            vec![3000, 3000],
        ),
        (
            vec![video(0, 0, true, 1), video(3000, 3000, false, 1)],
            Some(7000),
            vec![3000, 4000],
        ),
        // A lone sample without next dts: 1/30 s.
        (vec![video(0, 0, true, 1)], None, vec![3000]),
        (vec![audio(0, 1)], None, vec![1024]),
        (vec![audio(0, 1), audio(20, 1)], None, vec![1024, 1024]),
    ];
    for (samples, next, want) in cases {
        let mut out = Vec::new();
        fragmenter
            .fragment(&tracks, samples, *next, *next, &mut out)
            .unwrap();
        let (moof, _, _) = parse_segment(&out);
        let entries: Vec<TrunEntry> = moof.traf[0].trun[0].samples.iter().collect();
        assert_eq!(&durations(&entries), want, "{samples:?}");
    }
}

/// `tfdt` and sample durations of the only `traf` of a fragment.
fn timing(fragment: &[u8]) -> (u64, Vec<u32>) {
    let (moof, _, _) = parse_segment(fragment);
    let traf = &moof.traf[0];
    let entries: Vec<TrunEntry> = traf.trun[0].samples.iter().collect();
    (
        traf.tfdt.as_ref().unwrap().base_media_decode_time,
        durations(&entries),
    )
}

/// Audio with RTMP's millisecond timestamps (23 or 24 ms per 1024-sample frame at
/// 44.1 kHz): each fragment starts exactly where the previous one ended, by sample
/// count; a jump of over 0.1 s in the timestamps starts again from them.
#[test]
fn audio_fragments_follow_by_sample_count() {
    let tracks = av_tracks();
    let mut fragmenter = Fragmenter::new();
    // Frame n at round(n * 1024 / 44.1) ms: 0, 23, 46, 70, 93, ...
    let frame_ms = |n: i64| (n * 1024 * 1000 + 22_050) / 44_100;
    let mut starts = Vec::new();
    for first in [0, 43, 86] {
        let samples: Vec<Sample> = (first..first + 43).map(|n| audio(frame_ms(n), 1)).collect();
        let mut out = Vec::new();
        let span = fragmenter
            .fragment_track(&tracks, TrackKind::Audio, &samples, None, &mut out)
            .unwrap()
            .unwrap();
        let (tfdt, durations) = timing(&out);
        assert_eq!(durations, vec![1024; 43]);
        assert_eq!((span.start, span.duration), (tfdt, 43 * 1024));
        starts.push(tfdt);
    }
    assert_eq!(starts, [0, 43 * 1024, 86 * 1024]);
    // Half a second missing from the encoder's output: the timestamps win.
    let samples = vec![audio(frame_ms(129) + 500, 1)];
    let mut out = Vec::new();
    fragmenter
        .fragment_track(&tracks, TrackKind::Audio, &samples, None, &mut out)
        .unwrap();
    assert_eq!(
        timing(&out).0,
        ((frame_ms(129) + 500) * 441 + 5) as u64 / 10
    );
}

#[test]
fn fragment_errors() {
    let mut fragmenter = Fragmenter::new();
    let video_only = Tracks {
        video: Some(h264_track()),
        audio: None,
    };
    let cases: &[(&Tracks, Vec<Sample>, Option<i64>, Fmp4Error)] = &[
        (&video_only, vec![], None, Fmp4Error::NoSamples),
        (
            &video_only,
            vec![audio(0, 1)],
            None,
            Fmp4Error::MissingTrack(TrackKind::Audio),
        ),
        (
            &video_only,
            vec![video(-3000, 0, true, 1)],
            None,
            Fmp4Error::Timestamp("negative decode time"),
        ),
        (
            &video_only,
            vec![video(3000, 3000, true, 1), video(0, 0, false, 1)],
            None,
            Fmp4Error::Timestamp("decreasing decode time"),
        ),
        (
            &video_only,
            vec![video(3000, 3000, true, 1)],
            Some(0),
            Fmp4Error::Timestamp("decreasing decode time"),
        ),
        (
            &video_only,
            vec![video(0, 1 << 40, true, 1)],
            None,
            Fmp4Error::Timestamp("composition offset out of range"),
        ),
        (
            &video_only,
            vec![video(0, 0, true, 1)],
            Some(1 << 40),
            Fmp4Error::Timestamp("sample duration out of range"),
        ),
    ];
    for (tracks, samples, next, err) in cases {
        let mut out = vec![1, 2, 3];
        let got = fragmenter.fragment(tracks, samples, *next, *next, &mut out);
        assert_eq!(got.as_ref(), Err(err), "{samples:?}");
        assert_eq!(out, [1, 2, 3]);
    }
    assert_eq!(fragmenter.sequence_number(), 1);
}

/// Seconds from the first sample's dts to the end of the last one, per track, as the
/// segment's truns say; the longer track counts.
fn segment_duration(segment: &[u8], tracks: &Tracks) -> f64 {
    let (moof, _, _) = parse_segment(segment);
    moof.traf
        .iter()
        .map(|traf| {
            let timescale = match traf.tfhd.track_id {
                VIDEO_TRACK_ID => 90_000,
                _ => tracks.audio.as_ref().unwrap().config.sampling_frequency(),
            };
            let ticks: u32 = traf.trun[0]
                .samples
                .iter()
                .map(|e| e.duration.unwrap())
                .sum();
            f64::from(ticks) / f64::from(timescale)
        })
        .fold(0.0, f64::max)
}

/// Writes init + two fragments split at the keyframe nearest 2 s (or at 2 s without
/// video) into one file, checks what ffprobe sees and that ffmpeg decodes it without
/// a word on stderr.
fn check_with_ffmpeg(dir: &std::path::Path, name: &str, tracks: &Tracks, samples: &[Sample]) {
    let split = samples
        .iter()
        .filter(|s| s.keyframe && s.dts >= 2 * 90_000)
        .map(|s| s.dts)
        .min()
        .unwrap_or(2 * 90_000);
    let (first, second): (Vec<Sample>, Vec<Sample>) =
        samples.iter().cloned().partition(|s| s.dts < split);
    let next = |kind| second.iter().find(|s| s.kind == kind).map(|s| s.dts);

    let init = init_segment(tracks).unwrap();
    let mut fragmenter = Fragmenter::new();
    let (mut frag1, mut frag2) = (Vec::new(), Vec::new());
    let (next_video, next_audio) = (next(TrackKind::Video), next(TrackKind::Audio));
    fragmenter
        .fragment(tracks, &first, next_video, next_audio, &mut frag1)
        .unwrap();
    fragmenter
        .fragment(tracks, &second, None, None, &mut frag2)
        .unwrap();
    let expected = segment_duration(&frag1, tracks) + segment_duration(&frag2, tracks);

    let all = dir.join(format!("{name}.mp4"));
    std::fs::write(&all, [init, frag1, frag2].concat()).unwrap();
    let all = all.to_str().unwrap();

    let args = [
        "-v",
        "error",
        "-show_streams",
        "-show_format",
        "-of",
        "flat",
        all,
    ];
    let probe = run_ffmpeg_tool("ffprobe", &args);
    let out = String::from_utf8_lossy(&probe.stdout);
    let err = String::from_utf8_lossy(&probe.stderr);
    assert!(probe.status.success() && err.is_empty(), "{name}: {err}");
    let mut stream = 0;
    if tracks.video.is_some() {
        for line in [
            "codec_name=\"h264\"",
            "codec_type=\"video\"",
            "width=320",
            "height=240",
        ] {
            let line = format!("streams.stream.{stream}.{line}");
            assert!(out.lines().any(|l| l == line), "{name}: {line} in\n{out}");
        }
        stream += 1;
    }
    if tracks.audio.is_some() {
        let codec = format!("streams.stream.{stream}.codec_name=\"aac\"");
        assert!(out.lines().any(|l| l == codec), "{name}: {codec} in\n{out}");
        let rate = format!("streams.stream.{stream}.sample_rate=");
        assert!(
            out.lines()
                .any(|l| l == format!("{rate}\"44100\"") || l == format!("{rate}\"48000\"")),
            "{name}: {rate} in\n{out}"
        );
        stream += 1;
    }
    assert!(
        out.lines()
            .any(|l| l == format!("format.nb_streams={stream}")),
        "{name}: {out}"
    );
    let duration: f64 = out
        .lines()
        .find_map(|l| l.strip_prefix("format.duration=\""))
        .and_then(|d| d.trim_end_matches('"').parse().ok())
        .unwrap_or_else(|| panic!("{name}: no duration in\n{out}"));
    assert!(
        (duration - expected).abs() <= 0.2,
        "{name}: ffprobe says {duration} s, fragments {expected} s"
    );

    let decode = run_ffmpeg_tool("ffmpeg", &["-v", "error", "-i", all, "-f", "null", "-"]);
    let err = String::from_utf8_lossy(&decode.stderr);
    assert!(decode.status.success() && err.is_empty(), "{name}: {err}");
}

#[test]
fn ffmpeg_reads_h264_aac_fragments() {
    let dir = TempDir::new("fmp4");
    let flv = make_h264_aac_flv(dir.path());
    let (tracks, samples) = read_flv(&flv);
    assert!(tracks.video.is_some() && tracks.audio.is_some());
    assert!(samples.iter().any(|s| s.pts != s.dts), "expected B-frames");
    check_with_ffmpeg(dir.path(), "av", &tracks, &samples);

    // The same stream without audio, and without video.
    for (name, kind) in [("video", TrackKind::Video), ("audio", TrackKind::Audio)] {
        let only = Tracks {
            video: tracks.video.clone().filter(|_| kind == TrackKind::Video),
            audio: tracks.audio.clone().filter(|_| kind == TrackKind::Audio),
        };
        let samples: Vec<Sample> = samples.iter().filter(|s| s.kind == kind).cloned().collect();
        check_with_ffmpeg(dir.path(), name, &only, &samples);
    }
}

#[test]
fn segment_type_box_names_the_cmaf_segment_brands() {
    let mut out = Vec::new();
    super::segment_type(&mut out);
    let mut buf = out.as_slice();
    let styp = mp4_atom::Styp::decode(&mut buf).unwrap();
    assert!(buf.is_empty());
    assert_eq!(styp.major_brand, FourCC::new(b"msdh"));
    for brand in [b"msdh", b"msix", b"cmfs"] {
        assert!(styp.compatible_brands.contains(&FourCC::new(brand)));
    }
}

/// A segment as two one-track fragments (video, then audio): each parses on its own,
/// with one `traf` of its track and the timeline span a DASH manifest lists.
#[test]
fn per_track_fragments_and_init_segments() {
    let tracks = Tracks {
        video: Some(h264_track()),
        audio: Some(aac_track(ASC[0].0)),
    };
    let samples: Vec<Sample> = (0..4i64)
        .flat_map(|i| {
            [
                Sample {
                    kind: TrackKind::Video,
                    dts: 90_000 + i * 3_600,
                    pts: 90_000 + i * 3_600,
                    keyframe: i == 0,
                    data: Bytes::from_static(&[0, 0, 0, 1, 0x65]),
                },
                Sample {
                    kind: TrackKind::Audio,
                    dts: 90_000 + i * 1_920,
                    pts: 90_000 + i * 1_920,
                    keyframe: false,
                    data: Bytes::from_static(&[0x21, 0x10]),
                },
            ]
        })
        .collect();
    let mut fragmenter = Fragmenter::new();
    let mut out = Vec::new();
    let video = fragmenter
        .fragment_track(
            &tracks,
            TrackKind::Video,
            &samples,
            Some(90_000 + 4 * 3_600),
            &mut out,
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        (video.start, video.duration, video.timescale),
        (90_000, 14_400, 90_000)
    );
    let split = out.len();
    let audio = fragmenter
        .fragment_track(&tracks, TrackKind::Audio, &samples, None, &mut out)
        .unwrap()
        .unwrap();
    let rate = u64::from(audio.timescale);
    assert_eq!(audio.start, rate);
    // 1024 ticks per AAC frame.
    assert_eq!(audio.duration, 4 * 1024, "{audio:?}");
    for (part, track_id) in [
        (&out[..split], VIDEO_TRACK_ID),
        (&out[split..], AUDIO_TRACK_ID),
    ] {
        let (moof, _, _) = parse_segment(part);
        assert_eq!(moof.traf.len(), 1);
        assert_eq!(moof.traf[0].tfhd.track_id, track_id);
    }
    let (_, moov) = parse_init(
        &track_init_segment(&tracks, TrackKind::Audio)
            .unwrap()
            .unwrap(),
    );
    assert_eq!(moov.trak.len(), 1);
    assert_eq!(moov.trak[0].tkhd.track_id, AUDIO_TRACK_ID);
    let lone = Tracks {
        video: None,
        ..tracks
    };
    assert!(track_init_segment(&lone, TrackKind::Video).is_none());
}
