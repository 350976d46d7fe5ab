//! Icecast listeners: `GET /<app>/<stream>/icecast.stream` answers the stream's audio
//! (AAC as ADTS, or MP3) as one endless response per listener, for streams whose
//! delivery outputs include `ICECAST`, whatever brought the stream in.
//!
//! ICY: the response carries `icy-name`, `icy-description`, `icy-genre`, `icy-br`,
//! `icy-url` and `icy-pub`; a listener that sent `Icy-MetaData: 1` also gets
//! `icy-metaint` and, every [`METAINT`] bytes of audio, a metadata block: the current
//! `StreamTitle='...';StreamUrl='...';` in the first block and whenever it changed, an
//! empty block (one zero byte) otherwise. Listeners without it get the audio alone.
//! Listeners are sessions of type `ICECAST`, bounded and ended like `mpegts.stream`
//! viewers, and start with a burst so players start at once: the latest
//! `icecast_burst_size` bytes of an audio-only stream, else the audio of the current GOP
//! ([`crate::ts_http`]).
//!
//! The title: `icecast_metadata` puts it into the stream at its producer as a timed
//! metadata frame (`strom_stream::titles`), which reaches this worker's hub in timeline
//! order. A listener's [`IcyWriter`] takes it from the frames it reads (in band, so the
//! block comes with the audio it belongs to). [`Titles`] answers the latest title of a
//! stream (for `icecast_stream_info` and pushes): the one in the hub's stream state, or
//! one set here directly ([`Titles::set`]) for a stream this worker only relays,
//! whichever changed last. [`Titles::set`] on a stream this worker produces (an Icecast
//! source's own title updates) puts the title into the stream like `icecast_metadata`.

use bytes::BytesMut;
use std::collections::HashMap;
use std::sync::Mutex;
use strom_media::aac::write_adts_header;
use strom_media::frame::{Codec, Track};
use strom_media::id3::StreamTitle;
use strom_media::track_builder::TrackBuilder;
use strom_stream::{Hub, StreamKey};
use strom_worker_runtime::sync::locked;

/// The file name that asks for Icecast.
pub const FILE_NAME: &str = "icecast.stream";
/// Audio bytes between two metadata blocks (`icy-metaint`), as Icecast's default.
pub const METAINT: usize = 16_000;
/// The longest title text kept (a metadata block holds at most 255 × 16 bytes).
const MAX_TITLE_BYTES: usize = strom_media::id3::MAX_TEXT_BYTES;
/// Streams whose title is kept at most; past it, the title of another stream is
/// forgotten for a new one (titles are set only for live streams).
const MAX_TITLES: usize = 10_000;

/// The current title of each stream, with a version readers compare to know when to
/// send it again: the latest of the hub's timed metadata and [`Titles::set`].
#[derive(Default)]
pub struct Titles {
    by_stream: Mutex<HashMap<StreamKey, Entry>>,
    /// Where timed metadata frames of the streams land (none: only [`Titles::set`]).
    hub: Option<Hub>,
}

#[derive(Debug, Default)]
struct Entry {
    /// The latest of both sources.
    current: Title,
    /// What [`Titles::set`] said last (its own version).
    set_here: Title,
    /// The hub's title when last looked at.
    from_hub: Option<StreamTitle>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Title {
    pub title: String,
    pub url: String,
    pub version: u64,
}

impl Titles {
    /// Titles of the streams of `hub` (their timed metadata), and those set here.
    pub fn with_hub(hub: Hub) -> Self {
        Self {
            by_stream: Mutex::default(),
            hub: Some(hub),
        }
    }

    /// Sets the title of `key`: into the stream when this worker produces it (an Icecast
    /// source: timed metadata, so every output gets it, [`strom_stream::titles`]); for
    /// a stream it only relays, for this worker's listeners and pushes.
    pub fn set(&self, key: &StreamKey, title: &str, url: &str) {
        if let Some(hub) = &self.hub
            && strom_stream::titles::set_title(hub, key, title, url).is_ok()
        {
            return;
        }
        let mut map = locked(&self.by_stream);
        if map.len() >= MAX_TITLES
            && !map.contains_key(key)
            && let Some(other) = map.keys().next().cloned()
        {
            map.remove(&other);
        }
        let entry = map.entry(key.clone()).or_default();
        entry.set_here = Title {
            title: clipped(title),
            url: clipped(url),
            version: entry.set_here.version + 1,
        };
        entry.current = Title {
            version: entry.current.version + 1,
            ..entry.set_here.clone()
        };
    }

