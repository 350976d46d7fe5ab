//! A non-recursive check of AMF0 bytes before `rml_amf0` decodes them.
//!
//! `rml_amf0` 0.3.0 decodes objects, ECMA arrays and strict arrays by recursion with no
//! depth limit: a 40 KB message of nested objects overflows a thread's stack, which
//! aborts the whole process (a stack overflow is not a panic and cannot be caught). Its
//! values are also dropped by recursion. [`scan`] walks the same grammar with an explicit
//! stack, bounded in depth and in the number of values, and follows `rml_amf0`'s reading
//! rules exactly where they decide what the decoder sees:
//!
//! - at the top level, values are read until the bytes end or an object-end marker
//!   (`0x09`) appears; the rest of the message is never decoded;
//! - a strict array ends after its count of values, at the end of the bytes, or at an
//!   object-end marker (which it consumes), whichever comes first;
//! - an object or ECMA array (its count is ignored) ends at an empty property name
//!   followed by `0x09`; a property needs a value.
//!
//! It is stricter where strictness costs real clients nothing: a string or property name
//! cut short by the end of the message is refused (`rml_amf0` pads it with zeros).

/// How much structure one AMF message may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AmfLimits {
    /// Containers (objects, ECMA arrays, strict arrays) open at once.
    pub max_depth: usize,
    /// Values in the whole message, containers and their members included.
    pub max_values: usize,
}

