//! librist contexts: [`RistReceiver`] (listening or calling; blocks read with a
//! timeout as [`RistBlock`]s) and [`RistSender`] (writes TS payloads), both built the
//! same way (log settings, auth handler, stats callback, one peer from a URL, start),
//! and destroyed on drop. The callbacks librist calls from its own threads live here:
//! log lines into `tracing`, peer connect/disconnect logs, and the latest stats JSON
//! kept in a [`StatsSlot`].

use super::options::RistOptions;
use super::{RistError, ffi};
use libc::{c_char, c_int, c_void};
use std::ffi::{CStr, CString};
use std::marker::PhantomData;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strom_worker_runtime::sync::locked;

/// Longest stats JSON kept; a longer report (never seen: librist's are ~1 KiB per flow)
/// is dropped.
const MAX_STATS_JSON: usize = 64 * 1024;
/// Largest payload [`RistSender::write`] takes (TS payloads are 1316 bytes).
pub const MAX_PAYLOAD: usize = 1472;

/// The latest stats JSON librist reported for one context.
#[derive(Debug, Default)]
pub struct StatsSlot {
    latest: Mutex<Option<String>>,
}

impl StatsSlot {
    /// The latest report (a JSON object as text), if any arrived yet.
    pub fn latest(&self) -> Option<String> {
        locked(&self.latest).clone()
    }

    /// The latest report with `"id": <id>` added beside librist's own object (the
    /// `Cameras` or `TsOutputs` entry it belongs to), so that clients can tell the items
    /// of several inputs or outputs apart. A report that is not a JSON object is passed
    /// through as it came.
    pub fn latest_named(&self, id: &str) -> Option<String> {
        let latest = self.latest()?;
        match serde_json::from_str::<serde_json::Value>(&latest) {
            Ok(serde_json::Value::Object(mut object)) => {
                object.insert("id".into(), id.into());
                Some(serde_json::Value::Object(object).to_string())
            }
            _ => Some(latest),
        }
    }
}

/// What the auth handler callbacks need: the context's name for logs, the last peer.
#[derive(Debug)]
struct Peers {
    name: String,
    last: Mutex<Option<SocketAddr>>,
}

