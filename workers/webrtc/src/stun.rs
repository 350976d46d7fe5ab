//! Just enough STUN (RFC 8489) to route a datagram or an ICE-TCP connection to its
//! session before any session has seen it: the local ufrag in a binding request's
//! USERNAME (`<our ufrag>:<their ufrag>`, RFC 8445 §7.2.2). Everything else about STUN
//! (integrity, fingerprints, answering) is str0m's, inside the session.

/// The fixed STUN header: type, length, magic cookie, transaction id.
const HEADER_LEN: usize = 20;
const MAGIC_COOKIE: [u8; 4] = [0x21, 0x12, 0xa4, 0x42];
const BINDING_REQUEST: u16 = 0x0001;
const USERNAME: u16 = 0x0006;
/// RFC 8489 §14.3: USERNAME is at most 509 bytes.
const MAX_USERNAME: usize = 509;

/// Whether `datagram` looks like STUN (RFC 7983 §7: first byte 0..=3, the magic cookie).
pub fn is_stun(datagram: &[u8]) -> bool {
    datagram.len() >= HEADER_LEN && datagram[0] < 4 && datagram[4..8] == MAGIC_COOKIE
}

/// The local ufrag a binding request is addressed to; `None` for anything else or
/// anything malformed.
pub fn local_ufrag(datagram: &[u8]) -> Option<&str> {
    if !is_stun(datagram) {
        return None;
    }
    let message_type = u16::from_be_bytes([datagram[0], datagram[1]]);
    if message_type != BINDING_REQUEST {
        return None;
    }
    let length = usize::from(u16::from_be_bytes([datagram[2], datagram[3]]));
    let mut attributes = datagram.get(HEADER_LEN..HEADER_LEN.checked_add(length)?)?;
    while attributes.len() >= 4 {
        let kind = u16::from_be_bytes([attributes[0], attributes[1]]);
        let len = usize::from(u16::from_be_bytes([attributes[2], attributes[3]]));
        let value = attributes.get(4..4 + len)?;
        if kind == USERNAME {
            if len > MAX_USERNAME {
                return None;
            }
            let username = std::str::from_utf8(value).ok()?;
            let (ours, _theirs) = username.split_once(':')?;
            return (!ours.is_empty()).then_some(ours);
        }
        let padded = len.div_ceil(4) * 4;
        attributes = attributes.get(4 + padded..)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding_request(attributes: &[(u16, &[u8])]) -> Vec<u8> {
        let mut body = Vec::new();
        for (kind, value) in attributes {
            body.extend_from_slice(&kind.to_be_bytes());
            body.extend_from_slice(&(value.len() as u16).to_be_bytes());
            body.extend_from_slice(value);
            body.resize(body.len().div_ceil(4) * 4, 0);
        }
        let mut message = vec![0x00, 0x01];
        message.extend_from_slice(&(body.len() as u16).to_be_bytes());
        message.extend_from_slice(&MAGIC_COOKIE);
        message.extend_from_slice(&[7; 12]);
        message.extend_from_slice(&body);
        message
    }

    #[test]
    fn finds_the_local_ufrag_after_other_attributes() {
        // PRIORITY (0x0024) first, as browsers send it, with padding to skip.
        let request = binding_request(&[
            (0x0024, &[1, 2, 3, 4]),
            (0xc057, &[9; 3]),
            (USERNAME, b"srvA:cli9"),
        ]);
        assert_eq!(local_ufrag(&request), Some("srvA"));
    }

    #[test]
    fn refuses_what_is_not_a_binding_request_with_a_username() {
        assert_eq!(local_ufrag(b"hello world, this is not stun"), None);
        let mut response = binding_request(&[(USERNAME, b"a:b")]);
        response[1] = 0x01;
        response[0] = 0x01;
        assert_eq!(local_ufrag(&response), None, "a binding success response");
        assert_eq!(
            local_ufrag(&binding_request(&[(USERNAME, b"nocolon")])),
            None
        );
        assert_eq!(
            local_ufrag(&binding_request(&[(USERNAME, b":theirs")])),
            None
        );
        let mut truncated = binding_request(&[(USERNAME, b"srvA:cli9")]);
        truncated.truncate(truncated.len() - 4);
        assert_eq!(
            local_ufrag(&truncated),
            None,
            "length says more than there is"
        );
        // An attribute that claims more than the message holds.
        let mut lying = binding_request(&[(USERNAME, b"srvA:cli9")]);
        lying[22] = 0xff;
        assert_eq!(local_ufrag(&lying), None);
    }

    #[test]
    fn dtls_and_rtp_are_not_stun() {
        let mut dtls = vec![22u8; 40];
        dtls[4..8].copy_from_slice(&MAGIC_COOKIE);
        assert!(!is_stun(&dtls));
        assert!(!is_stun(&[0x80; 40]));
    }
}
