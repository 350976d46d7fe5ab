//! MPEG-DASH: the live manifest ([`mpd`]). Its segments are the per-track CMAF fragments
//! of the HLS fMP4 segments (`crate::fmp4::Fragmenter::fragment_track`).

pub mod mpd;
