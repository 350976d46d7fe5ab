//! Facts from the client's `connect` command that `rml_rtmp` does not pass on: the
//! `flashVer` (reported as the session's user agent) and `type` (`nonprivate` marks a
//! publisher: ffmpeg, OBS and librtmp send it only when publishing, which lets the
//! server challenge publishers for credentials while players connect freely).
//!
//! A second chunk deserializer reads the first messages of the connection until the
//! connect command is seen, then the sniffer switches itself off.

use rml_amf0::Amf0Value;
use rml_rtmp::chunk_io::ChunkDeserializer;
use rml_rtmp::messages::RtmpMessage;

/// Stop looking after this many bytes (no client sends its connect that late).
const SNIFF_LIMIT: usize = 64 * 1024;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectInfo {
    pub flash_ver: String,
    pub publisher: bool,
}

pub struct ConnectSniffer {
    deserializer: Option<ChunkDeserializer>,
    seen: usize,
}

impl Default for ConnectSniffer {
    fn default() -> Self {
        Self {
            deserializer: Some(ChunkDeserializer::new()),
            seen: 0,
        }
    }
}

impl ConnectSniffer {
    /// Feeds bytes read after the handshake; returns the connect facts once they are known.
    pub fn feed(&mut self, bytes: &[u8]) -> Option<ConnectInfo> {
        let deserializer = self.deserializer.as_mut()?;
        self.seen += bytes.len();
        if self.seen > SNIFF_LIMIT {
            self.deserializer = None;
            return None;
        }
        let mut input = bytes;
        loop {
            let payload = match deserializer.get_next_message(input) {
                Ok(Some(payload)) => payload,
                Ok(None) => return None,
                Err(_) => {
                    self.deserializer = None;
                    return None;
                }
            };
            input = &[];
            match payload.to_rtmp_message() {
                Ok(RtmpMessage::SetChunkSize { size })
                    if deserializer.set_max_chunk_size(size as usize).is_err() =>
                {
                    self.deserializer = None;
                    return None;
                }
                Ok(RtmpMessage::Amf0Command {
                    command_name,
                    command_object,
                    ..
                }) if command_name == "connect" => {
                    self.deserializer = None;
                    return Some(info_from(&command_object));
                }
                _ => {}
            }
        }
    }
}

fn info_from(command_object: &Amf0Value) -> ConnectInfo {
    let Amf0Value::Object(properties) = command_object else {
        return ConnectInfo::default();
    };
    let text = |key: &str| match properties.get(key) {
        Some(Amf0Value::Utf8String(value)) => value.clone(),
        _ => String::new(),
    };
    ConnectInfo {
        flash_ver: text("flashVer"),
        publisher: text("type") == "nonprivate",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rml_rtmp::chunk_io::ChunkSerializer;
    use rml_rtmp::time::RtmpTimestamp;
    use std::collections::HashMap;

    #[test]
    fn finds_flash_ver_and_publisher_type_across_small_chunks() {
        let mut properties = HashMap::new();
        properties.insert("app".to_owned(), Amf0Value::Utf8String("live".into()));
        properties.insert(
            "flashVer".to_owned(),
            Amf0Value::Utf8String("FMLE/3.0 (compatible; Lavf61.1.100)".into()),
        );
        properties.insert(
            "type".to_owned(),
            Amf0Value::Utf8String("nonprivate".into()),
        );
        properties.insert(
            "tcUrl".to_owned(),
            Amf0Value::Utf8String("rtmp://127.0.0.1:1935/live".repeat(8)),
        );
        let message = RtmpMessage::Amf0Command {
            command_name: "connect".into(),
            transaction_id: 1.0,
            command_object: Amf0Value::Object(properties),
            additional_arguments: vec![],
        };
        let payload = message
            .into_message_payload(RtmpTimestamp::new(0), 0)
            .unwrap();
        let mut serializer = ChunkSerializer::new();
        let packet = serializer.serialize(&payload, false, false).unwrap();
        let mut sniffer = ConnectSniffer::default();
        let mut found = None;
        for byte in packet.bytes.chunks(7) {
            if let Some(info) = sniffer.feed(byte) {
                found = Some(info);
            }
        }
        let info = found.expect("connect found");
        assert!(info.publisher);
        assert!(info.flash_ver.starts_with("FMLE/3.0"));
        assert_eq!(
            sniffer.feed(&[1, 2, 3]),
            None,
            "switched off after the connect"
        );
    }

    #[test]
    fn garbage_switches_the_sniffer_off_without_panicking() {
        let mut sniffer = ConnectSniffer::default();
        let mut noise = crate::test_noise::Noise::new(0x1234_5678);
        for _ in 0..1000 {
            let _ = sniffer.feed(&noise.bytes(64));
        }
    }
}
