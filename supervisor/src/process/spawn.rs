//! Starting a worker process with exactly the descriptors meant for it.
//!
//! The supervisor runs tokio, so a bare `fork` is out: the worker is a fresh exec of
//! `/proc/self/exe worker <kind>`. Rust opens every descriptor close-on-exec; `pre_exec`
//! moves the worker's end of the control socketpair to fd 3, and `dup2` leaves that copy
//! without close-on-exec. Nothing else crosses the exec. Listening sockets follow over the
//! control channel with `SCM_RIGHTS`.
//!
//! A worker must not outlive the supervisor: `pre_exec` also sets `PR_SET_PDEATHSIG` to
//! `SIGKILL`, so a supervisor killed with `kill -9` takes its workers with it at once
//! (even one stopped with SIGSTOP, which would never read its closed control channel), and
//! a new supervisor can bind the same ports straight away. The closing control channel
//! stays the graceful path (a worker drains and exits when it reads end of file).

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use strom_ipc::contract::CONTROL_FD;
use strom_ipc::{ControlChannel, WorkerKind};
use tokio::process::{Child, Command};

/// Environment variable that carries the log filter to workers.
pub const LOG_ENV: &str = "STROM_LOG";

/// A started worker process and the supervisor's end of its control channel.
#[derive(Debug)]
pub struct SpawnedWorker {
    pub child: Child,
    pub channel: ControlChannel,
}

/// Starts `exe worker <kind>`.
pub fn spawn_worker(exe: &Path, kind: WorkerKind, log_filter: &str) -> io::Result<SpawnedWorker> {
    let (ours, theirs) = UnixStream::pair()?;
    let mut command = Command::new(exe);
    command
        .arg0("strom")
        .arg("worker")
        .arg(kind.as_str())
        .env(LOG_ENV, log_filter)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let child_fd = theirs.as_raw_fd();
    let supervisor = libc::pid_t::try_from(std::process::id()).unwrap_or_default();
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed; `place_fd` calls only dup2 and fcntl,
    // `die_with_parent` only prctl and getppid, and neither allocates. `child_fd` stays
    // open in the parent until after spawn returns.
    unsafe {
        command.pre_exec(move || {
            place_fd(child_fd, CONTROL_FD)?;
            die_with_parent(supervisor)
        });
    }
    let child = command.spawn()?;
    drop(theirs);
    Ok(SpawnedWorker {
        child,
        channel: ControlChannel::from_std(ours)?,
    })
}

/// Asks the kernel to SIGKILL this (child) process when its parent dies, and fails if
/// the parent `supervisor` is already gone (it died between fork and here).
///
/// The signal follows the death of the parent *thread* that forked: workers are spawned
/// from the supervisor's tokio worker threads, which live as long as its runtime (the
/// supervisor uses no `block_in_place`, which could retire one early).
///
/// Async-signal-safe: only `prctl` and `getppid`.
fn die_with_parent(supervisor: libc::pid_t) -> io::Result<()> {
    // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number and touches no memory.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } != supervisor {
        // The supervisor exited while the worker started. No message: allocating here
        // is not async-signal-safe.
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

/// Makes `target` refer to the same socket as `source`, without close-on-exec.
///
/// Async-signal-safe: only `dup2` and `fcntl`.
fn place_fd(source: RawFd, target: RawFd) -> io::Result<()> {
    if source == target {
        // dup2 onto itself is a no-op that would keep close-on-exec set.
        // SAFETY: fcntl on a descriptor number we own; no memory is touched.
        let flags = unsafe { libc::fcntl(source, libc::F_GETFD) };
        if flags < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: as above.
        if unsafe { libc::fcntl(source, libc::F_SETFD, flags & !libc::FD_CLOEXEC) } < 0 {
            return Err(io::Error::last_os_error());
        }
        return Ok(());
    }
    // SAFETY: dup2 on descriptor numbers; it atomically replaces whatever was at
    // `target` (in the child only) and touches no memory.
    if unsafe { libc::dup2(source, target) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::process::CommandExt;

    /// The child must see the socket at fd 3 and nothing else of ours.
    #[test]
    fn child_gets_the_socket_at_fd_3_only() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let unrelated = std::fs::File::open("/dev/null").unwrap();
        let unrelated_fd = unrelated.as_raw_fd();
        let child_fd = theirs.as_raw_fd();
        let mut command = std::process::Command::new("/bin/sh");
        command.arg("-c").arg(format!(
            "echo hello >&3; if [ -e /proc/self/fd/{unrelated_fd} ] && [ {unrelated_fd} != 3 ]; then echo leaked >&3; fi"
        ));
        // SAFETY: place_fd is async-signal-safe (dup2/fcntl only).
        unsafe {
            command.pre_exec(move || place_fd(child_fd, CONTROL_FD));
        }
        let status = command.status().unwrap();
        assert!(status.success());
        drop(theirs);
        let mut text = String::new();
        let mut ours = ours;
        ours.read_to_string(&mut text).unwrap();
        assert_eq!(text, "hello\n");
        drop(unrelated);
    }

    #[test]
    fn the_child_is_set_to_die_with_its_parent() {
        let parent = libc::pid_t::try_from(std::process::id()).unwrap();
        let mut command = std::process::Command::new("/bin/sh");
        // The check runs in the child: a wrong setting fails the start.
        command.arg("-c").arg("exit 0");
        // SAFETY: die_with_parent and prctl(PR_GET_PDEATHSIG) are async-signal-safe
        // syscalls; the latter writes to a local int that outlives the call.
        unsafe {
            command.pre_exec(move || {
                die_with_parent(parent)?;
                let mut signal: libc::c_int = 0;
                // PR_GET_PDEATHSIG writes one int to the pointer passed (inside the outer
                // unsafe block, whose SAFETY note covers this call too).
                if libc::prctl(libc::PR_GET_PDEATHSIG, &mut signal as *mut libc::c_int) < 0
                    || signal != libc::SIGKILL
                {
                    return Err(io::Error::from_raw_os_error(libc::EINVAL));
                }
                Ok(())
            });
        }
        assert!(command.status().unwrap().success());
        // Claiming another parent fails the start.
        let mut orphan = std::process::Command::new("/bin/sh");
        orphan.arg("-c").arg("exit 0");
        // SAFETY: as above.
        unsafe {
            orphan.pre_exec(move || die_with_parent(parent + 1));
        }
        assert!(orphan.status().is_err());
    }

    #[test]
    fn placing_a_descriptor_onto_itself_clears_close_on_exec() {
        let file = std::fs::File::open("/dev/null").unwrap();
        let fd = file.as_raw_fd();
        place_fd(fd, fd).unwrap();
        // SAFETY: plain fcntl query on an open descriptor we own.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        assert_eq!(flags & libc::FD_CLOEXEC, 0);
    }
}
