//! What an Icecast source sends: its request head (`PUT`/`SOURCE`, any bytes) and its
//! audio body, deframed as MP3 and as ADTS in chunk sizes the input chooses.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strom_media::audio_stream::{AudioDeframer, AudioFormat};
use strom_media::icy_request::{SourceMethod, parse_head};

fuzz_target!(|data: &[u8]| {
    let _ = SourceMethod::starts(data);
    let _ = parse_head(data);
    let Some((&chunk, body)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(chunk).max(1);
    for format in [AudioFormat::Mpeg, AudioFormat::Adts] {
        let mut deframer = AudioDeframer::new(format);
        let mut frames = Vec::new();
        for piece in body.chunks(chunk) {
            deframer.push(piece, &mut frames);
            frames.clear();
        }
    }
});
