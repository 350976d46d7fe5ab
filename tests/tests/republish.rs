//! Re-publishing and pulled sources end to end: real `strom` processes push to nginx (with
//! Debian's `libnginx-mod-rtmp`) and to each other, with and without the Adobe challenge,
//! across destination restarts and reloads; a second instance's stream is pulled and
//! played over RTMP and HLS.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, ffprobe, is_live, probe_streams, publish, rtmp_url, wait_live};
use common::{Server, free_port, require_tool, wait_for};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);
/// What ffprobe sees, sorted (nginx sends the audio header first, strom the video's).
const EXPECTED: [&str; 2] = ["aac,audio", "h264,video,320,240"];

// ---------------------------------------------------------------------------------------
// nginx with the RTMP module as a destination.

const RTMP_MODULE: &str = "/usr/lib/nginx/modules/ngx_rtmp_module.so";

/// nginx serving RTMP application `live` on `rtmp` and its `rtmp_stat` page on `http`.
struct Nginx {
    dir: tempfile::TempDir,
    rtmp: u16,
    http: u16,
    process: Option<Proc>,
}

impl Nginx {
    fn start() -> Self {
        require_tool("nginx", "nginx");
        assert!(
            Path::new(RTMP_MODULE).exists(),
            "{RTMP_MODULE} is missing: install the Debian package `libnginx-mod-rtmp` (apt-get install -y libnginx-mod-rtmp)"
        );
        let mut nginx = Self {
            dir: tempfile::tempdir().unwrap(),
            rtmp: free_port(),
            http: free_port(),
            process: None,
        };
        let dir = nginx.dir.path().display().to_string();
        let conf = format!(
            "load_module {RTMP_MODULE};
daemon off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log info;
events {{ worker_connections 256; }}
rtmp {{
    server {{
        listen 127.0.0.1:{rtmp};
        application live {{ live on; }}
    }}
}}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    server {{
        listen 127.0.0.1:{http};
        location /stat {{ rtmp_stat all; }}
    }}
}}
",
            rtmp = nginx.rtmp,
            http = nginx.http,
        );
        std::fs::write(nginx.conf(), conf).unwrap();
        nginx.spawn();
        nginx
    }

    fn conf(&self) -> PathBuf {
        self.dir.path().join("nginx.conf")
    }

    fn spawn(&mut self) {
        let child = Command::new("nginx")
            .arg("-p")
            .arg(self.dir.path())
            .arg("-e")
            .arg(self.dir.path().join("startup.log"))
            .arg("-c")
            .arg(self.conf())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        self.process = Some(Proc(child));
        wait_for(LIVE, "nginx stat page", || self.stat())
            .unwrap_or_else(|| panic!("nginx did not start; log:\n{}", self.log()));
    }

    /// Stops nginx the way an operator does (SIGTERM to the master, which stops its
    /// worker and closes every connection) and waits for it to exit.
    fn stop(&mut self) {
        if let Some(mut process) = self.process.take() {
            let pid = nix::unistd::Pid::from_raw(process.0.id() as i32);
            nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
            assert!(
                process.wait_exit(Duration::from_secs(20)).is_some(),
                "nginx did not stop"
            );
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }

    fn stat(&self) -> Option<String> {
        let output = Command::new("curl")
            .args(["-sS", "--max-time", "5"])
            .arg(format!("http://127.0.0.1:{}/stat", self.http))
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        (output.status.success() && text.contains("<rtmp>")).then_some(text)
    }

    /// Whether nginx has a publisher on `live/<stream>`.
    fn publishing(&self, stream: &str) -> bool {
        self.stat().is_some_and(|stat| {
            stat.split("<stream>").skip(1).any(|s| {
                s.contains(&format!("<name>{stream}</name>")) && s.contains("<publishing/>")
            })
        })
    }

    fn url(&self, path: &str) -> String {
        format!("rtmp://127.0.0.1:{}/{path}", self.rtmp)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        if let Some(process) = &self.process {
            let pid = nix::unistd::Pid::from_raw(process.0.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let _ = self
                .process
                .as_mut()
                .map(|p| p.wait_exit(Duration::from_secs(10)));
        }
    }
}

// ---------------------------------------------------------------------------------------
// Helpers.

fn ready_server() -> Server {
    let server = Server::start("");
    server.wait_ready();
    server
}

fn create_rule(server: &Server, rule: Value) -> String {
    let (code, body) = server.post("/manage/rtmp/republish", &rule.to_string());
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"], "Ok", "{body}");
    body["rule"]["id"].as_str().unwrap().to_owned()
}

fn push_rule(src_stream: &str, port: u16, dest_stream: &str) -> Value {
    json!({
        "src_app": "live", "src_stream": src_stream,
        "dest_addr": "127.0.0.1", "dest_port": port.to_string(),
        "dest_app": "live", "dest_stream": dest_stream,
    })
}

fn stats(server: &Server) -> Vec<Value> {
    let (code, body) = server.get("/manage/rtmp/republish/stats");
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"], "Ok");
    body["stats"].as_array().unwrap().clone()
}

fn stat_of(server: &Server, rule: &str) -> Option<Value> {
    stats(server).into_iter().find(|s| s["rule_id"] == rule)
}

/// Waits until the push of `rule` is connected (and `extra` holds); returns its entry.
fn wait_connected(server: &Server, rule: &str, extra: impl Fn(&Value) -> bool) -> Value {
    wait_for(LIVE, "push connected", || {
        stat_of(server, rule).filter(|s| s["state"] == "connected" && extra(s))
    })
    .unwrap_or_else(|| {
        panic!(
            "push {rule} not connected: {:?}\nlog:\n{}",
            stats(server),
            server.log()
        )
    })
}

fn wait_log(server: &Server, needle: &str) {
    wait_for(LIVE, needle, || server.log().contains(needle).then_some(()))
        .unwrap_or_else(|| panic!("no {needle:?} in the log:\n{}", server.log()));
}

/// The tracks ffprobe sees at `url`, sorted.
fn wait_probe(url: &str) -> Vec<String> {
    wait_for(LIVE, "ffprobe sees both tracks", || {
        let mut streams = probe_streams(url);
        streams.sort();
        (streams.len() >= 2).then_some(streams)
    })
    .unwrap_or_else(|| panic!("ffprobe saw nothing at {url}"))
}

// ---------------------------------------------------------------------------------------
// Tests.

#[test]
fn api_rules_push_to_nginx_and_to_another_strom() {
    let source = ready_server();
    let destination = ready_server();
    let nginx = Nginx::start();
    let _publisher = publish(&rtmp_url(&source, "live/cam"));
    wait_live(&source, "live", "cam", LIVE).unwrap();

    let to_nginx = create_rule(&source, push_rule("cam", nginx.rtmp, "copy"));
    // A whole-app rule: the destination name follows the source's.
    let to_strom = create_rule(&source, push_rule("", destination.ports.rtmp, ""));

    let entry = wait_connected(&source, &to_nginx, |_| true);
    assert_eq!(entry["owner"], 1);
    assert_eq!(
        (
            &entry["src_app"],
            &entry["src_stream"],
            &entry["dest_stream"]
        ),
        (&json!("live"), &json!("cam"), &json!("copy"))
    );
    assert_eq!(entry["dest_port"], nginx.rtmp);
    wait_for(LIVE, "nginx has the stream", || {
        nginx.publishing("copy").then_some(())
    })
    .unwrap_or_else(|| panic!("nginx log:\n{}\nstrom log:\n{}", nginx.log(), source.log()));
    assert_eq!(wait_probe(&nginx.url("live/copy")), EXPECTED);

    wait_live(&destination, "live", "cam", LIVE)
        .unwrap_or_else(|| panic!("not pushed; source log:\n{}", source.log()));
    assert_eq!(wait_probe(&rtmp_url(&destination, "live/cam")), EXPECTED);
    let (_, groups) = destination.get("/manage/live_streams_status");
    assert_eq!(groups[0]["streams"][0]["publisher_ip"], "127.0.0.1");

    // Every field of spec 2.6, measured.
    let first = wait_connected(&source, &to_strom, |s| s["bytes_sent"].as_u64() > Some(0));
    for field in [
        "rule_id",
        "state",
        "session_duration",
        "bandwidth",
        "bytes_recv",
        "bytes_sent",
        "owner",
        "retry_count",
        "src_app",
        "src_stream",
        "dest_addr",
        "dest_port",
        "dest_app",
        "dest_stream",
    ] {
        assert!(first.get(field).is_some(), "{field} missing in {first}");
    }
    assert_eq!(first["retry_count"], 0);
    assert!(first["bytes_recv"].as_u64().unwrap() > 0, "{first}");
    wait_connected(&source, &to_strom, |s| {
        s["bytes_sent"].as_u64() > first["bytes_sent"].as_u64()
            && s["bandwidth"].as_u64() > Some(0)
            && s["session_duration"].as_u64() >= Some(1)
    });
    assert!(
        source.log().contains("re-publishing connected"),
        "log:\n{}",
        source.log()
    );
}

#[test]
fn a_push_reconnects_after_the_destination_restarts_and_stops_when_deleted() {
    let source = ready_server();
    let mut nginx = Nginx::start();
    let _publisher = publish(&rtmp_url(&source, "live/cam"));
    wait_live(&source, "live", "cam", LIVE).unwrap();
    let rule = create_rule(&source, push_rule("cam", nginx.rtmp, "cam"));
    wait_connected(&source, &rule, |_| true);
    wait_for(LIVE, "nginx has the stream", || {
        nginx.publishing("cam").then_some(())
    })
    .unwrap_or_else(|| panic!("nginx log:\n{}", nginx.log()));

    nginx.stop();
    wait_for(LIVE, "push noticed", || {
        stat_of(&source, &rule)
            .filter(|s| s["state"] != "connected" && s["retry_count"].as_u64() >= Some(1))
    })
    .unwrap_or_else(|| panic!("{:?}\nlog:\n{}", stats(&source), source.log()));
    wait_log(&source, "re-publishing reconnects");

    nginx.spawn();
    let entry = wait_connected(&source, &rule, |s| s["retry_count"].as_u64() >= Some(1));
    assert_eq!(entry["owner"], 1);
    wait_for(LIVE, "nginx has the stream again", || {
        nginx.publishing("cam").then_some(())
    })
    .unwrap_or_else(|| panic!("nginx log:\n{}", nginx.log()));
    assert_eq!(wait_probe(&nginx.url("live/cam")), EXPECTED);

    let (code, body) = source.delete(&format!("/manage/rtmp/republish/{rule}"));
    assert_eq!((code, &body["status"]), (200, &json!("Ok")), "{body}");
    wait_for(LIVE, "nginx lost the stream", || {
        (!nginx.publishing("cam")).then_some(())
    })
    .unwrap_or_else(|| panic!("still pushing; log:\n{}", source.log()));
    assert!(stat_of(&source, &rule).is_none());
    wait_log(&source, "re-publishing stopped");
    let (_, body) = source.delete(&format!("/manage/rtmp/republish/{rule}"));
    assert_eq!(body["status"], "NotFound");
}

#[test]
fn pushing_to_a_strom_that_requires_credentials() {
    let source = ready_server();
    let destination = Server::with_rules(
        "",
        r#"{"RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": {rtmp}}], "login": "enc", "password": "s3cret"}}"#,
    );
    let _publisher = publish(&rtmp_url(&source, "live/cam"));
    wait_live(&source, "live", "cam", LIVE).unwrap();
    let with = |password: &str| {
        let mut rule = push_rule("cam", destination.ports.rtmp, "cam");
        rule["auth_schema"] = json!("NIMBLE");
        rule["dest_login"] = json!("enc");
        rule["dest_password"] = json!(password);
        rule
    };

    let wrong = create_rule(&source, with("nope"));
    wait_log(&source, "re-publishing authentication failed");
    assert!(source.log().contains("authfailed"), "the reason is logged");
    let entry = wait_for(LIVE, "a retry", || {
        stat_of(&source, &wrong).filter(|s| s["retry_count"].as_u64() >= Some(1))
    })
    .unwrap();
    assert_ne!(entry["state"], "connected", "{entry}");
    assert!(!is_live(&destination, "live", "cam"));
    assert!(
        destination
            .log()
            .contains("publisher authentication failed")
    );
    assert_eq!(
        source.delete(&format!("/manage/rtmp/republish/{wrong}")).1["status"],
        "Ok"
    );

    let right = create_rule(&source, with("s3cret"));
    wait_connected(&source, &right, |_| true);
    wait_live(&destination, "live", "cam", LIVE)
        .unwrap_or_else(|| panic!("not pushed; log:\n{}", source.log()));
    assert!(destination.log().contains("publisher authenticated"));
    assert_eq!(wait_probe(&rtmp_url(&destination, "live/cam")), EXPECTED);
}

#[test]
fn a_reload_drops_api_rules_and_keeps_the_configured_ones_pushing() {
    let destination = ready_server();
    let source = Server::with_rules(
        "",
        &format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {{rtmp}}}}]}},
            "RtmpRepublishRules": [{{"id": "fixed", "src_app": "live", "src_stream": "a",
              "dest_addr": "127.0.0.1", "dest_port": {}, "dest_app": "live", "dest_stream": "a"}}]}}"#,
            destination.ports.rtmp
        ),
    );
    let _a = publish(&rtmp_url(&source, "live/a"));
    let _b = publish(&rtmp_url(&source, "live/b"));
    let api = create_rule(&source, push_rule("b", destination.ports.rtmp, "b"));
    let fixed = wait_connected(&source, "fixed", |_| true);
    assert_eq!(fixed["owner"], 0);
    assert_eq!(wait_connected(&source, &api, |_| true)["owner"], 1);
    wait_live(&destination, "live", "a", LIVE).unwrap();
    wait_live(&destination, "live", "b", LIVE).unwrap();

    let (code, body) = source.post("/manage/reload_config", "");
    assert_eq!(code, 200, "{body}");
    let (_, rules) = source.get("/manage/rtmp/republish");
    let ids: Vec<&str> = rules["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["fixed"]);
    wait_for(LIVE, "the API push stopped", || {
        (!is_live(&destination, "live", "b")).then_some(())
    })
    .unwrap_or_else(|| panic!("log:\n{}", source.log()));
    assert!(stat_of(&source, &api).is_none());
    // The configured push was not disturbed: same session, no retry, still growing.
    let after = wait_connected(&source, "fixed", |s| {
        s["bytes_sent"].as_u64() > fixed["bytes_sent"].as_u64()
    });
    assert_eq!(after["retry_count"], 0, "{after}");
    assert!(after["session_duration"].as_u64() >= fixed["session_duration"].as_u64());
    assert!(is_live(&destination, "live", "a"));
}

