//! The export socket end to end on a real Unix socket, with a fake archive whose
//! samples lie in real files: answers, whole bodies, byte ranges, errors, the cap on
//! concurrent exports and a source file that vanished.

use super::*;
use bytes::Bytes;
use std::sync::Mutex;
use strom_ipc::dvr_export::{ExportAnswer, ExportRequest};
use strom_media::avc::AvcDecoderConfig;
use strom_media::mp4::Read;
use strom_media::sample::{TrackKind, VideoConfig, VideoTrack};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// An avcC of ffmpeg/libx264 (640x360 High).
const AVCC: &str = "0164001effe1001a6764001eacd940a02ff97011000003000100000300320f162d9601000668ebe3cb22c0fdf8f800";

fn video_tracks() -> Tracks {
    let record = Bytes::from(
        (0..AVCC.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&AVCC[i..i + 2], 16).unwrap())
            .collect::<Vec<u8>>(),
    );
    Tracks {
        video: Some(VideoTrack {
            config: VideoConfig::H264 {
                config: AvcDecoderConfig::parse(&record).unwrap(),
                record,
            },
            width: 640,
            height: 360,
        }),
        audio: None,
    }
}

/// What the archive was asked: app, stream, start, end.
type Asked = (String, String, Option<i64>, Option<i64>);

/// Answers every request with one selection (or error) and remembers the requests.
struct FakeArchive {
    answer: Result<Selection, SelectError>,
    asked: Mutex<Vec<Asked>>,
}

impl ExportSource for FakeArchive {
    fn select(
        &self,
        app: &str,
        stream: &str,
        start: Option<i64>,
        end: Option<i64>,
    ) -> Result<Selection, SelectError> {
        self.asked
            .lock()
            .unwrap()
            .push((app.into(), stream.into(), start, end));
        self.answer.clone()
    }
}

struct Server {
    dir: tempfile::TempDir,
    socket: PathBuf,
    archive: Arc<FakeArchive>,
    shutdown: CancellationToken,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// `samples` frames of `sample_len` bytes each in one source file (byte `i` of the
/// file is `i % 251`, so any misplaced range shows).
fn recording(dir: &Path, samples: u32, sample_len: u32) -> Selection {
    let path = dir.join("segment-0.bin");
    let len = (u64::from(samples) * u64::from(sample_len)) as usize;
    std::fs::write(
        &path,
        (0..len).map(|i| (i % 251) as u8).collect::<Vec<u8>>(),
    )
    .unwrap();
    Selection {
        tracks: video_tracks(),
        samples: (0..samples)
            .map(|i| ExportSample {
                kind: TrackKind::Video,
                dts: i64::from(i) * 3600,
                pts: i64::from(i) * 3600,
                keyframe: i % 25 == 0,
                size: sample_len,
                file: 0,
                offset: u64::from(i) * u64::from(sample_len),
            })
            .collect(),
        files: vec![path],
        play_from: None,
    }
}

fn start_server(answer: impl FnOnce(&Path) -> Result<Selection, SelectError>) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let archive = Arc::new(FakeArchive {
        answer: answer(dir.path()),
        asked: Mutex::new(Vec::new()),
    });
    let shutdown = CancellationToken::new();
    start(dir.path(), archive.clone(), shutdown.clone()).unwrap();
    Server {
        socket: strom_ipc::contract::dvr_export_path(dir.path()),
        dir,
        archive,
        shutdown,
    }
}

/// The file the plan describes, read back independently of the server.
fn expected_file(selection: &Selection) -> Vec<u8> {
    let plan =
        strom_media::mp4::plan(&selection.tracks, &selection.samples, selection.play_from).unwrap();
    let mut out = Vec::new();
    for read in plan.reads(0, plan.total_len - 1) {
        match read {
            Read::Header(bytes) => out.extend_from_slice(&bytes),
            Read::File { file, offset, len } => {
                let data = std::fs::read(&selection.files[file as usize]).unwrap();
                out.extend_from_slice(&data[offset as usize..(offset + len) as usize]);
            }
        }
    }
    out
}

async fn connect(server: &Server, line: &[u8]) -> BufReader<UnixStream> {
    let mut socket = UnixStream::connect(&server.socket).await.unwrap();
    socket.write_all(line).await.unwrap();
    BufReader::new(socket)
}

async fn read_answer(socket: &mut BufReader<UnixStream>) -> ExportAnswer {
    let mut line = String::new();
    socket.read_line(&mut line).await.unwrap();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("answer {line:?}: {e}"))
}

async fn export(server: &Server, request: ExportRequest) -> (ExportAnswer, Vec<u8>) {
    let mut line = serde_json::to_vec(&request).unwrap();
    line.push(b'\n');
    let mut socket = connect(server, &line).await;
    let answer = read_answer(&mut socket).await;
    let mut body = Vec::new();
    socket.read_to_end(&mut body).await.unwrap();
    (answer, body)
}

fn request(range: Option<&str>) -> ExportRequest {
    ExportRequest {
        app: "live".into(),
        stream: "cam".into(),
        start: Some(1_700_000_000),
        end: Some(1_700_000_010),
        range: range.map(str::to_owned),
    }
}

