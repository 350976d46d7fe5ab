//! `export` against a stand-in for the dvr worker's export socket: answers become HTTP
//! statuses and headers, bodies stream through unchanged, a short body is an error.

use super::*;
use http_body_util::BodyExt;
use strom_ipc::contract::dvr_export_path;
use tokio::net::UnixListener;

/// Serves one connection: checks the request line, then writes `answer` and `body`.
fn fake_worker(
    run_dir: &Path,
    answer: ExportAnswer,
    body: Vec<u8>,
) -> tokio::task::JoinHandle<ExportRequest> {
    let path = dvr_export_path(run_dir);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let listener = UnixListener::bind(&path).unwrap();
    tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        let mut socket = BufReader::new(socket);
        let mut line = String::new();
        socket.read_line(&mut line).await.unwrap();
        let request: ExportRequest = serde_json::from_str(&line).unwrap();
        let mut out = serde_json::to_vec(&answer).unwrap();
        out.push(b'\n');
        out.extend_from_slice(&body);
        socket.get_mut().write_all(&out).await.unwrap();
        request
    })
}

fn request(range: Option<&str>) -> ExportRequest {
    ExportRequest {
        app: "live".into(),
        stream: "cam".into(),
        start: Some(100),
        end: None,
        range: range.map(str::to_owned),
    }
}

fn header(response: &Response, name: header::HeaderName) -> &str {
    response.headers().get(name).unwrap().to_str().unwrap()
}

async fn body(response: Response) -> Result<Vec<u8>, String> {
    response
        .into_body()
        .collect()
        .await
        .map(|collected| collected.to_bytes().to_vec())
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn whole_file_streams_with_download_headers() {
    let dir = tempfile::tempdir().unwrap();
    let file: Vec<u8> = (0..600_000u32).map(|i| i as u8).collect();
    let answer = ExportAnswer {
        status: 200,
        length: file.len() as u64,
        total: file.len() as u64,
        first: None,
        last: None,
        error: None,
    };
    let worker = fake_worker(dir.path(), answer, file.clone());
    let response = export(dir.path(), request(None)).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, header::CONTENT_TYPE), "video/mp4");
    assert_eq!(header(&response, header::CONTENT_LENGTH), "600000");
    assert_eq!(header(&response, header::ACCEPT_RANGES), "bytes");
    assert_eq!(
        header(&response, header::CONTENT_DISPOSITION),
        "attachment; filename=\"live_cam_100-last.mp4\""
    );
    assert!(body(response).await.unwrap() == file);
    assert_eq!(worker.await.unwrap(), request(None));
}

#[tokio::test]
async fn range_answers_carry_content_range() {
    let dir = tempfile::tempdir().unwrap();
    let answer = ExportAnswer {
        status: 206,
        length: 10,
        total: 5000,
        first: Some(10),
        last: Some(19),
        error: None,
    };
    let worker = fake_worker(dir.path(), answer, b"0123456789".to_vec());
    let response = export(dir.path(), request(Some("bytes=10-19")))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(header(&response, header::CONTENT_RANGE), "bytes 10-19/5000");
    assert_eq!(header(&response, header::CONTENT_LENGTH), "10");
    assert_eq!(body(response).await.unwrap(), b"0123456789");
    assert_eq!(worker.await.unwrap().range.as_deref(), Some("bytes=10-19"));

    let dir = tempfile::tempdir().unwrap();
    let answer = ExportAnswer {
        total: 5000,
        ..ExportAnswer::failure(416, "outside")
    };
    let _worker = fake_worker(dir.path(), answer, Vec::new());
    let response = export(dir.path(), request(Some("bytes=9000-")))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(header(&response, header::CONTENT_RANGE), "bytes */5000");
}

#[tokio::test]
async fn failures_map_to_api_errors() {
    for (status, code) in [
        (400, StatusCode::BAD_REQUEST),
        (404, StatusCode::NOT_FOUND),
        (503, StatusCode::SERVICE_UNAVAILABLE),
        (500, StatusCode::INTERNAL_SERVER_ERROR),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let _worker = fake_worker(dir.path(), ExportAnswer::failure(status, "why"), Vec::new());
        let error = export(dir.path(), request(None)).await.unwrap_err();
        assert_eq!((error.code, error.error.as_str()), (code, "why"));
    }
    // No worker listening.
    let dir = tempfile::tempdir().unwrap();
    let error = export(dir.path(), request(None)).await.unwrap_err();
    assert_eq!(error.code, StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn a_short_body_is_an_error_not_a_complete_file() {
    let dir = tempfile::tempdir().unwrap();
    let answer = ExportAnswer {
        status: 200,
        length: 1000,
        total: 1000,
        first: None,
        last: None,
        error: None,
    };
    let _worker = fake_worker(dir.path(), answer, vec![7; 400]);
    let response = export(dir.path(), request(None)).await.unwrap();
    assert!(body(response).await.is_err());
}
