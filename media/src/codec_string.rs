//! RFC 6381 codec strings (`avc1.64001f`, `mp4a.40.2`) from codec configuration bytes.

/// `avc1.PPCCLL` from the profile, constraint flags and level of an H.264 SPS
/// (the three bytes after the NAL header, as also found in an `avcC` record).
pub fn avc1(profile_idc: u8, constraint_flags: u8, level_idc: u8) -> String {
    format!("avc1.{profile_idc:02x}{constraint_flags:02x}{level_idc:02x}")
}

/// `mp4a.40.N` for an AAC stream of audio object type `object_type`.
pub fn mp4a(object_type: u8) -> String {
    format!("mp4a.40.{object_type}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_players_expect() {
        assert_eq!(avc1(0x64, 0x00, 0x1f), "avc1.64001f");
        assert_eq!(avc1(0x42, 0xc0, 0x1e), "avc1.42c01e");
        assert_eq!(mp4a(2), "mp4a.40.2");
    }
}