/// One librist context with everything its callbacks point at.
struct Context {
    ctx: *mut ffi::rist_ctx,
    logging: *mut ffi::rist_logging_settings,
    /// Pointed at by the stats callback's argument; outlives `ctx` (dropped after it).
    stats: Option<Arc<StatsSlot>>,
    /// Pointed at by the auth handler's argument; outlives `ctx`.
    peers: Box<Peers>,
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: `ctx` (when not null) came from rist_*_create and is destroyed once,
        // here; rist_destroy joins librist's threads, so no callback runs after it and
        // the settings, stats slot and peers it points at may go. `logging` came from
        // rist_logging_set and is freed once, after the context that used it.
        unsafe {
            if !self.ctx.is_null() {
                ffi::rist_destroy(self.ctx);
            }
            if !self.logging.is_null() {
                ffi::rist_logging_settings_free2(&mut self.logging);
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Receiver,
    Sender,
}

impl Context {
    /// Creates, configures and starts a context with one peer at `url`.
    fn start(role: Role, name: &str, url: &str, options: &RistOptions) -> Result<Self, RistError> {
        super::startup();
        let url = CString::new(url).map_err(|_| RistError::Config("URL contains NUL".into()))?;
        let mut context = Context {
            ctx: std::ptr::null_mut(),
            logging: std::ptr::null_mut(),
            stats: options.stats_interval.map(|_| Arc::default()),
            peers: Box::new(Peers {
                name: name.to_owned(),
                last: Mutex::new(None),
            }),
        };
        // SAFETY: `context.logging` is an out-pointer librist fills with its own
        // allocation (freed in Drop); the callback takes a null argument.
        let rc = unsafe {
            ffi::rist_logging_set(
                &mut context.logging,
                options.log_level,
                Some(log_line),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        check("rist_logging_set", rc)?;
        // SAFETY: `context.ctx` is an out-pointer; `context.logging` is valid and freed
        // only after the context is destroyed (Drop).
        let rc = unsafe {
            match role {
                Role::Receiver => ffi::rist_receiver_create(
                    &mut context.ctx,
                    options.profile.raw(),
                    context.logging,
                ),
                Role::Sender => ffi::rist_sender_create(
                    &mut context.ctx,
                    options.profile.raw(),
                    0,
                    context.logging,
                ),
            }
        };
        check("rist_create", rc)?;
        if context.ctx.is_null() {
            return Err(RistError::Call {
                call: "rist_create",
                rc: -1,
            });
        }
        let peers: *const Peers = &*context.peers;
        // SAFETY: `ctx` is live; the argument points at the boxed `Peers`, which is
        // dropped after rist_destroy (Drop), the callbacks only read it.
        let rc = unsafe {
            ffi::rist_auth_handler_set(
                context.ctx,
                Some(peer_connected),
                Some(peer_disconnected),
                peers.cast_mut().cast(),
            )
        };
        check("rist_auth_handler_set", rc)?;
        if let (Some(slot), Some(interval)) = (&context.stats, options.stats_interval_ms()) {
            // SAFETY: `ctx` is live; the argument is the slot's `Arc` pointer, kept alive
            // by `context.stats` until after rist_destroy.
            let rc = unsafe {
                ffi::rist_stats_callback_set(
                    context.ctx,
                    interval,
                    Some(stats_report),
                    Arc::as_ptr(slot).cast_mut().cast(),
                )
            };
            check("rist_stats_callback_set", rc)?;
        }
        let mut config: *mut ffi::rist_peer_config = std::ptr::null_mut();
        // SAFETY: `url` is a NUL-terminated string; `config` an out-pointer to a struct
        // librist allocates (freed below).
        let rc = unsafe { ffi::rist_parse_address2(url.as_ptr(), &mut config) };
        let parsed = match (rc, config.is_null()) {
            (0, false) => Ok(()),
            (rc, _) => Err(RistError::Call {
                call: "rist_parse_address2",
                rc: rc.min(-1),
            }),
        };
        let created = parsed.and_then(|()| {
            let mut peer = std::ptr::null_mut();
            // SAFETY: `ctx` is live; `config` was filled by rist_parse_address2 and is
            // only read (librist copies what it needs into the peer).
            check("rist_peer_create", unsafe {
                ffi::rist_peer_create(context.ctx, &mut peer, config)
            })
        });
        if !config.is_null() {
            // SAFETY: `config` came from rist_parse_address2 and is freed once.
            unsafe { ffi::rist_peer_config_free2(&mut config) };
        }
        created?;
        // SAFETY: `ctx` is live and fully configured.
        let rc = unsafe { ffi::rist_start(context.ctx) };
        check("rist_start", rc)?;
        Ok(context)
    }
}

fn check(call: &'static str, rc: c_int) -> Result<(), RistError> {
    if rc == 0 {
        Ok(())
    } else {
        Err(RistError::Call { call, rc })
    }
}

/// A RIST receiver: one peer, listening (`rist://@ip:port`) or calling
/// (`rist://host:port`).
pub struct RistReceiver {
    context: Context,
}

impl RistReceiver {
    /// Starts a receiver for `url` (see [`RistOptions::url`]); `name` names it in logs.
    pub fn start(name: &str, url: &str, options: &RistOptions) -> Result<Self, RistError> {
        Context::start(Role::Receiver, name, url, options).map(|context| Self { context })
    }

    /// The next block, waiting at most `timeout`; `None` when none arrived.
    pub fn read(&self, timeout: Duration) -> Result<Option<RistBlock<'_>>, RistError> {
        let ms = c_int::try_from(timeout.as_millis()).unwrap_or(c_int::MAX);
        let mut block = std::ptr::null_mut();
        // SAFETY: the context is a live receiver; `block` is an out-pointer librist sets
        // to a block it owns until rist_receiver_data_block_free2 (RistBlock's Drop).
        let rc = unsafe { ffi::rist_receiver_data_read2(self.context.ctx, &mut block, ms) };
        if rc < 0 {
            return Err(RistError::Call {
                call: "rist_receiver_data_read2",
                rc,
            });
        }
        if block.is_null() {
            return Ok(None);
        }
        Ok(Some(RistBlock {
            block,
            _receiver: PhantomData,
        }))
    }

    /// The latest stats report, when `rist-stats-interval` is set.
    pub fn stats(&self) -> Option<Arc<StatsSlot>> {
        self.context.stats.clone()
    }

    /// The address of the last peer that connected to a listening receiver.
    pub fn last_peer(&self) -> Option<SocketAddr> {
        *locked(&self.context.peers.last)
    }
}

/// A block read from a [`RistReceiver`], freed on drop (before the receiver).
pub struct RistBlock<'a> {
    block: *mut ffi::rist_data_block,
    _receiver: PhantomData<&'a RistReceiver>,
}

impl RistBlock<'_> {
    pub fn payload(&self) -> &[u8] {
        // SAFETY: the block is valid until freed in Drop; librist's `payload` points at
        // `payload_len` bytes it owns for as long.
        unsafe {
            let block = &*self.block;
            if block.payload.is_null() || block.payload_len == 0 {
                &[]
            } else {
                std::slice::from_raw_parts(block.payload.cast::<u8>(), block.payload_len)
            }
        }
    }

    pub fn flow_id(&self) -> u32 {
        // SAFETY: as in `payload`.
        unsafe { (*self.block).flow_id }
    }
}

impl Drop for RistBlock<'_> {
    fn drop(&mut self) {
        // SAFETY: the block came from rist_receiver_data_read2 and is freed once; the
        // receiver it borrows is still alive.
        unsafe { ffi::rist_receiver_data_block_free2(&mut self.block) }
    }
}

