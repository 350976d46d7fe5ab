//! SCTE-35 cues asked for through the API, turned into marker frames in the stream at
//! the producer, so every output (HLS, TS outputs, DVR, other workers over the bus)
//! sees them in timeline order.
//!
//! A cue waits for the stream's next video keyframe (any audio frame of a stream
//! without video) and goes out as a `splice_insert` data frame just before it, with
//! that keyframe's PTS as the splice time: the splice is frame accurate, and an HLS
//! packager cuts the segment right there. An out cue gets a new event id and, with a
//! duration, a break duration with auto-return; an in cue repeats the id of the open
//! break. An out may be asked for as a `time_signal` (a Provider Placement Opportunity
//! Start segmentation descriptor, its duration the segmentation duration); the in
//! that closes such a break is the matching end signal.

use bytes::Bytes;
use strom_media::ad_break;
use strom_media::frame::{Codec, Frame, SourceForm, Track};
use strom_media::scte35::{BreakDuration, SpliceInfo};

/// Markers a stream's status shows (the latest).
pub const MARKERS_SHOWN: usize = 10;

/// A marker's section as a stream status event (now).
pub fn event_of(section: &[u8]) -> strom_ipc::status::Scte35Event {
    use strom_media::scte35::SpliceCommand;
    let time = strom_worker_runtime::clock::unix_now();
    let parsed = SpliceInfo::parse(section).ok();
    let (kind, event_id, duration_secs) = match parsed.as_ref().map(|i| &i.command) {
        Some(SpliceCommand::Insert(insert)) => (
            if insert.out_of_network { "out" } else { "in" },
            Some(insert.event_id),
            insert
                .break_duration
                .map(|d| d.duration as f64 / TICKS as f64),
        ),
        Some(SpliceCommand::TimeSignal(_)) => {
            let edge = parsed
                .as_ref()
                .and_then(strom_media::ad_break::break_signal);
            (
                "time_signal",
                edge.map(|e| e.event_id),
                edge.and_then(|e| e.duration)
                    .map(|d| d as f64 / TICKS as f64),
            )
        }
        Some(SpliceCommand::Null) => ("splice_null", None, None),
        Some(_) => ("other", None, None),
        None => ("unparsable", None, None),
    };
    strom_ipc::status::Scte35Event {
        time,
        kind: kind.to_owned(),
        event_id,
        duration_secs,
    }
}

/// Cues waiting for a keyframe at most (more are refused until one goes out).
pub const MAX_PENDING: usize = 8;
/// 90 kHz ticks per second.
const TICKS: u64 = 90_000;

/// What the API asks for (the same as `strom_ipc::messages::Scte35Cue`, kept free of
/// the IPC crate's types in the stream's state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cue {
    Out {
        duration_secs: Option<u32>,
        time_signal: bool,
    },
    In,
}

/// Why a cue was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CueError {
    #[error("the stream is not live")]
    NotLive,
    #[error("too many cues are waiting for a keyframe")]
    TooMany,
}

/// The cues of one stream: waiting ones and the break that is open.
#[derive(Debug, Default)]
pub struct Cues {
    pending: Vec<Cue>,
    next_event_id: u32,
    /// The last out cue (its event id and form), until its in.
    open_break: Option<ad_break::BreakSignal>,
}

impl Cues {
    pub fn request(&mut self, cue: Cue) -> Result<(), CueError> {
        if self.pending.len() >= MAX_PENDING {
            return Err(CueError::TooMany);
        }
        self.pending.push(cue);
        Ok(())
    }

    /// Marker frames to publish before `frame`, when it is a place to splice and cues
    /// wait (else none).
    pub fn markers_before(&mut self, frame: &Frame, has_video: bool) -> Vec<Frame> {
        let splices_here = match frame.track {
            Track::Video => frame.keyframe && frame.is_sample(),
            Track::Audio => !has_video && frame.is_sample(),
            Track::Data => false,
        };
        if !splices_here || self.pending.is_empty() {
            return Vec::new();
        }
        let splice_time = u64::try_from(frame.pts).ok();
        std::mem::take(&mut self.pending)
            .into_iter()
            .map(|cue| {
                let section = match cue {
                    Cue::Out {
                        duration_secs,
                        time_signal,
                    } => {
                        self.next_event_id = self.next_event_id.wrapping_add(1);
                        let id = self.next_event_id;
                        let ticks = duration_secs.map(|secs| u64::from(secs) * TICKS);
                        let info = if time_signal {
                            ad_break::time_signal(
                                id,
                                ad_break::PLACEMENT_OPPORTUNITY_START,
                                splice_time,
                                ticks,
                            )
                        } else {
                            let break_duration = ticks.map(|duration| BreakDuration {
                                auto_return: true,
                                duration,
                            });
                            SpliceInfo::insert(id, true, splice_time, break_duration)
                        };
                        self.open_break = ad_break::break_signal(&info);
                        info.encode()
                    }
                    // The in closes the open break in the form it opened.
                    Cue::In => match self.open_break.take() {
                        Some(open) => ad_break::closing_section(&open, splice_time),
                        None => SpliceInfo::insert(self.next_event_id, false, splice_time, None)
                            .encode(),
                    },
                };
                Frame {
                    track: Track::Data,
                    codec: Codec::Scte35,
                    dts: frame.dts,
                    pts: frame.pts,
                    keyframe: false,
                    config: false,
                    control: false,
                    payload: Bytes::from(section),
                    form: SourceForm::Neutral,
                }
            })
            .collect()
    }
}

