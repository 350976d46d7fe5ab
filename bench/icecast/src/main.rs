//! `icecast-listen`: an Icecast listener load generator. It opens `--listeners` HTTP
//! connections to one mount from a single process (tokio, current-thread runtime, one task
//! per listener, started at `--ramp-per-sec`), each asking `GET <path> HTTP/1.1` with
//! `Icy-MetaData: 1`, like a player. Then, after `--warmup-secs`, it measures for
//! `--measure-secs`: audio bytes (metadata blocks taken out) and metadata blocks per
//! listener, and (with `--server-pid`) the CPU time of the server's process tree. It prints
//! one JSON object.
//!
//! Body. A `Transfer-Encoding: chunked` body (an HTTP/1.1 server such as strom's hyper) is
//! de-chunked; a close-delimited one (icecast2 answers HTTP/1.0) is read as is. With an
//! `icy-metaint: M` header the body is M audio bytes, one length byte L, L × 16 bytes of
//! metadata, and again; the audio bytes are counted, every metadata block is counted and
//! non-empty ones are checked for `--title` (`StreamTitle='<title>'`).
//!
//! Source addresses. Servers cap listeners per client address (strom: 64), so listener i
//! binds to `--first-address` + i / `--per-address` (127.0.0.2, 127.0.0.3, ...; all of
//! 127.0.0.0/8 is loopback on Linux).
//!
//! Cost of the generator itself. Once the response head is read each listener sets
//! SO_RCVLOWAT (`--lowat-bytes`, 4 KiB ≈ 250 ms of 128 kbit/s), so the kernel wakes it a
//! few times a second instead of once per write of the server. The server still writes as
//! it likes; the same for every server measured.
//!
//! Server cost. `--server-pid` roots and all their descendants (strom's supervisor and
//! workers) are sampled from `/proc`: utime+stime at both ends of the window, per process
//! (named by its command line) and in total, and the write system calls of the tree
//! (`syscw` and `wchar` of `/proc/<pid>/io`: how many sends per listener-second, how many
//! bytes each). `--ksoftirqd-core N` reports `ksoftirqd/N` separately (not added to the
//! server).
//!
//! Segments. Each listener reads `tcpi_data_segs_in` (TCP_INFO) at both ends of the window:
//! the data segments it received, which on loopback is about one per send of the server
//! (the server's syscall count from /proc/<pid>/io misses `send`/`sendmsg`, which icecast2
//! uses). Reported as the median per listener-second and the bytes per segment.
//!
//! Rate. A listener is at full rate when its audio bytes in the window reach
//! `--full-rate-fraction` (0.95) of `--expected-kbps` (128) × the window; the others "fell
//! behind". Nothing read from the network is unwrapped: a malformed or closed connection
//! ends that listener with its error counted in `errors`.

use anyhow::{Context, Result, bail};
use clap::Parser;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::time::{Instant, sleep_until, timeout_at};

#[derive(Parser, Debug)]
#[command(about = "Icecast listener load generator (many ICY listeners, audio rate, metadata)")]
struct Args {
    /// `http://a.b.c.d:port/path` (an IPv4 address; no name lookup).
    #[arg(long)]
    url: String,
    /// Number of listeners.
    #[arg(long, default_value_t = 100)]
    listeners: usize,
    /// New connections per second while ramping up.
    #[arg(long, default_value_t = 200.0)]
    ramp_per_sec: f64,
    /// Seconds between the last connection start and the measurement window.
    #[arg(long, default_value_t = 5)]
    warmup_secs: u64,
    /// Length of the measurement window.
    #[arg(long, default_value_t = 20)]
    measure_secs: u64,
    /// Audio rate of the stream; a listener below `--full-rate-fraction` of it fell behind.
    #[arg(long, default_value_t = 128.0)]
    expected_kbps: f64,
    #[arg(long, default_value_t = 0.95)]
    full_rate_fraction: f64,
    /// Title the metadata blocks should carry (`StreamTitle='<title>'`).
    #[arg(long)]
    title: Option<String>,
    /// First client (source) address; listener i binds to it + i / --per-address.
    #[arg(long, default_value = "127.0.0.2")]
    first_address: Ipv4Addr,
    #[arg(long, default_value_t = 50)]
    per_address: usize,
    /// SO_RCVLOWAT once the response head is read; 0 reads eagerly.
    #[arg(long, default_value_t = 4096)]
    lowat_bytes: u32,
    /// Server process to sample (with all its descendants); repeatable or comma-separated.
    #[arg(long, value_delimiter = ',')]
    server_pid: Vec<u32>,
    /// Report the CPU of the kernel's softirq thread of this core (`ksoftirqd/N`) separately.
    #[arg(long)]
    ksoftirqd_core: Option<usize>,
}

