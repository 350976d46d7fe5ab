//! Headless Chromium for the end-to-end tests: the playwright-core scripts of
//! `tests/browser/` (`play.mjs`, `console.mjs`), what they need, and running one.

use super::require_tool;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// `tests/browser`: the scripts, player pages and their npm packages.
pub fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("browser")
}

/// Fails the test, naming what to install, unless Chromium, node, playwright-core and
/// the other files `needed` under `tests/browser/node_modules` are there.
pub fn require_browser(needed: &[&str]) {
    require_tool("chromium", "chromium");
    require_tool("node", "nodejs");
    let modules = browser_dir().join("node_modules");
    for needed in needed.iter().chain(&["playwright-core/package.json"]) {
        assert!(
            modules.join(needed).exists(),
            "{} is missing: run `npm ci --prefix tests/browser` (scripts/test.sh does)",
            modules.join(needed).display()
        );
    }
}

/// Runs `node tests/browser/<script> <args>` for at most `limit_secs`; the JSON line it
/// printed last, or what went wrong with its output.
pub fn run_script(
    script: &str,
    args: &[&str],
    limit_secs: u32,
) -> Result<serde_json::Value, String> {
    let started = Instant::now();
    let output = Command::new("timeout")
        .arg(limit_secs.to_string())
        .arg("node")
        .arg(browser_dir().join(script))
        .args(args)
        .output()
        .map_err(|e| format!("running node: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!(
            "{script} {args:?} failed ({}):\n{stdout}\n{stderr}",
            output.status
        ));
    }
    let line = stdout.lines().last().unwrap_or_default();
    let result = serde_json::from_str(line)
        .map_err(|e| format!("{script} printed no JSON ({e}):\n{stdout}\n{stderr}"))?;
    eprintln!("{script} {args:?} ({:?}): {result}", started.elapsed());
    Ok(result)
}
