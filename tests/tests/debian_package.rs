//! The Debian package end to end: `scripts/build-deb.sh` builds it (or `STROM_DEB` names
//! one), lintian accepts it, `dpkg -i` installs it on this machine, the installed
//! configuration passes `strom check-config`, the installed binary serves as the `strom`
//! user, `systemd-analyze verify` accepts the unit, and `dpkg --purge` leaves nothing
//! behind.
//!
//! It changes the machine it runs on (a package, a system user), so it needs root (CI
//! runs as root) and fails otherwise; it holds a lock so that two runs never overlap,
//! purges a package a previous run left installed, and purges again if it fails half way.
//! Building the release binary takes minutes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Ports, free_port, parent_pid, process_alive, require_tool, try_curl, wait_for};
use nix::fcntl::{Flock, FlockArg};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

const CONF: &str = "/etc/strom/strom.conf";
const RULES: &str = "/etc/strom/rules.conf";
const UNIT: &str = "/lib/systemd/system/strom.service";
/// Everything the package creates: none of it may be left after the purge.
const LEFT_BEHIND: &[&str] = &[
    "/usr/bin/strom",
    "/etc/strom",
    "/var/lib/strom",
    UNIT,
    "/usr/share/doc/strom",
    "/usr/share/man/man1/strom.1.gz",
    "/etc/systemd/system/multi-user.target.wants/strom.service",
    "/var/lib/systemd/deb-systemd-helper-enabled/strom.service.dsh-also",
    "/var/lib/systemd/deb-systemd-helper-masked/strom.service",
];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running {program}: {e}"))
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Runs a command that must succeed; returns its stdout and stderr together.
fn run_ok(program: &str, args: &[&str]) -> String {
    let output = run(program, args);
    let all = text(&output);
    assert!(
        output.status.success(),
        "`{program} {}` failed ({}):\n{all}",
        args.join(" "),
        output.status
    );
    all
}

