//! MP4 files as server playlists play them (`strom_media::mp4_read`): any bytes are
//! indexed, and every sample of what indexes is read back within the file's bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Cursor;
use strom_media::mp4_read::Mp4Index;

fuzz_target!(|data: &[u8]| {
    let mut file = Cursor::new(data);
    if let Ok(index) = Mp4Index::open(&mut file) {
        assert!(index.video.is_some() || index.audio.is_some());
        let _ = index.config_frames(0);
        for sample in index.samples.iter().take(10_000) {
            assert!(sample.offset + u64::from(sample.size) <= data.len() as u64);
            assert!(
                index.read(&mut file, sample).is_ok(),
                "an indexed sample reads"
            );
        }
    }
});
