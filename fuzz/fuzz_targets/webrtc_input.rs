//! What WebRTC clients send to the webrtc worker:
//! - the first bytes on the ICE port, through the STUN router
//!   (`workers/webrtc/src/stun.rs`, compiled by path) that picks a session by ufrag;
//! - an SDP offer (a WHEP or WHIP POST body) through str0m's parser and, when it parses,
//!   through an ICE-lite `Rtc` configured as the worker configures one (H.264 and Opus);
//! - datagrams of a live session (STUN, DTLS, SRTP, whatever the input holds) into an
//!   `Rtc` that accepted a real Chromium WHEP offer, with its outputs and timers drained;
//! - a WHIP publisher's access unit through the Annex B converter
//!   (`strom_media::annexb_h264::AnnexbH264`);
//! - what a viewer on strom's own RTP path sends back (`rtp_send.rs`, `srtp_send.rs`,
//!   `dtls_keys.rs`, compiled by path): the bytes as an SRTCP packet, and the bytes sealed
//!   by the viewer's end of the keys, so that the RTCP parser (NACK, PLI, FIR) and the
//!   resends from the history see any plaintext.
//!
//! The input: a selector byte, then the bytes (datagrams: each behind a length byte).
#![no_main]
#![allow(dead_code)]

#[path = "../../workers/webrtc/src/dtls_keys.rs"]
mod dtls_keys;
#[path = "../../workers/webrtc/src/rtp_send.rs"]
mod rtp_send;
#[path = "../../workers/webrtc/src/srtp_send.rs"]
mod srtp_send;
#[path = "../../workers/webrtc/src/stun.rs"]
mod stun;

use libfuzzer_sys::fuzz_target;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use str0m::change::SdpOffer;
use str0m::net::{Protocol, Receive};
use str0m::{Candidate, Input, Output, Rtc};

/// A real offer from Chromium's `RTCPeerConnection` (video and audio, recvonly).
const CHROME_OFFER: &str = include_str!("webrtc_offer.sdp");

fn ice_lite() -> Rtc {
    Rtc::builder()
        .set_ice_lite(true)
        .clear_codecs()
        .enable_h264(true)
        .enable_opus(true, false)
        .build(Instant::now())
}

fn local() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 8189))
}

/// Polls `rtc` until it only waits for a timer; `false` when it failed.
fn drain(rtc: &mut Rtc) -> bool {
    for _ in 0..1000 {
        match rtc.poll_output() {
            Ok(Output::Timeout(_)) => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    true
}

fn answer(sdp: &str) -> Option<Rtc> {
    let offer = SdpOffer::from_sdp_string(sdp).ok()?;
    let mut rtc = ice_lite();
    rtc.add_local_candidate(Candidate::host(local(), "udp").ok()?);
    rtc.sdp_api().accept_offer(offer).ok()?;
    Some(rtc)
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    match selector % 5 {
        0 => {
            let _ = stun::is_stun(rest);
            let _ = stun::local_ufrag(rest);
        }
        1 => {
            if let Ok(sdp) = std::str::from_utf8(rest) {
                if let Some(mut rtc) = answer(sdp) {
                    drain(&mut rtc);
                }
            }
        }
        2 => {
            let Some(mut rtc) = answer(CHROME_OFFER) else {
                return;
            };
            let peer = SocketAddr::from(([127, 0, 0, 1], 50_000));
            let mut now = Instant::now();
            let mut datagrams = rest;
            while let Some((&len, tail)) = datagrams.split_first() {
                let len = usize::from(len).min(tail.len());
                let (datagram, tail) = tail.split_at(len);
                datagrams = tail;
                if let Ok(receive) = Receive::new(Protocol::Udp, peer, local(), datagram) {
                    let _ = rtc.handle_input(Input::Receive(now, receive));
                }
                if !drain(&mut rtc) {
                    return;
                }
                now += Duration::from_millis(20);
                let _ = rtc.handle_input(Input::Timeout(now));
                if !drain(&mut rtc) {
                    return;
                }
            }
        }
        3 => own_rtp_path(rest),
        _ => {
            let mut converter = strom_media::annexb_h264::AnnexbH264::default();
            for access_unit in rest.split(|&b| b == 0xff) {
                let converted = converter.convert(access_unit);
                if let Some((sample, _)) = converted.sample {
                    assert!(!sample.is_empty());
                }
            }
        }
    }
});

/// A viewer's own RTP path after a few frames, fed `rtcp` as the viewer's SRTCP.
fn own_rtp_path(rtcp: &[u8]) {
    use rtp_send::{Kind, RtpSender, Track};
    use std::sync::Arc;
    let keys = |active| dtls_keys::Keys {
        material: (0..56).collect(),
        profile: str0m::crypto::dtls::SrtpProfile::AEAD_AES_128_GCM,
        active,
    };
    let (Some(server), Some(mut viewer)) = (
        srtp_send::SrtpSession::new(&keys(false)),
        srtp_send::SrtpSession::new(&keys(true)),
    ) else {
        return;
    };
    let mut sender = RtpSender::new(
        server,
        Some(Track::new(9, 96, 90_000, Some((4, "0")), true)),
        Some(Track::new(10, 111, 48_000, Some((4, "1")), false)),
        Duration::from_secs(1),
    );
    let payload: Arc<[u8]> = Arc::from(vec![1u8; 100]);
    let now = Instant::now();
    for index in 0xfff0..0x1_0010u64 {
        sender.write(
            Kind::Video,
            index,
            index as u32,
            index % 3 == 0,
            &payload,
            now,
        );
    }
    sender.report_if_due(now + Duration::from_secs(2));
    let _ = sender.receive_rtcp(rtcp);
    if let Some(sealed) = viewer.protect_rtcp(rtcp) {
        assert!(
            sender.receive_rtcp(&sealed),
            "the viewer's own packet authenticates"
        );
    }
}
