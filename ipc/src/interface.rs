//! A listening address as `rules.conf` names it, shared by the RTMP and RTSP settings
//! (a leaf: the rules modules of both protocols use it).

use serde::{Deserialize, Serialize};

/// A listening address; `ip` is an address or `*` for all interfaces.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RtmpInterface {
    pub ip: String,
    pub port: u16,
}