/// A worker's answer to `WorkerRequest::Scte35` for a stream it produces: the cue is
/// scheduled when the rules enable SCTE-35 for the stream (`AdInsertion` with
/// `time_sync` `scte35`) and it is live here.
pub fn answer(
    hub: &crate::Hub,
    rules: &strom_ipc::rules::Rules,
    app: &str,
    stream: &str,
    cue: strom_ipc::messages::Scte35Cue,
) -> strom_ipc::messages::WorkerReply {
    use strom_ipc::FailureKind;
    use strom_ipc::messages::{Scte35Cue, WorkerReply};
    if !rules.scte35_enabled(app, stream) {
        return WorkerReply::error(
            FailureKind::Refused,
            format!("{app}/{stream} is not configured for SCTE-35 (AdInsertion time_sync scte35)"),
        );
    }
    let cue = match cue {
        Scte35Cue::Out {
            duration_secs,
            time_signal,
        } => Cue::Out {
            duration_secs,
            time_signal,
        },
        Scte35Cue::In => Cue::In,
    };
    let key = crate::StreamKey::new(app, stream);
    match hub.cue(&key, cue) {
        Ok(()) => {
            tracing::info!(stream = %key, ?cue, "SCTE-35 cue scheduled for the next keyframe");
            WorkerReply::Done
        }
        Err(CueError::NotLive) => {
            WorkerReply::error(FailureKind::NotFound, format!("{key} is not live"))
        }
        Err(e) => WorkerReply::error(FailureKind::Refused, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn video(keyframe: bool, pts: i64) -> Frame {
        Frame {
            track: Track::Video,
            codec: Codec::H264,
            dts: pts - 3000,
            pts,
            keyframe,
            config: false,
            control: false,
            payload: Bytes::from_static(&[0, 0, 0, 1, 0x65]),
            form: SourceForm::Neutral,
        }
    }

    #[test]
    fn cues_go_out_before_the_next_keyframe_with_its_pts() {
        let mut cues = Cues::default();
        cues.request(Cue::Out {
            duration_secs: Some(10),
            time_signal: false,
        })
        .unwrap();
        assert!(cues.markers_before(&video(false, 9000), true).is_empty());
        let markers = cues.markers_before(&video(true, 12_000), true);
        assert_eq!(markers.len(), 1);
        assert_eq!((markers[0].dts, markers[0].pts), (9000, 12_000));
        let out = SpliceInfo::parse(&markers[0].payload).unwrap();
        let insert = out.splice_insert().unwrap();
        assert!(insert.out_of_network);
        assert_eq!(insert.splice_time, Some(12_000));
        assert_eq!(
            insert.break_duration,
            Some(BreakDuration {
                auto_return: true,
                duration: 900_000
            })
        );
        cues.request(Cue::In).unwrap();
        let back = cues.markers_before(&video(true, 99_000), true);
        let back = SpliceInfo::parse(&back[0].payload).unwrap();
        let back = back.splice_insert().unwrap();
        assert!(!back.out_of_network);
        assert_eq!(
            back.event_id, insert.event_id,
            "the in repeats the out's id"
        );
        for _ in 0..MAX_PENDING {
            cues.request(Cue::In).unwrap();
        }
        assert_eq!(cues.request(Cue::In), Err(CueError::TooMany));
    }

    #[test]
    fn a_time_signal_out_is_closed_by_its_end_signal() {
        use strom_media::ad_break::break_signal;
        let mut cues = Cues::default();
        cues.request(Cue::Out {
            duration_secs: Some(30),
            time_signal: true,
        })
        .unwrap();
        let out = cues.markers_before(&video(true, 12_000), true);
        let out = SpliceInfo::parse(&out[0].payload).unwrap();
        assert_eq!(
            out.command,
            strom_media::scte35::SpliceCommand::TimeSignal(Some(12_000))
        );
        let opened = break_signal(&out).unwrap();
        assert!(opened.out);
        assert_eq!(opened.duration, Some(30 * TICKS));
        assert_eq!(opened.segmentation_type, Some(0x34));
        cues.request(Cue::In).unwrap();
        let back = cues.markers_before(&video(true, 99_000), true);
        let closed = break_signal(&SpliceInfo::parse(&back[0].payload).unwrap()).unwrap();
        assert_eq!(
            (closed.out, closed.event_id, closed.segmentation_type),
            (false, opened.event_id, Some(0x35))
        );
    }
}
