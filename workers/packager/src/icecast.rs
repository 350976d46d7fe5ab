//! Icecast listeners: `GET /<app>/<stream>/icecast.stream` answers the stream's audio
//! (AAC as ADTS, or MP3) as one endless response per listener, for streams whose
//! delivery outputs include `ICECAST`, whatever brought the stream in.
//!
//! ICY: the response carries `icy-name`, `icy-description`, `icy-genre`, `icy-br`,
//! `icy-url` and `icy-pub`; a listener that sent `Icy-MetaData: 1` also gets
//! `icy-metaint` and, every [`METAINT`] bytes of audio, a metadata block: the current
//! `StreamTitle='...';StreamUrl='...';` in the first block and whenever it changed, an
//! empty block (one zero byte) otherwise. Listeners without it get the audio alone.
//! The title comes from `icecast_metadata` ([`Titles`]). Listeners are sessions of type
//! `ICECAST`, bounded and ended like `mpegts.stream` viewers, and start with the audio of
//! the stream's current GOP (a burst, so players start at once).

use bytes::BytesMut;
use std::collections::HashMap;
use std::sync::Mutex;
use strom_media::aac::write_adts_header;
use strom_media::frame::{Codec, Track};
use strom_media::track_builder::TrackBuilder;
use strom_stream::StreamKey;
use strom_worker_runtime::sync::locked;

/// The file name that asks for Icecast.
pub const FILE_NAME: &str = "icecast.stream";
/// Audio bytes between two metadata blocks (`icy-metaint`), as Icecast's default.
pub const METAINT: usize = 16_000;
/// The longest title text kept (a metadata block holds at most 255 × 16 bytes).
const MAX_TITLE_BYTES: usize = 1024;
/// Streams whose title is kept at most; past it, the title of another stream is
/// forgotten for a new one (titles are set only for live streams).
const MAX_TITLES: usize = 10_000;

/// The current title of each stream (`icecast_metadata`), with a version listeners
/// compare to know when to send it again.
#[derive(Debug, Default)]
pub struct Titles {
    by_stream: Mutex<HashMap<StreamKey, Title>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Title {
    pub title: String,
    pub url: String,
    pub version: u64,
}

impl Titles {
    pub fn set(&self, key: &StreamKey, title: &str, url: &str) {
        let mut map = locked(&self.by_stream);
        if map.len() >= MAX_TITLES
            && !map.contains_key(key)
            && let Some(other) = map.keys().next().cloned()
        {
            map.remove(&other);
        }
        let entry = map.entry(key.clone()).or_default();
        entry.title = clipped(title);
        entry.url = clipped(url);
        entry.version += 1;
    }

