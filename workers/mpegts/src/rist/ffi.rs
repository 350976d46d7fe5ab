//! Hand-written declarations of the part of librist 0.2.7's C API (`<librist/librist.h>`,
//! Debian package `librist-dev`) the wrapper uses: context, peer, data, stats, logging
//! and auth-handler functions, and the `rist_data_block` / `rist_stats` /
//! `rist_logging_settings` structs. No bindgen: the layout check
//! (`csrc/rist_layout.c`, compared in `tests.rs`) proves sizes, offsets and constant
//! values against the installed header.

#![allow(non_camel_case_types, dead_code)]

use libc::{FILE, c_char, c_int, c_void};

/// Opaque `struct rist_ctx`.
#[repr(C)]
pub struct rist_ctx {
    _private: [u8; 0],
}
/// Opaque `struct rist_peer`.
#[repr(C)]
pub struct rist_peer {
    _private: [u8; 0],
}
/// Opaque `struct rist_peer_config` (only handled by pointer: parsed and freed by
/// librist).
#[repr(C)]
pub struct rist_peer_config {
    _private: [u8; 0],
}
/// Opaque `struct rist_ref`.
#[repr(C)]
pub struct rist_ref {
    _private: [u8; 0],
}

// enum rist_profile
pub const RIST_PROFILE_SIMPLE: c_int = 0;
pub const RIST_PROFILE_MAIN: c_int = 1;

// enum rist_log_level
pub const RIST_LOG_DISABLE: c_int = -1;
pub const RIST_LOG_ERROR: c_int = 3;
pub const RIST_LOG_WARN: c_int = 4;
pub const RIST_LOG_NOTICE: c_int = 5;
pub const RIST_LOG_INFO: c_int = 6;
pub const RIST_LOG_DEBUG: c_int = 7;

// enum rist_stats_type
pub const RIST_STATS_SENDER_PEER: c_int = 0;
pub const RIST_STATS_RECEIVER_FLOW: c_int = 1;

/// `struct rist_data_block`.
#[repr(C)]
#[derive(Debug)]
pub struct rist_data_block {
    pub payload: *const c_void,
    pub payload_len: usize,
    pub ts_ntp: u64,
    pub virt_src_port: u16,
    pub virt_dst_port: u16,
    pub peer: *mut rist_peer,
    pub flow_id: u32,
    pub seq: u64,
    pub flags: u32,
    pub r#ref: *mut rist_ref,
}

/// `struct rist_stats`: only the header is declared; the union that follows
/// (`stats`) is never read from Rust, so the struct is only handled by pointer.
#[repr(C)]
pub struct rist_stats {
    pub json_size: u32,
    pub stats_json: *mut c_char,
    pub version: u16,
    pub stats_type: c_int,
}

pub type rist_log_cb =
    unsafe extern "C" fn(arg: *mut c_void, level: c_int, msg: *const c_char) -> c_int;
pub type rist_stats_cb = unsafe extern "C" fn(arg: *mut c_void, stats: *const rist_stats) -> c_int;
pub type rist_auth_connect_cb = unsafe extern "C" fn(
    arg: *mut c_void,
    conn_ip: *const c_char,
    conn_port: u16,
    local_ip: *const c_char,
    local_port: u16,
    peer: *mut rist_peer,
) -> c_int;
pub type rist_auth_disconnect_cb =
    unsafe extern "C" fn(arg: *mut c_void, peer: *mut rist_peer) -> c_int;

/// `struct rist_logging_settings`.
#[repr(C)]
pub struct rist_logging_settings {
    pub log_level: c_int,
    pub log_cb: Option<rist_log_cb>,
    pub log_cb_arg: *mut c_void,
    pub log_socket: c_int,
    pub log_stream: *mut FILE,
}

#[link(name = "rist")]
unsafe extern "C" {
    pub fn rist_receiver_create(
        ctx: *mut *mut rist_ctx,
        profile: c_int,
        logging_settings: *mut rist_logging_settings,
    ) -> c_int;
    pub fn rist_sender_create(
        ctx: *mut *mut rist_ctx,
        profile: c_int,
        flow_id: u32,
        logging_settings: *mut rist_logging_settings,
    ) -> c_int;
    pub fn rist_parse_address2(
        url: *const c_char,
        peer_config: *mut *mut rist_peer_config,
    ) -> c_int;
    pub fn rist_peer_config_free2(peer_config: *mut *mut rist_peer_config) -> c_int;
    pub fn rist_peer_create(
        ctx: *mut rist_ctx,
        peer: *mut *mut rist_peer,
        config: *const rist_peer_config,
    ) -> c_int;
    pub fn rist_start(ctx: *mut rist_ctx) -> c_int;
    pub fn rist_destroy(ctx: *mut rist_ctx) -> c_int;
    pub fn rist_receiver_data_read2(
        ctx: *mut rist_ctx,
        data_block: *mut *mut rist_data_block,
        timeout: c_int,
    ) -> c_int;
    pub fn rist_receiver_data_block_free2(block: *mut *mut rist_data_block);
    pub fn rist_sender_data_write(ctx: *mut rist_ctx, data_block: *const rist_data_block) -> c_int;
    pub fn rist_stats_callback_set(
        ctx: *mut rist_ctx,
        statsinterval: c_int,
        stats_cb: Option<rist_stats_cb>,
        arg: *mut c_void,
    ) -> c_int;
    pub fn rist_stats_free(stats_container: *const rist_stats) -> c_int;
    pub fn rist_auth_handler_set(
        ctx: *mut rist_ctx,
        connect_cb: Option<rist_auth_connect_cb>,
        disconnect_cb: Option<rist_auth_disconnect_cb>,
        arg: *mut c_void,
    ) -> c_int;
    pub fn rist_logging_set(
        logging_settings: *mut *mut rist_logging_settings,
        log_level: c_int,
        log_cb: Option<rist_log_cb>,
        cb_arg: *mut c_void,
        address: *mut c_char,
        logfp: *mut FILE,
    ) -> c_int;
    pub fn rist_logging_set_global(logging_settings: *mut rist_logging_settings) -> c_int;
    pub fn rist_logging_settings_free2(logging_settings: *mut *mut rist_logging_settings) -> c_int;
}
