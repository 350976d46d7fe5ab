//! Listening sockets handed over by the supervisor, as tokio types.

use std::io;
use std::os::fd::OwnedFd;
use strom_ipc::messages::{ListenerRole, ListenerSpec};

/// A bound, listening socket the supervisor owns a copy of.
#[derive(Debug)]
pub struct InheritedListener {
    pub spec: ListenerSpec,
    pub listener: tokio::net::TcpListener,
}

/// Pairs the manifest with the descriptors that came with it, in order.
pub fn adopt(specs: Vec<ListenerSpec>, fds: Vec<OwnedFd>) -> io::Result<Vec<InheritedListener>> {
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
    specs
        .into_iter()
        .zip(fds)
        .map(|(spec, fd)| {
            let listener = match spec.role {
                ListenerRole::Rtmp | ListenerRole::Http | ListenerRole::Https => {
                    let std_listener = std::net::TcpListener::from(fd);
                    std_listener.set_nonblocking(true)?;
                    tokio::net::TcpListener::from_std(std_listener)?
                }
            };
            Ok(InheritedListener { spec, listener })
        })
        .collect()
}
