//! The foundation end to end: the real `strom` binary, its seven worker processes, the
//! management API through curl, restarts, reloads and shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Server, curl, process_alive, refused, rules_json, strom_bin, wait_for};
use nix::sys::signal::Signal;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

fn meminfo_bytes(key: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = text.lines().find(|l| l.starts_with(key)).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

#[test]
fn workers_report_ready_and_server_status_is_plausible() {
    let server = Server::start("");
    let workers = server.wait_ready();
    let kinds: Vec<&str> = workers
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, common::WORKER_KINDS);
    let mut pids: Vec<i64> = workers
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["pid"].as_i64().unwrap())
        .collect();
    for pid in &pids {
        assert!(process_alive(*pid as i32), "worker {pid} is not running");
        assert_ne!(*pid as i32, server.pid());
    }
    pids.dedup();
    assert_eq!(pids.len(), 7, "seven distinct worker processes");

    let (code, status) = server.get("/manage/server_status");
    assert_eq!(code, 200);
    assert_eq!(status["Connections"], 0);
    assert!(status["OutRate"].is_u64());
    let sys = &status["SysInfo"];
    let cpus = std::thread::available_parallelism().unwrap().get() as u64;
    assert_eq!(sys["ap"].as_u64().unwrap(), cpus);
    // A string holding the decimal load (issue 18: a deployed exporter reads a string).
    let scl = sys["scl"].as_str().expect("scl is a string");
    let load: f64 = scl.parse().expect("scl holds a decimal");
    assert!(
        scl.split_once('.')
            .is_none_or(|(_, decimals)| decimals.len() <= 2),
        "scl {scl} carries float noise"
    );
    assert!((0.0..=1.0).contains(&load), "scl {load} outside 0..1");
    assert_eq!(sys["tpms"].as_u64().unwrap(), meminfo_bytes("MemTotal:"));
    assert!(sys["fpms"].as_u64().unwrap() <= sys["tpms"].as_u64().unwrap());
    assert_eq!(sys["tsss"].as_u64().unwrap(), meminfo_bytes("SwapTotal:"));
    for key in [
        "RamCacheSize",
        "FileCacheSize",
        "MaxRamCacheSize",
        "MaxFileCacheSize",
    ] {
        assert!(status[key].is_u64(), "top-level {key}");
        assert_eq!(status[key], sys[key], "{key} at both levels");
    }
    assert_eq!(status["MaxRamCacheSize"], 512);

    // Endpoints later issues fill answer with real, empty data from the workers.
    assert_eq!(
        server.get("/manage/rtmp_status"),
        (200, serde_json::json!([]))
    );
    assert_eq!(
        server.get("/manage/live_streams_status"),
        (200, serde_json::json!([]))
    );
    assert_eq!(server.get("/manage/sessions"), (200, serde_json::json!([])));
    let (code, settings) = server.get("/manage/rtmp_settings");
    assert_eq!(code, 200);
    assert_eq!(
        settings["RtmpSettings"]["interfaces"][0]["port"],
        server.ports.rtmp
    );
    let (code, cams) = server.get("/manage/mpeg2ts_status");
    assert_eq!(code, 200);
    assert_eq!(cams["Cameras"], serde_json::json!([]));
    assert!(cams["CamerasHash"].is_string());
    assert_eq!(
        server.get("/manage/publish_control/status").1,
        serde_json::json!({"PublishControlStatus": []})
    );
    assert_eq!(
        server.get("/manage/rtmp/republish/stats").1,
        serde_json::json!({"stats": [], "status": "Ok"})
    );
    assert_eq!(
        server.get("/manage/srt_receiver_stats").1,
        serde_json::json!({"SrtReceivers": []})
    );
    assert_eq!(
        server.get("/manage/dvr_status?timeline=true"),
        (200, serde_json::json!([]))
    );
    assert_eq!(
        server.post("/manage/dvr/cleanup_archive/live/none", "").1,
        serde_json::json!({"status": "Not found"})
    );
    assert_eq!(server.get("/manage/icecast_stream_info/live/none").0, 404);
}

