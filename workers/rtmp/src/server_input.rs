//! The RTMP server's input path without I/O: every byte a client sends after the
//! handshake goes through [`ServerInput::handle`], which runs the chunk guard (and the
//! AMF guard behind it) over the bytes, reads the `connect` facts the guard kept, and only
//! then hands the bytes to `rml_rtmp`'s server session. `connection.rs` drives it from the
//! socket; the fuzz target `rtmp_server_input` drives it through [`exercise`] with the
//! handshake before it and every request accepted, as the server would.
//!
//! The fuzz target compiles this file, `chunk_guard.rs`, `amf_guard.rs`,
//! `connect_info.rs` and `chunking.rs` by path (not the whole worker crate): they may use
//! only each other, `rml_rtmp`, `rml_amf0`, `thiserror` and `bytes`.

use crate::chunk_guard::{ChunkGuard, GuardError, GuardLimits};
use crate::chunking::OUTGOING_CHUNK_SIZE;
use crate::connect_info::ConnectInfo;
use rml_rtmp::handshake::{Handshake, HandshakeProcessResult, PeerType};
use rml_rtmp::sessions::{
    ServerSession, ServerSessionConfig, ServerSessionError, ServerSessionEvent, ServerSessionResult,
};

/// Why input was not accepted; the connection must be closed either way.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The guard refused the bytes before `rml_rtmp` saw them.
    #[error("input refused: {0}")]
    Refused(#[from] GuardError),
    #[error("{0}")]
    Session(#[from] ServerSessionError),
}

/// What one read produced.
pub struct Handled {
    /// The facts of the client's `connect`, when this read completed it.
    pub connect: Option<ConnectInfo>,
    /// `onCuePoint` data messages (AMF0 payloads) this read completed.
    pub cue_points: Vec<Vec<u8>>,
    pub results: Vec<ServerSessionResult>,
}

pub struct ServerInput {
    guard: ChunkGuard,
}

impl ServerInput {
    pub fn new(max_message_bytes: u32) -> Self {
        Self {
            guard: ChunkGuard::new(GuardLimits::server(max_message_bytes)),
        }
    }

    /// Bytes read from the client after the handshake, in order.
    pub fn handle(
        &mut self,
        session: &mut ServerSession,
        bytes: &[u8],
    ) -> Result<Handled, InputError> {
        self.guard.inspect(bytes)?;
        let connect = self
            .guard
            .take_connect()
            .map(|values| ConnectInfo::from_command(&values));
        let cue_points = self.guard.take_cue_points();
        let results = session.handle_input(bytes)?;
        Ok(Handled {
            connect,
            cue_points,
            results,
        })
    }
}

/// The default `limits.max_message_bytes`.
const FUZZ_MAX_MESSAGE_BYTES: u32 = 8 * 1024 * 1024;

/// Treats `data` as everything a client sends on one connection: the handshake (C0, C1,
/// C2), then chunks through [`ServerInput`] into a server session whose every connect,
/// publish and play request is accepted. The bytes arrive in reads of varying sizes.
/// Returns how many reads the session handled; panics only on a bug.
pub fn exercise(data: &[u8]) -> usize {
    let mut reads = Reads::new(data);
    let mut handshake = Handshake::new(PeerType::Server);
    let leftover = loop {
        let Some(read) = reads.next() else {
            return 0;
        };
        match handshake.process_bytes(read) {
            Ok(HandshakeProcessResult::InProgress { .. }) => {}
            Ok(HandshakeProcessResult::Completed {
                remaining_bytes, ..
            }) => break remaining_bytes,
            Err(_) => return 0,
        }
    };
    let mut config = ServerSessionConfig::new();
    config.chunk_size = OUTGOING_CHUNK_SIZE;
    let Ok((mut session, _)) = ServerSession::new(config) else {
        return 0;
    };
    let mut input = ServerInput::new(FUZZ_MAX_MESSAGE_BYTES);
    let mut handled = 0;
    for read in std::iter::once(&leftover[..]).chain(reads) {
        if read.is_empty() {
            continue;
        }
        let Ok(outcome) = input.handle(&mut session, read) else {
            return handled;
        };
        handled += 1;
        if accept_all(&mut session, outcome.results).is_err() {
            return handled;
        }
    }
    handled
}

/// Accepts every request the session raises (and those its answers raise).
fn accept_all(
    session: &mut ServerSession,
    mut results: Vec<ServerSessionResult>,
) -> Result<(), ServerSessionError> {
    while let Some(result) = results.pop() {
        let ServerSessionResult::RaisedEvent(event) = result else {
            continue;
        };
        let request_id = match event {
            ServerSessionEvent::ConnectionRequested { request_id, .. }
            | ServerSessionEvent::ReleaseStreamRequested { request_id, .. }
            | ServerSessionEvent::PublishStreamRequested { request_id, .. }
            | ServerSessionEvent::PlayStreamRequested { request_id, .. } => request_id,
            _ => continue,
        };
        results.extend(session.accept_request(request_id)?);
    }
    Ok(())
}

/// `data` cut into reads: mostly a few KB (a socket read), sometimes single bytes;
/// the sizes follow from the data's length, so an input always replays the same way.
struct Reads<'a> {
    rest: &'a [u8],
    state: u32,
}

