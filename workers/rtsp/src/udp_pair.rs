//! A UDP port pair for one track: RTP on an even port, RTCP on the next (RFC 3550 11),
//! which clients expect of `server_port` (retina refuses anything else).

use std::io;
use std::net::{IpAddr, SocketAddr};
use tokio::net::UdpSocket;

/// Tries this many ports before giving up (another process may hold the neighbour).
const ATTEMPTS: usize = 32;

/// Binds RTP and RTCP sockets on `ip`, on ports `2n` and `2n + 1`.
pub async fn bind(ip: IpAddr) -> io::Result<(UdpSocket, UdpSocket)> {
    let mut last_error = io::Error::new(io::ErrorKind::AddrInUse, "no free UDP port pair");
    for _ in 0..ATTEMPTS {
        let first = UdpSocket::bind(SocketAddr::new(ip, 0)).await?;
        let port = first.local_addr()?.port();
        let pair = if port % 2 == 0 {
            UdpSocket::bind(SocketAddr::new(ip, port.wrapping_add(1)))
                .await
                .map(|rtcp| (first, rtcp))
        } else {
            UdpSocket::bind(SocketAddr::new(ip, port - 1))
                .await
                .map(|rtp| (rtp, first))
        };
        match pair {
            Ok(pair) => return Ok(pair),
            Err(error) => last_error = error,
        }
    }
    Err(last_error)
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn ports_are_an_even_pair() {
        for _ in 0..8 {
            let (rtp, rtcp) = super::bind([127, 0, 0, 1].into()).await.unwrap();
            let (rtp, rtcp) = (
                rtp.local_addr().unwrap().port(),
                rtcp.local_addr().unwrap().port(),
            );
            assert_eq!(rtp % 2, 0);
            assert_eq!(rtcp, rtp + 1);
        }
    }
}
