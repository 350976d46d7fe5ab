//! One export connection: read the request line, select and plan on a blocking thread,
//! answer, send the body.

use super::range::{Wanted, wanted};
use super::{ExportSource, MAX_CONCURRENT_EXPORTS, REQUEST_TIMEOUT, SelectError, Selection, body};
use std::path::PathBuf;
use std::sync::Arc;
use strom_ipc::dvr_export::{ExportAnswer, ExportRequest, MAX_REQUEST_LINE};
use strom_media::mp4::{ExportError, Mp4Plan};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::Semaphore;

pub(super) async fn serve(
    socket: UnixStream,
    source: Arc<dyn ExportSource>,
    slots: Arc<Semaphore>,
) {
    let mut socket = BufReader::new(socket);
    let request = match read_request(&mut socket).await {
        Ok(request) => request,
        Err(answer) => return refuse(&mut socket, &answer).await,
    };
    // Held until the body is out.
    let Ok(_slot) = slots.try_acquire_owned() else {
        let busy = format!("{MAX_CONCURRENT_EXPORTS} MP4 exports are under way; try again later");
        return refuse(&mut socket, &ExportAnswer::failure(503, busy)).await;
    };
    let Prepared {
        answer,
        plan,
        files,
    } = match prepare(source, request).await {
        Ok(prepared) => prepared,
        Err(answer) => return refuse(&mut socket, &answer).await,
    };
    if write_answer(&mut socket, &answer).await.is_err() || answer.length == 0 {
        return;
    }
    let first = answer.first.unwrap_or(0);
    let last = answer.last.unwrap_or(answer.total.saturating_sub(1));
    if let Err(e) = body::send(socket.get_mut(), plan, files, first, last).await {
        tracing::warn!(error = %e, "MP4 export ended early");
    }
}

/// Answers without a body; the client may be gone already.
async fn refuse(socket: &mut BufReader<UnixStream>, answer: &ExportAnswer) {
    let _ = write_answer(socket, answer).await;
}

async fn read_request(socket: &mut BufReader<UnixStream>) -> Result<ExportRequest, ExportAnswer> {
    let mut line = Vec::with_capacity(256);
    let mut limited = socket.take(MAX_REQUEST_LINE as u64);
    match tokio::time::timeout(REQUEST_TIMEOUT, limited.read_until(b'\n', &mut line)).await {
        Err(_) => return Err(ExportAnswer::failure(400, "no export request in time")),
        Ok(Err(e)) => {
            return Err(ExportAnswer::failure(
                400,
                format!("reading the request: {e}"),
            ));
        }
        Ok(Ok(_)) => {}
    }
    if line.last() != Some(&b'\n') {
        return Err(ExportAnswer::failure(
            400,
            format!("the export request must be one line of at most {MAX_REQUEST_LINE} bytes"),
        ));
    }
    serde_json::from_slice(&line)
        .map_err(|e| ExportAnswer::failure(400, format!("bad export request: {e}")))
}

/// The answer line with what its body is made of.
struct Prepared {
    answer: ExportAnswer,
    plan: Arc<Mp4Plan>,
    files: Arc<Vec<PathBuf>>,
}

async fn prepare(
    source: Arc<dyn ExportSource>,
    request: ExportRequest,
) -> Result<Prepared, ExportAnswer> {
    let ExportRequest {
        app,
        stream,
        start,
        end,
        range,
    } = request;
    if let Err(e) = strom_ipc::names::check_pair(&app, &stream) {
        return Err(ExportAnswer::failure(400, e.to_string()));
    }
    if let (Some(start), Some(end)) = (start, end) {
        if end < start {
            return Err(ExportAnswer::failure(
                400,
                format!("inverted range: end {end} is before start {start}"),
            ));
        }
        if end == start {
            return Err(ExportAnswer::failure(
                400,
                format!("empty range: start and end are both {start}"),
            ));
        }
    }
    let planned = tokio::task::spawn_blocking(move || {
        let selection = source
            .select(&app, &stream, start, end)
            .map_err(|e| select_failure(e, &app, &stream, start, end))?;
        plan(selection, &app, &stream)
    })
    .await
    .map_err(|e| ExportAnswer::failure(500, format!("export failed: {e}")))??;

    let (plan, files) = planned;
    let total = plan.total_len;
    let answer = match wanted(range.as_deref(), total) {
        Wanted::Whole => ExportAnswer {
            status: 200,
            length: total,
            total,
            first: None,
            last: None,
            error: None,
        },
        Wanted::Part { first, last } => ExportAnswer {
            status: 206,
            length: last - first + 1,
            total,
            first: Some(first),
            last: Some(last),
            error: None,
        },
        Wanted::Unsatisfiable => ExportAnswer {
            error: Some(format!(
                "the range is outside the {total} bytes of the export"
            )),
            total,
            ..ExportAnswer::failure(416, "")
        },
    };
    Ok(Prepared {
        answer,
        plan: Arc::new(plan),
        files: Arc::new(files),
    })
}

fn plan(
    selection: Selection,
    app: &str,
    stream: &str,
) -> Result<(Mp4Plan, Vec<PathBuf>), ExportAnswer> {
    let Selection {
        tracks,
        samples,
        files,
        play_from,
    } = selection;
    match strom_media::mp4::plan(&tracks, &samples, play_from) {
        Ok(plan) => Ok((plan, files)),
        Err(ExportError::NoSamples) => Err(ExportAnswer::failure(
            400,
            format!("nothing of {app}/{stream} was recorded in that range"),
        )),
        Err(e @ ExportError::TooManySamples(_)) => Err(ExportAnswer::failure(
            400,
            format!("the range is too long to export: {e}"),
        )),
        Err(e) => {
            tracing::warn!(%app, %stream, error = %e, "MP4 export could not be planned");
            Err(ExportAnswer::failure(
                500,
                format!("MP4 export of {app}/{stream}: {e}"),
            ))
        }
    }
}

fn select_failure(
    error: SelectError,
    app: &str,
    stream: &str,
    start: Option<i64>,
    end: Option<i64>,
) -> ExportAnswer {
    let bound = |t: Option<i64>| t.map_or_else(|| "open".to_owned(), |t| t.to_string());
    match error {
        SelectError::NotFound => {
            ExportAnswer::failure(404, format!("no DVR archive for {app}/{stream}"))
        }
        SelectError::Empty => ExportAnswer::failure(
            400,
            format!(
                "empty range: nothing of {app}/{stream} was recorded between {} and {}",
                bound(start),
                bound(end)
            ),
        ),
        SelectError::Inverted => ExportAnswer::failure(
            400,
            format!(
                "inverted range: end {} is before start {}",
                bound(end),
                bound(start)
            ),
        ),
        SelectError::Io(e) => {
            tracing::warn!(%app, %stream, error = %e, "DVR archive read failed");
            ExportAnswer::failure(500, format!("reading the archive of {app}/{stream}: {e}"))
        }
    }
}

async fn write_answer(
    socket: &mut BufReader<UnixStream>,
    answer: &ExportAnswer,
) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(answer).map_err(std::io::Error::other)?;
    line.push(b'\n');
    socket.get_mut().write_all(&line).await
}
