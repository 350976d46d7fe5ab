//! Taking over the control socket that the supervisor placed in this process.

use std::io;
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use strom_ipc::ControlChannel;
pub use strom_ipc::contract::CONTROL_FD;

/// Takes ownership of the inherited control socket.
///
/// Must be called once, before anything else in the process could have opened a file
/// (the descriptor number would otherwise be reused).
pub fn inherited_control_channel() -> io::Result<ControlChannel> {
    let stat = nix::sys::stat::fstat(
        // SAFETY: borrowing fd 3 only for the duration of fstat; fstat fails cleanly if
        // nothing is open there.
        unsafe { std::os::fd::BorrowedFd::borrow_raw(CONTROL_FD) },
    )
    .map_err(|e| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "no control socket at fd {CONTROL_FD} ({e}); workers are started by `strom run`"
            ),
        )
    })?;
    if stat.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("fd {CONTROL_FD} is not a socket; workers are started by `strom run`"),
        ));
    }
    // SAFETY: fd 3 is open and is a socket (checked above); the supervisor placed it here
    // for this process alone and nothing else in this process refers to it yet, so this
    // OwnedFd becomes its only owner.
    let fd = unsafe { OwnedFd::from_raw_fd(CONTROL_FD) };
    // Our own children (none today) must not inherit the control channel.
    nix::fcntl::fcntl(
        fd.as_fd(),
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    )
    .map_err(io::Error::from)?;
    ControlChannel::from_std(std::os::unix::net::UnixStream::from(fd))
}
