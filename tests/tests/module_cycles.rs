//! No import circles between the modules of a crate.
//!
//! Two modules that use each other cannot be read, tested or moved apart; shared types
//! belong in a leaf module both use. This reads the sources (no build needed): a module
//! depends on another when its non-test code names `crate::other…` or `super::other…`.
//! Modules are compared at the depth given per crate (2: `process::table` and
//! `process::link` are different modules; deeper files count as their ancestor there).

// A test of the repository's own sources: a missing file is a broken checkout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn module_of(src: &Path, file: &Path) -> Module {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Module = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The code outside `#[cfg(test)] mod …` blocks (wherever they sit in the file: code after
/// a test module counts too) and outside line comments.
fn production_code(text: &str) -> String {
    let uncommented = text
        .lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let mut kept = String::with_capacity(uncommented.len());
    let mut rest = uncommented.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        kept.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let item = after.trim_start();
        if !item.starts_with("mod ") {
            kept.push_str("#[cfg(test)]");
            rest = after;
            continue;
        }
        // `mod name;` (a test file) or `mod name { … }` up to its matching brace.
        let body_start = item.find(['{', ';']).unwrap_or(item.len());
        if item[body_start..].starts_with(';') {
            rest = &item[body_start + 1..];
            continue;
        }
        let mut depth = 0usize;
        let mut end = item.len();
        for (i, c) in item[body_start..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = body_start + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    kept.push_str(rest);
    kept
}

#[test]
fn code_after_a_test_module_is_read() {
    let text = "use crate::a;\n#[cfg(test)]\nmod tests {\n    use crate::b;\n    fn f() { if x { y } }\n}\nuse crate::c; // crate::d\n#[cfg(test)]\nmod more;\n#[cfg(test)]\nfn helper() {}\n";
    let code = production_code(text);
    assert!(
        code.contains("crate::a") && code.contains("crate::c"),
        "{code}"
    );
    assert!(
        !code.contains("crate::b") && !code.contains("crate::d"),
        "{code}"
    );
    assert!(code.contains("fn helper"), "{code}");
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths after `prefix` (`crate::` or `super::`), group members included:
/// `crate::{a, b::c}` gives `a` and `b::c`.
fn paths_after(code: &str, prefix: &str) -> Vec<(usize, Module)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find(prefix) {
        let start = from + at;
        from = start + prefix.len();
        if code[..start].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        // Count a chain of `super::`.
        let mut ups = 1;
        let mut rest = &code[from..];
        while prefix == "super::" && rest.starts_with("super::") {
            ups += 1;
            rest = &rest["super::".len()..];
        }
        if let Some(group) = rest.strip_prefix('{') {
            let body = group.split('}').next().unwrap_or_default();
            for member in body.split(',') {
                let path = segments(member.trim());
                if !path.is_empty() {
                    found.push((ups, path));
                }
            }
        } else {
            let path = segments(rest);
            if !path.is_empty() {
                found.push((ups, path));
            }
        }
    }
    found
}

fn segments(text: &str) -> Module {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        let end = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
        if end == 0 {
            break;
        }
        out.push(rest[..end].to_owned());
        match rest[end..].strip_prefix("::") {
            Some(next) => rest = next,
            None => break,
        }
    }
    out
}

/// Module -> modules it uses, at `depth`.
fn dependencies(src: &Path, depth: usize) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<Module> = files.iter().map(|f| module_of(src, f)).collect();
    let resolve = |target: &[String]| -> Option<Module> {
        (1..=target.len().min(depth))
            .rev()
            .map(|n| target[..n].to_vec())
            .find(|candidate| modules.contains(candidate))
    };
    let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for file in &files {
        let module = module_of(src, file);
        if module.iter().any(|part| part.ends_with("tests")) {
            continue;
        }
        let me: Module = module.iter().take(depth).cloned().collect();
        let code = production_code(&std::fs::read_to_string(file).unwrap());
        let mut targets: Vec<Module> = paths_after(&code, "crate::")
            .into_iter()
            .map(|(_, path)| path)
            .collect();
        for (ups, path) in paths_after(&code, "super::") {
            let base = &module[..module.len().saturating_sub(ups)];
            targets.push(base.iter().cloned().chain(path).collect());
        }
        let entry = graph.entry(me.clone()).or_default();
        for target in targets {
            if let Some(used) = resolve(&target)
                && used != me
                && !me.starts_with(&used)
                && !used.starts_with(&me)
            {
                entry.insert(used);
            }
        }
    }
    graph
}

/// One cycle, as the modules along it, if there is any.
fn find_cycle(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    fn visit(
        node: &Module,
        graph: &BTreeMap<Module, BTreeSet<Module>>,
        path: &mut Vec<Module>,
        done: &mut BTreeSet<Module>,
    ) -> Option<Vec<Module>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.clone());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.clone());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.clone());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

fn assert_no_cycles(crate_src: &str, depth: usize) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(crate_src);
    let graph = dependencies(&src, depth);
    assert!(graph.len() > 1, "no modules found under {}", src.display());
    if let Some(cycle) = find_cycle(&graph) {
        let names: Vec<String> = cycle.iter().map(|m| m.join("::")).collect();
        panic!(
            "module import cycle in {crate_src}: {}; move what both use into a leaf module",
            names.join(" -> ")
        );
    }
}

#[test]
fn rtmp_worker_modules_do_not_import_each_other_in_circles() {
    assert_no_cycles("workers/rtmp/src", 2);
}

#[test]
fn supervisor_modules_do_not_import_each_other_in_circles() {
    assert_no_cycles("supervisor/src", 2);
}

#[test]
fn contract_and_runtime_modules_do_not_import_each_other_in_circles() {
    assert_no_cycles("ipc/src", 2);
    assert_no_cycles("workers/runtime/src", 2);
}

/// The checker itself finds a circle.
#[test]
fn a_circle_is_found() {
    let module = |name: &str| vec![name.to_owned()];
    let mut graph = BTreeMap::new();
    graph.insert(module("a"), BTreeSet::from([module("b")]));
    graph.insert(module("b"), BTreeSet::from([module("c")]));
    graph.insert(module("c"), BTreeSet::from([module("a")]));
    let cycle = find_cycle(&graph).unwrap();
    assert_eq!(cycle.first(), cycle.last());
    assert_eq!(cycle.len(), 4);
    graph.insert(module("c"), BTreeSet::new());
    assert_eq!(find_cycle(&graph), None);
    assert_eq!(
        paths_after("use crate::{hub::Streams, frame};", "crate::"),
        vec![
            (1, vec!["hub".to_owned(), "Streams".to_owned()]),
            (1, vec!["frame".to_owned()])
        ]
    );
}

/// Every crate of the workspace, read from its `members` (so a new crate is covered
/// without anyone remembering to add it here).
#[test]
fn no_crate_of_the_workspace_has_import_circles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members = manifest
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(list, _)| list)
        .unwrap();
    let crates: Vec<&str> = members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .collect();
    assert!(crates.len() >= 10, "{crates:?}");
    let mut cycles = Vec::new();
    for member in crates {
        let src = root.join(member).join("src");
        if !src.exists() {
            continue;
        }
        let graph = dependencies(&src, 2);
        if let Some(cycle) = find_cycle(&graph) {
            let names: Vec<String> = cycle.iter().map(|m| m.join("::")).collect();
            cycles.push(format!("{member}: {}", names.join(" -> ")));
        }
    }
    assert!(
        cycles.is_empty(),
        "module import cycles (move what both use into a leaf module):\n{}",
        cycles.join("\n")
    );
}