#[tokio::test]
async fn whole_export_and_byte_ranges() {
    let server = start_server(|dir| Ok(recording(dir, 250, 1000)));
    let expected = expected_file(server.archive.answer.as_ref().unwrap());
    let total = expected.len() as u64;

    let (answer, body) = export(&server, request(None)).await;
    assert_eq!(
        (answer.status, answer.length, answer.total),
        (200, total, total)
    );
    assert!(body == expected, "whole body differs");
    assert_eq!(
        server.archive.asked.lock().unwrap()[0],
        (
            "live".into(),
            "cam".into(),
            Some(1_700_000_000),
            Some(1_700_000_010)
        )
    );

    let header = expected.len() - 250 * 1000;
    for (range, first, last) in [
        ("bytes=0-99".to_owned(), 0, 99),
        (
            format!("bytes={}-{}", header - 10, header + 2500),
            header - 10,
            header + 2500,
        ),
        (
            "bytes=-700".to_owned(),
            expected.len() - 700,
            expected.len() - 1,
        ),
        (
            format!("bytes={}-", expected.len() - 1),
            expected.len() - 1,
            expected.len() - 1,
        ),
    ] {
        let (answer, body) = export(&server, request(Some(&range))).await;
        assert_eq!(answer.status, 206, "{range}");
        assert_eq!(
            (answer.first, answer.last, answer.total),
            (Some(first as u64), Some(last as u64), total),
            "{range}"
        );
        assert_eq!(answer.length, body.len() as u64, "{range}");
        assert!(body == expected[first..=last], "{range}: body differs");
    }

    let (answer, body) = export(&server, request(Some(&format!("bytes={total}-")))).await;
    assert_eq!(
        (answer.status, answer.total, answer.length),
        (416, total, 0)
    );
    assert!(body.is_empty());
}

#[tokio::test]
async fn clear_errors_without_a_body() {
    let server = start_server(|_| Err(SelectError::NotFound));
    let (answer, body) = export(&server, request(None)).await;
    assert_eq!(answer.status, 404);
    assert!(answer.error.unwrap().contains("live/cam"));
    assert!(body.is_empty());

    let mut inverted = request(None);
    inverted.end = Some(1_600_000_000);
    let (answer, _) = export(&server, inverted).await;
    assert_eq!(answer.status, 400);
    assert!(answer.error.unwrap().contains("inverted"));
    let mut empty = request(None);
    empty.end = empty.start;
    let (answer, _) = export(&server, empty).await;
    assert_eq!(answer.status, 400);
    assert!(answer.error.unwrap().contains("empty range"));
    let mut bad_name = request(None);
    bad_name.app = "..".into();
    let (answer, _) = export(&server, bad_name).await;
    assert_eq!(answer.status, 400);
    // None of those reached the archive but the first.
    assert_eq!(server.archive.asked.lock().unwrap().len(), 1);

    for line in [&b"not json\n"[..], &[b'{'; 9000][..]] {
        let mut socket = connect(&server, line).await;
        let answer = read_answer(&mut socket).await;
        assert_eq!(answer.status, 400, "{:?}", answer.error);
    }

    let server = start_server(|_| Err(SelectError::Empty));
    let (answer, _) = export(&server, request(None)).await;
    assert_eq!(answer.status, 400);
    assert!(answer.error.unwrap().contains("nothing of live/cam"));
}

#[tokio::test]
async fn concurrent_exports_are_capped() {
    // 16 MB bodies: a reader that stops reading keeps its export (and slot) busy.
    let server = start_server(|dir| Ok(recording(dir, 16, 1 << 20)));
    let mut stalled = Vec::new();
    for _ in 0..MAX_CONCURRENT_EXPORTS {
        let mut line = serde_json::to_vec(&request(None)).unwrap();
        line.push(b'\n');
        let mut socket = connect(&server, &line).await;
        assert_eq!(read_answer(&mut socket).await.status, 200);
        stalled.push(socket);
    }
    let (answer, _) = export(&server, request(None)).await;
    assert_eq!(answer.status, 503, "{:?}", answer.error);

    // A reader that goes away frees its slot.
    drop(stalled.pop());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (answer, body) = export(&server, request(Some("bytes=0-9"))).await;
        if answer.status == 206 {
            assert_eq!(body.len(), 10);
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "slot never freed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_vanished_source_file_ends_the_body_early() {
    let server = start_server(|dir| Ok(recording(dir, 10, 4000)));
    std::fs::remove_file(server.dir.path().join("segment-0.bin")).unwrap();
    let (answer, body) = export(&server, request(None)).await;
    assert_eq!(answer.status, 200);
    assert!(
        (body.len() as u64) < answer.length,
        "{} of {}",
        body.len(),
        answer.length
    );
}

#[tokio::test]
async fn no_recordings_answers_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let shutdown = CancellationToken::new();
    start(dir.path(), Arc::new(NoRecordings), shutdown.clone()).unwrap();
    let mut socket = UnixStream::connect(strom_ipc::contract::dvr_export_path(dir.path()))
        .await
        .unwrap();
    socket
        .write_all(b"{\"app\":\"live\",\"stream\":\"cam\"}\n")
        .await
        .unwrap();
    let mut answer = String::new();
    socket.read_to_string(&mut answer).await.unwrap();
    let answer: ExportAnswer = serde_json::from_str(answer.trim()).unwrap();
    assert_eq!(answer.status, 404);
    shutdown.cancel();
}
