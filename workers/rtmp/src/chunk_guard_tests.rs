//! Tests of the chunk guard (`chunk_guard.rs`), kept beside it so that file stays readable.

use super::*;
use rml_amf0::Amf0Value;
use rml_rtmp::chunk_io::{ChunkDeserializer, ChunkSerializer};
use rml_rtmp::messages::{MessagePayload, RtmpMessage};
use rml_rtmp::time::RtmpTimestamp;
use std::panic::{AssertUnwindSafe, catch_unwind};

fn server(limit: u32) -> ChunkGuard {
    ChunkGuard::new(GuardLimits::server(limit))
}

fn payload(type_id: u8, timestamp: u32, len: usize, stream: u32) -> MessagePayload {
    let mut message = MessagePayload::new();
    message.type_id = type_id;
    message.timestamp = RtmpTimestamp::new(timestamp);
    message.message_stream_id = stream;
    message.data = bytes::Bytes::from((0..len).map(|i| (i % 199) as u8).collect::<Vec<u8>>());
    message
}

fn command(name: &str, arguments: Vec<Amf0Value>) -> MessagePayload {
    RtmpMessage::Amf0Command {
        command_name: name.to_owned(),
        transaction_id: 2.0,
        command_object: Amf0Value::Null,
        additional_arguments: arguments,
    }
    .into_message_payload(RtmpTimestamp::new(0), 0)
    .unwrap()
}

/// A type 0 chunk header (csid 2..=63, no extended timestamp).
fn full_header(csid: u8, length: u32, type_id: u8) -> Vec<u8> {
    let l = length.to_be_bytes();
    vec![csid, 0, 0, 0, l[1], l[2], l[3], type_id, 1, 0, 0, 0]
}

/// `body` as one message on chunk stream `csid` in 128-byte chunks.
fn chunked(csid: u8, type_id: u8, body: &[u8]) -> Vec<u8> {
    let mut bytes = full_header(csid, body.len() as u32, type_id);
    for (i, piece) in body.chunks(128).enumerate() {
        if i > 0 {
            bytes.push(0xC0 | csid);
        }
        bytes.extend(piece);
    }
    bytes
}

/// What ffmpeg sends: a chunk size change, commands, then media of every size, with
/// compressed headers and extended timestamps.
fn encoder_stream() -> Vec<u8> {
    let mut serializer = ChunkSerializer::new();
    let mut wire = Vec::new();
    wire.extend(
        serializer
            .serialize(&command("connect", vec![]), false, false)
            .unwrap()
            .bytes,
    );
    let chunk_size = RtmpMessage::SetChunkSize { size: 4096 }
        .into_message_payload(RtmpTimestamp::new(0), 0)
        .unwrap();
    wire.extend(
        serializer
            .serialize(&chunk_size, false, false)
            .unwrap()
            .bytes,
    );
    serializer
        .set_max_chunk_size(4096, RtmpTimestamp::new(0))
        .unwrap();
    for name in ["releaseStream", "FCPublish", "createStream"] {
        let message = command(name, vec![Amf0Value::Utf8String("cam".into())]);
        wire.extend(serializer.serialize(&message, false, false).unwrap().bytes);
    }
    let metadata = RtmpMessage::Amf0Data {
        values: vec![
            Amf0Value::Utf8String("@setDataFrame".into()),
            Amf0Value::Utf8String("onMetaData".into()),
            Amf0Value::Object(Default::default()),
        ],
    }
    .into_message_payload(RtmpTimestamp::new(0), 1)
    .unwrap();
    wire.extend(serializer.serialize(&metadata, false, false).unwrap().bytes);
    let mut timestamp = 0xFF_FF00u32;
    for i in 0..200usize {
        timestamp = timestamp.wrapping_add(40);
        let len = [0, 1, 127, 128, 4095, 4096, 4097, 20_000][i % 8];
        for message in [payload(9, timestamp, len, 1), payload(8, timestamp, 300, 1)] {
            wire.extend(serializer.serialize(&message, false, false).unwrap().bytes);
        }
    }
    wire
}

