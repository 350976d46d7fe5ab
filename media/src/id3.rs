//! Minimal ID3v2.4 tags for stream titles (timed metadata): the title as `TIT2` and the
//! URL as `WXXX`, built for HLS timed metadata (a PES of its own in TS segments) and
//! for the stream core's `TimedMetadata` frames; and a bounded parser that reads the
//! title and URL back from any ID3v2.3/2.4 tag (never panics; garbage is an error).
//!
//! Written tags: header `ID3` 4.0, no flags, syncsafe size; frames with syncsafe sizes
//! and no flags. `TIT2` is UTF-8 (encoding 3). `WXXX` has an empty UTF-8 description and
//! the URL in ISO-8859-1 as the spec wants: bytes outside ASCII are percent-encoded.
//! Text longer than [`MAX_TEXT_BYTES`] is cut at a character boundary.

use crate::ParseError;

/// The longest title or URL written (as Icecast metadata blocks allow).
pub const MAX_TEXT_BYTES: usize = 1024;
/// The ID3v2 header: `ID3`, version, revision, flags, syncsafe size.
const HEADER_LEN: usize = 10;
/// Frames a parsed tag may hold at most (bounds the work on hostile input).
const MAX_FRAMES: usize = 64;

/// What a title tag says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamTitle {
    pub title: String,
    pub url: String,
}

