//! Timed metadata asked for through the API (`icecast_metadata`: a stream title and
//! URL), put into the stream at its producer as a `TimedMetadata` data frame holding an
//! ID3 tag, so every output sees it in timeline order: RTMP players as `onMetaData`
//! with `StreamTitle`, HLS as timed ID3, Icecast listeners in their ICY blocks, other
//! workers over the bus.
//!
//! The frame goes out at the stream's current time (its latest audio or video frame).
//! The stream keeps the latest one: readers that join later (players, bus subscribers,
//! the packager) get it right after the metadata and configuration frames, stamped at
//! the start of the GOP they start with. A new publisher starts without one.

use bytes::Bytes;
use strom_media::id3::{self, StreamTitle};

/// Why timed metadata was not taken: nobody publishes the stream here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the stream is not live")]
pub struct NotLive;

/// A worker's answer to `WorkerRequest::IcecastMetadata` for a stream it produces: the
/// title goes into the stream when a publisher of this worker (not a relay from another
/// worker) is on it; 404-style `NotFound` otherwise.
pub fn answer(
    hub: &crate::Hub,
    app: &str,
    stream: &str,
    title: &str,
    url: &str,
) -> strom_ipc::messages::WorkerReply {
    use strom_ipc::FailureKind;
    use strom_ipc::messages::WorkerReply;
    let key = crate::StreamKey::new(app, stream);
    match set_title(hub, &key, title, url) {
        Ok(()) => {
            tracing::info!(stream = %key, title = id3::clipped(title), "stream title put into the stream");
            WorkerReply::Done
        }
        Err(NotLive) => WorkerReply::error(FailureKind::NotFound, format!("{key} is not live")),
    }
}

/// Puts `title` and `url` (each cut to [`id3::MAX_TEXT_BYTES`]) into the stream `key`
/// when this hub produces it (a publisher that is not a relay).
pub fn set_title(
    hub: &crate::Hub,
    key: &crate::StreamKey,
    title: &str,
    url: &str,
) -> Result<(), NotLive> {
    let stream = hub
        .get(key)
        .filter(|s| s.publisher().is_some_and(|p| p.relayed_from.is_none()))
        .ok_or(NotLive)?;
    let tag = id3::encode(&StreamTitle {
        title: id3::clipped(title).to_owned(),
        url: id3::clipped(url).to_owned(),
    });
    stream.insert_timed_metadata(Bytes::from(tag))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Hub, PublisherInfo, StreamKey};
    use strom_media::frame::{Codec, Frame, SourceForm, Track};

    fn publisher(session_id: u64, relayed_from: Option<&str>) -> PublisherInfo {
        PublisherInfo {
            session_id,
            ip: String::new(),
            publish_time: 0,
            query: String::new(),
            source_url: None,
            relayed_from: relayed_from.map(str::to_owned),
            protocol: "RTMP",
            admitted_id: None,
        }
    }

    fn media(track: Track, ms: i64, keyframe: bool, config: bool) -> Frame {
        Frame {
            track,
            codec: if track == Track::Video {
                Codec::H264
            } else {
                Codec::Aac
            },
            dts: ms * 90,
            pts: ms * 90,
            keyframe,
            config,
            control: false,
            payload: Bytes::from_static(&[0, 0, 0, 1, 9]),
            form: SourceForm::Neutral,
        }
    }

    fn title_of(frame: &Frame) -> Option<String> {
        strom_media::timed_metadata::title_of(frame).map(|t| t.title)
    }

    #[test]
    fn titles_go_out_in_order_and_new_readers_get_the_latest_at_their_gop() {
        let hub = Hub::default();
        let key = StreamKey::new("live", "radio");
        assert_eq!(set_title(&hub, &key, "x", ""), Err(NotLive));
        let publishing = hub.claim(&key, publisher(1, None)).unwrap();
        let (mut early, _) = hub.subscribe(&key, 1);
        publishing.publish(media(Track::Video, 0, true, true));
        publishing.publish(media(Track::Video, 0, true, false));
        publishing.publish(media(Track::Audio, 20, false, false));
        set_title(&hub, &key, "Song A", "http://a").unwrap();
        publishing.publish(media(Track::Video, 40, false, false));
        let got: Vec<(Codec, i64)> = std::iter::from_fn(|| early.try_recv().ok())
            .map(|f| (f.frame.codec, f.frame.dts / 90))
            .collect();
        assert_eq!(
            got,
            [
                (Codec::H264, 0),
                (Codec::H264, 0),
                (Codec::Aac, 20),
                (Codec::TimedMetadata, 20),
                (Codec::H264, 40)
            ],
            "in timeline order, at the stream's current time"
        );

        // A reader joining later: after the configuration, stamped at its GOP's start.
        let (mut late, _) = hub.subscribe(&key, 2);
        let first: Vec<_> = std::iter::from_fn(|| late.try_recv().ok()).collect();
        assert!(first[0].frame.config);
        assert_eq!(title_of(&first[1].frame).as_deref(), Some("Song A"));
        assert_eq!(first[1].frame.dts, 0);
        assert!(first[2].frame.keyframe);
        // After the next keyframe, joiners get it at that keyframe.
        publishing.publish(media(Track::Video, 2000, true, false));
        let stream = hub.get(&key).unwrap();
        assert_eq!(stream.timed_metadata().map(|f| f.dts), Some(2000 * 90));
        let (mut later, _) = hub.subscribe(&key, 3);
        let frames: Vec<_> = std::iter::from_fn(|| later.try_recv().ok()).collect();
        assert_eq!(frames[1].frame.dts, 2000 * 90);
        assert_eq!(title_of(&frames[1].frame).as_deref(), Some("Song A"));

        // A new publisher starts without a title.
        drop(publishing);
        let _next = hub.claim(&key, publisher(2, None)).unwrap();
        assert!(hub.get(&key).unwrap().timed_metadata().is_none());
    }

    #[test]
    fn relayed_streams_take_no_title_here() {
        let hub = Hub::default();
        let key = StreamKey::new("live", "relayed");
        let _relay = hub.claim(&key, publisher(1, Some("rtmp"))).unwrap();
        assert_eq!(set_title(&hub, &key, "x", ""), Err(NotLive));
        let reply = answer(&hub, "live", "relayed", "x", "");
        assert!(reply.failure().is_some());
    }
}
