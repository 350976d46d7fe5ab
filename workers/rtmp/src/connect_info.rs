//! Facts from the client's `connect` command that `rml_rtmp` does not pass on: the
//! `flashVer` (reported as the session's user agent) and `type` (`nonprivate` marks a
//! publisher: ffmpeg, OBS and librtmp send it only when publishing, which lets the
//! server challenge publishers for credentials while players connect freely).
//!
//! The chunk guard reassembles and checks every command before `rml_rtmp` sees it, and
//! keeps the values of the first `connect` ([`ChunkGuard::take_connect`]); they are read
//! here. strom's own pulls are told apart by their `flashVer` ([`ConnectInfo::is_strom_pull`]).
//!
//! [`ChunkGuard::take_connect`]: crate::chunk_guard::ChunkGuard::take_connect

use rml_amf0::Amf0Value;

/// What strom's pulls (edges, pulled sources) announce themselves as: a strom origin
/// answers their play of a stream it does not have and cannot start with
/// `NetStream.Play.StreamNotFound` at once ([`ConnectInfo::is_strom_pull`]) instead of
/// holding them like a player that waits for its publisher.
pub const PULL_FLASH_VERSION: &str = "LNX 9,0,124,2 (compatible; strom-pull)";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectInfo {
    pub flash_ver: String,
    pub publisher: bool,
}

impl ConnectInfo {
    /// Whether the client is another strom's pull ([`PULL_FLASH_VERSION`]).
    pub fn is_strom_pull(&self) -> bool {
        self.flash_ver == PULL_FLASH_VERSION
    }

    /// Reads the AMF0 values of a `connect` command (name, transaction id, command
    /// object, ...). Only for values the AMF guard has bounded: `rml_amf0` recurses.
    pub fn from_command(values: &[u8]) -> Self {
        match rml_amf0::deserialize(&mut std::io::Cursor::new(values)) {
            Ok(values) => values.get(2).map(info_from).unwrap_or_default(),
            Err(_) => Self::default(),
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
    use crate::chunk_guard::{ChunkGuard, GuardLimits};
    use rml_rtmp::chunk_io::ChunkSerializer;
    use rml_rtmp::messages::RtmpMessage;
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
        let mut guard = ChunkGuard::new(GuardLimits::server(1 << 20));
        let mut found = None;
        for byte in packet.bytes.chunks(7) {
            guard.inspect(byte).unwrap();
            if let Some(values) = guard.take_connect() {
                found = Some(ConnectInfo::from_command(&values));
            }
        }
        let info = found.expect("connect found");
        assert!(info.publisher);
        assert!(info.flash_ver.starts_with("FMLE/3.0"));
        let again = serializer.serialize(&payload, false, false).unwrap();
        guard.inspect(&again.bytes).unwrap();
        assert_eq!(guard.take_connect(), None, "only the first connect");
    }

    #[test]
    fn odd_command_objects_give_no_facts() {
        for values in [
            vec![
                Amf0Value::Utf8String("connect".into()),
                Amf0Value::Number(1.0),
                Amf0Value::Null,
            ],
            vec![Amf0Value::Utf8String("connect".into())],
        ] {
            let bytes = rml_amf0::serialize(&values).unwrap();
            assert_eq!(ConnectInfo::from_command(&bytes), ConnectInfo::default());
        }
        assert_eq!(ConnectInfo::from_command(&[0x0B]), ConnectInfo::default());
    }
}
