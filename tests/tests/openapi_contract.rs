//! The OpenAPI contract: schemathesis (PyPI, in the venv `scripts/test.sh` prepares)
//! runs against a live strom with a management token, from the document strom serves at
//! `/manage/openapi.json`. No request may produce a 5xx, and every response must match
//! its documented schema. Auth goes into every request's query (`tests/contract/strom_auth.py`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Server;
use std::path::PathBuf;
use std::process::Command;

const TOKEN: &str = "contract-token";

#[test]
fn schemathesis_finds_no_server_error_and_no_schema_violation() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let st = root.join("target/pytools/bin/st");
    assert!(
        st.exists(),
        "{} is missing: scripts/test.sh installs schemathesis (PyPI) into target/pytools \
         (Debian package python3-venv)",
        st.display()
    );
    let server = Server::start(&format!("management_token = {TOKEN}"));
    server.wait_ready();
    let base = format!("http://127.0.0.1:{}", server.ports.management);
    let document = server.url("/manage/openapi.json");
    let output = Command::new("timeout")
        .arg("300")
        .arg(&st)
        .args(["run", &document, "--url", &base])
        .args([
            "--checks",
            "not_a_server_error,response_schema_conformance",
            "--max-examples",
            "15",
            "--phases",
            "examples,coverage,fuzzing",
            "--workers",
            "2",
            "--exclude-path",
            "/manage/sync_panel_settings",
        ])
        .env("STROM_TOKEN", TOKEN)
        .env("SCHEMATHESIS_HOOKS", "strom_auth")
        .env("PYTHONPATH", root.join("tests/contract"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    if std::env::var_os("STROM_CONTRACT_OUTPUT").is_some() {
        eprintln!("{stdout}");
    }
    assert!(
        output.status.success(),
        "schemathesis failed:\n{stdout}\n{}\nstrom log:\n{}",
        String::from_utf8_lossy(&output.stderr),
        server.log()
    );
}
