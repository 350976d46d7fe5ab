//! The output stream of a playout: the publisher guard of its `app/stream` in the hub,
//! the [`Timeline`] every source is moved onto, and the codec configuration readers
//! have. A source's configuration goes out at its first frame, and only when it differs
//! from what readers have; then, if media went out already, the stream starts a new
//! timeline (a new generation: HLS marks a discontinuity there and nowhere else).

use super::timeline::Timeline;
use std::sync::Arc;
use strom_media::frame::{Codec, Frame, SourceForm, Track};
use strom_stream::{Publishing, Stream};

pub struct Output {
    publishing: Publishing,
    timeline: Timeline,
    video_config: Option<Frame>,
    audio_config: Option<Frame>,
    /// The configuration of the source that began last, sent at its first frame.
    next_configs: Vec<Frame>,
    sent_media: bool,
}

impl Output {
    pub fn new(publishing: Publishing) -> Self {
        Self {
            publishing,
            timeline: Timeline::default(),
            video_config: None,
            audio_config: None,
            next_configs: Vec::new(),
            sent_media: false,
        }
    }

    pub fn stream(&self) -> &Arc<Stream> {
        self.publishing.stream()
    }

    /// A new source follows, with these configuration frames.
    pub fn begin(&mut self, configs: Vec<Frame>) {
        let video = configs.iter().any(|c| c.track == Track::Video);
        self.timeline.begin(video);
        self.next_configs = configs;
    }

    /// A frame of the current source.
    pub fn push(&mut self, frame: Frame) {
        if frame.config {
            if self.timeline.starting() {
                self.next_configs.retain(|c| c.track != frame.track);
                self.next_configs.push(frame);
            } else {
                // The source changed its codec parameters while it plays.
                let dts = self.timeline.next_start();
                self.apply_configs(vec![frame], dts);
            }
            return;
        }
        // Stream metadata and in-track signals describe the source, not the output.
        if frame.control || frame.codec == Codec::AmfData {
            return;
        }
        let Some(mapped) = self.timeline.map(frame) else {
            return;
        };
        if mapped.first {
            let configs = std::mem::take(&mut self.next_configs);
            self.apply_configs(configs, mapped.frame.dts);
        }
        self.publishing.publish(Frame {
            form: SourceForm::Neutral,
            ..mapped.frame
        });
        self.sent_media = true;
    }

    fn apply_configs(&mut self, configs: Vec<Frame>, dts: i64) {
        let mut changed = false;
        for config in configs {
            let slot = match config.track {
                Track::Video => &mut self.video_config,
                Track::Audio => &mut self.audio_config,
                Track::Data => continue,
            };
            let same = slot
                .as_ref()
                .is_some_and(|c| c.codec == config.codec && c.payload == config.payload);
            if !same {
                *slot = Some(config);
                changed = true;
            }
        }
        if !changed {
            return;
        }
        if self.sent_media {
            tracing::info!(stream = %self.publishing.key(), "codec parameters changed: the output starts a new timeline");
            self.publishing.restart_timeline();
        }
        for config in [&self.video_config, &self.audio_config]
            .into_iter()
            .flatten()
        {
            self.publishing.publish(Frame {
                dts,
                pts: dts,
                form: SourceForm::Neutral,
                ..config.clone()
            });
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use bytes::Bytes;
    use strom_stream::{Hub, PublisherInfo, StreamKey};

    fn config(track: Track, codec: Codec, record: &'static [u8]) -> Frame {
        Frame {
            config: true,
            ..Frame::neutral(track, codec, 0, Bytes::from_static(record))
        }
    }

    fn keyframe(dts: i64) -> Frame {
        Frame {
            keyframe: true,
            ..Frame::neutral(Track::Video, Codec::H264, dts, Bytes::from_static(b"k"))
        }
    }

    /// Only a change of codec parameters starts a new timeline (generation), and the
    /// new configuration goes out before the new source's first frame.
    #[tokio::test]
    async fn a_new_timeline_only_where_codec_parameters_change() {
        let hub = Hub::default();
        let key = StreamKey::new("tv", "one");
        let publisher = PublisherInfo {
            session_id: 7,
            ip: String::new(),
            publish_time: 0,
            query: String::new(),
            source_url: None,
            relayed_from: None,
            protocol: "PLAYLIST",
            admitted_id: None,
        };
        let mut output = Output::new(hub.own_publisher(&key, publisher).unwrap());
        let mut joined = hub.own_reader(&key, strom_stream::Queue, 1);
        let reader = &mut joined.frames;
        let avc_a = config(Track::Video, Codec::H264, b"\x01a");
        let avc_b = config(Track::Video, Codec::H264, b"\x01b");
        // First source, then one with the same parameters, then another with new ones.
        for (configs, base) in [(&avc_a, 500), (&avc_a, 9_000), (&avc_b, 100)] {
            output.begin(vec![configs.clone()]);
            output.push(keyframe(base));
            output.push(keyframe(base + 3_600));
        }
        let mut seen = Vec::new();
        while let Ok(shared) = reader.try_recv() {
            let frame = &shared.frame;
            seen.push((
                shared.generation,
                frame.config,
                frame.payload.clone(),
                frame.dts,
            ));
        }
        let generations: Vec<u32> = seen.iter().map(|s| s.0).collect();
        assert_eq!(
            generations.iter().filter(|&&g| g != generations[0]).count(),
            3
        );
        let configs: Vec<_> = seen.iter().filter(|s| s.1).map(|s| s.2.clone()).collect();
        assert_eq!(configs, [&b"\x01a"[..], &b"\x01b"[..]]);
        let times: Vec<i64> = seen.iter().filter(|s| !s.1).map(|s| s.3).collect();
        assert_eq!(times, [0, 3_600, 7_200, 10_800, 14_400, 18_000]);
        // The new configuration opens the new generation.
        let first_new = seen.iter().position(|s| s.0 != generations[0]).unwrap();
        assert!(seen[first_new].1);
    }
}
