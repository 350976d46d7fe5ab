//! Pushing to an Icecast server (`IcecastPush`): strom sends an RTMP stream's audio as a
//! source to a real Icecast (Debian's `icecast2`), where ffprobe reads the mount. A
//! wrong password is refused and logged (without the password) and retried; the right
//! one, applied by a reload, connects. The title set with `icecast_metadata` reaches
//! the server (`/admin/metadata`). Icecast stopped and started again: strom reconnects,
//! the mount is readable again and has the title again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, ffprobe, publish, rtmp_url, wait_live};
use common::{Server, free_port, require_tool, wait_for};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);
const SOURCE_PASSWORD: &str = "hack-me-1";
const MOUNT: &str = "/radio";

/// An `icecast2` process on its own port, directory and config, killed when dropped.
struct Icecast {
    port: u16,
    dir: tempfile::TempDir,
    process: Option<Proc>,
}

impl Icecast {
    fn start() -> Self {
        require_tool("icecast2", "icecast2");
        let dir = tempfile::tempdir().unwrap();
        let mut icecast = Self {
            port: free_port(),
            dir,
            process: None,
        };
        icecast.write_config();
        icecast.spawn();
        icecast
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write_config(&self) {
        // icecast2 refuses to run as root: as root it changes to nobody, which must be
        // able to reach and write its log directory.
        let root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
        let logs = self.path("log");
        std::fs::create_dir_all(&logs).unwrap();
        for (path, mode) in [(self.dir.path(), 0o755), (logs.as_path(), 0o777)] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let security = if root {
            "<security><chroot>0</chroot><changeowner><user>nobody</user>\
             <group>nogroup</group></changeowner></security>"
        } else {
            "<security><chroot>0</chroot></security>"
        };
        let config = format!(
            r#"<icecast>
  <location>strom test</location>
  <admin>test@localhost</admin>
  <limits><clients>10</clients><sources>4</sources><source-timeout>10</source-timeout>
    <burst-size>65535</burst-size></limits>
  <authentication>
    <source-password>{SOURCE_PASSWORD}</source-password>
    <admin-user>admin</admin-user>
    <admin-password>admin-pw-1</admin-password>
  </authentication>
  <hostname>127.0.0.1</hostname>
  <listen-socket><port>{port}</port><bind-address>127.0.0.1</bind-address></listen-socket>
  <fileserve>1</fileserve>
  <paths>
    <basedir>/usr/share/icecast2</basedir>
    <logdir>{logs}</logdir>
    <webroot>/usr/share/icecast2/web</webroot>
    <adminroot>/usr/share/icecast2/admin</adminroot>
  </paths>
  <logging><accesslog>access.log</accesslog><errorlog>error.log</errorlog>
    <loglevel>3</loglevel></logging>
  {security}
</icecast>
"#,
            port = self.port,
            logs = logs.display(),
        );
        std::fs::write(self.path("icecast.xml"), config).unwrap();
    }

    fn spawn(&mut self) {
        let child = Command::new("icecast2")
            .arg("-c")
            .arg(self.path("icecast.xml"))
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.process = Some(Proc(child));
        wait_for(Duration::from_secs(20), "icecast2 answers", || {
            self.status().map(|_| ())
        })
        .unwrap_or_else(|| panic!("icecast2 did not start; its log:\n{}", self.log()));
    }

    /// Kills the server (its sources' connections drop with it).
    fn stop(&mut self) {
        self.process = None;
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.path("log/error.log")).unwrap_or_default()
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// `/status-json.xsl`, once the server answers.
    fn status(&self) -> Option<serde_json::Value> {
        let output = Command::new("curl")
            .args(["-s", "--max-time", "5", &self.url("/status-json.xsl")])
            .output()
            .ok()?;
        serde_json::from_slice(&output.stdout).ok()
    }

    /// The title the server has for `MOUNT`.
    fn title(&self) -> Option<String> {
        let status = self.status()?;
        let sources = &status["icestats"]["source"];
        // One source is an object, several an array.
        let list = match sources {
            serde_json::Value::Array(list) => list.clone(),
            other => vec![other.clone()],
        };
        list.iter()
            .find(|s| s["listenurl"].as_str().is_some_and(|u| u.ends_with(MOUNT)))
            .and_then(|s| s["title"].as_str().map(str::to_owned))
    }
}

/// RTMP in, `outputs` as the delivery outputs, and the push with `password`.
fn rules(server: &Server, icecast_port: u16, password: &str, outputs: &str) -> String {
    format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {rtmp}}}]}},
 "Delivery": {{"outputs": {outputs}}},
 "IcecastPush": [{{"app": "live", "stream": "radio",
   "url": "icecast://source:{password}@127.0.0.1:{icecast_port}{MOUNT}",
   "name": "strom radio", "description": "a test tone", "genre": "Test"}}]}}"#,
        rtmp = server.ports.rtmp,
    )
}