#[test]
fn a_killed_worker_is_replaced_at_once_and_its_port_never_refuses() {
    let server = Server::start("");
    server.wait_ready();
    let old_pid = server.worker_pid("rtmp");
    let rtmp: SocketAddr = ([127, 0, 0, 1], server.ports.rtmp).into();

    let stop = Arc::new(AtomicBool::new(false));
    let refusals = Arc::new(AtomicU64::new(0));
    let attempts = Arc::new(AtomicU64::new(0));
    let prober = {
        let (stop, refusals, attempts) = (stop.clone(), refusals.clone(), attempts.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                attempts.fetch_add(1, Ordering::Relaxed);
                if let Err(e) = TcpStream::connect_timeout(&rtmp, Duration::from_secs(3))
                    && e.kind() == std::io::ErrorKind::ConnectionRefused
                {
                    refusals.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };
    wait_for(Duration::from_secs(5), "prober running", || {
        (attempts.load(Ordering::Relaxed) > 10).then_some(())
    });
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(old_pid), Signal::SIGKILL).unwrap();
    let killed_at = std::time::Instant::now();
    let new_pid = wait_for(Duration::from_secs(1), "a new rtmp worker process", || {
        let pid = server.worker_pid("rtmp");
        (pid != 0 && pid != old_pid && process_alive(pid)).then_some(pid)
    });
    let replaced_after = killed_at.elapsed();
    let new_pid =
        new_pid.unwrap_or_else(|| panic!("no new rtmp worker within 1 s; log:\n{}", server.log()));
    server.wait_ready();
    // Keep probing a little after the restart too.
    let seen = attempts.load(Ordering::Relaxed);
    wait_for(Duration::from_secs(5), "more probes", || {
        (attempts.load(Ordering::Relaxed) > seen + 50).then_some(())
    });
    stop.store(true, Ordering::Relaxed);
    prober.join().unwrap();

    assert_ne!(new_pid, old_pid);
    assert_eq!(
        refusals.load(Ordering::Relaxed),
        0,
        "{} of {} connects were refused during the restart",
        refusals.load(Ordering::Relaxed),
        attempts.load(Ordering::Relaxed)
    );
    let (_, workers) = server.get("/manage/workers");
    let rtmp_entry = workers
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "rtmp")
        .unwrap();
    assert_eq!(rtmp_entry["restarts"], 1);
    assert!(
        server.log().contains("restarting worker"),
        "restart is logged"
    );
    eprintln!("rtmp worker replaced {replaced_after:?} after SIGKILL");
}

#[test]
fn a_hung_worker_is_killed_and_restarted() {
    let server = Server::start("");
    server.wait_ready();
    let old_pid = server.worker_pid("dvr");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(old_pid), Signal::SIGSTOP).unwrap();
    let new_pid = wait_for(
        Duration::from_secs(20),
        "the hung dvr worker replaced",
        || {
            let pid = server.worker_pid("dvr");
            (pid != 0 && pid != old_pid).then_some(pid)
        },
    );
    assert!(
        new_pid.is_some(),
        "hung worker not replaced; log:\n{}",
        server.log()
    );
    assert!(server.log().contains("stopped answering heartbeats"));
    wait_for(Duration::from_secs(5), "old process reaped", || {
        (!process_alive(old_pid)).then_some(())
    })
    .expect("the hung process was killed");
}

#[test]
fn sighup_with_broken_rules_keeps_the_old_rules_and_logs_why() {
    let server = Server::start("");
    server.wait_ready();
    std::fs::write(
        server.path("rules.conf"),
        "{ \"RtmpSettings\": { \"duration\": }",
    )
    .unwrap();
    server.signal(Signal::SIGHUP);
    wait_for(Duration::from_secs(10), "reload error logged", || {
        server.log().contains("reload failed").then_some(())
    })
    .unwrap_or_else(|| panic!("no reload error in log:\n{}", server.log()));
    assert!(
        server.log().contains("rules.conf:1"),
        "the error names the file and line"
    );
    let (_, settings) = server.get("/manage/rtmp_settings");
    assert_eq!(settings["RtmpSettings"]["duration"], 6);

    // Through the API the same broken file is refused with the reason.
    let (code, body) = server.post("/manage/reload_config", "");
    assert_eq!(code, 422);
    assert!(body["error"].as_str().unwrap().contains("rules.conf"));

    // A valid change applies, and moves the RTMP listener to a new port.
    let new_port = common::free_port();
    std::fs::write(server.path("rules.conf"), rules_json(new_port, 4)).unwrap();
    server.signal(Signal::SIGHUP);
    wait_for(Duration::from_secs(10), "new duration", || {
        (server.get("/manage/rtmp_settings").1["RtmpSettings"]["duration"] == 4).then_some(())
    })
    .expect("valid rules applied");
    let new_addr: SocketAddr = ([127, 0, 0, 1], new_port).into();
    let old_addr: SocketAddr = ([127, 0, 0, 1], server.ports.rtmp).into();
    wait_for(Duration::from_secs(5), "new RTMP port open", || {
        (!refused(new_addr)).then_some(())
    })
    .expect("new RTMP port accepts");
    assert!(refused(old_addr), "the old RTMP port is closed");
    // The rtmp worker was not restarted for it.
    let (_, workers) = server.get("/manage/workers");
    assert!(
        workers
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["restarts"] == 0)
    );
    assert_eq!(server.post("/manage/reload_config", "").0, 200);
}

