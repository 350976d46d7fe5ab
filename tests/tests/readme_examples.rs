//! The shell examples of README.md and every `docs/*.md`, run as written against a server
//! on a copy of the shipped `packaging/strom.conf` and `packaging/rules.conf` (issues 18
//! and 34; ports moved to free ones, data under the copy), so that docs, shipped
//! configuration and code cannot drift apart:
//!
//! - every `curl "$(target/release/strom sign --config packaging/strom.conf ...)"` line
//!   through `sh`, with the paths pointed at the copy and the binary cargo built: each
//!   must answer 200 with JSON;
//! - every publish example (`ffmpeg -re ...`, RTMP, RTSP, SRT, RIST, UDP, Icecast) must
//!   make its stream live, and every play example (`ffplay URL`, run as ffprobe decoding
//!   frames of the same URL) must decode frames;
//! - inline code spans that are a command against the local server (`curl
//!   http://127.0.0.1:8082/...`) run the same way (see `readme_examples/doc_blocks.rs`);
//! - any other example must be marked `<!-- example not run: <why> -->` in the doc.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "readme_examples/doc_blocks.rs"]
mod doc_blocks;
#[path = "readme_examples/media_runs.rs"]
mod media_runs;
#[path = "readme_examples/targets.rs"]
mod targets;

use common::{Ports, Server, free_port, require_tool, strom_bin};
use doc_blocks::{Example, inline_examples, shell_examples};
use media_runs::{Publisher, play, start_publisher, write_example_media};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use targets::PortMap;

/// How the README calls the binary and the config from a checkout.
const README_BINARY: &str = "target/release/strom";
const README_CONFIG: &str = "packaging/strom.conf";
const README_RULES: &str = "packaging/rules.conf";
/// The shipped RTMP port, which [`Server`] knows as `ports.rtmp`.
const SHIPPED_RTMP_PORT: u16 = 1935;

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
/// free ports (every `"port": N` of `rules.conf`, each to its own free port), and data kept
/// inside the copy's directory. Answers the server, the shipped ports with the ones used
/// instead, and the shipped rules.
fn start_shipped() -> (Server, PortMap, Value) {
    let root = repo_root();
    let dir = tempfile::tempdir().unwrap();
    let ports = Ports::new();
    let text = std::fs::read_to_string(root.join(README_CONFIG)).unwrap();
    let mut moved = vec![
        (shipped_value(&text, "port"), ports.http),
        (shipped_value(&text, "management_port"), ports.management),
    ];
    let conf = set_line(&text, "port", &ports.http.to_string());
    let conf = set_line(&conf, "management_port", &ports.management.to_string());
    let conf = set_line(&conf, "data_dir", "var/data");
    let conf = set_line(&conf, "run_dir", "var/run");
    assert!(
        !conf.lines().any(|l| l.starts_with("management_token")),
        "the shipped config is expected to set no token"
    );
    std::fs::write(dir.path().join("strom.conf"), conf).unwrap();
    let text = std::fs::read_to_string(root.join(README_RULES)).unwrap();
    let shipped: Value = serde_json::from_str(&text).unwrap();
    let mut rules = text.clone();
    for port in rules_ports(&text) {
        let free = if port == SHIPPED_RTMP_PORT {
            ports.rtmp
        } else {
            free_port()
        };
        rules = rules.replace(&format!("\"port\": {port}"), &format!("\"port\": {free}"));
        moved.push((port, free));
    }
    assert!(
        moved.iter().any(|(port, _)| *port == SHIPPED_RTMP_PORT),
        "shipped rules.conf changed: no RTMP on {SHIPPED_RTMP_PORT}"
    );
    std::fs::write(dir.path().join("rules.conf"), rules).unwrap();
    let mut server = Server {
        dir,
        ports,
        child: None,
        token: None,
    };
    server.spawn();
    server.wait_ready();
    (server, PortMap(moved), shipped)
}

/// The value of the `key = N` line of strom.conf.
fn shipped_value(text: &str, key: &str) -> u16 {
    let prefix = format!("{key} = ");
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("the shipped config has no `{key}` port"))
}

