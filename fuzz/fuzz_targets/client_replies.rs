//! What a remote RTMP server sends to strom's pushes and pulls, and what a publish
//! handler answers:
//!
//! - the client side of the handshake (S0, S1, S2) with `rml_rtmp`'s `Handshake`, then
//!   the server's chunk stream through the client's chunk guard (`chunk_guard`,
//!   `GuardLimits::client`, with `amf_guard`) into `rml_rtmp`'s client session, driven as
//!   `workers/rtmp/src/client/session.rs` drives it: `connect` (with the auth query of
//!   `client::auth::Login`), then `publish` (a push, which then sends media) or `play` (a
//!   pull, whose media messages go through the FLV adapter as `pull/ingest.rs` does);
//!   rejections go to `Login::on_rejection`;
//! - the rejection description alone (the `?reason=needauth&...` challenges of Adobe and
//!   Limelight ingest servers) into `Login::on_rejection`;
//! - the publish handler's JSON answer (`auth::answer::verdict`).
//!
//! The input: a mode byte (bit 0 push or pull, bits 1-2 the auth schema, bits 3-7 the
//! read sizes), then the server's bytes from the first. The rtmp worker's files are
//! compiled by path (see `rtmp_server_input.rs`). Seeds: `fuzz/corpus/client_replies`
//! (strom's RTMP server session answering a push and a pull, Adobe and Limelight
//! challenges, handler answers: `cargo run --example make_seeds`).
#![no_main]
#![allow(dead_code)]

#[path = "../../workers/rtmp/src/amf_guard.rs"]
mod amf_guard;
#[path = "../../workers/rtmp/src/chunk_guard.rs"]
mod chunk_guard;

#[path = "../../workers/rtmp/src/client"]
mod client {
    pub mod auth;
}

#[path = "../../workers/rtmp/src/auth"]
mod auth {
    pub mod answer;
}

use bytes::Bytes;
use chunk_guard::{ChunkGuard, GuardLimits};
use client::auth::Login;
use libfuzzer_sys::fuzz_target;
use rml_rtmp::handshake::{Handshake, HandshakeProcessResult, PeerType};
use rml_rtmp::sessions::{
    ClientSession, ClientSessionConfig, ClientSessionEvent, ClientSessionResult, PublishRequestType,
};
use rml_rtmp::time::RtmpTimestamp;
use strom_ipc::rules::AuthSchema;
use strom_media::flv_adapter;

/// The client's limit on one message (`client/session.rs` `MAX_MESSAGE_BYTES`).
const MAX_MESSAGE_BYTES: u32 = 8 * 1024 * 1024;

struct Reads<'a> {
    rest: &'a [u8],
    state: u32,
    limit: usize,
}

impl<'a> Iterator for Reads<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        self.state = self.state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let len = (((self.state >> 16) as usize) % self.limit + 1).min(self.rest.len());
        let (read, rest) = self.rest.split_at(len);
        self.rest = rest;
        Some(read)
    }
}

/// The events of `results`; outbound packets are what a client would write (dropped).
fn events(results: Vec<ClientSessionResult>, into: &mut Vec<ClientSessionEvent>) {
    for result in results {
        if let ClientSessionResult::RaisedEvent(event) = result {
            into.push(event);
        }
    }
}

fn session(data: &[u8], push: bool, mut login: Option<Login>, limit: usize, seed: u8) {
    let mut reads = Reads {
        rest: data,
        state: u32::from(seed) | 1,
        limit,
    };
    let mut handshake = Handshake::new(PeerType::Client);
    if handshake.generate_outbound_p0_and_p1().is_err() {
        return;
    }
    let leftover = loop {
        let Some(read) = reads.next() else {
            return;
        };
        match handshake.process_bytes(read) {
            Ok(HandshakeProcessResult::InProgress { .. }) => {}
            Ok(HandshakeProcessResult::Completed {
                remaining_bytes, ..
            }) => break remaining_bytes,
            Err(_) => return,
        }
    };
    let mut config = ClientSessionConfig::new();
    config.tc_url = Some("rtmp://example.com:1935/live".to_owned());
    config.flash_version = "FMLE/3.0 (compatible; strom)".to_owned();
    config.chunk_size = 4096;
    let Ok((mut session, initial)) = ClientSession::new(config) else {
        return;
    };
    let mut pending = Vec::new();
    events(initial, &mut pending);
    let mut guard = ChunkGuard::new(GuardLimits::client(MAX_MESSAGE_BYTES));
    let app = match &login {
        Some(login) => format!("live?{}", login.first_query()),
        None => "live".to_owned(),
    };
    let Ok(request) = session.request_connection(app) else {
        return;
    };
    events(vec![request], &mut pending);
    let mut sent = 0u32;
    for read in std::iter::once(&leftover[..]).chain(reads) {
        if read.is_empty() {
            continue;
        }
        if guard.inspect(read).is_err() {
            return;
        }
        let Ok(results) = session.handle_input(read) else {
            return;
        };
        events(results, &mut pending);
        for event in std::mem::take(&mut pending) {
            match event {
                ClientSessionEvent::ConnectionRequestAccepted => {
                    let stream = "cam?publishsign=aWQ9MQ==".to_owned();
                    let request = if push {
                        session.request_publishing(stream, PublishRequestType::Live)
                    } else {
                        session.request_playback(stream)
                    };
                    if let Ok(request) = request {
                        events(vec![request], &mut pending);
                    }
                }
                ClientSessionEvent::ConnectionRequestRejected { description } => {
                    // A push answers the challenge on its next connection.
                    if let Some(login) = login.as_mut() {
                        let _ = login.on_rejection(&description);
                    }
                    return;
                }
                ClientSessionEvent::PublishRequestAccepted if push => {
                    let body = Bytes::from_static(&[0x17, 1, 0, 0, 0, 0, 0, 0, 1, 0x65]);
                    sent = sent.wrapping_add(40);
                    let _ = session.publish_video_data(body, RtmpTimestamp::new(sent), true);
                }
                ClientSessionEvent::VideoDataReceived { timestamp, data } => {
                    let _ = flv_adapter::video_frame(&data, i64::from(timestamp.value) * 90);
                }
                ClientSessionEvent::AudioDataReceived { timestamp, data } => {
                    let _ = flv_adapter::audio_frame(&data, i64::from(timestamp.value) * 90);
                }
                _ => {}
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let push = mode & 1 == 1;
    let schema = match (mode >> 1) & 3 {
        0 => AuthSchema::None,
        1 => AuthSchema::Native,
        2 => AuthSchema::Limelight,
        _ => AuthSchema::Akamai,
    };
    let login = || Login::new(schema, "bob", "secret", "live");
    let limit = if mode & 0x80 != 0 {
        16 * 1024
    } else {
        usize::from(mode >> 3).max(1)
    };
    session(rest, push, login(), limit, mode);

    // The same bytes as a rejection's description, and as the handler's answer.
    let text = String::from_utf8_lossy(rest);
    if let Some(mut login) = login()
        && let Ok(next) = login.on_rejection(&text)
    {
        assert!(next.starts_with("authmod="), "{next}");
        let _ = login.on_rejection(&text);
    }
    let _ = auth::answer::verdict(rest, 7);
});