/// `text` cut to [`MAX_TEXT_BYTES`] at a character boundary.
pub fn clipped(text: &str) -> &str {
    let mut end = text.len().min(MAX_TEXT_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The ID3v2.4 tag of `title`: `TIT2` always, `WXXX` when the URL is not empty.
pub fn encode(title: &StreamTitle) -> Vec<u8> {
    let mut frames = Vec::new();
    let mut text = vec![3u8];
    text.extend_from_slice(clipped(&title.title).as_bytes());
    write_frame(b"TIT2", &text, &mut frames);
    if !title.url.is_empty() {
        // Encoding UTF-8, empty description (its terminator), the URL in ISO-8859-1.
        let mut url = vec![3u8, 0];
        for &b in clipped(&title.url).as_bytes() {
            if b.is_ascii() && b != 0 {
                url.push(b);
            } else {
                url.extend_from_slice(format!("%{b:02X}").as_bytes());
            }
        }
        write_frame(b"WXXX", &url, &mut frames);
    }
    let mut tag = Vec::with_capacity(HEADER_LEN + frames.len());
    tag.extend_from_slice(b"ID3\x04\x00\x00");
    tag.extend_from_slice(&syncsafe(frames.len()));
    tag.extend_from_slice(&frames);
    tag
}

fn write_frame(id: &[u8; 4], data: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(id);
    out.extend_from_slice(&syncsafe(data.len()));
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(data);
}

/// A 28-bit size as four 7-bit bytes (sizes here are a few KB at most).
fn syncsafe(n: usize) -> [u8; 4] {
    let n = n.min(0x0fff_ffff) as u32;
    [
        (n >> 21) as u8 & 0x7f,
        (n >> 14) as u8 & 0x7f,
        (n >> 7) as u8 & 0x7f,
        n as u8 & 0x7f,
    ]
}

fn read_syncsafe(b: [u8; 4]) -> Result<usize, ParseError> {
    if b.iter().any(|&x| x & 0x80 != 0) {
        return Err(ParseError::Invalid("ID3 syncsafe size"));
    }
    Ok(b.iter().fold(0usize, |n, &x| (n << 7) | usize::from(x)))
}

fn four(data: &[u8], at: usize, what: &'static str) -> Result<[u8; 4], ParseError> {
    data.get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .ok_or(ParseError::Truncated(what))
}

/// The title (`TIT2`) and URL (`WXXX`, else a `TXXX` described `StreamUrl`) of the
/// ID3v2.3 or 2.4 tag at the start of `data`. Absent frames leave the field empty; a
/// tag with neither is an error, as are bad sizes, unsynchronisation and compression.
pub fn parse(data: &[u8]) -> Result<StreamTitle, ParseError> {
    let header = data
        .get(..HEADER_LEN)
        .ok_or(ParseError::Truncated("ID3 header"))?;
    if &header[..3] != b"ID3" {
        return Err(ParseError::Invalid("ID3 identifier"));
    }
    let version = header[3];
    if !(3..=4).contains(&version) {
        return Err(ParseError::Unsupported("ID3 version"));
    }
    let flags = header[5];
    if flags & 0x80 != 0 {
        return Err(ParseError::Unsupported("ID3 unsynchronisation"));
    }
    let size = read_syncsafe(four(header, 6, "ID3 header")?)?;
    let body = data
        .get(HEADER_LEN..HEADER_LEN + size)
        .ok_or(ParseError::Truncated("ID3 tag"))?;
    let mut at = 0;
    if flags & 0x40 != 0 {
        // Extended header: v2.4 counts itself (syncsafe), v2.3 does not.
        let raw = four(body, 0, "ID3 extended header")?;
        at = if version == 4 {
            read_syncsafe(raw)?
        } else {
            (u32::from_be_bytes(raw) as usize).saturating_add(4)
        };
    }
    let mut found = StreamTitle::default();
    let (mut has_title, mut has_url) = (false, false);
    for _ in 0..MAX_FRAMES {
        let Some(head) = body.get(at..at + 10) else {
            break;
        };
        if head[0] == 0 {
            break; // padding
        }
        let raw = four(head, 4, "ID3 frame header")?;
        let len = if version == 4 {
            read_syncsafe(raw)?
        } else {
            u32::from_be_bytes(raw) as usize
        };
        let content = body
            .get(at + 10..)
            .and_then(|rest| rest.get(..len))
            .ok_or(ParseError::Truncated("ID3 frame"))?;
        // Compression, encryption, unsynchronisation or a data length indicator.
        let format_flags = head[9];
        let unreadable = if version == 4 {
            format_flags & 0x0f != 0
        } else {
            format_flags & 0xc0 != 0
        };
        at += 10 + len;
        if unreadable {
            continue;
        }
        match &head[..4] {
            b"TIT2" => {
                found.title = text(content)?;
                has_title = true;
            }
            b"WXXX" => {
                let (_, url) = described(content)?;
                found.url = latin1(url);
                has_url = true;
            }
            b"TXXX" if !has_url => {
                let (description, value) = described(content)?;
                if description.eq_ignore_ascii_case("StreamUrl") {
                    found.url = decode(content[0], value)?;
                    has_url = true;
                }
            }
            _ => {}
        }
    }
    if !has_title && !has_url {
        return Err(ParseError::Invalid("ID3 tag without a title"));
    }
    Ok(found)
}

/// A text frame's value: its encoding byte, then the text (trailing NULs dropped).
fn text(content: &[u8]) -> Result<String, ParseError> {
    let (&encoding, rest) = content
        .split_first()
        .ok_or(ParseError::Truncated("ID3 text frame"))?;
    decode(encoding, rest)
}

/// A `TXXX`/`WXXX` frame's description (decoded) and the bytes after its terminator.
fn described(content: &[u8]) -> Result<(String, &[u8]), ParseError> {
    let (&encoding, rest) = content
        .split_first()
        .ok_or(ParseError::Truncated("ID3 frame"))?;
    let wide = matches!(encoding, 1 | 2);
    let end = if wide {
        rest.chunks_exact(2)
            .position(|pair| pair == [0, 0])
            .map(|i| (i * 2, i * 2 + 2))
    } else {
        rest.iter().position(|&b| b == 0).map(|i| (i, i + 1))
    };
    let (description_end, value_start) = end.ok_or(ParseError::Invalid("ID3 description"))?;
    let description = decode(encoding, &rest[..description_end])?;
    Ok((description, &rest[value_start..]))
}

/// Text in ID3 encoding `encoding` (0 ISO-8859-1, 1 UTF-16 with BOM, 2 UTF-16BE,
/// 3 UTF-8), trailing terminators dropped.
fn decode(encoding: u8, bytes: &[u8]) -> Result<String, ParseError> {
    let bytes = &bytes[..bytes.len().min(4 * MAX_TEXT_BYTES)];
    match encoding {
        0 => Ok(latin1(bytes)),
        3 => Ok(String::from_utf8_lossy(bytes)
            .trim_end_matches('\0')
            .to_owned()),
        1 | 2 => {
            let mut units = bytes.chunks_exact(2).map(|p| [p[0], p[1]]);
            let little = match (encoding, bytes.get(..2)) {
                (1, Some([0xff, 0xfe])) => {
                    units.next();
                    true
                }
                (1, Some([0xfe, 0xff])) => {
                    units.next();
                    false
                }
                (1, _) => return Err(ParseError::Invalid("ID3 UTF-16 byte order mark")),
                _ => false,
            };
            let units = units.map(|p| {
                if little {
                    u16::from_le_bytes(p)
                } else {
                    u16::from_be_bytes(p)
                }
            });
            Ok(char::decode_utf16(units)
                .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
                .collect::<String>()
                .trim_end_matches('\0')
                .to_owned())
        }
        _ => Err(ParseError::Invalid("ID3 text encoding")),
    }
}

fn latin1(bytes: &[u8]) -> String {
    bytes
        .iter()
        .take(4 * MAX_TEXT_BYTES)
        .map(|&b| char::from(b))
        .collect::<String>()
        .trim_end_matches('\0')
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn title(title: &str, url: &str) -> StreamTitle {
        StreamTitle {
            title: title.into(),
            url: url.into(),
        }
    }

    #[test]
    fn round_trips_title_and_url() {
        for t in [
            title("Song A", "https://radio.example"),
            title("Ünïcödé — 曲", ""),
            title("", "http://x"),
        ] {
            let tag = encode(&t);
            assert_eq!(&tag[..5], b"ID3\x04\x00");
            assert_eq!(
                read_syncsafe(tag[6..10].try_into().unwrap()).unwrap(),
                tag.len() - 10
            );
            assert_eq!(parse(&tag).unwrap(), t);
        }
        let odd = parse(&encode(&title("a", "http://x/é"))).unwrap();
        assert_eq!(
            odd.url, "http://x/%C3%A9",
            "non-ASCII URL bytes percent-encoded"
        );
    }

    #[test]
    fn long_text_is_clipped_at_a_character_boundary() {
        let long = "é".repeat(MAX_TEXT_BYTES);
        let parsed = parse(&encode(&title(&long, ""))).unwrap();
        assert_eq!(parsed.title.len(), MAX_TEXT_BYTES);
        assert!(parsed.title.chars().all(|c| c == 'é'));
    }

    #[test]
    fn reads_v23_utf16_and_txxx_urls() {
        // ID3v2.3: big-endian frame sizes, TIT2 in UTF-16 with BOM, TXXX StreamUrl.
        let mut frames = Vec::new();
        let tit2: Vec<u8> = [1u8, 0xff, 0xfe, b'H', 0, b'i', 0].to_vec();
        frames.extend_from_slice(b"TIT2");
        frames.extend_from_slice(&(tit2.len() as u32).to_be_bytes());
        frames.extend_from_slice(&[0, 0]);
        frames.extend_from_slice(&tit2);
        let txxx = b"\x00StreamUrl\x00http://u";
        frames.extend_from_slice(b"TXXX");
        frames.extend_from_slice(&(txxx.len() as u32).to_be_bytes());
        frames.extend_from_slice(&[0, 0]);
        frames.extend_from_slice(txxx);
        frames.extend_from_slice(&[0; 8]); // padding
        let mut tag = b"ID3\x03\x00\x00".to_vec();
        tag.extend_from_slice(&syncsafe(frames.len()));
        tag.extend_from_slice(&frames);
        assert_eq!(parse(&tag).unwrap(), title("Hi", "http://u"));
    }

    #[test]
    fn garbage_is_an_error_never_a_panic() {
        let good = encode(&title("Song", "http://x"));
        assert!(parse(b"").is_err());
        assert!(parse(b"ID3").is_err());
        assert!(parse(b"XYZ\x04\x00\x00\x00\x00\x00\x00").is_err());
        assert!(
            parse(b"ID3\x04\x00\x00\x00\x00\x00\x00").is_err(),
            "no frames"
        );
        assert!(parse(b"ID3\x04\x00\x00\x80\x00\x00\x00").is_err());
        for cut in 0..good.len() {
            let _ = parse(&good[..cut]);
        }
        for i in 0..good.len() {
            for b in [0x00, 0x7f, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[i] = b;
                let _ = parse(&bad);
            }
        }
    }
}
