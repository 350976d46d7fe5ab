//! One owner per stream name across every worker process of a server.
//!
//! A hub reserves a name only among its own streams; without more, an RTSP or SRT
//! publisher in one worker could take `live/tv` while an RTMP publisher in another holds
//! it. Every claim that is announced to the supervisor (every producer but bus relays)
//! therefore also takes an exclusive `flock` on a file named after the stream in the
//! server's run directory (`<run_dir>/claims/`). The kernel is the arbiter:
//! - the lock is taken synchronously, from async tasks and from the SRT/RIST threads
//!   alike, with no round trip that a busy supervisor could delay or lose;
//! - it is exclusive across processes and across open files of one process, so two
//!   claims of one name never both hold, whichever workers and protocols make them;
//! - it ends with the process: a worker that crashes or is restarted releases its claims
//!   at once, and no stale claim survives a lost message.
//!
//! The release unlinks the file while still holding the lock; a claimant that opened the
//! file just before that finds its locked file no longer at the path and tries again, so
//! the directory only holds the names that are live.

use crate::key::StreamKey;
use nix::fcntl::{Flock, FlockArg};
use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Attempts at a name whose file a releaser unlinked under us (each loses only to a
/// release that happened in between, so more than a couple means a storm of claims).
const ATTEMPTS: usize = 4;

/// Where a server's name claims live; shared by every worker of one server.
#[derive(Debug, Clone)]
pub struct NameClaims {
    dir: PathBuf,
}

/// Why a name could not be claimed.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// Another producer, in this worker or another, holds the name.
    #[error("the name is claimed by another producer")]
    Busy,
    /// The claim file could not be created or locked (a full disk, a read-only run
    /// directory): refused too, since ownership could not be established.
    #[error("the claim file could not be used: {0}")]
    Io(#[from] io::Error),
}

/// A held claim; the name is free again when it is dropped.
#[derive(Debug)]
pub struct NameClaim {
    path: PathBuf,
    lock: Option<Flock<File>>,
}

impl NameClaims {
    /// Claims under `<run_dir>/claims`, created if needed.
    pub fn in_run_dir(run_dir: &Path) -> io::Result<Self> {
        let dir = run_dir.join("claims");
        std::fs::create_dir_all(&dir)?;
        Ok(Self { dir })
    }

    /// The file of `key`: a digest, so any name maps to a short, safe file name.
    fn path_of(&self, key: &StreamKey) -> PathBuf {
        let digest = Sha256::new()
            .chain_update(key.app.as_bytes())
            .chain_update(b"/")
            .chain_update(key.stream.as_bytes())
            .finalize();
        let name: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        self.dir.join(name)
    }

    /// Whether a producer of this server may hold `key`: its claim file exists. A worker
    /// that crashed leaves its files behind until the name is claimed again, so `true`
    /// may be stale; `false` is sure (up to a claim made right now).
    pub fn may_be_claimed(&self, key: &StreamKey) -> bool {
        self.path_of(key).exists()
    }

    /// Takes `key` unless another producer holds it; never waits.
    pub fn claim(&self, key: &StreamKey) -> Result<NameClaim, ClaimError> {
        let path = self.path_of(key);
        for _ in 0..ATTEMPTS {
            let file = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)?;
            let lock = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(lock) => lock,
                Err((_, nix::errno::Errno::EWOULDBLOCK)) => return Err(ClaimError::Busy),
                Err((_, errno)) => return Err(ClaimError::Io(errno.into())),
            };
            // The releaser unlinks while it holds the lock: ours is then on a file that
            // no longer is the name's, and the next claimant would not see it.
            let same_file = match std::fs::metadata(&path) {
                Ok(at_path) => {
                    let held = lock.metadata()?;
                    at_path.ino() == held.ino() && at_path.dev() == held.dev()
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => false,
                Err(e) => return Err(e.into()),
            };
            if same_file {
                return Ok(NameClaim {
                    path,
                    lock: Some(lock),
                });
            }
        }
        Err(ClaimError::Busy)
    }
}

impl Drop for NameClaim {
    fn drop(&mut self) {
        // Unlinked before the unlock, so nobody can lock a file that is about to go.
        if let Err(e) = std::fs::remove_file(&self.path)
            && e.kind() != io::ErrorKind::NotFound
        {
            tracing::warn!(path = %self.path.display(), error = %e, "stream claim file not removed");
        }
        drop(self.lock.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_has_one_owner_until_it_is_released() {
        let dir = tempfile::tempdir().unwrap();
        // Two books on one directory stand for two worker processes: flock conflicts
        // between open files, within one process as across processes.
        let rtmp = NameClaims::in_run_dir(dir.path()).unwrap();
        let srt = NameClaims::in_run_dir(dir.path()).unwrap();
        let key = StreamKey::new("live", "tv");
        let held = rtmp.claim(&key).unwrap();
        assert!(matches!(srt.claim(&key), Err(ClaimError::Busy)));
        assert!(matches!(rtmp.claim(&key), Err(ClaimError::Busy)));
        let other = srt.claim(&StreamKey::new("live", "radio")).unwrap();
        drop(held);
        let taken_over = srt.claim(&key).unwrap();
        drop((taken_over, other));
        let left = std::fs::read_dir(dir.path().join("claims"))
            .unwrap()
            .count();
        assert_eq!(left, 0, "released names leave no file behind");
    }

    #[test]
    fn a_claim_by_another_process_is_refused_and_freed_when_it_exits() {
        let dir = tempfile::tempdir().unwrap();
        let claims = NameClaims::in_run_dir(dir.path()).unwrap();
        let key = StreamKey::new("live", "tv");
        let path = claims.path_of(&key);
        let ready = dir.path().join("ready");
        // flock(1) from util-linux holds the lock in a real second process (`--close`:
        // the shell it runs does not inherit it, so killing flock ends the hold).
        let mut holder = std::process::Command::new("flock")
            .args(["--exclusive", "--close"])
            .arg(&path)
            .arg("-c")
            .arg(format!("touch {} && exec sleep 30", ready.display()))
            // The sleep outlives flock: it must not hold the test's output open.
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("flock(1) from util-linux");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !ready.exists() {
            assert!(std::time::Instant::now() < deadline, "flock never held");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(matches!(claims.claim(&key), Err(ClaimError::Busy)));
        holder.kill().unwrap();
        holder.wait().unwrap();
        assert!(claims.claim(&key).is_ok(), "a dead holder's claim is gone");
    }
}
