//! RFC 6381 codec strings (`avc1.64001f`, `hvc1.1.6.L93.B0`, `mp4a.40.2`) from
//! codec configuration fields.

use std::fmt::Write;

/// `avc1.PPCCLL` from the profile, constraint flags and level of an H.264 SPS
/// (the three bytes after the NAL header, as also found in an `avcC` record).
pub fn avc1(profile_idc: u8, constraint_flags: u8, level_idc: u8) -> String {
    format!("avc1.{profile_idc:02x}{constraint_flags:02x}{level_idc:02x}")
}

/// `hvc1.[A-C]<profile>.<compat>.<L|H><level>[.<constraint byte>]*` per
/// ISO/IEC 14496-15 Annex E: the compatibility flags bit-reversed in hex, the
/// six constraint bytes in hex up to the last non-zero one.
pub fn hvc1(
    profile_space: u8,
    high_tier: bool,
    profile_idc: u8,
    compatibility_flags: u32,
    constraint_flags: &[u8; 6],
    level_idc: u8,
) -> String {
    let space = match profile_space {
        1 => "A",
        2 => "B",
        3 => "C",
        _ => "",
    };
    let tier = if high_tier { 'H' } else { 'L' };
    let compat = compatibility_flags.reverse_bits();
    let mut s = format!("hvc1.{space}{profile_idc}.{compat:X}.{tier}{level_idc}");
    let used = constraint_flags
        .iter()
        .rposition(|&b| b != 0)
        .map_or(0, |last| last + 1);
    for b in constraint_flags.iter().take(used) {
        let _ = write!(s, ".{b:X}");
    }
    s
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
        /// Profile space, high tier, profile, compatibility flags, constraints, level, string.
        type Case = (u8, bool, u8, u32, [u8; 6], u8, &'static str);
        let cases: &[Case] = &[
            (
                0,
                false,
                1,
                0x6000_0000,
                [0xb0, 0, 0, 0, 0, 0],
                93,
                "hvc1.1.6.L93.B0",
            ),
            (
                0,
                true,
                2,
                0x2000_0000,
                [0x90, 0, 0, 0, 0, 0],
                120,
                "hvc1.2.4.H120.90",
            ),
            (0, false, 1, 0x6000_0000, [0; 6], 63, "hvc1.1.6.L63"),
            (
                1,
                false,
                4,
                0x0800_0000,
                [0x98, 0, 0x01, 0, 0, 0],
                150,
                "hvc1.A4.10.L150.98.0.1",
            ),
        ];
        for &(space, tier, profile, compat, constraints, level, want) in cases {
            assert_eq!(
                hvc1(space, tier, profile, compat, &constraints, level),
                want
            );
        }
    }
}
