//! What an Icecast source says about itself in its `ice-*` headers (older encoders send
//! `icy-*`), kept for `icecast_stream_info` and the ICY headers of its listeners.

use strom_media::icy_request::SourceRequest;

/// The longest value kept of each header.
const MAX_VALUE_BYTES: usize = 256;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IceInfo {
    pub name: String,
    pub description: String,
    pub genre: String,
    pub url: String,
    /// `ice-bitrate` in kbit/s, when it is a number.
    pub bitrate_kbps: Option<u32>,
    pub public: bool,
    pub audio_info: String,
}

impl IceInfo {
    pub fn from_request(request: &SourceRequest) -> Self {
        let value = |name: &str| {
            let ice = format!("ice-{name}");
            let icy = format!("icy-{name}");
            clipped(
                request
                    .header(&ice)
                    .or_else(|| request.header(&icy))
                    .unwrap_or_default(),
            )
        };
        let public = value("public");
        Self {
            name: value("name"),
            description: value("description"),
            genre: value("genre"),
            url: value("url"),
            bitrate_kbps: value("bitrate").parse().ok(),
            public: public == "1" || public.eq_ignore_ascii_case("true"),
            audio_info: value("audio-info"),
        }
    }
}

impl IceInfo {
    /// Puts what the source said into `info` (`icecast_stream_info`), leaving the
    /// defaults where it said nothing.
    pub fn describe(&self, info: &mut strom_ipc::status::IcecastInfo) {
        if !self.name.is_empty() {
            info.name = self.name.clone();
        }
        info.description = self.description.clone();
        info.genre = self.genre.clone();
        if let Some(kbps) = self.bitrate_kbps {
            info.bitrate_kbps = kbps;
        }
    }
}

/// `text` cut to [`MAX_VALUE_BYTES`] at a character boundary.
pub fn clipped(text: &str) -> String {
    let mut end = text.len().min(MAX_VALUE_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use strom_media::icy_request::parse_head;

    #[test]
    fn ice_and_icy_headers_are_kept_and_clipped() {
        let long = "é".repeat(300);
        let head = format!(
            "PUT /live/radio HTTP/1.1\r\nice-name: Radio One\r\nicy-genre: Jazz\r\nice-bitrate: 128\r\nice-public: 1\r\nice-description: {long}\r\nice-audio-info: samplerate=44100\r\n\r\n"
        );
        let (request, _) = parse_head(head.as_bytes()).unwrap().unwrap();
        let info = IceInfo::from_request(&request);
        assert_eq!(info.name, "Radio One");
        assert_eq!(info.genre, "Jazz");
        assert_eq!(info.bitrate_kbps, Some(128));
        assert!(info.public);
        assert_eq!(info.audio_info, "samplerate=44100");
        assert!(info.description.len() <= MAX_VALUE_BYTES && info.description.starts_with('é'));
    }
}