/// Every distinct `"port": N` of a rules.conf text.
fn rules_ports(text: &str) -> Vec<u16> {
    let mut ports: Vec<u16> = text
        .split("\"port\": ")
        .skip(1)
        .map(|rest| {
            let end = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            rest[..end].parse().unwrap()
        })
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
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

/// Every shell example of README.md and `docs/*.md`, in file order.
fn doc_examples() -> Vec<Example> {
    let root = repo_root();
    let mut examples = Vec::new();
    for file in example_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        let mut in_file = shell_examples(&name, &text);
        in_file.extend(inline_examples(&name, &text));
        // In reading order: a play example plays what was published above it.
        in_file.sort_by_key(|example| example.line);
        examples.extend(in_file);
    }
    examples
}

/// Runs a `curl` example (`command`, ready to run) and checks that it answers 200 with a
/// JSON object or array.
fn curl_answers_json(command: &str, shown: &str, server: &Server) {
    let command = format!("{command} -sS --max-time 10 -w '\\n%{{http_code}}'");
    let (success, stdout, stderr) = sh(&command);
    assert!(success, "{shown}: {stderr}");
    let (body, code) = stdout.rsplit_once('\n').unwrap();
    assert_eq!(code, "200", "{shown}: {body}\nlog:\n{}", server.log());
    let json: serde_json::Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{shown}: not JSON ({e}): {body}"));
    assert!(json.is_object() || json.is_array(), "{shown}: {body}");
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
    let (server, _, _) = start_shipped();
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
    let (server, _, _) = start_shipped();
    let examples: Vec<Example> = doc_examples()
        .into_iter()
        .filter(|e| e.command.contains("strom sign"))
        .collect();
    // 12 in README.md before its reference moved to docs/ (issue 34), plus the quick
    // start's: fewer means examples were dropped or are no longer found.
    assert!(
        examples.len() >= 13,
        "README and docs/ examples not found: {examples:?}"
    );
    assert!(
        examples.iter().any(|e| e.file == "README.md"),
        "README.md has no example: {examples:?}"
    );
    let binary = strom_bin();
    let config = server.path("strom.conf");
    let mut ran = 0;
    for doc in &examples {
        let shown = doc.shown();
        let example = &doc.command;
        assert!(
            example.contains(&format!("{README_BINARY} sign --config {README_CONFIG} ")),
            "an example must run from a checkout as written: {shown}"
        );
        if doc.not_run.is_some() {
            continue;
        }
        assert!(example.starts_with("curl "), "{shown}");
        let command = example
            .replace(README_BINARY, &binary.display().to_string())
            .replace(README_CONFIG, &config.display().to_string());
        curl_answers_json(&command, &shown, &server);
        ran += 1;
    }
    eprintln!("ran {ran} of {} examples", examples.len());
    assert!(ran >= 12, "ran {ran} examples");
}

