//! What a DESCRIBE needs: the player joins the stream in the hub (which starts a relay
//! when another worker produces it) and reads the configuration frames the hub gives
//! every new reader first; they become the SDP's media descriptions. The first media
//! frame read is kept for PLAY, so the player still starts at the keyframe.

use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use strom_media::frame::{Codec, Track};
use strom_media::rtp::sdp::{self, MediaDescription};
use strom_stream::{FrameReceiver, Reader, ReaderPlace, SharedFrame};
use tokio::time::Instant;

/// Payload types of the dynamic range (RFC 3551), one per track.
const VIDEO_PAYLOAD_TYPE: u8 = 96;
const AUDIO_PAYLOAD_TYPE: u8 = 97;

/// A track the SDP offers.
#[derive(Debug, Clone)]
pub struct TrackPlan {
    pub codec: Codec,
    /// The configuration record the description was built from.
    pub config: Bytes,
    pub media: MediaDescription,
}

/// A player that joined a stream and knows its tracks.
pub struct Described {
    /// The player's place among the stream's readers (and the stream it reads).
    pub place: ReaderPlace,
    pub frames: FrameReceiver,
    pub tracks: Vec<TrackPlan>,
    /// The first media frame, read while waiting for the configuration.
    pub first: Option<Arc<SharedFrame>>,
}

/// The media description of a configuration frame RTSP can carry.
fn plan(frame: &SharedFrame) -> Option<TrackPlan> {
    let frame = &frame.frame;
    let media = match frame.codec {
        Codec::H264 => sdp::h264(&frame.payload, VIDEO_PAYLOAD_TYPE),
        Codec::H265 => sdp::h265(&frame.payload, VIDEO_PAYLOAD_TYPE),
        Codec::Aac => sdp::aac(&frame.payload, AUDIO_PAYLOAD_TYPE),
        _ => return None,
    };
    match media {
        Ok(media) => Some(TrackPlan {
            codec: frame.codec,
            config: frame.payload.clone(),
            media,
        }),
        Err(error) => {
            tracing::warn!(codec = ?frame.codec, %error, "configuration RTSP cannot describe");
            None
        }
    }
}

/// Waits up to `wait` for the tracks of the stream `reader` joined; `None` (and the
/// reader gone again) when none came.
pub async fn describe(reader: Reader<FrameReceiver>, wait: Duration) -> Option<Described> {
    let Reader {
        mut frames, place, ..
    } = reader;
    let deadline = Instant::now() + wait;
    let mut video: Option<TrackPlan> = None;
    let mut audio: Option<TrackPlan> = None;
    let mut first = None;
    while let Ok(Some(frame)) = tokio::time::timeout_at(deadline, frames.recv()).await {
        let is_media = matches!(frame.frame.track, Track::Video | Track::Audio);
        if !is_media || frame.frame.control {
            continue;
        }
        if frame.frame.config {
            match frame.frame.track {
                Track::Video => video = plan(&frame).or(video),
                _ => audio = plan(&frame).or(audio),
            }
            continue;
        }
        first = Some(frame);
        break;
    }
    let tracks: Vec<TrackPlan> = video.into_iter().chain(audio).collect();
    if tracks.is_empty() {
        return None;
    }
    Some(Described {
        place,
        frames,
        tracks,
        first,
    })
}
