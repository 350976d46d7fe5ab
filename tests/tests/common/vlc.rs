//! VLC (`cvlc`) for the end-to-end tests. VLC refuses to run as root, so as root it runs
//! as `nobody` (util-linux `setpriv`), with a home (writable by anyone) the test gives.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use super::media::{Proc, spawn};
use super::require_tool;
use std::path::Path;
use std::process::Command;

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// [`cvlc`] running with `args`, its stderr kept for [`Proc::stop_and_stderr`].
pub fn run_cvlc(home: &Path, args: &[&str]) -> Proc {
    spawn(cvlc(home).args(args))
}

/// A headless `cvlc` command (dummy interface, no questions) with `home` as its home.
pub fn cvlc(home: &Path) -> Command {
    require_tool("cvlc", "vlc-bin vlc-plugin-base");
    let mut command = if is_root() {
        require_tool("setpriv", "util-linux");
        let mut command = Command::new("setpriv");
        command.args(["--reuid=65534", "--regid=65534", "--clear-groups", "cvlc"]);
        command
    } else {
        Command::new("cvlc")
    };
    command
        .args(["--intf", "dummy", "--no-interact"])
        .env("HOME", home);
    command
}
