//! One RTSP session with a pulled source: DESCRIBE, SETUP of its first H.264/H.265 and
//! AAC streams (TCP interleaved or UDP, as the rule says), PLAY, then frames from
//! retina's demuxer (MP4 framing: length-prefixed NAL units, `avcC`/`hvcC` and
//! AudioSpecificConfig as extra data) published into the hub. The stream is claimed at
//! the first frame and released when the session ends. An `rtsps://` source is reached
//! through a [`SourceRelay`] (TCP interleaved only), as is an `rtsp://` source with RTP
//! over TCP, so that what a source sends is bounded. A bad packet is skipped, not fatal
//! ([`super::packet_errors`]); video decode times are derived as for RTSP publishers.

use super::packet_errors::{SkippedPackets, recoverable};
use super::relay::{RelayError, SourceRelay};
use crate::publish::{frame, reordered};
use crate::shared::Shared;
use bytes::Bytes;
use futures_util::StreamExt;
use retina::client::{
    Credentials, PlayOptions, Session, SessionOptions, SetupOptions, TcpTransportOptions,
    Transport, UdpTransportOptions,
};
use retina::codec::{CodecItem, FrameFormat, ParametersRef};
use std::time::Duration;
use strom_ipc::rules::{PullSource, RtspTransport};
use strom_media::decode_time::DecodeTimes;
use strom_media::frame::{Codec, Track};
use strom_stream::{PublisherInfo, Publishing, StreamKey};
use strom_worker_runtime::clock::unix_now;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Bound on connecting (DESCRIBE, SETUP, PLAY).
const CONNECT_LIMIT: Duration = Duration::from_secs(15);
/// A source that sends no frame for this long is dropped and reconnected.
const QUIET_LIMIT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum PullError {
    #[error("bad URL: {0}")]
    Url(String),
    #[error("{0}")]
    Relay(#[from] RelayError),
    #[error("{0}")]
    Rtsp(#[from] retina::Error),
    #[error("connecting took longer than {0:?}")]
    ConnectTimeout(Duration),
    #[error("the source offers no H.264, H.265 or AAC stream")]
    NoTracks,
    #[error("the source sent no media for {0:?}")]
    Quiet(Duration),
    #[error("the source ended the session")]
    Ended,
    #[error("the source was cut off: it sent {0}")]
    TooLarge(String),
    #[error("{0} is already being published")]
    Taken(StreamKey),
}

/// `url` without its user and password, for logs and `source_url`.
pub fn without_credentials(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.to_string()
        }
        Err(_) => url.to_owned(),
    }
}

fn decoded(text: &str) -> String {
    strom_worker_runtime::play_signature::percent_decode(text)
}

/// A frame as retina hands it: its stream, time, keyframe flag, whether the stream's
/// parameters changed, payload.
struct Received {
    index: usize,
    time: i64,
    keyframe: bool,
    new_parameters: bool,
    payload: Bytes,
}