    /// The latest title of `key` (see the type).
    pub fn get(&self, key: &StreamKey) -> Title {
        let from_hub = self
            .hub
            .as_ref()
            .and_then(|hub| hub.get(key))
            .and_then(|stream| stream.timed_metadata())
            .and_then(|frame| strom_media::timed_metadata::title_of(&frame));
        let mut map = locked(&self.by_stream);
        if let Some(from_hub) = from_hub {
            let known = map.contains_key(key);
            if !known && map.len() >= MAX_TITLES {
                return Title {
                    title: from_hub.title,
                    url: from_hub.url,
                    version: 1,
                };
            }
            let entry = map.entry(key.clone()).or_default();
            if entry.from_hub.as_ref() != Some(&from_hub) {
                entry.current = Title {
                    title: from_hub.title.clone(),
                    url: from_hub.url.clone(),
                    version: entry.current.version + 1,
                };
                entry.from_hub = Some(from_hub);
            }
        }
        map.get(key)
            .map(|entry| entry.current.clone())
            .unwrap_or_default()
    }

    /// The title [`Titles::set`] gave `key` (versioned on its own), for listeners,
    /// which take the stream's own titles from its frames.
    pub fn set_here(&self, key: &StreamKey) -> Title {
        locked(&self.by_stream)
            .get(key)
            .map(|entry| entry.set_here.clone())
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
    /// The title blocks say: from the stream's timed metadata frames, or given.
    title: Title,
    /// The version of the given title applied last.
    given_version: u64,
}

impl IcyWriter {
    pub fn new(metadata: bool) -> Self {
        Self {
            builder: TrackBuilder::default(),
            metadata: metadata.then_some(0),
            sent_version: None,
            title: Title::default(),
            given_version: 0,
        }
    }

    /// Appends `frame`'s audio (nothing for other frames) with the metadata blocks due.
    /// A timed metadata frame changes the title of the next block; so does `given`
    /// (a title set for this worker's listeners only, [`Titles::set_here`]) when its
    /// version changed.
    pub fn push(&mut self, frame: &strom_media::frame::Frame, given: &Title, out: &mut BytesMut) {
        if given.version != self.given_version {
            self.given_version = given.version;
            self.change_title(&given.title, &given.url);
        }
        if let Some(title) = strom_media::timed_metadata::title_of(frame) {
            self.change_title(&title.title, &title.url);
            return;
        }
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
                let Some(aac) = self
                    .builder
                    .tracks
                    .audio
                    .as_ref()
                    .and_then(|t| t.config.aac())
                else {
                    return;
                };
                let mut header = [0; 7];
                if write_adts_header(aac, sample.data.len(), &mut header).is_err() {
                    return;
                }
                audio.extend_from_slice(&header);
                audio.extend_from_slice(&sample.data);
            }
            _ => {}
        }
        self.write(&audio, out);
    }

    fn change_title(&mut self, title: &str, url: &str) {
        let (title, url) = (clipped(title), clipped(url));
        if (self.title.title.as_str(), self.title.url.as_str()) != (title.as_str(), url.as_str()) {
            self.title = Title {
                title,
                url,
                version: self.title.version + 1,
            };
        }
    }

    fn write(&mut self, mut audio: &[u8], out: &mut BytesMut) {
        let title = &self.title;
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
        writer.change_title("a", "");
        let title = writer.title.clone();
        let mut out = BytesMut::new();
        writer.write(&vec![0xaa; METAINT * 2 + 10], &mut out);
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
        plain.change_title("a", "");
        plain.write(&vec![0xaa; METAINT * 2], &mut out);
        assert!(
            out.iter().all(|&b| b == 0xaa),
            "no blocks without Icy-MetaData"
        );
        assert_eq!(content_type("mp4a.40.2"), Some("audio/aac"));
        assert_eq!(content_type("mp4a.40.34"), Some("audio/mpeg"));
        assert_eq!(content_type("opus"), None);
    }