/// The messages (type, length) `rml_rtmp`'s deserializer yields for `input`, fed in
/// `piece`-sized reads, applying chunk size changes as the sessions do; `Err` when it
/// fails or panics.
fn rml_messages(input: &[u8], piece: usize) -> Result<Vec<(u8, usize)>, String> {
    catch_unwind(AssertUnwindSafe(|| {
        let mut deserializer = ChunkDeserializer::new();
        let mut messages = Vec::new();
        for mut part in input.chunks(piece) {
            while let Some(message) = deserializer
                .get_next_message(part)
                .map_err(|e| e.to_string())?
            {
                part = &[];
                messages.push((message.type_id, message.data.len()));
                if let Ok(RtmpMessage::SetChunkSize { size }) = message.to_rtmp_message() {
                    deserializer
                        .set_max_chunk_size(size as usize)
                        .map_err(|e| e.to_string())?;
                }
            }
        }
        Ok(messages)
    }))
    .unwrap_or_else(|_| Err("panicked".to_owned()))
}

fn guard_messages(input: &[u8], piece: usize) -> Result<Vec<(u8, usize)>, GuardError> {
    let mut guard = server(1 << 24);
    for part in input.chunks(piece) {
        guard.inspect(part)?;
    }
    Ok(guard.messages)
}

#[test]
fn follows_real_chunk_streams_and_stops_only_oversized_messages() {
    let wire = encoder_stream();
    let expected = rml_messages(&wire, 1 << 20).unwrap();
    // (rml_rtmp's serializer sends nothing for the empty media messages.)
    assert_eq!(expected.len(), 6 + 400 - 25);
    for piece in [1usize, 3, 7, 64, 1000, 1 << 20] {
        let mut guard = server(20_000);
        for part in wire.chunks(piece) {
            guard.inspect(part).unwrap();
        }
        assert!(matches!(guard.stage, Stage::Header));
        assert!(guard.head.is_empty());
        assert_eq!(
            guard.messages, expected,
            "same message boundaries as rml_rtmp"
        );
        assert_eq!(guard.chunk_size, 4096);
        assert!(guard.take_connect().is_some());
    }
    let mut strict = server(10_000);
    assert_eq!(
        strict.inspect(&wire),
        Err(GuardError::TooLarge {
            length: 20_000,
            limit: 10_000
        })
    );
    assert!(strict.inspect(&[]).is_err(), "stays refused");
}

#[test]
fn an_announced_giant_is_refused_before_its_payload() {
    let mut guard = server(8 * 1024 * 1024);
    let header = [0x04, 0, 0, 0, 0xFF, 0xFF, 0xFF, 9, 1, 0, 0, 0];
    assert!(matches!(
        guard.inspect(&header),
        Err(GuardError::TooLarge { .. })
    ));
    let mut guard = server(1000);
    assert_eq!(guard.inspect(&[0xC5]), Err(GuardError::NoPreviousHeader(5)));
    // Commands are reassembled only up to their own limit.
    let mut guard = server(8 * 1024 * 1024);
    assert!(matches!(
        guard.inspect(&full_header(3, 70_000, 20)),
        Err(GuardError::TooLargeToCheck { type_id: 20, .. })
    ));
}