/// Pulls `source` into `key` once; `Ok` when stopped (by the pull supervisor, also when
/// an on-demand stream lost its players).
pub async fn pull(
    shared: &Shared,
    source: &PullSource,
    key: &StreamKey,
    stop: &CancellationToken,
) -> Result<(), PullError> {
    let mut url = url::Url::parse(&source.url).map_err(|e| PullError::Url(e.to_string()))?;
    // retina takes credentials apart from the URL.
    let creds = (!url.username().is_empty()).then(|| Credentials {
        username: decoded(url.username()),
        password: decoded(url.password().unwrap_or("")),
    });
    let _ = url.set_username("");
    let _ = url.set_password(None);
    let shown = url.to_string();
    let tls = url.scheme() == "rtsps";
    let transport = match source.rtsp_transport {
        RtspTransport::Udp if !tls => Transport::Udp(UdpTransportOptions::default()),
        // Over TLS the media stays inside the connection.
        _ => Transport::Tcp(TcpTransportOptions::default()),
    };
    // RTP over UDP needs retina to see the source's own address: only those connect
    // directly (see `relay`).
    let relayed = tls || matches!(transport, Transport::Tcp(_));
    let deadline = Instant::now() + CONNECT_LIMIT;
    let open_relay = async {
        match relayed {
            true => SourceRelay::open(&url).await.map(Some),
            false => Ok(None),
        }
    };
    // The relay lives as long as the session.
    let relay = tokio::select! {
        () = stop.cancelled() => return Ok(()),
        opened = tokio::time::timeout_at(deadline, open_relay) => {
            opened.map_err(|_| PullError::ConnectTimeout(CONNECT_LIMIT))??
        }
    };
    if let Some(relay) = &relay {
        url = relay.local_url(&url).map_err(PullError::Url)?;
    }
    // retina only sees its connection close when the relay cut the source off: the
    // reason is the relay's.
    let cut_off = |error: PullError| {
        relay
            .as_ref()
            .and_then(SourceRelay::broken)
            .map_or(error, PullError::TooLarge)
    };
    let connect = async {
        let options = SessionOptions::default()
            .creds(creds)
            .user_agent("strom".to_owned());
        let mut session = Session::describe(url, options).await?;
        let mut tracks: Vec<(usize, Codec)> = Vec::new();
        for (index, stream) in session.streams().iter().enumerate() {
            let codec = match (stream.media(), stream.encoding_name()) {
                ("video", "h264") => Codec::H264,
                ("video", "h265") => Codec::H265,
                ("audio", "mpeg4-generic") => Codec::Aac,
                _ => continue,
            };
            // The first stream of each kind.
            if tracks.iter().any(|(_, c)| c.track() == codec.track()) {
                continue;
            }
            tracks.push((index, codec));
        }
        if tracks.is_empty() {
            return Err(PullError::NoTracks);
        }
        for (index, _) in &tracks {
            let setup = SetupOptions::default()
                .transport(transport.clone())
                .frame_format(FrameFormat::MP4);
            session.setup(*index, setup).await?;
        }
        let playing = session.play(PlayOptions::default()).await?;
        Ok((playing.demuxed()?, tracks))
    };
    let (mut demuxed, tracks) = tokio::select! {
        () = stop.cancelled() => return Ok(()),
        connected = tokio::time::timeout_at(deadline, connect) => {
            connected
                .map_err(|_| PullError::ConnectTimeout(CONNECT_LIMIT))?
                .map_err(cut_off)?
        }
    };
    tracing::info!(stream = %key, url = %shown, tracks = tracks.len(), "RTSP pull connected");
    let mut claim: Option<Publishing> = None;
    // Stream indexes whose configuration went out.
    let mut configured: Vec<usize> = Vec::new();
    // retina hands out presentation times; decode times for B-frame sources.
    let mut decode_times = DecodeTimes::default();
    let mut heard = Instant::now();
    let skipped = SkippedPackets::default();
    loop {
        let item = tokio::select! {
            () = stop.cancelled() => return Ok(()),
            item = tokio::time::timeout_at(heard + QUIET_LIMIT, demuxed.next()) => {
                item.map_err(|_| PullError::Quiet(QUIET_LIMIT))?
            }
        };
        let Some(item) = item else {
            return Err(PullError::Ended);
        };
        let item = match item {
            Err(error) if recoverable(&error) => {
                // A source that sends only bad packets still ends at QUIET_LIMIT:
                // `heard` follows frames only.
                skipped.report(key, &error);
                continue;
            }
            Err(error) => return Err(cut_off(error.into())),
            Ok(item) => item,
        };
        let received = match item {
            CodecItem::VideoFrame(frame) => Received {
                index: frame.stream_id(),
                time: ticks(frame.timestamp()),
                keyframe: frame.is_random_access_point(),
                new_parameters: frame.has_new_parameters(),
                payload: Bytes::from(frame.into_data()),
            },
            CodecItem::AudioFrame(frame) => Received {
                index: frame.stream_id(),
                time: ticks(frame.timestamp()),
                keyframe: false,
                new_parameters: false,
                payload: Bytes::copy_from_slice(frame.data()),
            },
            _ => continue,
        };
        heard = Instant::now();
        let Some((codec, track)) = tracks
            .iter()
            .find(|(i, _)| *i == received.index)
            .and_then(|(_, codec)| Some((*codec, codec.track()?)))
        else {
            continue;
        };
        if claim.is_none() {
            claim = Some(take(shared, key, source)?);
        }
        let Some(publishing) = claim.as_ref() else {
            continue;
        };
        if received.new_parameters || !configured.contains(&received.index) {
            let extra = demuxed.streams().get(received.index).and_then(|stream| {
                match stream.parameters() {
                    Some(ParametersRef::Video(video)) => {
                        Some(Bytes::copy_from_slice(video.extra_data()))
                    }
                    Some(ParametersRef::Audio(audio)) => {
                        Some(Bytes::copy_from_slice(audio.extra_data()))
                    }
                    _ => None,
                }
            });
            let Some(extra) = extra.filter(|e| !e.is_empty()) else {
                continue;
            };
            if track == Track::Video {
                decode_times.configure(codec, &extra);
            }
            publishing.publish(frame(track, codec, received.time, true, false, extra));
            configured.push(received.index);
        }
        let sample = frame(
            track,
            codec,
            received.time,
            false,
            received.keyframe,
            received.payload,
        );
        publishing.publish(match track {
            Track::Video => reordered(sample, &mut decode_times),
            _ => sample,
        });
    }
}

/// 90 kHz stream time of a retina timestamp (time since the session's start).
fn ticks(timestamp: retina::Timestamp) -> i64 {
    let rate = i128::from(timestamp.clock_rate().get());
    (i128::from(timestamp.elapsed()) * 90_000 / rate) as i64
}

fn take(shared: &Shared, key: &StreamKey, source: &PullSource) -> Result<Publishing, PullError> {
    let url = without_credentials(&source.url);
    let publisher = PublisherInfo {
        session_id: shared.ids.next_id(),
        ip: String::new(),
        publish_time: unix_now(),
        query: String::new(),
        source_url: Some(url.clone()),
        relayed_from: None,
        protocol: "RTSP",
        admitted_id: None,
    };
    let publishing = shared
        .hub
        .own_publisher(key, publisher)
        .map_err(|_| PullError::Taken(key.clone()))?;
    tracing::info!(stream = %key, %url, "pulled RTSP stream live");
    Ok(publishing)
}