impl<'a> Reads<'a> {
    fn new(data: &'a [u8]) -> Self {
        Self {
            rest: data,
            state: (data.len() as u32).wrapping_mul(0x9E37_79B9) | 1,
        }
    }
}

impl<'a> Iterator for Reads<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        self.state ^= self.state << 13;
        self.state ^= self.state >> 17;
        self.state ^= self.state << 5;
        let size = match self.state % 8 {
            0 => 1,
            1 => 1 + (self.state >> 8) as usize % 16,
            _ => 1 + (self.state >> 8) as usize % 8192,
        };
        let (read, rest) = self.rest.split_at(size.min(self.rest.len()));
        self.rest = rest;
        Some(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rml_amf0::Amf0Value;
    use rml_rtmp::chunk_io::ChunkSerializer;
    use rml_rtmp::messages::RtmpMessage;
    use rml_rtmp::time::RtmpTimestamp;
    use std::collections::HashMap;
    use std::path::PathBuf;

    /// A client's side of the handshake as `exercise` reads it: C0+C1, then C2.
    fn handshake_bytes() -> Vec<u8> {
        let mut bytes = vec![3u8];
        bytes.extend((0..1536u32).map(|i| (i * 7 % 251) as u8));
        bytes.extend((0..1536u32).map(|i| (i * 13 % 241) as u8));
        bytes
    }

    fn command(
        name: &str,
        transaction: f64,
        object: Amf0Value,
        args: Vec<Amf0Value>,
    ) -> RtmpMessage {
        RtmpMessage::Amf0Command {
            command_name: name.to_owned(),
            transaction_id: transaction,
            command_object: object,
            additional_arguments: args,
        }
    }

    /// A publisher's session as ffmpeg sends it.
    fn publisher_session() -> Vec<u8> {
        let mut serializer = ChunkSerializer::new();
        let mut bytes = handshake_bytes();
        let mut send = |message: RtmpMessage, stream: u32, bytes: &mut Vec<u8>| {
            let payload = message
                .into_message_payload(RtmpTimestamp::new(0), stream)
                .unwrap();
            bytes.extend(serializer.serialize(&payload, false, false).unwrap().bytes);
        };
        let app = HashMap::from([
            ("app".to_owned(), Amf0Value::Utf8String("live".into())),
            (
                "type".to_owned(),
                Amf0Value::Utf8String("nonprivate".into()),
            ),
            (
                "flashVer".to_owned(),
                Amf0Value::Utf8String("FMLE/3.0".into()),
            ),
        ]);
        send(
            command("connect", 1.0, Amf0Value::Object(app), vec![]),
            0,
            &mut bytes,
        );
        send(
            command("createStream", 2.0, Amf0Value::Null, vec![]),
            0,
            &mut bytes,
        );
        let key = vec![
            Amf0Value::Utf8String("cam".into()),
            Amf0Value::Utf8String("live".into()),
        ];
        send(command("publish", 3.0, Amf0Value::Null, key), 1, &mut bytes);
        send(
            RtmpMessage::Amf0Data {
                values: vec![
                    Amf0Value::Utf8String("@setDataFrame".into()),
                    Amf0Value::Utf8String("onMetaData".into()),
                    Amf0Value::Object(HashMap::from([(
                        "width".to_owned(),
                        Amf0Value::Number(320.0),
                    )])),
                ],
            },
            1,
            &mut bytes,
        );
        for i in 0..20u8 {
            send(
                RtmpMessage::VideoData {
                    data: vec![0x17, 1, 0, 0, 0, i].into(),
                },
                1,
                &mut bytes,
            );
        }
        bytes
    }

    #[test]
    fn a_publisher_session_goes_through_the_whole_path() {
        let bytes = publisher_session();
        assert!(exercise(&bytes) >= 1, "reads handled after the handshake");
        // Byte by byte too (the reads then follow from the data length).
        let mut input = ServerInput::new(1 << 20);
        let (mut session, _) = ServerSession::new(ServerSessionConfig::new()).unwrap();
        let mut connect = None;
        let mut events = Vec::new();
        for byte in bytes[3073..].chunks(1) {
            let handled = input.handle(&mut session, byte).unwrap();
            connect = connect.or(handled.connect);
            for result in handled.results {
                if let ServerSessionResult::RaisedEvent(event) = result {
                    let id = match &event {
                        ServerSessionEvent::ConnectionRequested { request_id, .. }
                        | ServerSessionEvent::PublishStreamRequested { request_id, .. } => {
                            Some(*request_id)
                        }
                        _ => None,
                    };
                    events.push(format!("{event:?}"));
                    if let Some(id) = id {
                        session.accept_request(id).unwrap();
                    }
                }
            }
        }
        let connect = connect.expect("connect facts");
        assert!(connect.publisher);
        assert_eq!(connect.flash_ver, "FMLE/3.0");
        assert_eq!(
            events
                .iter()
                .filter(|e| e.starts_with("VideoDataReceived"))
                .count(),
            20
        );
    }

    #[test]
    fn hostile_input_is_refused_before_the_session() {
        let mut deep = rml_amf0::serialize(&vec![
            Amf0Value::Utf8String("connect".into()),
            Amf0Value::Number(1.0),
        ])
        .unwrap();
        for _ in 0..10_000 {
            deep.extend([0x0A, 0, 0, 0, 1]);
        }
        let mut bytes = vec![0x03, 0, 0, 0];
        bytes.extend(&(deep.len() as u32).to_be_bytes()[1..]);
        bytes.extend([20, 0, 0, 0, 0]);
        for (i, piece) in deep.chunks(128).enumerate() {
            if i > 0 {
                bytes.push(0xC3);
            }
            bytes.extend(piece);
        }
        let mut input = ServerInput::new(1 << 20);
        let (mut session, _) = ServerSession::new(ServerSessionConfig::new()).unwrap();
        let outcome = input.handle(&mut session, &bytes);
        assert!(
            matches!(outcome, Err(InputError::Refused(GuardError::Amf { .. }))),
            "{:?}",
            outcome.err()
        );
    }

    fn corpus() -> Vec<PathBuf> {
        let dir =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/rtmp_server_input");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.sort();
        files
    }

    /// The fuzz target's seeds and mutations of them run on stable in every test run.
    #[test]
    fn the_fuzz_corpus_and_mutations_of_it_never_panic() {
        let mut seeds: Vec<Vec<u8>> = corpus()
            .iter()
            .map(|path| std::fs::read(path).unwrap())
            .collect();
        assert!(!seeds.is_empty(), "fuzz/corpus/rtmp_server_input has seeds");
        seeds.push(publisher_session());
        for seed in &seeds {
            exercise(seed);
        }
        let mut noise = crate::test_noise::Noise::new(0x7a11_0c8d);
        for round in 0..400 {
            let seed = &seeds[round % seeds.len()];
            let mut bytes = seed.clone();
            let edits = noise.bytes(12);
            for pair in edits.chunks(3).take(1 + round % 4) {
                // Mostly after the handshake, where the chunk stream is.
                let span = bytes.len().saturating_sub(3073).max(1);
                let at = 3073 + (usize::from(pair[0]) << 8 | usize::from(pair[1])) % span;
                if let Some(byte) = bytes.get_mut(at) {
                    *byte = pair[2];
                }
            }
            if round % 7 == 0 {
                let cut = usize::from(edits[0]) * 40 % bytes.len();
                bytes.truncate(cut.max(3073));
            }
            exercise(&bytes);
        }
    }
}
