//! SRTP with AEAD AES-GCM (RFC 7714) for strom's own RTP send path (rtp_send.rs): a
//! viewer's outgoing RTP and RTCP sealed, and the SRTCP its peer sends (receiver reports,
//! NACK, PLI) opened, under session keys derived from its DTLS handshake's keying
//! material (RFC 5764 4.2, the key derivation of RFC 3711 4.3.1). The AES-GCM ciphers
//! and the key derivation's AES rounds are str0m's crypto provider's, so this file holds
//! only the packet layouts and the key schedule. A session that negotiated
//! AES-CM-HMAC-SHA1 (browsers pick GCM when both ends offer it) keeps str0m's send path.

use crate::dtls_keys::Keys;
use str0m::crypto::dtls::SrtpProfile;
use str0m::crypto::{AeadAes128Gcm, AeadAes128GcmCipher, AeadAes256GcmCipher, SrtpProvider};

/// The authentication tag AES-GCM appends (both key sizes).
pub const TAG_LEN: usize = 16;
/// The SRTCP trailer: the E flag and the 31-bit SRTCP index.
const SRTCP_INDEX_LEN: usize = 4;
/// The RTCP header and sender SSRC, sent in the clear and authenticated.
const SRTCP_CLEAR_LEN: usize = 8;
/// The GCM master salt (both key sizes).
const SALT_LEN: usize = 12;

// Key derivation labels, RFC 3711 4.3.1.
const LABEL_RTP_KEY: u8 = 0;
const LABEL_RTP_SALT: u8 = 2;
const LABEL_RTCP_KEY: u8 = 3;
const LABEL_RTCP_SALT: u8 = 5;

/// One direction's AES-GCM cipher, of either key size.
enum Gcm {
    Aes128(Box<dyn AeadAes128GcmCipher>),
    Aes256(Box<dyn AeadAes256GcmCipher>),
}

impl Gcm {
    fn new(provider: &dyn SrtpProvider, key: &[u8], encrypt: bool) -> Option<Self> {
        if let Ok(key) = <[u8; 16]>::try_from(key) {
            return Some(Self::Aes128(
                provider.aead_aes_128_gcm().create_cipher(key, encrypt),
            ));
        }
        let key = <[u8; 32]>::try_from(key).ok()?;
        Some(Self::Aes256(
            provider.aead_aes_256_gcm().create_cipher(key, encrypt),
        ))
    }

    fn seal(&mut self, iv: &[u8; 12], aad: &[u8], input: &[u8], output: &mut [u8]) -> bool {
        match self {
            Self::Aes128(cipher) => cipher.encrypt(iv, aad, input, output).is_ok(),
            Self::Aes256(cipher) => cipher.encrypt(iv, aad, input, output).is_ok(),
        }
    }

    fn open(&mut self, iv: &[u8; 12], aads: &[&[u8]], input: &[u8], output: &mut [u8]) -> bool {
        match self {
            Self::Aes128(cipher) => cipher.decrypt(iv, aads, input, output).is_ok(),
            Self::Aes256(cipher) => cipher.decrypt(iv, aads, input, output).is_ok(),
        }
    }
}

/// A key and the salt its IVs are made with.
struct Keyed {
    cipher: Gcm,
    salt: [u8; SALT_LEN],
}

/// One viewer's SRTP: its outgoing RTP and RTCP, and its peer's RTCP.
pub struct SrtpSession {
    rtp_out: Keyed,
    rtcp_out: Keyed,
    rtcp_in: Keyed,
    /// The next outgoing SRTCP index (RFC 3711 3.4: from 0, modulo 2^31).
    srtcp_index: u32,
}

