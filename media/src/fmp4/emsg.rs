//! Timed ID3 metadata in fMP4 HLS segments: one `emsg` box (version 1) per ID3 tag, put
//! before the segment's `moof`, with the scheme `https://aomedia.org/emsg/ID3` that
//! Apple's HLS and the AOM "Carriage of ID3 Timed Metadata in CMAF" use (hls.js and
//! Safari read it): timescale 90 kHz, the tag's PTS as `presentation_time`, an unknown
//! duration (0xFFFFFFFF), the tag as `message_data`.

/// The scheme of ID3 tags in `emsg`.
pub const ID3_SCHEME: &str = "https://aomedia.org/emsg/ID3";

/// Appends an `emsg` carrying `tag` at `pts` (90 kHz; negative times are written as 0),
/// numbered `id`. A tag too long for a box (4 GB) is left out.
pub fn write_id3_emsg(pts: i64, id: u32, tag: &[u8], out: &mut Vec<u8>) {
    let body_len = 4 + 4 + 8 + 4 + 4 + ID3_SCHEME.len() + 1 + 1 + tag.len();
    let Ok(size) = u32::try_from(8 + body_len) else {
        return;
    };
    out.reserve(size as usize);
    out.extend_from_slice(&size.to_be_bytes());
    out.extend_from_slice(b"emsg");
    out.extend_from_slice(&[1, 0, 0, 0]); // version 1, flags 0
    out.extend_from_slice(&crate::sample::TIMESCALE.to_be_bytes());
    out.extend_from_slice(&u64::try_from(pts).unwrap_or(0).to_be_bytes());
    out.extend_from_slice(&u32::MAX.to_be_bytes()); // event_duration: unknown
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(ID3_SCHEME.as_bytes());
    out.push(0);
    out.push(0); // value: empty
    out.extend_from_slice(tag);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_emsg_box_carries_the_tag_at_its_time() {
        let tag = crate::id3::encode(&crate::id3::StreamTitle {
            title: "Song A".into(),
            url: String::new(),
        });
        let mut out = vec![0xaa];
        write_id3_emsg(180_000, 7, &tag, &mut out);
        let b = &out[1..];
        assert_eq!(
            u32::from_be_bytes(b[..4].try_into().unwrap()) as usize,
            b.len()
        );
        assert_eq!(&b[4..8], b"emsg");
        assert_eq!(b[8], 1, "version 1");
        assert_eq!(u32::from_be_bytes(b[12..16].try_into().unwrap()), 90_000);
        assert_eq!(u64::from_be_bytes(b[16..24].try_into().unwrap()), 180_000);
        assert_eq!(u32::from_be_bytes(b[24..28].try_into().unwrap()), u32::MAX);
        assert_eq!(u32::from_be_bytes(b[28..32].try_into().unwrap()), 7);
        let scheme_end = 32 + ID3_SCHEME.len();
        assert_eq!(&b[32..scheme_end], ID3_SCHEME.as_bytes());
        assert_eq!(&b[scheme_end..scheme_end + 2], &[0, 0]);
        assert_eq!(&b[scheme_end + 2..], &tag[..]);
        assert_eq!(
            crate::id3::parse(&b[scheme_end + 2..]).unwrap().title,
            "Song A"
        );
    }
}