/// Where to connect and what to ask.
#[derive(Debug, PartialEq)]
struct Target {
    addr: SocketAddrV4,
    path: String,
}

fn parse_url(url: &str) -> Result<Target> {
    let rest = url
        .strip_prefix("http://")
        .context("the URL must start with http://")?;
    let (host, path) = rest.split_once('/').context("the URL needs a path")?;
    let addr = if host.contains(':') {
        host.parse::<SocketAddrV4>()
    } else {
        format!("{host}:80").parse::<SocketAddrV4>()
    }
    .context("the host must be an IPv4 address[:port]")?;
    if path.is_empty() {
        bail!("the URL needs a path");
    }
    Ok(Target {
        addr,
        path: format!("/{path}"),
    })
}

/// The measurement window shared by every listener.
#[derive(Clone, Copy)]
struct Window {
    start: Instant,
    end: Instant,
    lowat_bytes: u32,
}

#[derive(Default)]
struct Stats {
    /// The server answered 200 with a body.
    connected: bool,
    status: Option<String>,
    content_type: Option<String>,
    metaint: Option<usize>,
    chunked: bool,
    audio_total: u64,
    audio_window: u64,
    wire_window: u64,
    meta_blocks_window: u64,
    titled_blocks: u64,
    /// A metadata block carried `StreamTitle='<--title>'`.
    saw_title: bool,
    /// A non-empty block that did not look like ICY metadata.
    bad_meta: u64,
    /// `tcpi_data_segs_in` at the window's start and end.
    segs_start: Option<u32>,
    segs_end: Option<u32>,
    error: Option<String>,
}

/// Splits a de-chunked ICY body into audio and metadata blocks.
struct Icy {
    metaint: Option<usize>,
    /// Audio bytes until the next length byte.
    audio_left: usize,
    /// Metadata bytes still to come in the current block (`None`: reading audio or the
    /// length byte).
    meta_left: Option<usize>,
    meta: Vec<u8>,
    title: Option<Vec<u8>>,
}

/// What one slice of body held.
#[derive(Default, Debug, PartialEq)]
struct Counted {
    audio: u64,
    blocks: u64,
    titled: u64,
    saw_title: bool,
    bad: u64,
}

impl Icy {
    fn new(metaint: Option<usize>, title: Option<&str>) -> Self {
        Self {
            metaint,
            audio_left: metaint.unwrap_or(0),
            meta_left: None,
            meta: Vec::new(),
            title: title.map(|t| format!("StreamTitle='{t}'").into_bytes()),
        }
    }

    fn feed(&mut self, mut data: &[u8], out: &mut Counted) {
        let Some(metaint) = self.metaint else {
            out.audio += data.len() as u64;
            return;
        };
        while !data.is_empty() {
            if let Some(left) = self.meta_left {
                let take = left.min(data.len());
                self.meta.extend_from_slice(&data[..take]);
                data = &data[take..];
                if take == left {
                    self.meta_left = None;
                    self.block_done(out);
                } else {
                    self.meta_left = Some(left - take);
                }
            } else if self.audio_left > 0 {
                let take = self.audio_left.min(data.len());
                out.audio += take as u64;
                self.audio_left -= take;
                data = &data[take..];
            } else {
                let len = usize::from(data[0]) * 16;
                data = &data[1..];
                self.audio_left = metaint;
                self.meta.clear();
                if len == 0 {
                    out.blocks += 1;
                } else {
                    self.meta_left = Some(len);
                }
            }
        }
    }

    fn block_done(&mut self, out: &mut Counted) {
        out.blocks += 1;
        let text = self.meta.split(|b| *b == 0).next().unwrap_or_default();
        if !text.starts_with(b"Stream") {
            out.bad += 1;
            return;
        }
        out.titled += 1;
        if let Some(title) = &self.title
            && text.windows(title.len()).any(|w| w == title.as_slice())
        {
            out.saw_title = true;
        }
    }
}