impl SrtpSession {
    /// The session for `keys`, if their profile is AES-GCM (else `None`: str0m sends).
    pub fn new(keys: &Keys) -> Option<Self> {
        let key_len = match keys.profile {
            SrtpProfile::AEAD_AES_128_GCM => 16,
            SrtpProfile::AEAD_AES_256_GCM => 32,
            _ => return None,
        };
        let provider = crate::dtls_keys::srtp_provider();
        // RFC 5764 4.2: client key, server key, client salt, server salt. The DTLS
        // client sends with the client's.
        let material = &keys.material;
        if material.len() != 2 * (key_len + SALT_LEN) {
            return None;
        }
        let half = |client: bool| {
            let (key_at, salt_at) = if client {
                (0, 2 * key_len)
            } else {
                (key_len, 2 * key_len + SALT_LEN)
            };
            (
                &material[key_at..key_at + key_len],
                &material[salt_at..salt_at + SALT_LEN],
            )
        };
        let (out_key, out_salt) = half(keys.active);
        let (in_key, in_salt) = half(!keys.active);
        let keyed = |master: &[u8], salt: &[u8], key_label, salt_label, encrypt| {
            let mut key = vec![0; master.len()];
            derive(provider, master, salt, key_label, &mut key);
            let mut session_salt = [0; SALT_LEN];
            derive(provider, master, salt, salt_label, &mut session_salt);
            Some(Keyed {
                cipher: Gcm::new(provider, &key, encrypt)?,
                salt: session_salt,
            })
        };
        Some(Self {
            rtp_out: keyed(out_key, out_salt, LABEL_RTP_KEY, LABEL_RTP_SALT, true)?,
            rtcp_out: keyed(out_key, out_salt, LABEL_RTCP_KEY, LABEL_RTCP_SALT, true)?,
            rtcp_in: keyed(in_key, in_salt, LABEL_RTCP_KEY, LABEL_RTCP_SALT, false)?,
            srtcp_index: 0,
        })
    }

    /// Seals an RTP packet (`header`, then `payload`) as one datagram (RFC 7714 8.1:
    /// the header is the associated data, the IV is made of SSRC, rollover counter and
    /// sequence number).
    pub fn protect_rtp(&mut self, header: &[u8], payload: &[u8], index: u64) -> Option<Vec<u8>> {
        let ssrc = u32::from_be_bytes(header.get(8..12)?.try_into().ok()?);
        let roc = (index >> 16) as u32;
        let iv = AeadAes128Gcm::rtp_iv(self.rtp_out.salt, ssrc, roc, index as u16);
        let mut datagram = vec![0; header.len() + payload.len() + TAG_LEN];
        datagram[..header.len()].copy_from_slice(header);
        self.rtp_out
            .cipher
            .seal(&iv, header, payload, &mut datagram[header.len()..])
            .then_some(datagram)
    }

    /// Seals a (compound) RTCP packet as SRTCP (RFC 7714 9: the first 8 bytes and the
    /// index are the associated data).
    pub fn protect_rtcp(&mut self, plain: &[u8]) -> Option<Vec<u8>> {
        let clear = plain.get(..SRTCP_CLEAR_LEN)?;
        let ssrc = u32::from_be_bytes(clear.get(4..8)?.try_into().ok()?);
        let index = self.srtcp_index;
        self.srtcp_index = (index + 1) & 0x7fff_ffff;
        let trailer = (0x8000_0000 | index).to_be_bytes();
        let mut aad = [0; SRTCP_CLEAR_LEN + SRTCP_INDEX_LEN];
        aad[..SRTCP_CLEAR_LEN].copy_from_slice(clear);
        aad[SRTCP_CLEAR_LEN..].copy_from_slice(&trailer);
        let iv = AeadAes128Gcm::rtcp_iv(self.rtcp_out.salt, ssrc, index);
        let sealed_end = plain.len() + TAG_LEN;
        let mut datagram = vec![0; sealed_end + SRTCP_INDEX_LEN];
        datagram[..SRTCP_CLEAR_LEN].copy_from_slice(clear);
        datagram[sealed_end..].copy_from_slice(&trailer);
        self.rtcp_out
            .cipher
            .seal(
                &iv,
                &aad,
                &plain[SRTCP_CLEAR_LEN..],
                &mut datagram[SRTCP_CLEAR_LEN..sealed_end],
            )
            .then_some(datagram)
    }

