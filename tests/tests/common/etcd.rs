//! A real etcd cluster on loopback ports for the cluster registry's tests: N members
//! (`/usr/bin/etcd`, Debian's `etcd-server`), each with its own data directory in a
//! temporary directory, client and peer ports from [`free_port`]. Keys are read back over
//! etcd's v3 JSON gateway (`POST /v3/kv/range`, keys and values in base64) with curl, so
//! that a test sees what the servers wrote without an etcd client of its own.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use super::{free_port, require_tool, wait_for};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long a (re)started cluster may take to elect a leader and answer `/health`.
const HEALTHY: Duration = Duration::from_secs(60);

struct Member {
    name: String,
    client: u16,
    peer: u16,
    child: Option<Child>,
}

/// A running etcd cluster; every member is killed when dropped.
pub struct EtcdCluster {
    dir: tempfile::TempDir,
    token: String,
    members: Vec<Member>,
}

impl EtcdCluster {
    /// Starts `members` etcd members as one new cluster and waits until each is healthy.
    pub fn start(members: usize) -> Self {
        require_tool("etcd", "etcd-server");
        require_tool("curl", "curl");
        assert!(members >= 1, "an etcd cluster has at least one member");
        let dir = tempfile::tempdir().unwrap();
        let token = format!(
            "strom-test-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        );
        let members = (0..members)
            .map(|i| Member {
                name: format!("m{i}"),
                client: free_port(),
                peer: free_port(),
                child: None,
            })
            .collect();
        let mut cluster = Self {
            dir,
            token,
            members,
        };
        cluster.spawn_all("new");
        cluster.wait_healthy();
        cluster
    }

    /// The members' client URLs, `http://127.0.0.1:<port>`.
    pub fn endpoints(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|m| format!("http://127.0.0.1:{}", m.client))
            .collect()
    }

    /// Kills every member (SIGKILL: an outage, not a shutdown); the data stays.
    pub fn stop_all(&mut self) {
        for member in &mut self.members {
            if let Some(mut child) = member.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }

    /// Starts every member again on its data directory and waits until each is healthy.
    pub fn restart_all(&mut self) {
        self.stop_all();
        self.spawn_all("existing");
        self.wait_healthy();
    }

    /// The value of `key`, when it exists.
    pub fn get(&self, key: &str) -> Option<String> {
        self.range(key, None).into_iter().next().map(|kv| kv.value)
    }

    /// Every key under `prefix` with its value, in key order.
    pub fn get_prefix(&self, prefix: &str) -> Vec<(String, String)> {
        self.range(prefix, Some(&prefix_end(prefix.as_bytes())))
            .into_iter()
            .map(|kv| (kv.key, kv.value))
            .collect()
    }

    /// The lease `key` is attached to (0: none), when the key exists.
    pub fn lease_of(&self, key: &str) -> Option<i64> {
        self.range(key, None).into_iter().next().map(|kv| kv.lease)
    }

    /// What the members' logs say (for failure messages).
    pub fn logs(&self) -> String {
        let mut text = String::new();
        for member in &self.members {
            let log = std::fs::read_to_string(self.log_path(member)).unwrap_or_default();
            // The tail is what matters; a whole etcd log is long.
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            text.push_str(&format!("--- etcd {} (last lines)\n", member.name));
            for line in tail.into_iter().rev() {
                text.push_str(line);
                text.push('\n');
            }
        }
        text
    }

    /// A range request to the first member that answers.
    fn range(&self, key: &str, range_end: Option<&[u8]>) -> Vec<KeyValue> {
        let mut body = serde_json::json!({"key": BASE64.encode(key)});
        if let Some(end) = range_end {
            body["range_end"] = BASE64.encode(end).into();
        }
        let body = body.to_string();
        let mut errors = Vec::new();
        for endpoint in self.endpoints() {
            let url = format!("{endpoint}/v3/kv/range");
            match super::run_curl(&["-X", "POST", "--data-binary", &body, &url]) {
                Ok((200, answer)) => return key_values(&answer),
                Ok((code, answer)) => errors.push(format!("{url}: {code} {answer}")),
                Err(error) => errors.push(format!("{url}: {error}")),
            }
        }
        panic!(
            "no etcd member answered a range request: {errors:?}\n{}",
            self.logs()
        );
    }

    fn log_path(&self, member: &Member) -> std::path::PathBuf {
        self.dir.path().join(format!("{}.log", member.name))
    }

    fn spawn_all(&mut self, state: &str) {
        let initial_cluster = self
            .members
            .iter()
            .map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer))
            .collect::<Vec<_>>()
            .join(",");
        let dir = self.dir.path().to_owned();
        for member in &mut self.members {
            let log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join(format!("{}.log", member.name)))
                .unwrap();
            let client = format!("http://127.0.0.1:{}", member.client);
            let peer = format!("http://127.0.0.1:{}", member.peer);
            let child = Command::new("etcd")
                .arg("--name")
                .arg(&member.name)
                .arg("--data-dir")
                .arg(dir.join(&member.name))
                .args(["--listen-client-urls", &client])
                .args(["--advertise-client-urls", &client])
                .args(["--listen-peer-urls", &peer])
                .args(["--initial-advertise-peer-urls", &peer])
                .args(["--initial-cluster", &initial_cluster])
                .args(["--initial-cluster-token", &self.token])
                .args(["--initial-cluster-state", state])
                // A loaded test machine (two cores, parallel builds) must not cost the
                // cluster its leader: slower heartbeats, a longer election timeout.
                .args(["--heartbeat-interval", "200", "--election-timeout", "2000"])
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap_or_else(|e| panic!("starting etcd: {e}"));
            member.child = Some(child);
        }
    }

    fn wait_healthy(&mut self) {
        let endpoints = self.endpoints();
        for (i, endpoint) in endpoints.iter().enumerate() {
            let url = format!("{endpoint}/health");
            let healthy = wait_for(HEALTHY, "etcd member healthy", || {
                let exited = matches!(
                    self.members[i].child.as_mut().map(Child::try_wait),
                    Some(Ok(Some(_)))
                );
                assert!(!exited, "etcd member {i} exited; logs:\n{}", self.logs());
                let (code, body) = super::try_curl(&["--max-time", "3", &url])?;
                (code == 200 && body["health"] == "true").then_some(())
            });
            if healthy.is_none() {
                panic!("etcd at {endpoint} not healthy; logs:\n{}", self.logs());
            }
        }
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        self.stop_all();
    }
}

struct KeyValue {
    key: String,
    value: String,
    lease: i64,
}

/// The key-values of a range answer (`kvs` is absent when nothing matched; int64 fields
/// are JSON strings in the gateway's encoding).
fn key_values(answer: &serde_json::Value) -> Vec<KeyValue> {
    let text = |field: &serde_json::Value| {
        let bytes = BASE64.decode(field.as_str().unwrap_or_default()).unwrap();
        String::from_utf8(bytes).unwrap()
    };
    answer["kvs"]
        .as_array()
        .map(|kvs| {
            kvs.iter()
                .map(|kv| KeyValue {
                    key: text(&kv["key"]),
                    value: text(&kv["value"]),
                    lease: match &kv["lease"] {
                        serde_json::Value::String(s) => s.parse().unwrap(),
                        serde_json::Value::Number(n) => n.as_i64().unwrap(),
                        _ => 0,
                    },
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The smallest key after every key that starts with `prefix` (etcd's `range_end` for a
/// prefix): the prefix with its last byte below 0xff incremented.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Every byte 0xff (or empty): the whole key space from the prefix on.
    vec![0]
}
