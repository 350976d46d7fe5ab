//! The request head an Icecast source sends before its audio: `PUT /mount HTTP/1.1`
//! (Icecast 2.4+, ffmpeg's `icecast://`) or the legacy `SOURCE /mount HTTP/1.0` and
//! `SOURCE /mount ICE/1.0` (Shoutcast-era encoders, ffmpeg `-legacy_icecast 1`), then
//! header lines up to an empty line. HTTP parsers refuse `ICE/1.0` and the `SOURCE`
//! method, hence this one.
//!
//! Bounded: a head longer than [`MAX_HEAD`] or with more than [`MAX_HEADERS`] lines
//! is an error; lines may end in CRLF or LF.

/// The longest request head accepted.
pub const MAX_HEAD: usize = 16 * 1024;
/// The most header lines accepted.
pub const MAX_HEADERS: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceMethod {
    Put,
    Source,
}

impl SourceMethod {
    /// Whether `start` (the first bytes of a connection) begins a source request; `None`
    /// while too few bytes are here to say.
    pub fn starts(start: &[u8]) -> Option<bool> {
        const METHODS: [&[u8]; 2] = [b"PUT ", b"SOURCE "];
        let decided = METHODS.iter().any(|m| start.starts_with(m));
        if decided {
            return Some(true);
        }
        let undecided = METHODS
            .iter()
            .any(|m| start.len() < m.len() && m.starts_with(start));
        if undecided { None } else { Some(false) }
    }
}

/// A parsed request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRequest {
    pub method: SourceMethod,
    /// The path without its query, e.g. `/live/radio`.
    pub path: String,
    /// The query after `?`, or empty.
    pub query: String,
    /// `HTTP/1.0`, `HTTP/1.1` or `ICE/1.0`.
    pub version: String,
    pub headers: Vec<(String, String)>,
}

impl SourceRequest {
    /// The first header named `name` (ASCII case-insensitive), trimmed.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    #[error("request head longer than {MAX_HEAD} bytes")]
    TooLong,
    #[error("more than {MAX_HEADERS} header lines")]
    TooManyHeaders,
    #[error("not a source request: {0}")]
    NotSource(String),
    #[error("malformed request line")]
    BadRequestLine,
    #[error("malformed header line")]
    BadHeader,
    #[error("unsupported protocol version {0}")]
    BadVersion(String),
}

/// Parses the head at the start of `data`: `Ok(None)` until the empty line arrives,
/// else the request and the head's length (the body starts there).
pub fn parse_head(data: &[u8]) -> Result<Option<(SourceRequest, usize)>, HeadError> {
    let Some(end) = head_end(data) else {
        return if data.len() >= MAX_HEAD {
            Err(HeadError::TooLong)
        } else {
            Ok(None)
        };
    };
    if end > MAX_HEAD {
        return Err(HeadError::TooLong);
    }
    let text = String::from_utf8_lossy(&data[..end]);
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let request_line = lines.next().ok_or(HeadError::BadRequestLine)?;
    let mut parts = request_line.split(' ').filter(|p| !p.is_empty());
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HeadError::BadRequestLine);
    };
    let method = match method {
        "PUT" => SourceMethod::Put,
        "SOURCE" => SourceMethod::Source,
        other => return Err(HeadError::NotSource(other.chars().take(16).collect())),
    };
    if !matches!(version, "HTTP/1.0" | "HTTP/1.1" | "ICE/1.0") {
        return Err(HeadError::BadVersion(version.chars().take(16).collect()));
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut headers = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        if headers.len() == MAX_HEADERS {
            return Err(HeadError::TooManyHeaders);
        }
        let (name, value) = line.split_once(':').ok_or(HeadError::BadHeader)?;
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(HeadError::BadHeader);
        }
        headers.push((name.to_owned(), value.trim().to_owned()));
    }
    Ok(Some((
        SourceRequest {
            method,
            path: path.to_owned(),
            query: query.to_owned(),
            version: version.to_owned(),
            headers,
        },
        end,
    )))
}

/// The length of the head including its empty line (CRLF CRLF or LF LF).
fn head_end(data: &[u8]) -> Option<usize> {
    let window = &data[..data.len().min(MAX_HEAD + 4)];
    let mut line_start = 0;
    for (i, &b) in window.iter().enumerate() {
        if b == b'\n' {
            let line = &window[line_start..i];
            if line.is_empty() || line == b"\r" {
                return Some(i + 1);
            }
            line_start = i + 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ffmpeg_put_and_legacy_source_heads() {
        let put = b"PUT /live/radio HTTP/1.1\r\nTransfer-Encoding: chunked\r\nHost: x\r\nice-name: Radio\r\nExpect: 100-continue\r\n\r\nBODY";
        let (request, len) = parse_head(put).unwrap().unwrap();
        assert_eq!(request.method, SourceMethod::Put);
        assert_eq!(request.path, "/live/radio");
        assert_eq!(request.header("ICE-NAME"), Some("Radio"));
        assert_eq!(request.header("expect"), Some("100-continue"));
        assert_eq!(&put[len..], b"BODY");

        let source = b"SOURCE /live/radio?x=1 ICE/1.0\ncontent-type: audio/mpeg\n\n";
        let (request, len) = parse_head(source).unwrap().unwrap();
        assert_eq!(request.method, SourceMethod::Source);
        assert_eq!(
            (request.query.as_str(), request.version.as_str()),
            ("x=1", "ICE/1.0")
        );
        assert_eq!(len, source.len());
    }

    #[test]
    fn incomplete_long_and_malformed_heads() {
        assert_eq!(parse_head(b"PUT /a HTTP/1.1\r\nHost: x\r\n"), Ok(None));
        assert_eq!(
            parse_head(&vec![b'a'; MAX_HEAD + 10]),
            Err(HeadError::TooLong)
        );
        assert_eq!(
            parse_head(b"GET /a HTTP/1.1\r\n\r\n"),
            Err(HeadError::NotSource("GET".into()))
        );
        assert_eq!(
            parse_head(b"PUT /a SIP/2.0\r\n\r\n"),
            Err(HeadError::BadVersion("SIP/2.0".into()))
        );
        assert_eq!(
            parse_head(b"PUT /a\r\n\r\n"),
            Err(HeadError::BadRequestLine)
        );
        assert_eq!(
            parse_head(b"PUT /a HTTP/1.1\r\nno colon\r\n\r\n"),
            Err(HeadError::BadHeader)
        );
        let mut many = b"PUT /a HTTP/1.1\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            many.extend(format!("h{i}: v\r\n").bytes());
        }
        many.extend(b"\r\n");
        assert_eq!(parse_head(&many), Err(HeadError::TooManyHeaders));
    }

    #[test]
    fn the_first_bytes_say_whether_a_source_speaks() {
        assert_eq!(SourceMethod::starts(b"PUT /x"), Some(true));
        assert_eq!(SourceMethod::starts(b"SOURCE /"), Some(true));
        assert_eq!(SourceMethod::starts(b"SOU"), None);
        assert_eq!(SourceMethod::starts(b"P"), None);
        assert_eq!(SourceMethod::starts(b"GET /x"), Some(false));
        assert_eq!(SourceMethod::starts(b"PUX"), Some(false));
    }
}