#[test]
fn sigterm_exits_zero_and_leaves_no_worker_behind() {
    let mut server = Server::start("");
    let workers = server.wait_ready();
    let pids: Vec<i32> = workers
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["pid"].as_i64().unwrap() as i32)
        .collect();
    server.signal(Signal::SIGTERM);
    let code = server.wait_exit(Duration::from_secs(30));
    assert_eq!(code, Some(0), "log:\n{}", server.log());
    for pid in pids {
        assert!(!process_alive(pid), "worker {pid} survived the supervisor");
    }
}

#[test]
fn auth_with_a_token() {
    let server = Server::start("management_token = secret");
    server.wait_ready();
    let base = format!("http://127.0.0.1:{}", server.ports.management);
    // The spec's vector: base64(md5("12345/secret")) = 4++kTfafPcBE3wZtfYYcJA==
    let good = curl(&[&format!(
        "{base}/manage/server_status?salt=12345&hash=4%2B%2BkTfafPcBE3wZtfYYcJA%3D%3D"
    )]);
    assert_eq!(good.0, 200);
    let unencoded = curl(&[&format!(
        "{base}/manage/server_status?salt=12345&hash=4++kTfafPcBE3wZtfYYcJA=="
    )]);
    assert_eq!(unencoded.0, 200, "a raw + in the hash must still pass");
    let wrong = curl(&[&format!(
        "{base}/manage/server_status?salt=12345&hash=AAAAAAAAAAAAAAAAAAAAAA%3D%3D"
    )]);
    assert_eq!(wrong.0, 403);
    assert!(wrong.1["error"].as_str().unwrap().contains("hash"));
    let no_salt = curl(&[&format!(
        "{base}/manage/server_status?hash=4%2B%2BkTfafPcBE3wZtfYYcJA%3D%3D"
    )]);
    assert_eq!(no_salt.0, 403);
    assert!(no_salt.1["error"].as_str().unwrap().contains("salt"));
    // A hash made for another token.
    let other = std::process::Command::new(strom_bin())
        .args([
            "sign",
            "--token",
            "other",
            "--salt",
            "12345",
            "--base",
            &base,
            "/manage/server_status",
        ])
        .output()
        .unwrap();
    let other_url = String::from_utf8(other.stdout).unwrap();
    assert_eq!(curl(&[other_url.trim()]).0, 403);
    // `strom sign` with the right token makes a working URL.
    assert_eq!(server.get("/manage/sessions").0, 200);
}

#[test]
fn api_errors_are_json_with_http_codes() {
    let server = Server::start("");
    server.wait_ready();
    let (code, body) = server.get("/manage/no_such_thing");
    assert_eq!(code, 404);
    assert!(body["error"].is_string());
    let (code, body) = server.post("/manage/server_status", "{}");
    assert_eq!(code, 405);
    assert!(body["error"].is_string());
    let (code, body) = server.post("/manage/sessions/delete", "[1, 2");
    assert_eq!(code, 400);
    assert!(body["error"].as_str().unwrap().contains("JSON"));
    let (code, body) = server.post("/manage/rtmp/republish", "{\"src_app\": \"live\"}");
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        server.post("/manage/sessions/delete", "{\"data\":[1,2]}"),
        (200, serde_json::json!({"status": "Ok"}))
    );
    assert_eq!(
        server.post("/manage/sessions/delete", "[3]"),
        (200, serde_json::json!({"status": "Ok"}))
    );
    let (code, body) = server.post("/manage/sync_panel_settings", "");
    assert_eq!(code, 400);
    assert!(body["error"].as_str().unwrap().contains("panel_url"));
    let (code, body) = server.post(
        "/manage/publish_control/deny",
        "{\"PublishControlDenyRequest\":[\"bad-id\"]}",
    );
    assert_eq!(
        (code, body),
        (
            200,
            serde_json::json!({"PublishControlDenyResponse": {"status": "success"}})
        )
    );
}

