//! Timed events in fMP4 segments: `emsg` boxes (version 1) put before a segment's
//! `moof`, timescale 90 kHz, the event's PTS as `presentation_time`.
//!
//! - ID3 tags (stream titles) with the scheme `https://aomedia.org/emsg/ID3` that
//!   Apple's HLS and the AOM "Carriage of ID3 Timed Metadata in CMAF" use (hls.js and
//!   Safari read it), of unknown duration.
//! - SCTE-35 splice_info_sections with the scheme `urn:scte:scte35:2013:bin` (SCTE
//!   214-3, DASH-IF IOP §13.12): the whole section as `message_data`, the break's
//!   planned duration as `event_duration` when it has one.

/// The scheme of ID3 tags in `emsg`.
pub const ID3_SCHEME: &str = "https://aomedia.org/emsg/ID3";
/// The scheme of binary SCTE-35 sections in `emsg`.
pub const SCTE35_SCHEME: &str = "urn:scte:scte35:2013:bin";
/// `event_duration` when it is not known.
const UNKNOWN_DURATION: u32 = u32::MAX;

/// Appends an `emsg` carrying `tag` at `pts` (90 kHz; negative times are written as 0),
/// numbered `id`. A tag too long for a box (4 GB) is left out.
pub fn write_id3_emsg(pts: i64, id: u32, tag: &[u8], out: &mut Vec<u8>) {
    write_emsg(ID3_SCHEME, pts, UNKNOWN_DURATION, id, tag, out);
}

/// Appends an `emsg` carrying the SCTE-35 `section` at `pts` (90 kHz), numbered `id`,
/// lasting `duration` (90 kHz) when known.
pub fn write_scte35_emsg(
    pts: i64,
    duration: Option<u64>,
    id: u32,
    section: &[u8],
    out: &mut Vec<u8>,
) {
    let duration = duration
        .and_then(|d| u32::try_from(d).ok())
        .filter(|d| *d != UNKNOWN_DURATION)
        .unwrap_or(UNKNOWN_DURATION);
    write_emsg(SCTE35_SCHEME, pts, duration, id, section, out);
}

/// The `emsg`s of the SCTE-35 `sections` a segment starts with (at `pts`), numbered
/// from `first_id`: each with its break's planned duration when it opens one.
pub fn write_scte35_emsgs(sections: &[&[u8]], pts: i64, first_id: u32, out: &mut Vec<u8>) {
    for (n, section) in sections.iter().enumerate() {
        let duration = crate::scte35::SpliceInfo::parse(section)
            .ok()
            .and_then(|info| crate::ad_break::break_signal(&info)?.duration);
        let id = first_id.wrapping_add(n as u32);
        write_scte35_emsg(pts, duration, id, section, out);
    }
}

/// One version 1 `emsg` with an empty `value`.
fn write_emsg(scheme: &str, pts: i64, duration: u32, id: u32, data: &[u8], out: &mut Vec<u8>) {
    let body_len = 4 + 4 + 8 + 4 + 4 + scheme.len() + 1 + 1 + data.len();
    let Ok(size) = u32::try_from(8 + body_len) else {
        return;
    };
    out.reserve(size as usize);
    out.extend_from_slice(&size.to_be_bytes());
    out.extend_from_slice(b"emsg");
    out.extend_from_slice(&[1, 0, 0, 0]); // version 1, flags 0
    out.extend_from_slice(&crate::sample::TIMESCALE.to_be_bytes());
    out.extend_from_slice(&u64::try_from(pts).unwrap_or(0).to_be_bytes());
    out.extend_from_slice(&duration.to_be_bytes());
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(scheme.as_bytes());
    out.push(0);
    out.push(0); // value: empty
    out.extend_from_slice(data);
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

    #[test]
    fn an_scte35_emsg_carries_the_section_and_the_break_duration() {
        let section = crate::ad_break::time_signal(5, 0x34, Some(0), Some(2_700_000)).encode();
        let mut out = Vec::new();
        write_scte35_emsg(900_000, Some(2_700_000), 3, &section, &mut out);
        assert_eq!(&out[4..8], b"emsg");
        assert_eq!(u64::from_be_bytes(out[16..24].try_into().unwrap()), 900_000);
        assert_eq!(
            u32::from_be_bytes(out[24..28].try_into().unwrap()),
            2_700_000
        );
        let scheme_end = 32 + SCTE35_SCHEME.len();
        assert_eq!(&out[32..scheme_end], SCTE35_SCHEME.as_bytes());
        assert_eq!(&out[scheme_end + 2..], &section[..]);
        let mut unknown = Vec::new();
        write_scte35_emsg(0, None, 3, &section, &mut unknown);
        assert_eq!(
            u32::from_be_bytes(unknown[24..28].try_into().unwrap()),
            u32::MAX
        );
    }
}
