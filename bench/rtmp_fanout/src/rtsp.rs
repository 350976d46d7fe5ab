//! The RTSP player of the load generator: DESCRIBE, SETUP of every track with TCP
//! interleaved channels `2i`/`2i+1`, PLAY, then bytes counted like an RTMP player's. No
//! per-message delay is measured (probes count bytes only): RTP timestamps are rebased
//! per player, so there is no publisher clock to compare with.

use crate::{Stats, Window, set_rcvlowat};
use anyhow::{Context, Result, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Largest response head or body accepted from the server.
const MAX_RESPONSE: usize = 64 * 1024;

/// Sends `request` and reads its response: (head, body). Bytes after the response
/// (interleaved media once playing) stay in `pending`.
async fn exchange(
    sock: &mut TcpStream,
    pending: &mut Vec<u8>,
    request: &str,
    stats: &mut Stats,
) -> Result<(String, String)> {
    sock.write_all(request.as_bytes()).await?;
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&pending[..end]).into_owned();
            let length = head
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.trim()
                        .eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if length > MAX_RESPONSE {
                bail!("response body of {length} bytes");
            }
            if pending.len() >= end + 4 + length {
                let body =
                    String::from_utf8_lossy(&pending[end + 4..end + 4 + length]).into_owned();
                pending.drain(..end + 4 + length);
                if !head.starts_with("RTSP/1.0 200") {
                    bail!("{}", head.lines().next().unwrap_or(""));
                }
                return Ok((head, body));
            }
        }
        if pending.len() > 2 * MAX_RESPONSE {
            bail!("response larger than {MAX_RESPONSE} bytes");
        }
        let n = sock.read(&mut buf).await.context("read")?;
        if n == 0 {
            bail!("closed before the response");
        }
        stats.bytes_total += n as u64;
        pending.extend_from_slice(&buf[..n]);
    }
}

pub async fn play(addr: &str, url: &str, window: Window, stats: &mut Stats) -> Result<()> {
    let mut sock = TcpStream::connect(addr).await.context("connect")?;
    sock.set_nodelay(true)?;
    let mut pending = Vec::new();
    let describe = format!("DESCRIBE {url} RTSP/1.0\r\nCSeq: 1\r\nAccept: application/sdp\r\n\r\n");
    let (_, sdp) = exchange(&mut sock, &mut pending, &describe, stats).await?;
    let tracks = sdp.lines().filter(|l| l.starts_with("m=")).count();
    if tracks == 0 {
        bail!("no tracks in the SDP");
    }
    let mut session = String::new();
    for track in 0..tracks {
        let header = if session.is_empty() {
            String::new()
        } else {
            format!("Session: {session}\r\n")
        };
        let setup = format!(
            "SETUP {url}/trackID={track} RTSP/1.0\r\nCSeq: {}\r\n{header}Transport: RTP/AVP/TCP;unicast;interleaved={}-{}\r\n\r\n",
            track + 2,
            track * 2,
            track * 2 + 1
        );
        let (head, _) = exchange(&mut sock, &mut pending, &setup, stats).await?;
        if let Some(value) = head.lines().find_map(|l| l.strip_prefix("Session:")) {
            session = value.split(';').next().unwrap_or("").trim().to_owned();
        }
    }
    let play = format!(
        "PLAY {url} RTSP/1.0\r\nCSeq: {}\r\nSession: {session}\r\n\r\n",
        tracks + 2
    );
    exchange(&mut sock, &mut pending, &play, stats).await?;
    stats.connected = true;
    if !stats.probe && window.lowat_bytes > 0 {
        set_rcvlowat(&sock, window.lowat_bytes)?;
    }
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = sock.read(&mut buf).await.context("read")?;
        if n == 0 {
            return Ok(());
        }
        stats.bytes_total += n as u64;
        if Instant::now() >= window.start {
            stats.bytes_window += n as u64;
        }
    }
}
