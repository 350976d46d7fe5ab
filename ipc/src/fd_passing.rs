//! Passing file descriptors over a Unix socket with `SCM_RIGHTS`.
//!
//! Descriptors are received with `MSG_CMSG_CLOEXEC`, so a worker never leaks an inherited
//! listener into a process it starts itself.

use crate::frame::MAX_FDS_PER_FRAME;
use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};
use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// Sends `bytes` with `fds` attached to the first byte. Returns how many bytes were sent.
pub fn send_with_fds(
    socket: BorrowedFd<'_>,
    bytes: &[u8],
    fds: &[BorrowedFd<'_>],
) -> io::Result<usize> {
    let raw: Vec<RawFd> = fds.iter().map(|fd| fd.as_raw_fd()).collect();
    let iov = [IoSlice::new(bytes)];
    let cmsgs = [ControlMessage::ScmRights(&raw)];
    let cmsgs: &[ControlMessage<'_>] = if raw.is_empty() { &[] } else { &cmsgs };
    sendmsg::<()>(
        socket.as_raw_fd(),
        &iov,
        cmsgs,
        MsgFlags::MSG_NOSIGNAL,
        None,
    )
    .map_err(io::Error::from)
}

/// Reads into `buffer`, appending any received descriptors to `fds`. Returns the number of
/// bytes read (0 at end of stream).
pub fn recv_with_fds(
    socket: BorrowedFd<'_>,
    buffer: &mut [u8],
    fds: &mut Vec<OwnedFd>,
) -> io::Result<usize> {
    let mut cmsg_space = nix::cmsg_space!([RawFd; MAX_FDS_PER_FRAME]);
    let mut iov = [IoSliceMut::new(buffer)];
    let message = recvmsg::<()>(
        socket.as_raw_fd(),
        &mut iov,
        Some(&mut cmsg_space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )
    .map_err(io::Error::from)?;
    let truncated = message.flags.contains(MsgFlags::MSG_CTRUNC);
    for cmsg in message.cmsgs().map_err(io::Error::from)? {
        if let ControlMessageOwned::ScmRights(received) = cmsg {
            for raw in received {
                // SAFETY: the kernel has just installed `raw` in our descriptor table for
                // this message; nothing else in the process knows or owns it.
                fds.push(unsafe { OwnedFd::from_raw_fd(raw) });
            }
        }
    }
    if truncated {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "control message descriptors were truncated",
        ));
    }
    Ok(message.bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, Write};
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn a_passed_descriptor_refers_to_the_same_file_and_is_cloexec() {
        let (left, right) = UnixStream::pair().unwrap();
        let mut file = tempfile_with(b"strom");
        send_with_fds(left.as_fd(), b"x", &[file.as_fd()]).unwrap();

        let mut buffer = [0u8; 8];
        let mut fds = Vec::new();
        let n = recv_with_fds(right.as_fd(), &mut buffer, &mut fds).unwrap();
        assert_eq!(n, 1);
        assert_eq!(fds.len(), 1);
        let flags = nix::fcntl::fcntl(fds[0].as_fd(), nix::fcntl::FcntlArg::F_GETFD).unwrap();
        assert!(
            flags & libc::FD_CLOEXEC != 0,
            "received fd must be close-on-exec"
        );

        let mut received = std::fs::File::from(fds.pop().unwrap());
        received.rewind().unwrap();
        let mut text = String::new();
        received.read_to_string(&mut text).unwrap();
        assert_eq!(text, "strom");
        file.write_all(b"!").unwrap();
    }

    fn tempfile_with(content: &[u8]) -> std::fs::File {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(content).unwrap();
        file
    }
}
