//! Workers show under their own names in `ps` (and so in `top`, `ss -p` and
//! `/proc/PID/comm`), so process monitoring can tell them apart.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Server, require_tool};
use std::process::Command;

#[test]
fn ps_shows_every_worker_by_name() {
    require_tool("ps", "procps");
    let server = Server::start("");
    server.wait_ready();
    for kind in common::WORKER_KINDS {
        let pid = server.worker_pid(kind);
        let output = Command::new("ps")
            .args(["-o", "comm=", "-p", &pid.to_string()])
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        // 15 bytes at most: `strom-transcoder` would be cut.
        let name = format!("strom-{}", kind.replace("transcoder", "transcode"));
        assert_eq!(shown, name, "ps names worker {kind} {shown:?}");
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
        assert_eq!(comm.trim(), name);
    }
}
