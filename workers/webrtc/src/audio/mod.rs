//! Audio between the codecs WebRTC speaks and the ones the other outputs speak: AAC to
//! Opus once per played stream, Opus to AAC for WHIP publishers.
