//! The parts of a `moov` box that playing needs, found by walking its boxes and decoded
//! one by one (`mdhd`, `hdlr`, `elst`, `stsd` and the sample tables), into `mp4_atom`
//! tracks. Everything else (`udta`, `meta`, sample groups, ...) is skipped undecoded:
//! it plays no part, and some of mp4-atom's decoders trust counts in them (an `sgpd`
//! claiming billions of entries would exhaust memory).

use super::Mp4ReadError;
use mp4_atom::{
    Co64, Ctts, Decode, Edts, Elst, Hdlr, Mdhd, Mdia, Minf, Stbl, Stco, Stsc, Stsd, Stss, Stsz,
    Stts, Trak,
};

/// The boxes directly inside `body`: their type and their whole bytes (header included).
/// A box whose size runs past `body` ends the walk (what came before still counts).
fn children(body: &[u8]) -> Vec<([u8; 4], &[u8])> {
    let mut out = Vec::new();
    let mut rest = body;
    while rest.len() >= 8 {
        let size32 = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
        let kind = [rest[4], rest[5], rest[6], rest[7]];
        let (size, header) = match size32 {
            0 => (rest.len() as u64, 8),
            1 if rest.len() >= 16 => {
                let mut large = [0u8; 8];
                large.copy_from_slice(&rest[8..16]);
                (u64::from_be_bytes(large), 16)
            }
            1 => break,
            n => (u64::from(n), 8),
        };
        if size < header || size > rest.len() as u64 {
            break;
        }
        let (whole, next) = rest.split_at(size as usize);
        out.push((kind, whole));
        rest = next;
    }
    out
}

/// The body of a whole box (its bytes after the header).
fn body_of(whole: &[u8]) -> &[u8] {
    let header = if whole.len() >= 16 && whole[..4] == [0, 0, 0, 1] {
        16
    } else {
        8
    };
    whole.get(header..).unwrap_or_default()
}

fn first<'a>(boxes: &[([u8; 4], &'a [u8])], kind: &[u8; 4]) -> Option<&'a [u8]> {
    boxes
        .iter()
        .find(|(k, _)| k == kind)
        .map(|(_, whole)| *whole)
}

fn decode<T: Decode>(whole: &[u8], name: &str) -> Result<T, Mp4ReadError> {
    T::decode(&mut &whole[..]).map_err(|e| Mp4ReadError::corrupt(format!("{name}: {e}")))
}

fn required<T: Decode>(boxes: &[([u8; 4], &[u8])], kind: &[u8; 4]) -> Result<T, Mp4ReadError> {
    let name = String::from_utf8_lossy(kind);
    let whole = first(boxes, kind)
        .ok_or_else(|| Mp4ReadError::corrupt(format!("a track without {name}")))?;
    decode(whole, &name)
}

fn optional<T: Decode>(
    boxes: &[([u8; 4], &[u8])],
    kind: &[u8; 4],
) -> Result<Option<T>, Mp4ReadError> {
    first(boxes, kind)
        .map(|whole| decode(whole, &String::from_utf8_lossy(kind)))
        .transpose()
}

/// The tracks of a `moov` body, with what playing needs of each.
pub(super) fn tracks(moov_body: &[u8]) -> Result<Vec<Trak>, Mp4ReadError> {
    children(moov_body)
        .into_iter()
        .filter(|(kind, _)| kind == b"trak")
        .map(|(_, whole)| track(body_of(whole)))
        .collect()
}

fn track(trak_body: &[u8]) -> Result<Trak, Mp4ReadError> {
    let trak = children(trak_body);
    let edts = match first(&trak, b"edts") {
        Some(whole) => Some(Edts {
            elst: optional::<Elst>(&children(body_of(whole)), b"elst")?,
        }),
        None => None,
    };
    let mdia = children(body_of(
        first(&trak, b"mdia").ok_or_else(|| Mp4ReadError::corrupt("a track without mdia"))?,
    ));
    let minf = children(body_of(
        first(&mdia, b"minf").ok_or_else(|| Mp4ReadError::corrupt("a track without minf"))?,
    ));
    let stbl = children(body_of(
        first(&minf, b"stbl").ok_or_else(|| Mp4ReadError::corrupt("a track without stbl"))?,
    ));
    Ok(Trak {
        edts,
        mdia: Mdia {
            mdhd: required::<Mdhd>(&mdia, b"mdhd")?,
            hdlr: required::<Hdlr>(&mdia, b"hdlr")?,
            minf: Minf {
                stbl: Stbl {
                    stsd: required::<Stsd>(&stbl, b"stsd")?,
                    stts: required::<Stts>(&stbl, b"stts")?,
                    ctts: optional::<Ctts>(&stbl, b"ctts")?,
                    stss: optional::<Stss>(&stbl, b"stss")?,
                    stsc: required::<Stsc>(&stbl, b"stsc")?,
                    stsz: required::<Stsz>(&stbl, b"stsz")?,
                    stco: optional::<Stco>(&stbl, b"stco")?,
                    co64: optional::<Co64>(&stbl, b"co64")?,
                    ..Stbl::default()
                },
                ..Minf::default()
            },
        },
        ..Trak::default()
    })
}
