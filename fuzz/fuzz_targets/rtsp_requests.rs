//! What an RTSP client sends to the rtsp worker: the byte stream of requests and
//! interleaved frames through the sans-io parser (`workers/rtsp/src/message.rs`), fed in
//! pieces of the sizes the input chooses with a small request limit, then each request's
//! URI, `Transport` and `Authorization` headers through `workers/rtsp/src/transport.rs`
//! and `auth.rs`; the same bytes as a publisher's announced SDP
//! (`strom_media::rtp::announce`), as a publisher's RTP packets (each behind a length
//! byte) through the H.264, H.265 and AAC depacketizers, and as an access unit through
//! the RTP packetizers, whose payloads must stay within the packet size. The same
//! stream, as a pulled source's answers, through the relay's framing-aware limit
//! (`workers/rtsp/src/pull/message_limit.rs`) in the same pieces.
//!
//! The input: a byte of piece size, then the stream. Files compiled by path, as the
//! RTMP targets do.
#![no_main]
#![allow(dead_code)]

#[path = "../../workers/rtsp/src/auth.rs"]
mod auth;
#[path = "../../workers/rtsp/src/message.rs"]
mod message;
#[path = "../../workers/rtsp/src/pull/message_limit.rs"]
mod message_limit;
#[path = "../../workers/rtsp/src/transport.rs"]
mod transport;

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use message::Incoming;
use strom_media::rtp;

fuzz_target!(|data: &[u8]| {
    let Some((&piece, stream)) = data.split_first() else {
        return;
    };
    let piece = usize::from(piece).max(1);
    let mut buffer = BytesMut::new();
    'feed: for chunk in stream.chunks(piece) {
        buffer.extend_from_slice(chunk);
        loop {
            match message::parse(&mut buffer, 2048) {
                Ok(Some(Incoming::Request(request))) => {
                    let _ = transport::target(&request.uri);
                    if let Some(header) = request.header("Transport") {
                        let _ = transport::choose(header, 0);
                    }
                    let _ = auth::check(
                        request.header("Authorization"),
                        &request.method,
                        "n",
                        "u",
                        "p",
                    );
                    assert!(request.body.len() <= 2048);
                }
                Ok(Some(Incoming::Interleaved { payload, .. })) => assert!(payload.len() <= 0xffff),
                Ok(None) => break,
                Err(_) => break 'feed,
            }
        }
        assert!(
            buffer.len() <= 2048 + 4 + 0xffff,
            "the parser holds more than one message"
        );
    }

    // A source's answers: the limit never panics, and a stream it lets through holds no
    // head longer than its limit.
    let mut limit = message_limit::MessageLimit::default();
    for chunk in stream.chunks(piece) {
        if limit.feed(chunk).is_err() {
            break;
        }
    }

    let _ = rtp::announce::parse(&String::from_utf8_lossy(stream));
    let mut h264 = rtp::depacketize::VideoDepacketizer::h264();
    let mut h265 = rtp::depacketize::VideoDepacketizer::h265();
    let mut aac = rtp::depacketize::AacDepacketizer::default();
    let mut rest = stream;
    while let Some((&len, tail)) = rest.split_first() {
        let len = usize::from(len).min(tail.len());
        let packet = Bytes::copy_from_slice(&tail[..len]);
        rest = &tail[len..];
        if let Ok(packet) = rtp::packet::parse(&packet) {
            let _ = h264.push(&packet);
            let _ = h265.push(&packet);
            let _ = aac.push(&packet);
        }
    }

    let sample = Bytes::copy_from_slice(stream);
    for payloads in [
        rtp::packetize_h264(&sample, 4, &[], 200).ok(),
        rtp::packetize_h265(&sample, 2, &[], 200).ok(),
        rtp::packetize_aac(&sample, 200),
    ]
    .into_iter()
    .flatten()
    {
        assert!(payloads.iter().all(|p| p.len() <= 200));
    }
});