/// Waits until ffprobe reads AAC audio at the mount.
fn wait_mount(icecast: &Icecast, server: &Server, what: &str) {
    let url = icecast.url(MOUNT);
    wait_for(LIVE, what, || {
        let out = ffprobe(&["-show_entries", "stream=codec_name", "-of", "csv=p=0", &url]);
        out.lines().any(|l| l.trim() == "aac").then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "{what}: ffprobe read no AAC at {url}\nstrom log:\n{}\nicecast log:\n{}",
            server.log(),
            icecast.log()
        )
    });
}

fn wait_log(server: &Server, what: &str, needle: &str) {
    wait_for(LIVE, what, || server.log().contains(needle).then_some(()))
        .unwrap_or_else(|| panic!("{what}: no {needle:?} in the log:\n{}", server.log()));
}

fn count(server: &Server, needle: &str) -> usize {
    server.log().matches(needle).count()
}

#[test]
fn rtmp_audio_is_pushed_to_icecast_and_comes_back_after_a_restart() {
    require_tool("ffprobe", "ffmpeg");
    let mut icecast = Icecast::start();
    let server = Server::start("");

    // A wrong password: refused with the server's status line, retried, never logged.
    let wrong = "wrong-pw-7";
    // No delivery output at all: the push alone brings the stream to the packager.
    server.apply_rules(&rules(&server, icecast.port, wrong, "[]"));
    let _publisher = publish(&rtmp_url(&server, "live/radio"));
    wait_live(&server, "live", "radio", LIVE).unwrap();
    wait_for(LIVE, "a refusal", || {
        let log = server.log();
        log.lines()
            .any(|l| l.contains("refused: HTTP/1.") && l.contains(" 401 "))
            .then_some(())
    })
    .unwrap_or_else(|| panic!("no 401 refusal logged:\n{}", server.log()));
    wait_log(&server, "a retry", "reconnecting in 2 s");

    // The right one: connected, and the mount plays AAC.
    server.apply_rules(&rules(&server, icecast.port, SOURCE_PASSWORD, "[]"));
    wait_mount(&icecast, &server, "the pushed mount");
    let log = server.log();
    assert!(log.contains("icecast push: connected"), "{log}");
    for secret in [wrong, SOURCE_PASSWORD] {
        assert!(!log.contains(secret), "the log shows a password:\n{log}");
    }
    let status = icecast.status().unwrap();
    let source = &status["icestats"]["source"];
    assert_eq!(source["server_name"], "strom radio", "{status}");
    assert_eq!(source["server_description"], "a test tone", "{status}");
    assert_eq!(source["genre"], "Test", "{status}");

    // The title goes to the server. `icecast_metadata` needs ICECAST delivery; adding it
    // leaves the push alone (no new connection).
    let connects = count(&server, "icecast push: connected");
    server.apply_rules(&rules(
        &server,
        icecast.port,
        SOURCE_PASSWORD,
        r#"["ICECAST"]"#,
    ));
    let (code, body) = server.post(
        "/manage/icecast_metadata/live/radio",
        r#"{"streamtitle": "Song & A", "streamurl": ""}"#,
    );
    assert_eq!(code, 200, "{body}");
    wait_for(LIVE, "the title on icecast", || {
        (icecast.title()? == "Song & A").then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "icecast has no title; status {:?}\nstrom log:\n{}",
            icecast.status(),
            server.log()
        )
    });

    assert_eq!(
        count(&server, "icecast push: connected"),
        connects,
        "a reload that did not change the push reconnected it:\n{}",
        server.log()
    );

    // Icecast goes away and comes back on the same port: strom reconnects.
    icecast.stop();
    wait_log(&server, "the loss", "icecast push: connection lost");
    icecast.spawn();
    wait_for(LIVE, "a new connection", || {
        (count(&server, "icecast push: connected") > connects).then_some(())
    })
    .unwrap_or_else(|| panic!("strom did not reconnect; log:\n{}", server.log()));
    wait_mount(&icecast, &server, "the mount after icecast's restart");
    // The new server has the title too: it is sent with every new connection.
    wait_for(LIVE, "the title after icecast's restart", || {
        (icecast.title()? == "Song & A").then_some(())
    })
    .unwrap_or_else(|| panic!("no title after the restart; log:\n{}", server.log()));
}
