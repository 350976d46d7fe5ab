//! Media bus frame headers.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strom_ipc::bus::{MEDIA_HEADER_LEN, MediaHeader};

fuzz_target!(|data: &[u8]| {
    if let Ok(bytes) = <&[u8; MEDIA_HEADER_LEN]>::try_from(data) {
        if let Ok(header) = MediaHeader::decode(bytes)
            && let Ok(again) = MediaHeader::decode(&header.encode())
        {
            assert_eq!(again, header);
        }
    }
});