    /// Opens the peer's SRTCP packet; its plain (compound) RTCP, or `None` when it is
    /// short or does not authenticate.
    pub fn unprotect_rtcp(&mut self, datagram: &[u8]) -> Option<Vec<u8>> {
        if datagram.len() < SRTCP_CLEAR_LEN + TAG_LEN + SRTCP_INDEX_LEN {
            return None;
        }
        let index_at = datagram.len() - SRTCP_INDEX_LEN;
        let trailer: [u8; 4] = datagram.get(index_at..)?.try_into().ok()?;
        let e_and_index = u32::from_be_bytes(trailer);
        let index = e_and_index & 0x7fff_ffff;
        let ssrc = u32::from_be_bytes(datagram.get(4..8)?.try_into().ok()?);
        let iv = AeadAes128Gcm::rtcp_iv(self.rtcp_in.salt, ssrc, index);
        let body = &datagram[..index_at];
        if e_and_index & 0x8000_0000 == 0 {
            // Authenticated only (RFC 7714 9.2): the whole packet is associated data.
            let tag_at = index_at - TAG_LEN;
            let aads: [&[u8]; 2] = [&datagram[..tag_at], &trailer];
            let mut nothing = [0u8; 0];
            return self
                .rtcp_in
                .cipher
                .open(&iv, &aads, &datagram[tag_at..index_at], &mut nothing)
                .then(|| datagram[..tag_at].to_vec());
        }
        let mut aad = [0; SRTCP_CLEAR_LEN + SRTCP_INDEX_LEN];
        aad[..SRTCP_CLEAR_LEN].copy_from_slice(&datagram[..SRTCP_CLEAR_LEN]);
        aad[SRTCP_CLEAR_LEN..].copy_from_slice(&trailer);
        let sealed = &body[SRTCP_CLEAR_LEN..];
        let mut plain = vec![0; body.len() - TAG_LEN];
        plain[..SRTCP_CLEAR_LEN].copy_from_slice(&datagram[..SRTCP_CLEAR_LEN]);
        self.rtcp_in
            .cipher
            .open(&iv, &[&aad], sealed, &mut plain[SRTCP_CLEAR_LEN..])
            .then_some(plain)
    }
}