    fn mp3(len: usize) -> strom_media::frame::Frame {
        strom_media::frame::Frame {
            track: Track::Audio,
            codec: Codec::Mp3,
            dts: 0,
            pts: 0,
            keyframe: false,
            config: false,
            control: false,
            payload: bytes::Bytes::from(vec![0xaa; len]),
            form: strom_media::frame::SourceForm::Neutral,
        }
    }

    fn title_frame(title: &str) -> strom_media::frame::Frame {
        let title = StreamTitle {
            title: title.into(),
            url: "http://u".into(),
        };
        strom_media::timed_metadata::frame(&title, 0)
    }

    /// Text of the metadata blocks in `out` (every METAINT bytes of audio).
    fn blocks(mut out: &[u8]) -> Vec<String> {
        let mut found = Vec::new();
        while out.len() > METAINT {
            let len = usize::from(out[METAINT]) * 16;
            let text = &out[METAINT + 1..(METAINT + 1 + len).min(out.len())];
            found.push(
                String::from_utf8_lossy(text)
                    .trim_end_matches('\0')
                    .to_owned(),
            );
            out = &out[(METAINT + 1 + len).min(out.len())..];
        }
        found
    }

    #[test]
    fn titles_come_in_band_from_timed_metadata_frames() {
        let mut writer = IcyWriter::new(true);
        let mut out = BytesMut::new();
        let none = Title::default();
        writer.push(&title_frame("Song A"), &none, &mut out);
        assert!(out.is_empty(), "a title frame has no audio");
        writer.push(&mp3(METAINT), &none, &mut out);
        writer.push(&title_frame("Song A"), &none, &mut out);
        writer.push(&mp3(METAINT), &none, &mut out);
        writer.push(&title_frame("Song B"), &none, &mut out);
        writer.push(&mp3(METAINT), &none, &mut out);
        // A title given for this worker's listeners only.
        let given = Title {
            title: "Given".into(),
            url: String::new(),
            version: 1,
        };
        writer.push(&mp3(METAINT), &given, &mut out);
        assert_eq!(
            blocks(&out),
            [
                "StreamTitle='Song A';StreamUrl='http://u';",
                "",
                "StreamTitle='Song B';StreamUrl='http://u';",
                "StreamTitle='Given';StreamUrl='';",
            ]
        );
    }

    #[test]
    fn titles_answer_the_latest_of_the_hub_and_set() {
        let hub = Hub::default();
        let titles = Titles::with_hub(hub.clone());
        let key = StreamKey::new("live", "radio");
        assert_eq!(titles.get(&key), Title::default());
        let publishing = hub
            .own_publisher(
                &key,
                strom_stream::PublisherInfo {
                    session_id: 1,
                    ip: String::new(),
                    publish_time: 0,
                    query: String::new(),
                    source_url: None,
                    relayed_from: Some("rtmp".into()),
                    protocol: "ICECAST",
                    admitted_id: None,
                },
            )
            .unwrap();
        publishing.publish(title_frame("From the stream"));
        let first = titles.get(&key);
        assert_eq!(first.title, "From the stream");
        assert_eq!(titles.get(&key).version, first.version, "unchanged");
        titles.set(&key, "Set here", "");
        assert_eq!(titles.get(&key).title, "Set here");
        assert_eq!(titles.set_here(&key).title, "Set here");
        publishing.publish(title_frame("Next"));
        assert_eq!(titles.get(&key).title, "Next");

        // A stream produced here: the title goes into the stream.
        let own = StreamKey::new("live", "own");
        let _source = hub
            .own_publisher(
                &own,
                strom_stream::PublisherInfo {
                    session_id: 2,
                    ip: String::new(),
                    publish_time: 0,
                    query: String::new(),
                    source_url: None,
                    relayed_from: None,
                    protocol: "ICECAST",
                    admitted_id: None,
                },
            )
            .unwrap();
        titles.set(&own, "In the stream", "");
        let frame = hub.get(&own).unwrap().timed_metadata().unwrap();
        let carried = strom_media::timed_metadata::title_of(&frame).unwrap();
        assert_eq!(carried.title, "In the stream");
        assert_eq!(titles.get(&own).title, "In the stream");
        assert_eq!(titles.set_here(&own), Title::default());
    }
}
