//! The codecs the DVR archive cannot hold, said out loud: the archive's segments are
//! muxed for playback as MPEG-TS and fMP4 from H.264, H.265, AAC and MP3 samples only,
//! so a track in another codec (Opus, AC-3, AV1, VP9) is not recorded. Each such codec is logged once per recording as a warning, and a stream
//! none of whose tracks can be recorded leaves no archive behind (the recorder opens it
//! at the first recordable frame), instead of an archive that stays empty.

use strom_media::frame::{Codec, Frame, Track};
use strom_stream::StreamKey;

/// The codecs the archive records.
const RECORDED: [Codec; 4] = [Codec::H264, Codec::H265, Codec::Aac, Codec::Mp3];

/// The codecs of one recording already warned about.
#[derive(Default)]
pub struct Unrecorded {
    warned: Vec<Codec>,
}

impl Unrecorded {
    /// Whether `frame` is audio or video the archive records; warns (once per codec)
    /// about audio and video it cannot. Data frames are neither recorded nor warned of.
    pub fn recordable(&mut self, key: &StreamKey, frame: &Frame) -> bool {
        if RECORDED.contains(&frame.codec) {
            return true;
        }
        if matches!(frame.track, Track::Audio | Track::Video) && !self.warned.contains(&frame.codec)
        {
            self.warned.push(frame.codec);
            tracing::warn!(
                stream = %key,
                codec = ?frame.codec,
                track = ?frame.track,
                "DVR cannot record this codec (only H.264, H.265, AAC and MP3): the track is not recorded"
            );
        }
        false
    }
}