/// A RIST sender: one peer, calling (`rist://host:port`) or listening
/// (`rist://@ip:port`).
pub struct RistSender {
    context: Context,
}

impl RistSender {
    pub fn start(name: &str, url: &str, options: &RistOptions) -> Result<Self, RistError> {
        Context::start(Role::Sender, name, url, options).map(|context| Self { context })
    }

    /// Queues one payload (at most [`MAX_PAYLOAD`] bytes, normally 7 TS packets).
    pub fn write(&self, payload: &[u8]) -> Result<usize, RistError> {
        if payload.is_empty() || payload.len() > MAX_PAYLOAD {
            return Err(RistError::Config(format!(
                "payload of {} bytes (1..={MAX_PAYLOAD})",
                payload.len()
            )));
        }
        let block = ffi::rist_data_block {
            payload: payload.as_ptr().cast(),
            payload_len: payload.len(),
            ts_ntp: 0,
            virt_src_port: 0,
            virt_dst_port: 0,
            peer: std::ptr::null_mut(),
            flow_id: 0,
            seq: 0,
            flags: 0,
            r#ref: std::ptr::null_mut(),
        };
        // SAFETY: the context is a live sender; `block` and the payload it points at are
        // valid for the call, which copies the payload into librist's queue.
        let rc = unsafe { ffi::rist_sender_data_write(self.context.ctx, &block) };
        usize::try_from(rc).map_err(|_| RistError::Call {
            call: "rist_sender_data_write",
            rc,
        })
    }

    /// The latest stats report, when `rist-stats-interval` is set.
    pub fn stats(&self) -> Option<Arc<StatsSlot>> {
        self.context.stats.clone()
    }
}

/// librist's log callback: one line into `tracing` at the matching level.
pub(super) unsafe extern "C" fn log_line(
    _arg: *mut c_void,
    level: c_int,
    msg: *const c_char,
) -> c_int {
    if msg.is_null() {
        return 0;
    }
    // SAFETY: librist passes a NUL-terminated message valid for the call.
    let text = unsafe { CStr::from_ptr(msg) }.to_string_lossy();
    let text = text.trim_end();
    match level {
        ..=ffi::RIST_LOG_ERROR => tracing::error!(target: "librist", "{text}"),
        ffi::RIST_LOG_WARN => tracing::warn!(target: "librist", "{text}"),
        ffi::RIST_LOG_NOTICE | ffi::RIST_LOG_INFO => tracing::info!(target: "librist", "{text}"),
        _ => tracing::debug!(target: "librist", "{text}"),
    }
    0
}

/// librist's stats callback: keeps the report's JSON and frees the report.
unsafe extern "C" fn stats_report(arg: *mut c_void, stats: *const ffi::rist_stats) -> c_int {
    if stats.is_null() {
        return 0;
    }
    // SAFETY: `arg` is the `StatsSlot` the context keeps alive until after rist_destroy
    // (no callback runs later); `stats` is librist's report, valid until
    // rist_stats_free, its `stats_json` null or NUL-terminated.
    unsafe {
        let slot = &*arg.cast_const().cast::<StatsSlot>();
        let json = (*stats).stats_json;
        if !json.is_null() {
            let bytes = CStr::from_ptr(json).to_bytes();
            if bytes.len() <= MAX_STATS_JSON
                && let Ok(text) = std::str::from_utf8(bytes)
            {
                *locked(&slot.latest) = Some(text.trim_end().to_owned());
            }
        }
        ffi::rist_stats_free(stats);
    }
    0
}

/// The auth handler's connect callback: logs the peer and accepts it.
unsafe extern "C" fn peer_connected(
    arg: *mut c_void,
    conn_ip: *const c_char,
    conn_port: u16,
    _local_ip: *const c_char,
    local_port: u16,
    _peer: *mut ffi::rist_peer,
) -> c_int {
    // SAFETY: `arg` is the context's `Peers`, alive until after rist_destroy; `conn_ip`
    // is null or a NUL-terminated string valid for the call.
    let (peers, ip) = unsafe {
        let ip =
            (!conn_ip.is_null()).then(|| CStr::from_ptr(conn_ip).to_string_lossy().into_owned());
        (&*arg.cast_const().cast::<Peers>(), ip)
    };
    let addr = ip
        .as_deref()
        .and_then(|ip| ip.parse::<IpAddr>().ok())
        .map(|ip| SocketAddr::new(ip, conn_port));
    tracing::info!(input = %peers.name, peer = ?ip, port = conn_port, local_port, "RIST peer connected");
    if addr.is_some() {
        *locked(&peers.last) = addr;
    }
    0
}

/// The auth handler's disconnect callback: logs it.
unsafe extern "C" fn peer_disconnected(arg: *mut c_void, _peer: *mut ffi::rist_peer) -> c_int {
    // SAFETY: as in `peer_connected`.
    let peers = unsafe { &*arg.cast_const().cast::<Peers>() };
    tracing::info!(input = %peers.name, "RIST peer disconnected");
    0
}