/// Undoes `Transfer-Encoding: chunked`.
#[derive(Default)]
struct Dechunk {
    /// Data bytes left in the current chunk.
    data_left: usize,
    /// Reading a size line (hex digits, then an extension up to LF).
    in_size: bool,
    size: usize,
    size_digits: usize,
    in_ext: bool,
    /// CR LF still to skip after a chunk's data.
    crlf_left: u8,
    done: bool,
}

impl Dechunk {
    fn new() -> Self {
        Self {
            in_size: true,
            ..Self::default()
        }
    }

    /// Calls `sink` with every data slice in `data`.
    fn feed(&mut self, mut data: &[u8], mut sink: impl FnMut(&[u8])) -> Result<()> {
        while !data.is_empty() && !self.done {
            if self.data_left > 0 {
                let take = self.data_left.min(data.len());
                sink(&data[..take]);
                self.data_left -= take;
                data = &data[take..];
                if self.data_left == 0 {
                    self.crlf_left = 2;
                }
            } else if self.crlf_left > 0 {
                let want = if self.crlf_left == 2 { b'\r' } else { b'\n' };
                if data[0] != want {
                    bail!("chunked body: no CR LF after a chunk");
                }
                self.crlf_left -= 1;
                data = &data[1..];
                if self.crlf_left == 0 {
                    self.in_size = true;
                    self.size = 0;
                    self.size_digits = 0;
                    self.in_ext = false;
                }
            } else if self.in_size {
                let b = data[0];
                data = &data[1..];
                if b == b'\n' {
                    if self.size_digits == 0 {
                        bail!("chunked body: empty chunk size");
                    }
                    self.in_size = false;
                    if self.size == 0 {
                        self.done = true;
                    } else {
                        self.data_left = self.size;
                    }
                } else if self.in_ext || b == b'\r' || b == b';' {
                    self.in_ext = true;
                } else {
                    let digit = (b as char)
                        .to_digit(16)
                        .context("chunked body: bad chunk size")?;
                    self.size = self
                        .size
                        .checked_mul(16)
                        .and_then(|s| s.checked_add(digit as usize))
                        .filter(|s| *s <= 1 << 30)
                        .context("chunked body: chunk too large")?;
                    self.size_digits += 1;
                }
            } else {
                bail!("chunked body: lost");
            }
        }
        Ok(())
    }
}

async fn listener(
    target: Arc<Target>,
    source: Ipv4Addr,
    start: Instant,
    window: Window,
    title: Option<Arc<str>>,
) -> Stats {
    sleep_until(start).await;
    let mut stats = Stats::default();
    // The window's end ends a listening listener (`Ok(true)`); the timeout catches one
    // still waiting for its response.
    match timeout_at(
        window.end + Duration::from_secs(2),
        listen(&target, source, window, title.as_deref(), &mut stats),
    )
    .await
    {
        Ok(Ok(true)) => {}
        Err(_) => stats.error = Some("no response by the end of the window".into()),
        Ok(Ok(false)) => stats.error = Some("server closed the connection".into()),
        Ok(Err(e)) => stats.error = Some(format!("{e:#}")),
    }
    stats
}