/// dpkg's status of the package ("ii", "rc", ...): "" when it knows nothing of it.
fn package_status() -> String {
    let output = run("dpkg-query", &["-W", "-f=${db:Status-Abbrev}", "strom"]);
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// Whether anything of the package is on the machine (installed, half-installed,
/// removed with its conffiles left, ...): dpkg's status letter is not "n".
fn package_present() -> bool {
    package_status()
        .chars()
        .nth(1)
        .is_some_and(|state| state != 'n')
}

fn user_exists(name: &str) -> bool {
    run("getent", &["passwd", name]).status.success()
}

fn group_exists(name: &str) -> bool {
    run("getent", &["group", name]).status.success()
}

/// The real uid of a running process.
fn process_uid(pid: i32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Purges the package when dropped while still installed (a failed assertion half way),
/// so that a failing run does not leave a server package on the CI machine.
struct Installed {
    purged: bool,
}

impl Installed {
    fn purge(&mut self) -> String {
        self.purged = true;
        run_ok("dpkg", &["--purge", "strom"])
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        if !self.purged {
            let _ = run("dpkg", &["--purge", "strom"]);
        }
    }
}

/// The installed server started by the test; stopped (SIGTERM, then SIGKILL) on drop.
struct Running {
    child: Child,
    log: PathBuf,
}

impl Running {
    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, then the exit status (None: still running after the limit).
    fn stop(&mut self) -> Option<std::process::ExitStatus> {
        let pid = nix::unistd::Pid::from_raw(self.pid());
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        wait_for(Duration::from_secs(30), "strom to exit", || {
            self.child.try_wait().unwrap()
        })
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() && self.stop().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Replaces the one line `key = ...` of a strom.conf, which must be there.
fn set_key(conf: &str, key: &str, value: &str) -> String {
    let prefix = format!("{key} = ");
    let mut found = 0;
    let lines: Vec<String> = conf
        .lines()
        .map(|line| {
            if line.starts_with(&prefix) {
                found += 1;
                format!("{prefix}{value}")
            } else {
                line.to_owned()
            }
        })
        .collect();
    assert_eq!(found, 1, "{CONF} has no single `{key} = ` line:\n{conf}");
    lines.join("\n") + "\n"
}

#[test]
fn deb_builds_installs_serves_and_purges_cleanly() {
    require_tool("dpkg-deb", "dpkg");
    require_tool("dpkg-shlibdeps", "dpkg-dev");
    require_tool("lintian", "lintian");
    require_tool("systemd-analyze", "systemd");
    require_tool("setpriv", "util-linux");
    require_tool("curl", "curl");
    let uid = run_ok("id", &["-u"]);
    assert_eq!(
        uid.trim(),
        "0",
        "the Debian package test installs the package into this machine (dpkg -i, a system \
         user) and must run as root, as CI does; run it as root"
    );

    // One run at a time on this machine (the package and the strom user are global).
    let lock_file = std::fs::File::create(std::env::temp_dir().join("strom-debian-package.lock"))
        .expect("creating the lock file");
    let _lock = Flock::lock(lock_file, FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .expect("locking strom-debian-package.lock");

    // A package left by an earlier run that was killed goes first.
    if package_present() {
        run_ok("dpkg", &["--purge", "strom"]);
    }
    for path in LEFT_BEHIND {
        assert!(
            !Path::new(path).exists(),
            "{path} exists without the strom package installed; remove it before this test"
        );
    }
    assert!(
        !user_exists("strom") && !group_exists("strom"),
        "a `strom` user or group exists without the strom package; remove it before this test"
    );

    // The package: STROM_DEB (a .deb built earlier), else built by the documented command.
    let deb = match std::env::var("STROM_DEB") {
        // A relative path is taken from the workspace root (tests run in tests/).
        Ok(path) => workspace_root().join(path),
        Err(_) => {
            let mut build = Command::new("bash");
            build
                .arg("scripts/build-deb.sh")
                .current_dir(workspace_root());
            // The variables cargo sets for this test would reach the inner cargo and make
            // it rebuild the release tree (build scripts watch CARGO_MANIFEST_DIR), and a
            // plain `cargo build --release` after it rebuild it again.
            for (name, _) in std::env::vars_os() {
                let name = name.to_string_lossy();
                let set_by_cargo = name.starts_with("CARGO_PKG_")
                    || name.starts_with("CARGO_BIN_")
                    || [
                        "CARGO_MANIFEST_DIR",
                        "CARGO_MANIFEST_PATH",
                        "CARGO_CRATE_NAME",
                        "CARGO_PRIMARY_PACKAGE",
                        "CARGO_TARGET_TMPDIR",
                        "CARGO_RUSTC_CURRENT_DIR",
                    ]
                    .contains(&name.as_ref());
                if set_by_cargo {
                    build.env_remove(name.as_ref());
                }
            }
            let output = build
                .stdin(Stdio::null())
                .stderr(Stdio::inherit())
                .output()
                .expect("running scripts/build-deb.sh");
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(
                output.status.success(),
                "scripts/build-deb.sh failed ({}):\n{stdout}",
                output.status
            );
            let last = stdout.lines().last().expect("build-deb.sh printed no path");
            workspace_root().join(last.trim())
        }
    };
    assert!(deb.is_file(), "{} is not a file", deb.display());
    let deb_str = deb.to_str().unwrap();
    let name = deb.file_name().unwrap().to_str().unwrap();
    assert!(
        name.starts_with("strom_") && name.ends_with("_amd64.deb"),
        "unexpected package name {name}"
    );

    // The package's metadata.
    let info = run_ok("dpkg-deb", &["--info", deb_str]);
    for field in [
        "Package: strom",
        "Architecture: amd64",
        "libsrt1.5-openssl",
        "librist4",
        "libc6",
        "adduser",
        // The description names what the server does, the newer protocols included.
        "LL-HLS",
        "MPEG-DASH",
        "RTSP",
        "DVR",
    ] {
        assert!(
            info.contains(field),
            "`{field}` not in the control data:\n{info}"
        );
    }
    let conffiles = run_ok("dpkg-deb", &["--info", deb_str, "conffiles"]);
    for path in [CONF, RULES] {
        assert!(
            conffiles.lines().any(|l| l == path),
            "{path} not in DEBIAN/conffiles:\n{conffiles}"
        );
    }
    let contents = run_ok("dpkg-deb", &["--contents", deb_str]);
    for path in [
        "./usr/bin/strom",
        "./etc/strom/strom.conf",
        "./etc/strom/rules.conf",
        "./lib/systemd/system/strom.service",
        "./var/lib/strom/",
        "./usr/share/doc/strom/copyright",
        "./usr/share/doc/strom/changelog.gz",
        "./usr/share/doc/strom/configuration.md.gz",
    ] {
        assert!(
            contents.lines().any(|l| l.ends_with(path)),
            "{path} not in the package:\n{contents}"
        );
    }
    assert!(
        contents.lines().all(|l| l.contains(" root/root ")),
        "files not owned by root:\n{contents}"
    );

    // lintian: no error and no warning (see packaging/debian/LINTIAN.md).
    let lintian = run("lintian", &["--fail-on", "error,warning", deb_str]);
    eprintln!("lintian:\n{}", text(&lintian));
    assert!(
        lintian.status.success(),
        "lintian reports errors or warnings:\n{}",
        text(&lintian)
    );

    // Install.
    let mut installed = Installed { purged: false };
    run_ok("dpkg", &["-i", deb_str]);
    assert!(
        package_status().starts_with("ii"),
        "strom not installed: {}",
        package_status()
    );
    let conffiles = run_ok("dpkg-query", &["-W", "-f=${Conffiles}", "strom"]);
    for path in [CONF, RULES] {
        assert!(
            conffiles.contains(path),
            "{path} is not a conffile: {conffiles}"
        );
    }
    assert!(user_exists("strom") && group_exists("strom"));
    let owner = run_ok("stat", &["-c", "%U:%G %a", "/var/lib/strom"]);
    assert_eq!(owner.trim(), "strom:strom 750", "/var/lib/strom");
    assert!(
        !Path::new("/etc/systemd/system/multi-user.target.wants/strom.service").exists(),
        "installing must not enable strom.service"
    );

    // The installed configuration: valid, and the management API on loopback only.
    let conf = std::fs::read_to_string(CONF).unwrap();
    assert!(
        conf.lines()
            .any(|l| l.trim() == "management_listen_interfaces = 127.0.0.1"),
        "{CONF} must open the management API on 127.0.0.1 only:\n{conf}"
    );
    let checked = run_ok("/usr/bin/strom", &["check-config", "--config", CONF]);
    for line in [
        "management_listen_interfaces = 127.0.0.1",
        "rules_path = /etc/strom/rules.conf",
        "data_dir = /var/lib/strom",
        "run_dir = /var/lib/strom/run",
    ] {
        assert!(
            checked.contains(line),
            "check-config does not show `{line}`:\n{checked}"
        );
    }

    // The unit.
    let verify = run("systemd-analyze", &["verify", UNIT]);
    let verified = text(&verify);
    assert!(
        verify.status.success() && !verified.contains("strom.service"),
        "systemd-analyze verify {UNIT}:\n{verified}"
    );
    let unit = std::fs::read_to_string(UNIT).unwrap();
    for line in [
        "User=strom",
        "ExecStart=/usr/bin/strom run --config /etc/strom/strom.conf",
        "ProtectSystem=strict",
        "ReadWritePaths=/var/lib/strom",
        "NoNewPrivileges=yes",
        "LimitNOFILE=1048576",
    ] {
        assert!(unit.lines().any(|l| l == line), "{UNIT} lacks `{line}`");
    }

    // The installed binary serves with the installed configuration, as the strom user.
    // Only the ports change (free ones, so that parallel tests and a server already on
    // 1935/8081/8082 do not collide): a copy of strom.conf and rules.conf in a directory
    // the strom user can read; data_dir and run_dir stay /var/lib/strom.
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let ports = Ports::new();
    let rules = std::fs::read_to_string(RULES).unwrap();
    assert!(
        rules.contains("\"port\": 1935"),
        "{RULES} has no RTMP port 1935:\n{rules}"
    );
    let rules_copy = dir.path().join("rules.conf");
    std::fs::write(
        &rules_copy,
        rules
            .replace("\"port\": 1935", &format!("\"port\": {}", ports.rtmp))
            .replace("\"port\": 8554", &format!("\"port\": {}", free_port())),
    )
    .unwrap();
    let conf_copy = dir.path().join("strom.conf");
    let copied = set_key(&conf, "port", &ports.http.to_string());
    let copied = set_key(&copied, "management_port", &ports.management.to_string());
    let copied = set_key(&copied, "rules_path", rules_copy.to_str().unwrap());
    std::fs::write(&conf_copy, copied).unwrap();
    for file in [&rules_copy, &conf_copy] {
        std::fs::set_permissions(file, std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .unwrap();
    }
    let log = dir.path().join("strom.log");
    let log_file = std::fs::File::create(&log).unwrap();
    // setpriv execs strom itself (no child in between), so the pid is the supervisor's.
    let child = Command::new("setpriv")
        .args([
            "--reuid=strom",
            "--regid=strom",
            "--init-groups",
            "--no-new-privs",
            "--",
            "/usr/bin/strom",
            "run",
            "--config",
        ])
        .arg(&conf_copy)
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().unwrap())
        .stderr(log_file)
        .spawn()
        .expect("starting setpriv");
    let mut server = Running { child, log };
    let strom_uid: u32 = run_ok("id", &["-u", "strom"]).trim().parse().unwrap();
    let url = format!("http://127.0.0.1:{}/manage/workers", ports.management);
    let workers = wait_for(Duration::from_secs(30), "all workers ready", || {
        assert!(
            process_alive(server.pid()),
            "the installed strom exited during start; log:\n{}",
            server.log()
        );
        let (code, body) = try_curl(&[&url])?;
        let ready = code == 200
            && body.as_array().is_some_and(|workers| {
                workers.len() == 7 && workers.iter().all(|w| w["state"] == "ready")
            });
        ready.then_some(body)
    })
    .unwrap_or_else(|| {
        panic!(
            "the installed strom did not get ready; log:\n{}",
            server.log()
        )
    });
    assert_eq!(
        process_uid(server.pid()),
        Some(strom_uid),
        "the supervisor does not run as strom"
    );
    for worker in workers.as_array().unwrap() {
        let pid = worker["pid"].as_i64().unwrap() as i32;
        assert_eq!(
            parent_pid(pid),
            Some(server.pid()),
            "worker {worker} is not a child of the installed strom; log:\n{}",
            server.log()
        );
        assert_eq!(process_uid(pid), Some(strom_uid), "worker {worker} uid");
    }
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", ports.rtmp)).is_ok(),
        "RTMP port {} not accepting; log:\n{}",
        ports.rtmp,
        server.log()
    );
    assert!(
        Path::new("/var/lib/strom/run/bus").is_dir(),
        "run_dir /var/lib/strom/run not used; log:\n{}",
        server.log()
    );
    let status = server.stop().unwrap_or_else(|| {
        panic!(
            "the installed strom did not stop on SIGTERM; log:\n{}",
            server.log()
        )
    });
    assert!(
        status.success(),
        "the installed strom exited with {status}; log:\n{}",
        server.log()
    );
    drop(server);

    // Purge: nothing left.
    installed.purge();
    assert!(
        !package_present(),
        "dpkg still has strom after the purge: {}",
        package_status()
    );
    for path in LEFT_BEHIND {
        assert!(!Path::new(path).exists(), "{path} left after dpkg --purge");
    }
    assert!(!user_exists("strom"), "user strom left after dpkg --purge");
    assert!(
        !group_exists("strom"),
        "group strom left after dpkg --purge"
    );
}
