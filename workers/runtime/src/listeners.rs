//! Sockets handed over by the supervisor, as tokio types: listening TCP sockets and
//! bound UDP sockets (see [`ListenerRole::is_datagram`]).

use std::io;
use std::os::fd::OwnedFd;
use strom_ipc::messages::{ListenerRole, ListenerSpec};

/// A bound, listening socket the supervisor owns a copy of.
#[derive(Debug)]
pub struct InheritedListener {
    pub spec: ListenerSpec,
    pub listener: tokio::net::TcpListener,
}

/// A bound UDP socket the supervisor owns a copy of (and, for a multicast input, keeps
/// the group membership of): datagrams queue in the kernel while the worker restarts.
#[derive(Debug)]
pub struct InheritedUdpSocket {
    pub spec: ListenerSpec,
    pub socket: tokio::net::UdpSocket,
}

/// Everything one manifest lent, split by socket type.
#[derive(Debug, Default)]
pub struct Adopted {
    pub listeners: Vec<InheritedListener>,
    pub udp_sockets: Vec<InheritedUdpSocket>,
}

/// Pairs the manifest with the descriptors that came with it, in order.
pub fn adopt(specs: Vec<ListenerSpec>, fds: Vec<OwnedFd>) -> io::Result<Adopted> {
    if specs.len() != fds.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "listener manifest names {} sockets but {} descriptors arrived",
                specs.len(),
                fds.len()
            ),
        ));
    }
    let mut adopted = Adopted::default();
    for (spec, fd) in specs.into_iter().zip(fds) {
        match spec.role {
            ListenerRole::Rtmp
            | ListenerRole::Http
            | ListenerRole::Https
            | ListenerRole::Rtsp
            | ListenerRole::Rtsps
            | ListenerRole::WebRtcTcp => {
                let std_listener = std::net::TcpListener::from(fd);
                std_listener.set_nonblocking(true)?;
                let listener = tokio::net::TcpListener::from_std(std_listener)?;
                adopted.listeners.push(InheritedListener { spec, listener });
            }
            ListenerRole::Udp
            | ListenerRole::Srt
            | ListenerRole::Rist
            | ListenerRole::WebRtcUdp => {
                let std_socket = std::net::UdpSocket::from(fd);
                std_socket.set_nonblocking(true)?;
                let socket = tokio::net::UdpSocket::from_std(std_socket)?;
                adopted
                    .udp_sockets
                    .push(InheritedUdpSocket { spec, socket });
            }
        }
    }
    Ok(adopted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    #[tokio::test]
    async fn sockets_are_sorted_by_role_and_udp_ones_receive() {
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let udp_addr = udp.local_addr().unwrap();
        let specs = vec![
            ListenerSpec {
                role: ListenerRole::Rtmp,
                addr: tcp.local_addr().unwrap(),
            },
            ListenerSpec {
                role: ListenerRole::Udp,
                addr: udp_addr,
            },
        ];
        let adopted = adopt(specs, vec![OwnedFd::from(tcp), OwnedFd::from(udp)]).unwrap();
        assert_eq!(adopted.listeners.len(), 1);
        let [inherited] = &adopted.udp_sockets[..] else {
            panic!("{adopted:?}")
        };
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        sender.send_to(b"ts", udp_addr).unwrap();
        let mut buffer = [0u8; 16];
        let (len, _) = inherited.socket.recv_from(&mut buffer).await.unwrap();
        assert_eq!(&buffer[..len], b"ts");
    }

    #[test]
    fn a_manifest_that_does_not_match_the_descriptors_is_refused() {
        let spec = ListenerSpec {
            role: ListenerRole::Udp,
            addr: SocketAddr::from(([127, 0, 0, 1], 1)),
        };
        assert!(adopt(vec![spec], Vec::new()).is_err());
    }
}