#[test]
fn no_management_listener_when_interfaces_are_unset() {
    let dir = tempfile::tempdir().unwrap();
    let ports = common::Ports::new();
    std::fs::write(
        dir.path().join("strom.conf"),
        format!("listen_interfaces = 127.0.0.1\nport = {}\nmanagement_port = {}\ndata_dir = data\nrun_dir = run\n", ports.http, ports.management),
    )
    .unwrap();
    std::fs::write(dir.path().join("rules.conf"), rules_json(ports.rtmp, 6)).unwrap();
    let mut server = Server {
        dir,
        ports,
        child: None,
        token: None,
    };
    server.spawn();
    wait_for(Duration::from_secs(20), "startup logged", || {
        server
            .log()
            .contains("management API disabled")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("log:\n{}", server.log()));
    let rtmp: SocketAddr = ([127, 0, 0, 1], server.ports.rtmp).into();
    wait_for(Duration::from_secs(20), "rtmp port", || {
        (!refused(rtmp)).then_some(())
    })
    .unwrap();
    assert!(refused(([127, 0, 0, 1], server.ports.management).into()));
}

#[test]
fn check_config_names_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("strom.conf");
    std::fs::write(&conf, "# comment\nport = 8081\nmanagement_port = eighty\n").unwrap();
    let output = std::process::Command::new(strom_bin())
        .args(["check-config", "--config"])
        .arg(&conf)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("strom.conf:3"), "{stderr}");
    assert!(stderr.contains("management_port"), "{stderr}");

    std::fs::write(&conf, "port = 8081\n").unwrap();
    std::fs::write(dir.path().join("rules.conf"), rules_json(1935, 6)).unwrap();
    let output = std::process::Command::new(strom_bin())
        .args(["check-config", "--config"])
        .arg(&conf)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("management_port = 8082"), "{stdout}");
}

/// The ERROR and WARN lines of `log` after its first `from` bytes.
fn complaints_since(log: &str, from: usize) -> Vec<String> {
    log.get(from..)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains(" ERROR ") || line.contains(" WARN "))
        .map(str::to_owned)
        .collect()
}

/// One failed reload is one ERROR line saying why (issue 34: it was logged twice), for
/// both triggers (SIGHUP, `POST /manage/reload_config`, which the console's button calls)
/// and both kinds of failure (a broken file, a port that cannot be bound).
#[test]
fn a_failed_reload_is_logged_once_with_its_reason() {
    let server = Server::start("");
    server.wait_ready();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_port = taken.local_addr().unwrap().port();
    let failures = [
        (
            "{ \"RtmpSettings\": { \"duration\": }".to_owned(),
            "rules.conf:1",
        ),
        (rules_json(taken_port, 4), "Address already in use"),
    ];
    for (rules, reason) in &failures {
        std::fs::write(server.path("rules.conf"), rules).unwrap();
        for trigger in ["SIGHUP", "API"] {
            let from = server.log().len();
            if trigger == "SIGHUP" {
                server.signal(Signal::SIGHUP);
                wait_for(Duration::from_secs(10), "reload error logged", || {
                    server.log()[from..].contains("reload failed").then_some(())
                })
                .unwrap_or_else(|| panic!("no reload error in log:\n{}", server.log()));
            } else {
                let (code, body) = server.post("/manage/reload_config", "");
                assert_eq!(code, 422, "{body}");
            }
            // Whatever else the failure would log is written by now.
            std::thread::sleep(Duration::from_secs(1));
            let complaints = complaints_since(&server.log(), from);
            assert_eq!(
                complaints.len(),
                1,
                "{trigger}, {reason}: one line expected: {complaints:#?}"
            );
            assert!(
                complaints[0].contains(" ERROR ") && complaints[0].contains(reason),
                "{trigger}: says why ({reason}): {}",
                complaints[0]
            );
        }
    }
    drop(taken);
    let (_, settings) = server.get("/manage/rtmp_settings");
    assert_eq!(settings["RtmpSettings"]["duration"], 6, "old rules kept");
}

/// The harness's own guard against port races between parallel tests: a port taken
/// between `free_port` and the supervisor's bind makes the supervisor exit, and the
/// harness starts it again on fresh ports (rewriting both config files).
#[test]
fn a_server_whose_port_is_taken_at_start_is_moved_to_fresh_ports() {
    let mut server = Server::prepare("");
    let taken = server.ports.rtmp;
    let _squatter = std::net::TcpListener::bind(("127.0.0.1", taken)).unwrap();
    server.spawn();
    server.wait_ready();
    assert_ne!(server.ports.rtmp, taken, "the harness kept the taken port");
    let rules = std::fs::read_to_string(server.path("rules.conf")).unwrap();
    assert!(
        rules.contains(&server.ports.rtmp.to_string()) && !rules.contains(&taken.to_string()),
        "rules.conf not rewritten: {rules}"
    );
    TcpStream::connect(("127.0.0.1", server.ports.rtmp))
        .unwrap_or_else(|e| panic!("RTMP not listening on the fresh port: {e}"));
}