/// RFC 3711 4.3.1's key derivation (key derivation rate 0): AES in counter mode under
/// the master key, over the master salt with the label at byte 7.
fn derive(provider: &dyn SrtpProvider, master: &[u8], salt: &[u8], label: u8, out: &mut [u8]) {
    let mut input = [0u8; 16];
    let salt_len = salt.len().min(14);
    input[..salt_len].copy_from_slice(&salt[..salt_len]);
    input[7] ^= label;
    for (round, chunk) in out.chunks_mut(16).enumerate() {
        input[14..].copy_from_slice(&(round as u16).to_be_bytes());
        // The providers want room for a second block.
        let mut block = [0u8; 32];
        if master.len() == 32 {
            provider.srtp_aes_256_ecb_round(master, &input, &mut block);
        } else {
            provider.srtp_aes_128_ecb_round(master, &input, &mut block);
        }
        chunk.copy_from_slice(&block[..chunk.len()]);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn keys_derive_as_rfc_3711_b3_says() {
        // RFC 3711 B.3: master key and salt, and the session key, salt and auth key.
        let provider = crate::dtls_keys::srtp_provider();
        let master = hex("E1F97A0D3E018BE0D64FA32C06DE4139");
        let salt = hex("0EC675AD498AFEEBB6960B3AABE6");
        let mut key = [0u8; 16];
        derive(provider, &master, &salt, LABEL_RTP_KEY, &mut key);
        assert_eq!(key.to_vec(), hex("C61E7A93744F39EE10734AFE3FF7A087"));
        let mut session_salt = [0u8; 14];
        derive(provider, &master, &salt, LABEL_RTP_SALT, &mut session_salt);
        assert_eq!(session_salt.to_vec(), hex("30CBBC08863D8C85D49DB34A9AE1"));
        let mut auth = [0u8; 20];
        derive(provider, &master, &salt, 1, &mut auth);
        assert_eq!(
            auth.to_vec(),
            hex("CEBE321F6FF7716B6FD4AB49AF256A156D38BAA4")
        );
    }

    /// Two ends of one handshake: the DTLS server (sends with the server half) and the
    /// client (opens with it).
    fn pair(profile: SrtpProfile, key_len: usize) -> (SrtpSession, SrtpSession) {
        let material: Vec<u8> = (0..2 * (key_len + SALT_LEN) as u8).collect();
        let keys = |active| Keys {
            material: material.clone(),
            profile,
            active,
        };
        (
            SrtpSession::new(&keys(false)).unwrap(),
            SrtpSession::new(&keys(true)).unwrap(),
        )
    }

    #[test]
    fn rtcp_sealed_by_one_end_opens_at_the_other_and_not_when_altered() {
        for (profile, key_len) in [
            (SrtpProfile::AEAD_AES_128_GCM, 16),
            (SrtpProfile::AEAD_AES_256_GCM, 32),
        ] {
            let (mut server, mut client) = pair(profile, key_len);
            let report = [
                0x80, 200, 0, 6, 1, 2, 3, 4, 9, 9, 9, 9, 8, 8, 8, 8, 7, 7, 7, 7, 0, 0, 0, 5, 0, 0,
                1, 0,
            ];
            let sealed = server.protect_rtcp(&report).unwrap();
            assert_eq!(sealed.len(), report.len() + TAG_LEN + SRTCP_INDEX_LEN);
            assert_ne!(&sealed[8..report.len()], &report[8..]);
            assert_eq!(client.unprotect_rtcp(&sealed).unwrap(), report.to_vec());
            // The client's own packets go the other way, under the client's keys.
            let back = client.protect_rtcp(&report).unwrap();
            assert_eq!(server.unprotect_rtcp(&back).unwrap(), report.to_vec());
            let mut altered = sealed.clone();
            altered[10] ^= 1;
            assert!(client.unprotect_rtcp(&altered).is_none());
            assert!(client.unprotect_rtcp(&sealed[..20]).is_none());
            // A server cannot open its own packets: the directions' keys differ.
            assert!(server.unprotect_rtcp(&sealed).is_none());
        }
    }

    #[test]
    fn aes_cm_sessions_stay_with_str0m() {
        let keys = Keys {
            material: vec![0; 60],
            profile: SrtpProfile::AES128_CM_SHA1_80,
            active: false,
        };
        assert!(SrtpSession::new(&keys).is_none());
        let short = Keys {
            material: vec![0; 10],
            profile: SrtpProfile::AEAD_AES_128_GCM,
            active: false,
        };
        assert!(SrtpSession::new(&short).is_none());
    }

    #[test]
    fn rtp_is_sealed_with_the_header_in_the_clear() {
        let (mut server, _) = pair(SrtpProfile::AEAD_AES_128_GCM, 16);
        let header = [0x80, 96, 0, 1, 0, 0, 0, 9, 0xde, 0xad, 0xbe, 0xef];
        let payload = [7u8; 100];
        let first = server.protect_rtp(&header, &payload, 1).unwrap();
        assert_eq!(first.len(), 12 + 100 + TAG_LEN);
        assert_eq!(&first[..12], &header);
        assert_ne!(&first[12..112], &payload);
        // Another index (rollover counter) is another IV.
        let later = server
            .protect_rtp(&header, &payload, 1 + (1 << 16))
            .unwrap();
        assert_ne!(first, later);
        assert_eq!(server.protect_rtp(&header, &payload, 1).unwrap(), first);
    }
}
