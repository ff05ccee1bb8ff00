//! Keeps the repository's shape: every Rust file says what it is for in a `//!` first line,
//! no file outgrows a room one can live in, and docs/architecture.md's crate dependency table
//! is the one in the Cargo.toml files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The most lines a Rust file may have, its inline tests included.
const MAX_LINES: usize = 1_200;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == "target" || name.to_string_lossy().starts_with('.') {
            continue;
        }
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The project's own Rust files: crates/, tests/ and fuzz/ (samples/ are debuggees, not code).
fn project_files() -> Vec<PathBuf> {
    let repo = testsupport::repo();
    let mut files = Vec::new();
    for dir in ["crates", "tests", "fuzz"] {
        rust_files(&repo.join(dir), &mut files);
    }
    files.sort();
    assert!(files.len() > 100, "found only {} Rust files", files.len());
    files
}

#[test]
fn every_rust_file_starts_with_a_doc_line() {
    let files = project_files();
    let missing: Vec<_> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            !text.starts_with("//!")
        })
        .collect();
    println!("checked the first line of {} Rust files", files.len());
    assert!(
        missing.is_empty(),
        "files without a `//!` first line: {missing:#?}"
    );
}

#[test]
fn no_rust_file_is_over_the_size_limit() {
    let files = project_files();
    let mut over = Vec::new();
    for f in &files {
        let lines = std::fs::read_to_string(f)
            .unwrap_or_default()
            .lines()
            .count();
        if lines > MAX_LINES {
            over.push(format!("{} ({lines} lines)", f.display()));
        }
    }
    println!(
        "checked the length of {} Rust files (limit {MAX_LINES})",
        files.len()
    );
    assert!(over.is_empty(), "files over {MAX_LINES} lines: {over:#?}");
}

/// The workspace crates a Cargo.toml's `[dependencies]` table names.
fn workspace_dependencies(manifest: &str, crates: &BTreeSet<String>) -> BTreeSet<String> {
    let mut in_deps = false;
    let mut deps = BTreeSet::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if !in_deps {
            continue;
        }
        let name = line
            .split(['=', '.', ' '])
            .next()
            .unwrap_or_default()
            .trim();
        if crates.contains(name) {
            deps.insert(name.to_string());
        }
    }
    deps
}

/// The table under `<!-- tidy: crate dependencies -->` in docs/architecture.md.
fn documented_dependencies(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
    let start = doc
        .find("<!-- tidy: crate dependencies -->")
        .expect("docs/architecture.md has no crate dependency table");
    let mut table = BTreeMap::new();
    for line in doc[start..].lines().skip(1) {
        let line = line.trim();
        if !line.starts_with('|') {
            if table.is_empty() {
                continue;
            }
            break;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let [krate, deps] = cells[..] else {
            panic!("a row of the dependency table has not two cells: {line}");
        };
        if krate == "crate" || krate.starts_with("---") {
            continue;
        }
        let names = |s: &str| -> BTreeSet<String> {
            s.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect()
        };
        let krate = names(krate)
            .into_iter()
            .next()
            .expect("a crate name in backquotes");
        // "— (tests only …)" names nothing; only backquoted names count.
        let deps = if deps.starts_with('—') {
            BTreeSet::new()
        } else {
            names(deps)
        };
        table.insert(krate, deps);
    }
    table
}

#[test]
fn the_documented_crate_dependencies_are_the_real_ones() {
    let repo = testsupport::repo();
    let mut manifests = BTreeMap::new();
    for entry in std::fs::read_dir(repo.join("crates"))
        .expect("crates/")
        .flatten()
    {
        let manifest = entry.path().join("Cargo.toml");
        if let Ok(text) = std::fs::read_to_string(&manifest) {
            manifests.insert(entry.file_name().to_string_lossy().into_owned(), text);
        }
    }
    let crates: BTreeSet<String> = manifests.keys().cloned().collect();
    let real: BTreeMap<String, BTreeSet<String>> = manifests
        .iter()
        .map(|(name, text)| (name.clone(), workspace_dependencies(text, &crates)))
        .collect();
    let doc = std::fs::read_to_string(repo.join("docs/architecture.md")).expect("architecture.md");
    let documented = documented_dependencies(&doc);
    println!(
        "compared the dependencies of {} crates with docs/architecture.md",
        real.len()
    );
    assert_eq!(
        documented, real,
        "docs/architecture.md's table (left) differs from Cargo.toml (right)"
    );
}