impl Default for AmfLimits {
    /// Encoders nest two levels (`connect`'s command object, `onMetaData`'s array) and send
    /// a few dozen values at most.
    fn default() -> Self {
        Self {
            max_depth: 32,
            max_values: 4096,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AmfError {
    #[error("values nested deeper than {0} levels")]
    TooDeep(usize),
    #[error("more than {0} values")]
    TooManyValues(usize),
    #[error("value cut short at byte {0}")]
    Truncated(usize),
    #[error("unsupported AMF0 marker {marker:#04x} at byte {at}")]
    Marker { marker: u8, at: usize },
    #[error("object property without a value at byte {0}")]
    MissingValue(usize),
    #[error("empty property name without the object end marker at byte {0}")]
    BadObjectEnd(usize),
}

/// One of the first two top-level values, as far as the message checks need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Top<'a> {
    String(&'a [u8]),
    Number,
    Other,
}

/// What a well-formed message holds at the top level (what `rml_amf0::deserialize`
/// would return the length of).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scanned<'a> {
    pub values: usize,
    pub first: Option<Top<'a>>,
    pub second: Option<Top<'a>>,
}

const NUMBER: u8 = 0x00;
const BOOLEAN: u8 = 0x01;
const STRING: u8 = 0x02;
const OBJECT: u8 = 0x03;
const NULL: u8 = 0x05;
const UNDEFINED: u8 = 0x06;
const ECMA_ARRAY: u8 = 0x08;
const OBJECT_END: u8 = 0x09;
const STRICT_ARRAY: u8 = 0x0A;

enum Open {
    /// An object or ECMA array: properties until the end marker.
    Object,
    /// A strict array with this many values still announced.
    Array(u32),
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn take(&mut self, count: usize) -> Result<&'a [u8], AmfError> {
        let end = self
            .at
            .checked_add(count)
            .filter(|&end| end <= self.bytes.len())
            .ok_or(AmfError::Truncated(self.at))?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn u16(&mut self) -> Result<usize, AmfError> {
        let b = self.take(2)?;
        Ok(usize::from(u16::from_be_bytes([b[0], b[1]])))
    }

    fn u32(&mut self) -> Result<u32, AmfError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// Checks `bytes` as `rml_amf0::deserialize` would read them; `Ok` means decoding them
/// is bounded in depth and size.
pub fn scan(bytes: &[u8], limits: AmfLimits) -> Result<Scanned<'_>, AmfError> {
    let mut reader = Reader { bytes, at: 0 };
    let mut open: Vec<Open> = Vec::new();
    let mut values = 0usize;
    let mut scanned = Scanned {
        values: 0,
        first: None,
        second: None,
    };
    loop {
        match open.last_mut() {
            None => match reader.peek() {
                None | Some(OBJECT_END) => return Ok(scanned),
                Some(_) => {}
            },
            Some(Open::Array(left)) => match reader.peek() {
                _ if *left == 0 => {
                    open.pop();
                    continue;
                }
                None => {
                    open.pop();
                    continue;
                }
                Some(OBJECT_END) => {
                    reader.at += 1;
                    open.pop();
                    continue;
                }
                Some(_) => *left -= 1,
            },
            Some(Open::Object) => {
                let name_len = reader.u16()?;
                if name_len == 0 {
                    let at = reader.at;
                    match reader.take(1)?[0] {
                        OBJECT_END => {
                            open.pop();
                            continue;
                        }
                        _ => return Err(AmfError::BadObjectEnd(at)),
                    }
                }
                reader.take(name_len)?;
                match reader.peek() {
                    None | Some(OBJECT_END) => return Err(AmfError::MissingValue(reader.at)),
                    Some(_) => {}
                }
            }
        }
        // A value starts here (the marker is present).
        values += 1;
        if values > limits.max_values {
            return Err(AmfError::TooManyValues(limits.max_values));
        }
        let at = reader.at;
        let marker = reader.take(1)?[0];
        let top = open.is_empty();
        let mut value = Top::Other;
        match marker {
            NUMBER => {
                reader.take(8)?;
                value = Top::Number;
            }
            BOOLEAN => {
                reader.take(1)?;
            }
            STRING => {
                let len = reader.u16()?;
                value = Top::String(reader.take(len)?);
            }
            NULL | UNDEFINED => {}
            OBJECT | ECMA_ARRAY | STRICT_ARRAY => {
                if open.len() >= limits.max_depth {
                    return Err(AmfError::TooDeep(limits.max_depth));
                }
                open.push(match marker {
                    OBJECT => Open::Object,
                    ECMA_ARRAY => {
                        reader.u32()?;
                        Open::Object
                    }
                    _ => Open::Array(reader.u32()?),
                });
            }
            _ => return Err(AmfError::Marker { marker, at }),
        }
        if top {
            match scanned.values {
                0 => scanned.first = Some(value),
                1 => scanned.second = Some(value),
                _ => {}
            }
            scanned.values += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rml_amf0::Amf0Value;
    use std::collections::HashMap;

    fn limits() -> AmfLimits {
        AmfLimits::default()
    }

    /// What `rml_amf0` decodes from `bytes` (only for inputs the scan bounds).
    fn rml(bytes: &[u8]) -> Result<Vec<Amf0Value>, ()> {
        rml_amf0::deserialize(&mut std::io::Cursor::new(bytes)).map_err(|_| ())
    }

    fn nested(levels: usize, opener: &[u8], closer: &[u8]) -> Vec<u8> {
        let mut bytes = Vec::new();
        for _ in 0..levels {
            bytes.extend_from_slice(opener);
        }
        bytes.push(NULL);
        for _ in 0..levels {
            bytes.extend_from_slice(closer);
        }
        bytes
    }

    #[test]
    fn real_messages_pass_with_their_top_level_values() {
        let mut properties = HashMap::new();
        properties.insert("app".to_owned(), Amf0Value::Utf8String("live".into()));
        properties.insert(
            "tcUrl".to_owned(),
            Amf0Value::Utf8String("rtmp://h/live".into()),
        );
        properties.insert("audioCodecs".to_owned(), Amf0Value::Number(3191.0));
        properties.insert("fpad".to_owned(), Amf0Value::Boolean(false));
        let connect = vec![
            Amf0Value::Utf8String("connect".into()),
            Amf0Value::Number(1.0),
            Amf0Value::Object(properties.clone()),
            Amf0Value::Null,
            Amf0Value::Undefined,
            Amf0Value::StrictArray(vec![Amf0Value::Number(1.0), Amf0Value::Null]),
        ];
        let bytes = rml_amf0::serialize(&connect).unwrap();
        let scanned = scan(&bytes, limits()).unwrap();
        assert_eq!(scanned.values, 6);
        assert_eq!(scanned.first, Some(Top::String(b"connect")));
        assert_eq!(scanned.second, Some(Top::Number));
        assert_eq!(rml(&bytes).unwrap().len(), scanned.values);

        // ffmpeg's @setDataFrame: an ECMA array with a count and the end marker.
        let mut bytes = rml_amf0::serialize(&vec![
            Amf0Value::Utf8String("@setDataFrame".into()),
            Amf0Value::Utf8String("onMetaData".into()),
        ])
        .unwrap();
        bytes.extend_from_slice(&[ECMA_ARRAY, 0, 0, 0, 1, 0, 5]);
        bytes.extend_from_slice(b"width");
        bytes.extend_from_slice(&[NUMBER, 0x40, 0x74, 0, 0, 0, 0, 0, 0]);
        bytes.extend_from_slice(&[0, 0, OBJECT_END]);
        let scanned = scan(&bytes, limits()).unwrap();
        assert_eq!(scanned.values, 3);
        assert_eq!(scanned.second, Some(Top::String(b"onMetaData")));
        assert_eq!(rml(&bytes).unwrap().len(), 3);
    }

    #[test]
    fn the_scan_counts_top_level_values_as_rml_amf0_does() {
        let cases: &[&[u8]] = &[
            &[],
            &[NULL, NULL, OBJECT_END, NULL, NULL],
            // A strict array announcing more values than there are, at the end.
            &[STRICT_ARRAY, 0, 0, 0, 9, NULL],
            // A strict array ended early by the end marker; values continue after it.
            &[STRICT_ARRAY, 0, 0, 0, 9, NULL, OBJECT_END, NULL, NULL],
            &[STRICT_ARRAY, 0, 0, 0, 0, NULL],
            &[OBJECT, 0, 0, OBJECT_END, BOOLEAN, 1],
            &[ECMA_ARRAY, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, OBJECT_END],
        ];
        for bytes in cases {
            let scanned = scan(bytes, limits()).unwrap();
            assert_eq!(Ok(scanned.values), rml(bytes).map(|v| v.len()), "{bytes:?}");
        }
    }

    #[test]
    fn malformed_messages_are_refused() {
        let cases: &[(&[u8], AmfError)] = &[
            (&[NUMBER, 0, 0], AmfError::Truncated(1)),
            (&[STRING, 0, 5, b'a'], AmfError::Truncated(3)),
            (
                &[0x0B, 0, 0],
                AmfError::Marker {
                    marker: 0x0B,
                    at: 0,
                },
            ),
            (&[OBJECT, 0, 1, b'a'], AmfError::MissingValue(4)),
            (&[OBJECT, 0, 1, b'a', OBJECT_END], AmfError::MissingValue(4)),
            (&[OBJECT, 0, 0, NULL], AmfError::BadObjectEnd(3)),
            (&[OBJECT, 0, 0], AmfError::Truncated(3)),
            (&[OBJECT], AmfError::Truncated(1)),
            (&[STRICT_ARRAY, 0, 0], AmfError::Truncated(1)),
        ];
        for (bytes, error) in cases {
            assert_eq!(
                scan(bytes, limits()).as_ref().err(),
                Some(error),
                "{bytes:?}"
            );
        }
    }

    #[test]
    fn deep_nesting_is_refused_without_recursion() {
        let object = nested(100_000, &[OBJECT, 0, 1, b'a'], &[0, 0, OBJECT_END]);
        assert_eq!(scan(&object, limits()), Err(AmfError::TooDeep(32)));
        let array = nested(100_000, &[STRICT_ARRAY, 0, 0, 0, 1], &[]);
        assert_eq!(scan(&array, limits()), Err(AmfError::TooDeep(32)));
        let ecma = nested(100_000, &[ECMA_ARRAY, 0, 0, 0, 1, 0, 1, b'a'], &[0, 0, 9]);
        assert_eq!(scan(&ecma, limits()), Err(AmfError::TooDeep(32)));
        // At the limit it passes, and rml_amf0 decodes it.
        for bytes in [
            nested(32, &[OBJECT, 0, 1, b'a'], &[0, 0, OBJECT_END]),
            nested(32, &[STRICT_ARRAY, 0, 0, 0, 1], &[]),
        ] {
            assert_eq!(scan(&bytes, limits()).unwrap().values, 1);
            assert_eq!(rml(&bytes).unwrap().len(), 1);
        }
    }

    #[test]
    fn value_counts_are_bounded() {
        let mut bytes = vec![STRICT_ARRAY, 0, 0, 0x20, 0];
        bytes.extend(std::iter::repeat_n(NULL, 8192));
        assert_eq!(scan(&bytes, limits()), Err(AmfError::TooManyValues(4096)));
    }

    /// Whatever the scan accepts, `rml_amf0` decodes without recursing deeper than the
    /// limit; on random and mutated bytes neither panics.
    #[test]
    fn random_and_mutated_bytes() {
        let mut noise = crate::test_noise::Noise::new(0x5eed_a3f0);
        let seed = rml_amf0::serialize(&vec![
            Amf0Value::Utf8String("publish".into()),
            Amf0Value::Number(5.0),
            Amf0Value::Null,
            Amf0Value::StrictArray(vec![Amf0Value::Object(HashMap::from([(
                "k".to_owned(),
                Amf0Value::Number(1.0),
            )]))]),
        ])
        .unwrap();
        let markers = [0u8, 1, 2, 3, 5, 6, 8, 9, 10, 0xFF];
        for round in 0..20_000 {
            let bytes = if round % 2 == 0 {
                noise
                    .bytes(64)
                    .into_iter()
                    .map(|b| {
                        if b < 200 {
                            markers[usize::from(b % 10)]
                        } else {
                            b
                        }
                    })
                    .collect()
            } else {
                let mut bytes = seed.clone();
                let flips = noise.bytes(3);
                for &flip in &flips {
                    let at = usize::from(flip) % bytes.len();
                    bytes[at] = markers[usize::from(flip) % markers.len()];
                }
                bytes
            };
            if let Ok(scanned) = scan(&bytes, limits())
                && let Ok(values) = rml(&bytes)
            {
                assert_eq!(values.len(), scanned.values, "{bytes:?}");
            }
        }
    }
}
