//! RTMP `onCuePoint` data messages as SCTE-35 sections, so an encoder's ad cues
//! (Wirecast, Elemental and others send them) become the same marker frames as the API's
//! and an MPEG-TS input's.
//!
//! Read, in order:
//! 1. a whole `splice_info_section` in any string value of the cue point (or of its
//!    `parameters` object), as base64 or as hex (`0xFC...`): passed through as is;
//! 2. otherwise the cue's `name` (or `type`): `cue-out`/`cueout`/`scte35-out`/`adstart`
//!    start a break (a `splice_insert` out, with `duration` in seconds from the cue or its
//!    parameters as the break duration), `cue-in`/`cuein`/`scte35-in`/`adend` end it.
//!
//! Anything else is not a cue (logged by the caller).

use base64::Engine;
use rml_amf0::Amf0Value;
use std::collections::HashMap;
use strom_media::scte35::{self, BreakDuration, SpliceInfo};

/// The SCTE-35 section an `onCuePoint` payload (its AMF0 values) stands for; `event_id`
/// counts the breaks this publisher started.
pub fn to_section(payload: &[u8], event_id: &mut u32) -> Option<Vec<u8>> {
    let mut reader = payload;
    let values = rml_amf0::deserialize(&mut reader).ok()?;
    let cue = values.iter().find_map(|value| match value {
        Amf0Value::Object(properties) => Some(properties),
        _ => None,
    })?;
    let parameters = match cue.get("parameters") {
        Some(Amf0Value::Object(p)) => Some(p),
        _ => None,
    };
    let strings = cue
        .values()
        .chain(parameters.into_iter().flat_map(|p| p.values()))
        .filter_map(|value| match value {
            Amf0Value::Utf8String(text) => Some(text.as_str()),
            _ => None,
        });
    for text in strings {
        if let Some(section) = embedded_section(text) {
            return Some(section);
        }
    }
    let name = text_of(cue, "name")
        .or_else(|| text_of(cue, "type"))?
        .to_ascii_lowercase()
        .replace('_', "-");
    let duration =
        seconds_of(cue, "duration").or_else(|| parameters.and_then(|p| seconds_of(p, "duration")));
    match name.as_str() {
        "cue-out" | "cueout" | "scte35-out" | "adstart" | "ad-start" => {
            *event_id = event_id.wrapping_add(1);
            let break_duration = duration.map(|secs| BreakDuration {
                auto_return: true,
                duration: (secs * 90_000.0) as u64,
            });
            Some(SpliceInfo::insert(*event_id, true, None, break_duration).encode())
        }
        "cue-in" | "cuein" | "scte35-in" | "adend" | "ad-end" => {
            Some(SpliceInfo::insert(*event_id, false, None, None).encode())
        }
        _ => None,
    }
}

/// A valid section in `text` as base64 or hex.
fn embedded_section(text: &str) -> Option<Vec<u8>> {
    let text = text.trim();
    let bytes = if text.starts_with("0x") || text.starts_with("0X") {
        scte35::from_hex(text).ok()?
    } else {
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .ok()?
    };
    SpliceInfo::parse(&bytes).ok().map(|_| bytes)
}

fn text_of<'a>(properties: &'a HashMap<String, Amf0Value>, key: &str) -> Option<&'a str> {
    match properties.get(key)? {
        Amf0Value::Utf8String(text) => Some(text),
        _ => None,
    }
}

/// A positive number of seconds, as a number or a string.
fn seconds_of(properties: &HashMap<String, Amf0Value>, key: &str) -> Option<f64> {
    let seconds = match properties.get(key)? {
        Amf0Value::Number(n) => *n,
        Amf0Value::Utf8String(text) => text.trim().parse().ok()?,
        _ => return None,
    };
    (seconds.is_finite() && seconds > 0.0 && seconds < 86_400.0).then_some(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cue_point(properties: Vec<(&str, Amf0Value)>) -> Vec<u8> {
        let object = properties
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        rml_amf0::serialize(&vec![
            Amf0Value::Utf8String("onCuePoint".into()),
            Amf0Value::Object(object),
        ])
        .unwrap()
    }

    #[test]
    fn named_cues_make_splice_inserts_and_embedded_sections_pass_through() {
        let mut id = 0;
        let out = to_section(
            &cue_point(vec![
                ("name", Amf0Value::Utf8String("CUE-OUT".into())),
                ("type", Amf0Value::Utf8String("event".into())),
                ("duration", Amf0Value::Number(30.0)),
            ]),
            &mut id,
        )
        .unwrap();
        let info = SpliceInfo::parse(&out).unwrap();
        let insert = info.splice_insert().unwrap();
        assert!(insert.out_of_network);
        assert_eq!(insert.break_duration.map(|d| d.duration), Some(2_700_000));
        let back = to_section(
            &cue_point(vec![("name", Amf0Value::Utf8String("cue_in".into()))]),
            &mut id,
        )
        .unwrap();
        let back = SpliceInfo::parse(&back).unwrap();
        assert_eq!(back.splice_insert().unwrap().event_id, insert.event_id);
        assert!(!back.splice_insert().unwrap().out_of_network);

        let section = SpliceInfo::insert(77, true, Some(5), None).encode();
        let encoded = base64::engine::general_purpose::STANDARD.encode(&section);
        let mut parameters = HashMap::new();
        parameters.insert("cue".to_owned(), Amf0Value::Utf8String(encoded));
        let passed = to_section(
            &cue_point(vec![
                ("name", Amf0Value::Utf8String("scte35".into())),
                ("parameters", Amf0Value::Object(parameters)),
            ]),
            &mut id,
        );
        assert_eq!(passed, Some(section.clone()));
        let hex = to_section(
            &cue_point(vec![(
                "data",
                Amf0Value::Utf8String(scte35::to_hex(&section)),
            )]),
            &mut id,
        );
        assert_eq!(hex, Some(section));
        // Not cues.
        assert!(
            to_section(
                &cue_point(vec![("name", Amf0Value::Utf8String("chapter".into()))]),
                &mut id
            )
            .is_none()
        );
        assert!(to_section(b"\x02\x00", &mut id).is_none());
        assert!(
            to_section(
                &cue_point(vec![
                    ("name", Amf0Value::Utf8String("cue-out".into())),
                    ("duration", Amf0Value::Number(f64::NAN)),
                ]),
                &mut id
            )
            .is_some_and(|s| SpliceInfo::parse(&s)
                .unwrap()
                .splice_insert()
                .unwrap()
                .break_duration
                .is_none())
        );
    }
}
