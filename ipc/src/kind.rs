//! The worker kinds the supervisor runs, one process each.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One isolated worker process per protocol family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum WorkerKind {
    /// RTMP in and out, re-publishing, pulled RTMP sources.
    Rtmp,
    /// MPEG-TS over UDP, SRT and RIST inputs.
    Ingest,
    /// HLS and Icecast delivery over HTTP(S).
    Packager,
    /// Recording, MP4 export, archive cleanup.
    Dvr,
    /// RTSP players (appended: bincode encodes the variant index).
    Rtsp,
    /// WebRTC: WHEP players and WHIP publishers (ICE, DTLS, SRTP).
    WebRtc,
    /// Live transcoding: an ffmpeg process per transcoded stream, renditions published
    /// back into the streams.
    Transcoder,
}

impl WorkerKind {
    pub const ALL: [WorkerKind; 7] = [
        WorkerKind::Rtmp,
        WorkerKind::Ingest,
        WorkerKind::Packager,
        WorkerKind::Dvr,
        WorkerKind::Rtsp,
        WorkerKind::WebRtc,
        WorkerKind::Transcoder,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            WorkerKind::Rtmp => "rtmp",
            WorkerKind::Ingest => "ingest",
            WorkerKind::Packager => "packager",
            WorkerKind::Dvr => "dvr",
            WorkerKind::Rtsp => "rtsp",
            WorkerKind::WebRtc => "webrtc",
            WorkerKind::Transcoder => "transcoder",
        }
    }
}

impl WorkerKind {
    /// The worker's process name (`/proc/PID/comm`, what `ps`, `top` and `ss -p` show),
    /// which process monitoring matches on: at most 15 bytes.
    pub fn process_name(self) -> &'static std::ffi::CStr {
        match self {
            WorkerKind::Rtmp => c"strom-rtmp",
            WorkerKind::Ingest => c"strom-ingest",
            WorkerKind::Packager => c"strom-packager",
            WorkerKind::Dvr => c"strom-dvr",
            WorkerKind::Rtsp => c"strom-rtsp",
            WorkerKind::WebRtc => c"strom-webrtc",
            WorkerKind::Transcoder => c"strom-transcode",
        }
    }
}

impl fmt::Display for WorkerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The name given on the command line was not a worker kind.
#[derive(Debug, thiserror::Error)]
#[error(
    "unknown worker kind {0:?} (expected rtmp, ingest, packager, dvr, rtsp, webrtc or transcoder)"
)]
pub struct UnknownWorkerKind(pub String);

impl FromStr for WorkerKind {
    type Err = UnknownWorkerKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        WorkerKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == s)
            .ok_or_else(|| UnknownWorkerKind(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for kind in WorkerKind::ALL {
            assert_eq!(kind.as_str().parse::<WorkerKind>().unwrap(), kind);
        }
        assert!("http".parse::<WorkerKind>().is_err());
    }

    #[test]
    fn process_names_fit_the_kernel_limit_and_name_the_kind() {
        for kind in WorkerKind::ALL {
            let name = kind.process_name().to_str().unwrap();
            assert!(name.len() <= 15, "{name} would be cut");
            // `strom-transcoder` is 16 bytes: the transcoder is `strom-transcode`.
            let expected = format!("strom-{kind}").replace("transcoder", "transcode");
            assert_eq!(name, expected);
        }
    }
}