async fn listen(
    target: &Target,
    source: Ipv4Addr,
    window: Window,
    title: Option<&str>,
    stats: &mut Stats,
) -> Result<bool> {
    let socket = TcpSocket::new_v4()?;
    socket
        .bind(SocketAddr::from((source, 0)))
        .with_context(|| format!("bind {source}"))?;
    let mut sock = socket
        .connect(SocketAddr::V4(target.addr))
        .await
        .context("connect")?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: icecast-listen/0.1\r\nAccept: */*\r\n\
         Icy-MetaData: 1\r\n\r\n",
        target.path, target.addr
    );
    sock.write_all(request.as_bytes()).await?;

    // The response head.
    let mut buf = vec![0u8; 32 * 1024];
    let mut filled = 0;
    let head_end = loop {
        let n = sock.read(&mut buf[filled..]).await.context("read head")?;
        if n == 0 {
            bail!("closed before the response head");
        }
        filled += n;
        if let Some(i) = buf[..filled].windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if filled == buf.len() {
            bail!("response head over 32 KiB");
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let code = status_line.split_whitespace().nth(1).unwrap_or_default();
    stats.status = Some(code.to_string());
    if code != "200" {
        bail!("HTTP {code}");
    }
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "icy-metaint" => {
                stats.metaint = Some(value.parse().context("icy-metaint")?);
            }
            "transfer-encoding" => stats.chunked = value.eq_ignore_ascii_case("chunked"),
            "content-type" => stats.content_type = Some(value.to_string()),
            _ => {}
        }
    }
    if stats.metaint == Some(0) {
        bail!("icy-metaint: 0");
    }
    stats.connected = true;
    if window.lowat_bytes > 0 {
        set_rcvlowat(&sock, window.lowat_bytes)?;
    }

    let mut icy = Icy::new(stats.metaint, title);
    let mut dechunk = stats.chunked.then(Dechunk::new);
    let first = buf[head_end..filled].to_vec();
    let mut body = |data: &[u8], stats: &mut Stats, now: Instant| -> Result<()> {
        let mut counted = Counted::default();
        match dechunk.as_mut() {
            Some(d) => d.feed(data, |slice| icy.feed(slice, &mut counted))?,
            None => icy.feed(data, &mut counted),
        }
        stats.audio_total += counted.audio;
        if now >= window.start {
            stats.audio_window += counted.audio;
            stats.wire_window += data.len() as u64;
            stats.meta_blocks_window += counted.blocks;
        }
        stats.titled_blocks += counted.titled;
        stats.saw_title |= counted.saw_title;
        stats.bad_meta += counted.bad;
        Ok(())
    };
    body(&first, stats, Instant::now())?;
    let start_timer = sleep_until(window.start);
    let end_timer = sleep_until(window.end);
    tokio::pin!(start_timer, end_timer);
    let mut started = Instant::now() >= window.start;
    if started {
        stats.segs_start = data_segs_in(&sock);
    }
    loop {
        tokio::select! {
            read = sock.read(&mut buf) => {
                let n = read.context("read")?;
                if n == 0 {
                    return Ok(false);
                }
                body(&buf[..n], stats, Instant::now())?;
            }
            () = &mut start_timer, if !started => {
                started = true;
                stats.segs_start = data_segs_in(&sock);
            }
            () = &mut end_timer => {
                stats.segs_end = data_segs_in(&sock);
                return Ok(true);
            }
        }
    }
}

/// Data segments this connection has received (`tcpi_data_segs_in` of TCP_INFO): on
/// loopback about one per send of the server, however the server batches its writes.
fn data_segs_in(sock: &TcpStream) -> Option<u32> {
    use std::os::fd::AsRawFd;
    // SAFETY: tcp_info is plain integers; all zeroes is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `info`, which is that large.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&raw mut info).cast(),
            &raw mut len,
        )
    };
    (rc == 0 && len as usize >= std::mem::size_of::<libc::tcp_info>())
        .then_some(info.tcpi_data_segs_in)
}

/// Wakes the reader only once `bytes` are queued (Linux SO_RCVLOWAT).
fn set_rcvlowat(sock: &TcpStream, bytes: u32) -> Result<()> {
    use std::os::fd::AsRawFd;
    let value = libc::c_int::try_from(bytes)?;
    // SAFETY: a plain setsockopt on a descriptor `sock` owns, with a c_int it points to.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            (&raw const value).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).context("SO_RCVLOWAT");
    }
    Ok(())
}

/// `(ppid, utime + stime)` from `/proc/<pid>/stat`.
fn proc_stat(pid: u32) -> Option<(u32, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = text
        .get(text.rfind(')')? + 1..)?
        .split_whitespace()
        .collect();
    let num = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    Some((u32::try_from(num(1)?).ok()?, num(11)? + num(12)?))
}

/// A short name for a process: the program's base name and its first arguments that are
/// neither options nor paths (`strom worker packager`).
fn proc_name(pid: u32) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .take(3)
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    let mut name = words
        .first()
        .map(|w| w.rsplit('/').next().unwrap_or(w).to_string())
        .unwrap_or_else(|| format!("pid {pid}"));
    for w in words
        .iter()
        .skip(1)
        .filter(|w| !w.starts_with('-') && !w.contains('/'))
    {
        name.push(' ');
        name.push_str(w);
    }
    name
}

/// utime+stime ticks of `roots` and all their descendants, per pid.
fn sample_tree(roots: &[u32]) -> HashMap<u32, u64> {
    let mut parent = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
            && let Some((ppid, ticks)) = proc_stat(pid)
        {
            parent.insert(pid, (ppid, ticks));
        }
    }
    let mut tree: Vec<u32> = roots
        .iter()
        .copied()
        .filter(|p| parent.contains_key(p))
        .collect();
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        let children: Vec<u32> = parent
            .iter()
            .filter(|(c, (pp, _))| *pp == p && !tree.contains(c))
            .map(|(c, _)| *c)
            .collect();
        tree.extend(children);
        i += 1;
    }
    tree.iter()
        .map(|pid| (*pid, parent.get(pid).map_or(0, |(_, t)| *t)))
        .collect()
}

/// `(syscw, wchar)` of one process from `/proc/<pid>/io`: write system calls (send, writev,
/// ...) and the bytes they passed.
fn proc_io(pid: u32) -> (u64, u64) {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    let field = |name: &str| {
        io.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    (field("syscw:"), field("wchar:"))
}

/// `(syscw, wchar)` summed over `pids`.
fn tree_io<'a>(pids: impl Iterator<Item = &'a u32>) -> (u64, u64) {
    pids.map(|p| proc_io(*p))
        .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
}

/// `(busy, total)` ticks of every CPU from `/proc/stat` (busy excludes idle and iowait).
fn core_ticks() -> Vec<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    stat.lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .map(|l| {
            let v: Vec<u64> = l
                .split_whitespace()
                .skip(1)
                .filter_map(|f| f.parse().ok())
                .collect();
            let total: u64 = v.iter().take(8).sum();
            let idle = v.get(3).unwrap_or(&0) + v.get(4).unwrap_or(&0);
            (total - idle, total)
        })
        .collect()
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let args = Args::parse();
    let target = Arc::new(parse_url(&args.url)?);
    if args.ramp_per_sec <= 0.0 || args.measure_secs == 0 || args.per_address == 0 {
        bail!("--ramp-per-sec, --measure-secs and --per-address must be positive");
    }
    // `--listeners 0` only samples the server (its cost with no listener).
    let first = u32::from(args.first_address);
    let last = first
        .checked_add(u32::try_from(
            args.listeners.saturating_sub(1) / args.per_address,
        )?)
        .context("too many source addresses")?;
    if Ipv4Addr::from(first).octets()[0] != 127 || Ipv4Addr::from(last).octets()[0] != 127 {
        bail!("source addresses must stay in 127.0.0.0/8");
    }
    // SAFETY: sysconf only reads a constant of the C library.
    let tick_hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let me = [std::process::id()];
    let softirq_pid = args.ksoftirqd_core.and_then(|core| {
        let name = format!("(ksoftirqd/{core})");
        std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
            let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            stat.contains(&name).then_some(pid)
        })
    });
    let softirq_ticks = || softirq_pid.and_then(proc_stat).map_or(0, |(_, t)| t);
    let sum = |m: &HashMap<u32, u64>| m.values().sum::<u64>();

    let t0 = Instant::now();
    let ramp = Duration::from_secs_f64(args.listeners as f64 / args.ramp_per_sec);
    let start = t0 + ramp + Duration::from_secs(args.warmup_secs);
    let window = Window {
        start,
        end: start + Duration::from_secs(args.measure_secs),
        lowat_bytes: args.lowat_bytes,
    };
    let title: Option<Arc<str>> = args.title.as_deref().map(Arc::from);
    let tasks: Vec<_> = (0..args.listeners)
        .map(|i| {
            let at = t0 + Duration::from_secs_f64(i as f64 / args.ramp_per_sec);
            let source = Ipv4Addr::from(first + (i / args.per_address) as u32);
            tokio::spawn(listener(target.clone(), source, at, window, title.clone()))
        })
        .collect();

    sleep_until(window.start).await;
    let (k1, s1, g1, c1) = (
        softirq_ticks(),
        sample_tree(&args.server_pid),
        sample_tree(&me),
        core_ticks(),
    );
    let io1 = tree_io(s1.keys());
    let wall1 = Instant::now();
    sleep_until(window.end).await;
    let (k2, s2, g2, c2) = (
        softirq_ticks(),
        sample_tree(&args.server_pid),
        sample_tree(&me),
        core_ticks(),
    );
    let secs = (Instant::now() - wall1).as_secs_f64();
    // Processes that were there at both ends (a worker that restarted would skew it).
    let io2 = tree_io(s2.keys().filter(|p| s1.contains_key(p)));
    let writes = io2.0.saturating_sub(io1.0);
    let written = io2.1.saturating_sub(io1.1);

    let mut all = Vec::with_capacity(tasks.len());
    for task in tasks {
        match timeout_at(window.end + Duration::from_secs(10), task).await {
            Ok(Ok(stats)) => all.push(stats),
            _ => all.push(Stats {
                error: Some("listener task did not finish".into()),
                ..Stats::default()
            }),
        }
    }

    let connected: Vec<&Stats> = all.iter().filter(|s| s.connected).collect();
    let mut rates: Vec<f64> = connected
        .iter()
        .map(|s| s.audio_window as f64 * 8.0 / 1000.0 / secs)
        .collect();
    rates.sort_by(f64::total_cmp);
    let pick = |p: f64| -> Option<f64> {
        let last = rates.len().checked_sub(1)?;
        Some(round2(rates[((rates.len() as f64 * p) as usize).min(last)]))
    };
    let mut segs: Vec<f64> = connected
        .iter()
        .filter_map(|s| Some(s.segs_end?.wrapping_sub(s.segs_start?) as f64 / secs))
        .collect();
    segs.sort_by(f64::total_cmp);
    let segs_total: f64 = segs.iter().sum::<f64>() * secs;
    let wire_in_segs: u64 = connected
        .iter()
        .filter(|s| s.segs_start.is_some() && s.segs_end.is_some())
        .map(|s| s.wire_window)
        .sum();
    let floor = args.full_rate_fraction * args.expected_kbps;
    let full_rate = rates.iter().filter(|r| **r >= floor).count();
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    for e in all.iter().filter_map(|s| s.error.as_ref()) {
        *errors.entry(e.clone()).or_default() += 1;
    }
    let mut statuses: BTreeMap<String, usize> = BTreeMap::new();
    for s in &all {
        *statuses
            .entry(s.status.clone().unwrap_or_else(|| "none".into()))
            .or_default() += 1;
    }
    let mut metaints: BTreeMap<String, usize> = BTreeMap::new();
    for s in &connected {
        *metaints
            .entry(s.metaint.map_or("none".into(), |m| m.to_string()))
            .or_default() += 1;
    }

    let server_ticks = sum(&s2).saturating_sub(sum(&s1));
    let cpu_pct = server_ticks as f64 / tick_hz / secs * 100.0;
    let sampled = !args.server_pid.is_empty() && !s2.is_empty();
    let mut by_proc: BTreeMap<String, f64> = BTreeMap::new();
    for (pid, t) in &s2 {
        let d = t.saturating_sub(s1.get(pid).copied().unwrap_or(0));
        *by_proc.entry(proc_name(*pid)).or_default() += d as f64 / tick_hz / secs * 100.0;
    }
    let by_proc: BTreeMap<String, f64> = by_proc.into_iter().map(|(k, v)| (k, round2(v))).collect();
    let n = connected.len();
    let report = json!({
        "listeners": args.listeners,
        "listeners_connected": n,
        "listeners_failed": all.iter().filter(|s| s.error.is_some()).count(),
        "listeners_full_rate": full_rate,
        "listeners_behind": n - full_rate,
        "full_rate_floor_kbps": round2(floor),
        "statuses": statuses,
        "metaint": metaints,
        "chunked": connected.iter().filter(|s| s.chunked).count(),
        "content_type": connected.first().and_then(|s| s.content_type.clone()),
        "audio_kbps_min": pick(0.0),
        "audio_kbps_median": pick(0.5),
        "audio_kbps_max": pick(1.0),
        "wire_kbps_total": round2(connected.iter().map(|s| s.wire_window).sum::<u64>() as f64 * 8.0 / 1000.0 / secs),
        "meta_blocks_per_listener_sec": (n > 0).then(|| round2(connected.iter().map(|s| s.meta_blocks_window).sum::<u64>() as f64 / n as f64 / secs)),
        "listeners_with_title": args.title.as_ref().map(|_| connected.iter().filter(|s| s.saw_title).count()),
        "listeners_with_any_title": connected.iter().filter(|s| s.titled_blocks > 0).count(),
        "bad_meta_blocks": connected.iter().map(|s| s.bad_meta).sum::<u64>(),
        "audio_bytes_total": connected.iter().map(|s| s.audio_total).sum::<u64>(),
        "measure_secs": round2(secs),
        "server_procs": sampled.then_some(s2.len()),
        "server_cpu_pct": sampled.then(|| round2(cpu_pct)),
        "server_cpu_pct_by_proc": sampled.then_some(by_proc),
        "listeners_per_core": (sampled && cpu_pct > 0.0).then(|| (n as f64 / (cpu_pct / 100.0)).round() as u64),
        "segments_per_listener_sec_median": segs.get(segs.len() / 2).map(|v| round2(*v)),
        "bytes_per_segment": (segs_total > 0.0).then(|| (wire_in_segs as f64 / segs_total).round() as u64),
        "server_writes_per_sec": sampled.then(|| round2(writes as f64 / secs)),
        "server_writes_per_listener_sec": (sampled && n > 0).then(|| round2(writes as f64 / secs / n as f64)),
        "server_bytes_per_write": (writes > 0).then(|| (written as f64 / writes as f64).round() as u64),
        "ksoftirqd_cpu_pct": softirq_pid.map(|_| round2(k2.saturating_sub(k1) as f64 / tick_hz / secs * 100.0)),
        "core_busy_pct": c1.iter().zip(&c2).map(|((b1, t1), (b2, t2))| {
            round2(b2.saturating_sub(*b1) as f64 * 100.0 / (t2.saturating_sub(*t1)).max(1) as f64)
        }).collect::<Vec<_>>(),
        "gen_cpu_pct": round2(sum(&g2).saturating_sub(sum(&g1)) as f64 / tick_hz / secs * 100.0),
        "errors": errors,
    });
    println!("{report}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = parse_url("http://127.0.0.1:8081/live/radio/icecast.stream").unwrap();
        assert_eq!(t.addr, "127.0.0.1:8081".parse().unwrap());
        assert_eq!(t.path, "/live/radio/icecast.stream");
        assert_eq!(parse_url("http://127.0.0.1/radio").unwrap().addr.port(), 80);
        for bad in [
            "rtmp://h/a",
            "http://localhost:80/a",
            "http://127.0.0.1:1/",
            "http://127.0.0.1",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }

    /// An ICY body with metaint 4: audio, an empty block, a titled block, split anywhere.
    #[test]
    fn icy_blocks_split_anywhere() {
        let meta = b"StreamTitle='x';";
        let mut body = Vec::new();
        body.extend_from_slice(b"aaaa\0bbbb\x01");
        body.extend_from_slice(meta);
        body.extend_from_slice(b"cc");
        for cut in 0..body.len() {
            let mut icy = Icy::new(Some(4), Some("x"));
            let mut c = Counted::default();
            icy.feed(&body[..cut], &mut c);
            icy.feed(&body[cut..], &mut c);
            assert_eq!(
                c,
                Counted {
                    audio: 10,
                    blocks: 2,
                    titled: 1,
                    saw_title: true,
                    bad: 0
                },
                "cut {cut}"
            );
        }
        let mut plain = Icy::new(None, None);
        let mut c = Counted::default();
        plain.feed(&body, &mut c);
        assert_eq!(c.audio, body.len() as u64);
    }

    #[test]
    fn dechunk_split_anywhere() {
        let wire = b"4\r\nabcd\r\n3;ext=1\r\nefg\r\na\r\n0123456789\r\n0\r\n\r\n";
        for cut in 0..wire.len() {
            let mut d = Dechunk::new();
            let mut out = Vec::new();
            d.feed(&wire[..cut], |s| out.extend_from_slice(s)).unwrap();
            d.feed(&wire[cut..], |s| out.extend_from_slice(s)).unwrap();
            assert_eq!(out, b"abcdefg0123456789", "cut {cut}");
            assert!(d.done);
        }
        assert!(Dechunk::new().feed(b"zz\r\n", |_| {}).is_err());
        assert!(Dechunk::new().feed(b"1\r\nab", |_| {}).is_err());
    }
}