    pub fn get(&self, key: &StreamKey) -> Title {
        locked(&self.by_stream)
            .get(key)
            .cloned()
            .unwrap_or_default()
    }
}

fn clipped(text: &str) -> String {
    let mut end = text.len().min(MAX_TITLE_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// One ICY metadata block: a length byte (in 16-byte units) and the text, zero-padded.
pub fn metadata_block(title: &Title) -> Vec<u8> {
    // A quote would end the value early: players read up to `';`.
    let text = format!(
        "StreamTitle='{}';StreamUrl='{}';",
        title.title.replace('\'', "`"),
        title.url.replace('\'', "`")
    );
    let units = text.len().div_ceil(16).min(255);
    let mut block = Vec::with_capacity(1 + units * 16);
    block.push(units as u8);
    block.extend_from_slice(text.as_bytes().get(..units * 16).unwrap_or(text.as_bytes()));
    block.resize(1 + units * 16, 0);
    block
}

/// A listener's audio: frames to bytes (ADTS for AAC), with metadata blocks every
/// [`METAINT`] bytes when the listener asked for them.
pub struct IcyWriter {
    builder: TrackBuilder,
    /// Metadata blocks wanted; the audio bytes since the last block.
    metadata: Option<usize>,
    /// The title version sent last (`None`: nothing sent yet).
    sent_version: Option<u64>,
}

impl IcyWriter {
    pub fn new(metadata: bool) -> Self {
        Self {
            builder: TrackBuilder::default(),
            metadata: metadata.then_some(0),
            sent_version: None,
        }
    }

    /// Appends `frame`'s audio (nothing for other frames) with the metadata blocks due.
    pub fn push(&mut self, frame: &strom_media::frame::Frame, title: &Title, out: &mut BytesMut) {
        if frame.track != Track::Audio {
            return;
        }
        let mut audio = Vec::new();
        match frame.codec {
            Codec::Mp3 if frame.is_sample() => audio.extend_from_slice(&frame.payload),
            Codec::Aac => {
                let Some(sample) = self.builder.accept_frame(frame.clone()) else {
                    return;
                };
                let Some(track) = &self.builder.tracks.audio else {
                    return;
                };
                let mut header = [0; 7];
                if write_adts_header(&track.config, sample.data.len(), &mut header).is_err() {
                    return;
                }
                audio.extend_from_slice(&header);
                audio.extend_from_slice(&sample.data);
            }
            _ => {}
        }
        self.write(&audio, title, out);
    }

    fn write(&mut self, mut audio: &[u8], title: &Title, out: &mut BytesMut) {
        let Some(since_block) = self.metadata.as_mut() else {
            out.extend_from_slice(audio);
            return;
        };
        while !audio.is_empty() {
            let room = METAINT - *since_block;
            let (now, later) = audio.split_at(audio.len().min(room));
            out.extend_from_slice(now);
            *since_block += now.len();
            audio = later;
            if *since_block == METAINT {
                *since_block = 0;
                if self.sent_version != Some(title.version) {
                    self.sent_version = Some(title.version);
                    out.extend_from_slice(&metadata_block(title));
                } else {
                    out.extend_from_slice(&[0]);
                }
            }
        }
    }
}

/// The content type of a stream's audio codec string (`mp4a.40.*` AAC, `mp4a.40.34` MP3).
pub fn content_type(acodec: &str) -> Option<&'static str> {
    match acodec {
        "mp4a.40.34" => Some("audio/mpeg"),
        aac if aac.starts_with("mp4a.40.") => Some("audio/aac"),
        _ => None,
    }
}

/// What `icecast_stream_info` answers for a stream without an Icecast source.
pub fn info(key: &StreamKey, bitrate_bps: u64, title: &Title) -> strom_ipc::status::IcecastInfo {
    strom_ipc::status::IcecastInfo {
        name: key.to_string(),
        description: String::new(),
        genre: String::new(),
        bitrate_kbps: u32::try_from(bitrate_bps / 1000).unwrap_or(u32::MAX),
        stream_title: title.title.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_blocks_pad_to_sixteen_and_escape_quotes() {
        let title = Title {
            title: "It's live".into(),
            url: String::new(),
            version: 1,
        };
        let block = metadata_block(&title);
        let text = "StreamTitle='It`s live';StreamUrl='';";
        assert_eq!(usize::from(block[0]) * 16, block.len() - 1);
        assert_eq!(&block[1..1 + text.len()], text.as_bytes());
        assert!(block[1 + text.len()..].iter().all(|&b| b == 0));
    }

    #[test]
    fn blocks_come_every_metaint_bytes_with_the_title_once() {
        let mut writer = IcyWriter::new(true);
        let title = Title {
            title: "a".into(),
            url: String::new(),
            version: 3,
        };
        let mut out = BytesMut::new();
        writer.write(&vec![0xaa; METAINT * 2 + 10], &title, &mut out);
        let block = metadata_block(&title);
        assert_eq!(out.len(), METAINT * 2 + 10 + block.len() + 1);
        assert_eq!(&out[METAINT..METAINT + block.len()], &block[..]);
        assert_eq!(
            out[METAINT * 2 + block.len()],
            0,
            "unchanged: an empty block"
        );
        let mut plain = IcyWriter::new(false);
        let mut out = BytesMut::new();
        plain.write(&vec![0xaa; METAINT * 2], &title, &mut out);
        assert!(
            out.iter().all(|&b| b == 0xaa),
            "no blocks without Icy-MetaData"
        );
        assert_eq!(content_type("mp4a.40.2"), Some("audio/aac"));
        assert_eq!(content_type("mp4a.40.34"), Some("audio/mpeg"));
        assert_eq!(content_type("opus"), None);
    }
}
