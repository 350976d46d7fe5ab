//! The README's management examples, run as written (issue 18): a server on a copy of
//! the shipped `packaging/strom.conf` (ports moved to free ones, data under the copy),
//! then every `curl "$(target/release/strom sign --config packaging/strom.conf ...)"`
//! line of README.md and of every `docs/*.md` (issue 34: the reference moved there)
//! through `sh`, with the paths pointed at the copy and the binary cargo built. Each must
//! answer 200 with JSON.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Ports, Server, free_port, require_tool, strom_bin};
use std::path::{Path, PathBuf};
use std::process::Command;

/// How the README calls the binary and the config from a checkout.
const README_BINARY: &str = "target/release/strom";
const README_CONFIG: &str = "packaging/strom.conf";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Replaces the one line that starts with `key = ` (the shipped file must have it).
fn set_line(text: &str, key: &str, value: &str) -> String {
    let prefix = format!("{key} = ");
    assert!(
        text.lines().any(|line| line.starts_with(&prefix)),
        "the shipped config has no `{key}` line"
    );
    text.lines()
        .map(|line| {
            if line.starts_with(&prefix) {
                format!("{prefix}{value}")
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// Starts strom on a copy of the shipped config and rules, changed only where a test must:
/// free ports, and data kept inside the copy's directory.
fn start_shipped() -> Server {
    let root = repo_root();
    let dir = tempfile::tempdir().unwrap();
    let ports = Ports::new();
    let conf = std::fs::read_to_string(root.join(README_CONFIG)).unwrap();
    let conf = set_line(&conf, "port", &ports.http.to_string());
    let conf = set_line(&conf, "management_port", &ports.management.to_string());
    let conf = set_line(&conf, "data_dir", "var/data");
    let conf = set_line(&conf, "run_dir", "var/run");
    assert!(
        !conf.lines().any(|l| l.starts_with("management_token")),
        "the shipped config is expected to set no token"
    );
    std::fs::write(dir.path().join("strom.conf"), conf).unwrap();
    let rules = std::fs::read_to_string(root.join("packaging/rules.conf")).unwrap();
    let shipped_rtmp = "\"port\": 1935";
    assert!(rules.contains(shipped_rtmp), "shipped rules.conf changed");
    let rules = rules.replace(shipped_rtmp, &format!("\"port\": {}", ports.rtmp));
    // The shipped RTSP port too, so that parallel tests do not collide on it.
    let rules = rules.replace("\"port\": 8554", &format!("\"port\": {}", free_port()));
    std::fs::write(dir.path().join("rules.conf"), rules).unwrap();
    let mut server = Server {
        dir,
        ports,
        child: None,
        token: None,
    };
    server.spawn();
    server.wait_ready();
    server
}

/// The Markdown files whose examples run: README.md and every `docs/*.md` (sorted), so
/// that moving a section between them keeps it tested.
fn example_files() -> Vec<PathBuf> {
    let root = repo_root();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    let mut files = vec![root.join("README.md")];
    files.extend(docs);
    files
}

/// Shell commands from the `sh` blocks of `text` that call `strom sign` (continuation
/// lines joined).
fn sign_examples(text: &str) -> Vec<String> {
    let mut examples = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_sh = line.trim() == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(start) => pending.push_str(start),
            None => {
                pending.push_str(line);
                let command = std::mem::take(&mut pending);
                if command.contains("strom sign") {
                    examples.push(command.trim().to_owned());
                }
            }
        }
    }
    examples
}

/// Every `strom sign` example of README.md and `docs/*.md`, with the file it is in.
fn readme_sign_examples() -> Vec<(String, String)> {
    let root = repo_root();
    let mut examples = Vec::new();
    for file in example_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        examples.extend(
            sign_examples(&text)
                .into_iter()
                .map(|example| (name.clone(), example)),
        );
    }
    examples
}

/// Runs `command` through sh from the repository root; returns (exit status, stdout,
/// stderr).
fn sh(command: &str) -> (bool, String, String) {
    let output = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(repo_root())
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn sign_on_the_shipped_config_prints_a_working_url() {
    require_tool("curl", "curl");
    let server = start_shipped();
    let output = Command::new(strom_bin())
        .args(["sign", "--config"])
        .arg(server.path("strom.conf"))
        .arg("/manage/server_status")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "strom sign failed: {stderr}");
    assert!(
        stderr.contains("management_token"),
        "says why the URL is unsigned: {stderr}"
    );
    let url = String::from_utf8(output.stdout).unwrap();
    let url = url.trim();
    assert_eq!(
        url,
        format!(
            "http://127.0.0.1:{}/manage/server_status",
            server.ports.management
        )
    );
    let (code, body) = common::curl(&[url]);
    assert_eq!(code, 200, "{body}");
    assert!(body["SysInfo"].is_object(), "{body}");
}

#[test]
fn every_readme_curl_example_works_as_written() {
    require_tool("curl", "curl");
    let server = start_shipped();
    let examples = readme_sign_examples();
    // 12 in README.md before its reference moved to docs/ (issue 34), plus the quick
    // start's: fewer means examples were dropped or are no longer found.
    assert!(
        examples.len() >= 13,
        "README and docs/ examples not found: {examples:?}"
    );
    assert!(
        examples.iter().any(|(file, _)| file == "README.md"),
        "README.md has no example: {examples:?}"
    );
    let binary = strom_bin();
    let config = server.path("strom.conf");
    let mut ran = 0;
    for (file, example) in &examples {
        let shown = format!("{file}: {example}");
        assert!(
            example.contains(&format!("{README_BINARY} sign --config {README_CONFIG} ")),
            "an example must run from a checkout as written: {shown}"
        );
        if example.contains("--cacert") {
            // The HTTPS example needs certificates the shipped config does not set.
            continue;
        }
        assert!(example.starts_with("curl "), "{shown}");
        let command = format!(
            "{} -sS --max-time 10 -w '\\n%{{http_code}}'",
            example
                .replace(README_BINARY, &binary.display().to_string())
                .replace(README_CONFIG, &config.display().to_string())
        );
        let (success, stdout, stderr) = sh(&command);
        assert!(success, "{shown}: {stderr}");
        let (body, code) = stdout.rsplit_once('\n').unwrap();
        assert_eq!(code, "200", "{shown}: {body}\nlog:\n{}", server.log());
        let json: serde_json::Value = serde_json::from_str(body)
            .unwrap_or_else(|e| panic!("{shown}: not JSON ({e}): {body}"));
        assert!(json.is_object() || json.is_array(), "{shown}: {body}");
        ran += 1;
    }
    eprintln!("ran {ran} of {} examples", examples.len());
    assert!(ran >= 12, "ran {ran} examples");
}
