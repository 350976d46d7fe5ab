//! Audio between the codecs WebRTC speaks and the ones the other outputs speak: AAC to
//! Opus once per played stream, Opus to AAC for WHIP publishers.

// Placeholder until the transcoders land (replaced by the webrtc-audio branch).
#[derive(Debug, Clone)]
pub struct EncodedAudio {
    pub data: bytes::Bytes,
    pub pts: i64,
    pub samples: u32,
}

#[derive(Debug, thiserror::Error)]
#[error("audio transcoding is not available")]
pub struct AudioError;

pub struct AacToOpus;
impl AacToOpus {
    pub fn new(_asc: &[u8]) -> Result<Self, AudioError> {
        Err(AudioError)
    }
    pub fn push(&mut self, _aac: &[u8], _pts: i64) -> Result<Vec<EncodedAudio>, AudioError> {
        Err(AudioError)
    }
    pub fn channels(&self) -> u8 {
        2
    }
}

pub struct OpusToAac;
impl OpusToAac {
    pub fn new(_channels: u8) -> Result<Self, AudioError> {
        Err(AudioError)
    }
    pub fn audio_specific_config(&self) -> bytes::Bytes {
        bytes::Bytes::new()
    }
    pub fn push(&mut self, _opus: &[u8], _pts: i64) -> Result<Vec<EncodedAudio>, AudioError> {
        Err(AudioError)
    }
}
