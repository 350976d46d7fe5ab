//! Sans-io media code shared by the workers: no sockets, no tokio.
//!
//! Protocol cores live here so they can be unit-tested and fuzzed on bytes alone.
//! [`codec_string`] names codecs the way playlists and the management API do.

pub mod codec_string;