/// A chunk of another chunk stream in the middle of a message: rml_rtmp appends it to
/// the message in progress, and panics when its header announces fewer bytes than
/// are buffered. The guard refuses every interleaving first.
#[test]
fn interleaved_chunks_are_refused_where_rml_rtmp_breaks() {
    // 300 bytes of video on csid 6 (128-byte chunks): first chunk only.
    let mut first = full_header(6, 300, 9);
    first.extend(std::iter::repeat_n(0x17, 128));

    // A 50-byte message on csid 4: rml_rtmp underflows and panics.
    let mut short = first.clone();
    short.extend(full_header(4, 50, 9));
    short.extend(std::iter::repeat_n(0xAA, 50));
    assert_eq!(rml_messages(&short, 1 << 20), Err("panicked".to_owned()));
    assert_eq!(
        guard_messages(&short, 1 << 20),
        Err(GuardError::Interleaved {
            format: 0,
            csid: 4,
            current: 6
        })
    );

    // A longer one: rml_rtmp silently mixes the two messages.
    let mut long = first.clone();
    long.extend(full_header(4, 500, 8));
    long.extend(std::iter::repeat_n(0xAA, 128));
    long.push(0xC6);
    long.extend(std::iter::repeat_n(0x17, 44));
    let mixed = rml_messages(&long, 1 << 20).unwrap();
    assert_eq!(mixed, vec![(9, 300)], "rml: one message of mixed bytes");
    assert!(matches!(
        guard_messages(&long, 7),
        Err(GuardError::Interleaved { csid: 4, .. })
    ));

    // A new type 0 header on the same chunk stream mid-message.
    let mut restart = first.clone();
    restart.extend(full_header(6, 20, 20));
    restart.extend(std::iter::repeat_n(0x05, 20));
    assert_eq!(rml_messages(&restart, 1 << 20), Err("panicked".to_owned()));
    assert!(matches!(
        guard_messages(&restart, 1),
        Err(GuardError::Interleaved {
            format: 0,
            csid: 6,
            ..
        })
    ));

    // Type 1 and 2 headers mid-message are refused too.
    for format in [1u8, 2] {
        let mut compressed = first.clone();
        compressed.push((format << 6) | 6);
        compressed.extend([0, 0, 0, 0, 0, 0x10, 9][..if format == 1 { 7 } else { 3 }].iter());
        assert!(matches!(
            guard_messages(&compressed, 1 << 20),
            Err(GuardError::Interleaved { .. })
        ));
    }

    // Whole messages on alternating chunk streams are fine for both.
    let mut alternating = Vec::new();
    for (csid, type_id) in [(6u8, 9u8), (4, 8), (6, 9), (5, 8)] {
        alternating.extend(full_header(csid, 300, type_id));
        for (i, piece) in [128usize, 128, 44].into_iter().enumerate() {
            if i > 0 {
                alternating.push(0xC0 | csid);
            }
            alternating.extend(std::iter::repeat_n(0x11, piece));
        }
    }
    for piece in [1, 5, 1 << 20] {
        assert_eq!(
            guard_messages(&alternating, piece).unwrap(),
            rml_messages(&alternating, piece).unwrap()
        );
    }
}

#[test]
fn a_small_extended_timestamp_on_a_compressed_header_is_refused() {
    let mut input = full_header(6, 1, 9);
    input.push(0x27);
    // Type 1: delta 0xFFFFFF, extended 5.
    input.extend([0x46, 0xFF, 0xFF, 0xFF, 0, 0, 1, 9, 0, 0, 0, 5, 0x27]);
    assert_eq!(
        guard_messages(&input, 1 << 20),
        Err(GuardError::ExtendedTimestamp(5))
    );
    let mut fine = full_header(6, 1, 9);
    fine.push(0x27);
    fine.extend([0x46, 0xFF, 0xFF, 0xFF, 0, 0, 1, 9, 0x01, 0, 0, 5, 0x27]);
    assert_eq!(guard_messages(&fine, 1 << 20).unwrap().len(), 2);
    assert_eq!(rml_messages(&fine, 1 << 20).unwrap().len(), 2);
}

#[test]
fn chunk_sizes_rml_rtmp_would_not_follow_are_refused() {
    for (size, error) in [
        (0u32, GuardError::BadChunkSize(0)),
        (0x8000_0000, GuardError::BadChunkSize(0x8000_0000)),
    ] {
        let mut input = full_header(2, 4, 1);
        input.extend(size.to_be_bytes());
        assert_eq!(guard_messages(&input, 1 << 20), Err(error));
    }
    let mut short = full_header(2, 2, 1);
    short.extend([0, 1]);
    assert_eq!(
        guard_messages(&short, 1 << 20),
        Err(GuardError::ShortChunkSize)
    );
}

