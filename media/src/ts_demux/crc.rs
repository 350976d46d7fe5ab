//! CRC-32/MPEG-2 over PSI sections, shared with the muxer (`ts::psi`): a whole section
//! including its trailing CRC checks to 0.

pub(crate) use crate::ts::psi::crc32_mpeg2;