/// Every media example of README.md and `docs/*.md`, as written, against a server on the
/// shipped configuration (issue 34): each publish example must make its stream live (the
/// stream its URL names, or for UDP and RIST the shipped input on its port), each play
/// example must decode frames from what was published before it in the same file. Only
/// the ports change (to free ones; a port the shipped config does not listen on fails).
/// Plain `curl` examples must answer 200 with JSON; `strom sign` ones are run by
/// `every_readme_curl_example_works_as_written`; the others must be marked as not run,
/// with the reason, in the doc itself.
#[test]
fn every_publish_play_and_plain_curl_example_works_on_the_shipped_config() {
    require_tool("ffmpeg", "ffmpeg");
    require_tool("ffprobe", "ffmpeg");
    let (server, ports, shipped_rules) = start_shipped();
    let media = tempfile::tempdir().unwrap();
    write_example_media(media.path());
    let examples = doc_examples();
    let (mut published, mut played, mut not_run, mut api) = (0, 0, 0, 0);
    let mut publisher: Option<Publisher> = None;
    let mut file = String::new();
    for example in &examples {
        let shown = example.shown();
        if example.file != file {
            if let Some(previous) = publisher.take() {
                previous.stop(&server);
            }
            file.clone_from(&example.file);
        }
        if let Some(reason) = &example.not_run {
            eprintln!("not run ({reason}): {shown}");
            if example.command.contains("cargo run") {
                assert!(
                    example
                        .command
                        .ends_with(&format!("-- run --config {README_CONFIG}")),
                    "the test starts strom as the quick start does: {shown}"
                );
            }
            not_run += 1;
            continue;
        }
        if example.command.contains("strom sign") {
            api += 1;
            continue;
        }
        let command = ports.rewrite(&example.command, &shown);
        match example.command.split_whitespace().next() {
            Some("ffmpeg") if example.command.contains(" -re ") => {
                if let Some(previous) = publisher.take() {
                    previous.stop(&server);
                }
                let url = targets::last_url(&example.command);
                let stream = targets::published_stream(&url, &shipped_rules, &shown);
                eprintln!("publishes {stream}: {shown}");
                publisher = Some(start_publisher(
                    &server,
                    media.path(),
                    &command,
                    stream,
                    shown,
                ));
                published += 1;
            }
            Some("curl") => {
                curl_answers_json(&command, &shown, &server);
                api += 1;
            }
            Some("ffplay") => {
                assert!(
                    publisher.is_some(),
                    "{shown}: no publish example before it in {file}"
                );
                let frames = play(media.path(), &command, &shown, &server);
                eprintln!("{frames} frames: {shown}");
                played += 1;
            }
            _ => panic!(
                "{shown}: not a publish (ffmpeg -re), play (ffplay) or curl example; \
                 teach tests/tests/readme_examples.rs to run it, or mark its block \
                 `<!-- example not run: <why> -->`"
            ),
        }
    }
    if let Some(previous) = publisher.take() {
        previous.stop(&server);
    }
    eprintln!("published {published}, played {played}, api {api}, not run {not_run}");
    // README: RTMP publish, 4 plays; mpegts-srt-rist.md: UDP, SRT, RIST publishes, one SRT
    // play; rtsp.md: a publish and a play; icecast.md: a publish.
    assert!(published >= 6 && played >= 6, "examples not found");
}

/// The README's ports table lists every port the shipped configuration listens on, with
/// its transport, and no other (issue 34: the table is what a newcomer opens a firewall
/// by). The metrics port is listed although off: the table says so.
#[test]
fn the_readme_ports_table_is_the_shipped_configuration() {
    let root = repo_root();
    let conf = std::fs::read_to_string(root.join(README_CONFIG)).unwrap();
    let rules: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(README_RULES)).unwrap()).unwrap();
    let mut shipped = vec![
        format!("{}/tcp", shipped_value(&conf, "port")),
        format!("{}/tcp", shipped_value(&conf, "management_port")),
        "9108/tcp".to_owned(),
    ];
    let listed = |value: &Value| value.as_array().cloned().unwrap_or_default();
    for (entries, transport) in [
        (listed(&rules["RtmpSettings"]["interfaces"]), "tcp"),
        (listed(&rules["RtspSettings"]["interfaces"]), "tcp"),
        (listed(&rules["RtspSettings"]["tls_interfaces"]), "tcp"),
        (listed(&rules["Cameras"]), "udp"),
        (listed(&rules["TsOutputs"]), "udp"),
    ] {
        for entry in entries {
            shipped.push(format!("{}/{transport}", entry["port"]));
        }
    }
    shipped.sort();
    shipped.dedup();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut table: Vec<String> = readme
        .lines()
        .filter_map(|line| {
            let cell = line.strip_prefix("| ")?.split(" |").next()?;
            let (port, transport) = cell.split_once('/')?;
            (port.parse::<u16>().is_ok() && matches!(transport, "tcp" | "udp"))
                .then(|| cell.to_owned())
        })
        .collect();
    table.sort();
    assert_eq!(
        table, shipped,
        "README ports table vs {README_CONFIG}, {README_RULES}"
    );
}