#[test]
fn a_pulled_source_is_played_over_rtmp_and_hls() {
    let origin = ready_server();
    let _publisher = publish(&rtmp_url(&origin, "live/src"));
    wait_live(&origin, "live", "src", LIVE).unwrap();
    let url = rtmp_url(&origin, "live/src");
    let edge = Server::with_rules(
        "",
        &format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {{rtmp}}}}], "duration": 1}},
            "RtmpPullSources": [{{"app": "live", "stream": "pulled", "url": "{url}", "mode": "always"}}]}}"#
        ),
    );
    let entry = wait_live(&edge, "live", "pulled", LIVE)
        .unwrap_or_else(|| panic!("not pulled; log:\n{}", edge.log()));
    assert_eq!(entry["resolution"], "320x240");
    assert_eq!(entry["protocol"], "RTMP");
    let (_, groups) = edge.get("/manage/live_streams_status");
    let pulled = &groups[0]["streams"][0];
    assert_eq!(pulled["strm"], "pulled");
    assert_eq!(pulled["source_url"], url.as_str());
    assert!(pulled.get("publisher_ip").is_none(), "{pulled}");
    assert_eq!(wait_probe(&rtmp_url(&edge, "live/pulled")), EXPECTED);

    let playlist = format!(
        "http://127.0.0.1:{}/live/pulled/playlist.m3u8",
        edge.ports.http
    );
    let hls = wait_for(LIVE, "hls of the pulled stream", || {
        let streams = ffprobe(&[
            "-show_entries",
            "stream=codec_type,codec_name,width,height",
            "-of",
            "csv=p=0",
            &playlist,
        ]);
        let streams: Vec<String> = streams
            .lines()
            .map(|l| l.trim().trim_end_matches(',').to_owned())
            .filter(|l| !l.is_empty())
            .collect();
        (streams.len() >= 2).then_some(streams)
    })
    .unwrap_or_else(|| panic!("no HLS; log:\n{}", edge.log()));
    assert!(hls.contains(&EXPECTED[0].to_owned()), "{hls:?}");
    assert!(hls.contains(&EXPECTED[1].to_owned()), "{hls:?}");
}

#[test]
fn an_on_demand_source_is_pulled_while_played() {
    let origin = ready_server();
    let _publisher = publish(&rtmp_url(&origin, "live/src"));
    wait_live(&origin, "live", "src", LIVE).unwrap();
    let url = rtmp_url(&origin, "live/src");
    // No HLS for `od`: the packager would otherwise subscribe and keep the pull alive.
    let edge = Server::with_rules(
        "",
        &format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {{rtmp}}}}],
              "apps": [{{"app": "od", "protocols": []}}]}},
            "RtmpPullSources": [{{"app": "od", "stream": "s", "url": "{url}", "mode": "on_demand", "idle_grace_secs": 1}}]}}"#
        ),
    );
    wait_log(&edge, "pulled source configured");
    assert!(!is_live(&edge, "od", "s"), "nothing pulled without players");
    assert_eq!(wait_probe(&rtmp_url(&edge, "od/s")), EXPECTED);
    wait_log(&edge, "no players left: pull dropped");
    wait_for(LIVE, "the pulled stream ended", || {
        (!is_live(&edge, "od", "s")).then_some(())
    })
    .unwrap();
}
