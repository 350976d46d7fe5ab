//! The HTTP delivery worker (process kind `packager`): HLS (MPEG-TS and fMP4), LL-HLS
//! and DASH delivery over HTTP and HTTPS.
//!
//! Streams announced by the supervisor's registry are subscribed on the media bus and
//! packaged ([`packaging`]); segments live in the [`store`] (mirrored to disk for
//! restarts); [`http`] serves them with viewer sessions ([`viewers`]); LL-HLS streams
//! also get partial segments ([`parts`]); [`tls`] holds the swappable certificate;
//! [`dvr_playback`] serves the DVR archives as HLS.

mod dash;
mod dvr_playback;
mod edge_demand;
mod http;
mod http2;
mod icecast;
mod icecast_push;
mod json_error;
mod media_clock;
mod packaging;
mod part_cutter;
mod parts;
mod prefixed;
mod preflight;
mod service;
mod source;
mod store;
pub mod tls;
mod ts_http;
mod ts_viewers;
mod viewers;
mod webrtc_proxy;

pub use service::{DeliveryWorker, start};

/// What the fuzz targets (`fuzz/`) drive: parsers of request and on-disk bytes, not an
/// API.
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::http::parse_range;
    pub use crate::http2::exercise as exercise_http2;
    pub use crate::store::{
        Limits, SegmentFacts, Store, exercise_restore, parse_index, stream_dir,
    };
}
