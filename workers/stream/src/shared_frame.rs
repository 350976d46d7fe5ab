//! A neutral frame as a hub hands it to every reader: shared by reference, tagged with
//! the publisher it came from, with room for the reading worker's rendering of it.
//!
//! A worker that re-emits frames in a container (the rtmp worker: an FLV tag body, then
//! RTMP chunks) renders each frame once for all its readers and keeps the result here,
//! so fan-out costs one rendering per frame, not one per reader. A producer that still
//! has the container bytes the frame was parsed from hands them in
//! ([`SharedFrame::with_container`]), so same-container delivery renders nothing.

use bytes::Bytes;
use std::sync::OnceLock;
use strom_media::frame::Frame;

#[derive(Debug)]
pub struct SharedFrame {
    pub frame: Frame,
    /// Identifies the publisher that produced the frame; a change marks a discontinuity.
    pub generation: u32,
    /// The frame in the reading worker's container (an FLV tag body in the rtmp worker).
    container: OnceLock<Bytes>,
    /// The container form framed for the wire (RTMP chunks on the common stream id).
    wire: OnceLock<Bytes>,
    /// The frame as live MPEG-TS packets (see [`crate::ts_feed`]), kept apart from
    /// `container` because a worker may deliver both forms.
    mpegts: OnceLock<Bytes>,
}

impl SharedFrame {
    pub fn new(frame: Frame, generation: u32) -> Self {
        Self {
            frame,
            generation,
            container: OnceLock::new(),
            wire: OnceLock::new(),
            mpegts: OnceLock::new(),
        }
    }

    /// A frame whose container form is already known (the bytes it was parsed from).
    pub fn with_container(frame: Frame, generation: u32, container: Bytes) -> Self {
        let shared = Self::new(frame, generation);
        let _ = shared.container.set(container);
        shared
    }

    /// The container form, rendered by `render` on first use; `None` when it cannot be
    /// rendered (then it is tried again by the next caller, which is rare and harmless).
    pub fn container(&self, render: impl FnOnce(&Frame) -> Option<Bytes>) -> Option<&Bytes> {
        if let Some(bytes) = self.container.get() {
            return Some(bytes);
        }
        let rendered = render(&self.frame)?;
        Some(self.container.get_or_init(|| rendered))
    }

    /// The wire form, built by `build` from the frame on first use.
    pub fn wire(&self, build: impl FnOnce(&Self) -> Option<Bytes>) -> Option<&Bytes> {
        if let Some(bytes) = self.wire.get() {
            return Some(bytes);
        }
        let built = build(self)?;
        Some(self.wire.get_or_init(|| built))
    }

    /// The frame as live MPEG-TS packets, rendered by `render` on first use.
    pub fn mpegts(&self, render: impl FnOnce(&Frame) -> Option<Bytes>) -> Option<&Bytes> {
        if let Some(bytes) = self.mpegts.get() {
            return Some(bytes);
        }
        let rendered = render(&self.frame)?;
        Some(self.mpegts.get_or_init(|| rendered))
    }

    /// Bytes the frame counts for in bandwidth figures: its container form when the
    /// producer gave one (what the publisher sent), else its payload.
    pub fn received_len(&self) -> usize {
        self.container
            .get()
            .map_or(self.frame.payload.len(), Bytes::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strom_media::frame::{Codec, SourceForm, Track};

    fn frame() -> Frame {
        Frame {
            track: Track::Audio,
            codec: Codec::Aac,
            dts: 0,
            pts: 0,
            keyframe: false,
            config: false,
            control: false,
            payload: Bytes::from_static(&[1, 2, 3]),
            form: SourceForm::Neutral,
        }
    }

    #[test]
    fn renderings_are_built_once_and_a_given_container_is_kept() {
        let shared = SharedFrame::new(frame(), 1);
        let mut renders = 0;
        for _ in 0..3 {
            let body = shared.container(|f| {
                renders += 1;
                Some(Bytes::from(f.payload.to_vec()))
            });
            assert_eq!(body.map(|b| b.as_ref()), Some(&[1u8, 2, 3][..]));
        }
        assert_eq!(renders, 1);
        assert!(shared.container(|_| None).is_some());
        let given = SharedFrame::with_container(frame(), 1, Bytes::from_static(b"original"));
        assert_eq!(given.container(|_| None).unwrap().as_ref(), b"original");
        assert_eq!(given.received_len(), 8);
        assert_eq!(SharedFrame::new(frame(), 1).received_len(), 3);
        let unrenderable = SharedFrame::new(frame(), 1);
        assert!(unrenderable.container(|_| None).is_none());
        assert!(unrenderable.wire(|_| None).is_none());
        assert!(unrenderable.mpegts(|_| None).is_none());
        let ts = unrenderable.mpegts(|_| Some(Bytes::from_static(b"ts")));
        assert_eq!(ts.map(|b| b.as_ref()), Some(&b"ts"[..]));
        assert_eq!(
            unrenderable.mpegts(|_| None).map(|b| b.as_ref()),
            Some(&b"ts"[..])
        );
        assert_eq!(
            unrenderable
                .wire(|_| Some(Bytes::from_static(b"w")))
                .unwrap()
                .as_ref(),
            b"w"
        );
    }
}