/// Commands rml_rtmp would panic on: fewer than three values, and values nested
/// deeper than a thread's stack.
#[test]
fn commands_are_checked_before_rml_rtmp_decodes_them() {
    let two_values = rml_amf0::serialize(&vec![
        Amf0Value::Utf8String("play".into()),
        Amf0Value::Number(1.0),
    ])
    .unwrap();
    for (type_id, body) in [
        (20u8, two_values.clone()),
        (17, [&[0u8][..], &two_values].concat()),
        (20, vec![]),
    ] {
        let mut message = payload(type_id, 0, 0, 0);
        message.data = body.clone().into();
        let decoded = catch_unwind(AssertUnwindSafe(|| message.to_rtmp_message()));
        assert!(decoded.is_err(), "rml_rtmp panics on {body:?}");
        let input = chunked(3, type_id, &body);
        assert!(matches!(
            guard_messages(&input, 1 << 20),
            Err(GuardError::CommandTooShort(_))
        ));
    }
    let mut deep = rml_amf0::serialize(&vec![
        Amf0Value::Utf8String("connect".into()),
        Amf0Value::Number(1.0),
    ])
    .unwrap();
    for _ in 0..10_000 {
        deep.extend([3, 0, 1, b'a']);
    }
    let input = chunked(3, 20, &deep);
    assert!(matches!(
        guard_messages(&input, 1 << 20),
        Err(GuardError::Amf {
            type_id: 20,
            error: AmfError::TooDeep(32)
        })
    ));
}

#[test]
fn set_data_frame_needs_its_values() {
    let short = rml_amf0::serialize(&vec![
        Amf0Value::Utf8String("@setDataFrame".into()),
        Amf0Value::Utf8String("onMetaData".into()),
    ])
    .unwrap();
    let mut input = full_header(4, short.len() as u32, 18);
    input.extend(&short);
    assert_eq!(
        guard_messages(&input, 1 << 20),
        Err(GuardError::DataFrameTooShort(2))
    );
    let mut client = ChunkGuard::new(GuardLimits::client(1 << 20));
    client.inspect(&input).unwrap();
}

#[test]
fn create_stream_is_capped() {
    let mut serializer = ChunkSerializer::new();
    let mut guard = server(1 << 20);
    for i in 0..MAX_CREATE_STREAM + 1 {
        let packet = serializer
            .serialize(&command("createStream", vec![]), false, false)
            .unwrap();
        let outcome = guard.inspect(&packet.bytes);
        if i < MAX_CREATE_STREAM {
            outcome.unwrap();
        } else {
            assert_eq!(outcome, Err(GuardError::TooManyStreams(MAX_CREATE_STREAM)));
        }
    }
    let mut client = ChunkGuard::new(GuardLimits::client(1 << 20));
    let mut serializer = ChunkSerializer::new();
    for _ in 0..100 {
        let packet = serializer
            .serialize(&command("createStream", vec![]), false, false)
            .unwrap();
        client.inspect(&packet.bytes).unwrap();
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut noise = crate::test_noise::Noise::new(0x2545_f491);
    for _ in 0..200 {
        let mut guard = server(1 << 20);
        let _ = guard.inspect(&noise.bytes(4096));
    }
}

/// Mutations of a real stream: whatever the guard lets through, rml_rtmp's
/// deserializer reads without panicking and splits into the same messages.
#[test]
fn whatever_passes_the_guard_rml_rtmp_reads_the_same_way() {
    let wire = encoder_stream();
    let wire = &wire[..wire.len().min(30_000)];
    let mut noise = crate::test_noise::Noise::new(0x0bad_cafe);
    let mut passed = 0;
    for round in 0..600 {
        let mut input = wire.to_vec();
        let edits = noise.bytes(8);
        for pair in edits.chunks(2).take(1 + round % 4) {
            let at = (usize::from(pair[0]) << 8 | usize::from(pair[1])) * 7 % input.len();
            input[at] = pair[1].rotate_left(3);
        }
        let piece = [1usize, 13, 4096][round % 3];
        let mut guard = server(1 << 24);
        let (mut accepted, mut seen) = (0, 0);
        for part in input.chunks(piece) {
            if guard.inspect(part).is_err() {
                break;
            }
            accepted += part.len();
            seen = guard.messages.len();
        }
        let rml = rml_messages(&input[..accepted], piece);
        assert_eq!(rml.as_deref(), Ok(&guard.messages[..seen]), "round {round}");
        passed += usize::from(accepted == input.len());
    }
    assert!(passed > 50, "only {passed} mutated streams passed whole");
}
