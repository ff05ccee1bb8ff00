//! `workspace/symbol` against a plain reference: every entry of the full in-memory index
//! ranked (exact > prefix > substring > fuzzy, fuzzy only when the others are fewer than an
//! answer holds), sorted by tier, declared outside a root, name length, name, declaration,
//! then deduplicated and limited to files that can be opened. The server's search of its
//! binaries' symbol tables (haystack, table order, lazy fuzzy walk) must give exactly that
//! answer, over two binaries at once (a Rust one, whose standard-library names are declared
//! under a `/rustc/…` directory that does not exist here, and a C one).
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use lsp::features::{workspace_symbol_cached, Context, Sources, MAX_WORKSPACE_SYMBOLS};
use lsp::text::PositionEncoding;
use lsp::workspace::{Served, Workspace, WorkspaceConfig};
use serde_json::Value;

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples")
}

/// The reference tier of a lowercase name.
fn rank(query: &str, name: &str) -> Option<u8> {
    if query.is_empty() {
        return Some(0);
    }
    let short = name.rsplit("::").next().unwrap_or(name);
    if short == query || name == query {
        Some(0)
    } else if short.starts_with(query) || name.starts_with(query) {
        Some(1)
    } else if name.contains(query) {
        Some(2)
    } else {
        let mut chars = name.chars();
        query.chars().all(|q| chars.any(|c| c == q)).then_some(3)
    }
}

/// (name, container, uri, line) of each result.
type Listed = Vec<(String, Option<String>, String, u64)>;

fn reference(served: &[Arc<Served>], roots: &[PathBuf], query: &str) -> Listed {
    let q = query.trim().to_lowercase();
    let mut hits = Vec::new();
    for (si, s) in served.iter().enumerate() {
        for (n, e) in s.binary.symbol_index().entries().enumerate() {
            let (Some(file), Some(line)) = (e.decl_file.clone(), e.decl_line) else {
                continue;
            };
            let Some(tier) = rank(&q, &e.name.to_lowercase()) else {
                continue;
            };
            let outside = !roots.iter().any(|r| file.starts_with(r));
            hits.push((
                tier,
                outside,
                e.name.len(),
                e.name.clone(),
                file,
                line,
                si,
                n,
                e,
            ));
        }
    }
    let substring = hits.iter().filter(|h| h.0 < 3).count();
    if !q.is_empty() && substring >= MAX_WORKSPACE_SYMBOLS {
        hits.retain(|h| h.0 < 3);
    }
    hits.sort_by(|a, b| {
        (a.0, a.1, a.2, &a.3, a.4.as_os_str(), a.5, a.6, a.7).cmp(&(
            b.0,
            b.1,
            b.2,
            &b.3,
            b.4.as_os_str(),
            b.5,
            b.6,
            b.7,
        ))
    });
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (_, _, _, name, file, line, _, _, e) in hits {
        if out.len() >= MAX_WORKSPACE_SYMBOLS {
            break;
        }
        if !seen.insert((name.clone(), file.clone(), line, e.kind)) {
            continue;
        }
        if std::fs::read_to_string(&file).is_err() {
            continue;
        }
        let short = e.short_name().to_owned();
        let container = name
            .strip_suffix(short.as_str())
            .and_then(|p| p.strip_suffix("::"))
            .map(str::to_owned);
        out.push((
            short,
            container,
            lsp::uri::from_path(&file),
            u64::from(line.zero_based()),
        ));
    }
    out
}

fn listed(answer: &Value) -> Listed {
    answer
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_owned(),
                s["containerName"].as_str().map(str::to_owned),
                s["location"]["uri"].as_str().unwrap().to_owned(),
                s["location"]["range"]["start"]["line"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn answers_match_the_reference_ranking() {
    let dir = std::env::temp_dir().join(format!("tandem-lsp-wsym-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let root = dir.canonicalize().unwrap();
    for source in ["rust/lsp_geometry.rs", "c/lsp_shapes.c"] {
        std::fs::copy(
            samples().join(source),
            root.join(Path::new(source).file_name().unwrap()),
        )
        .unwrap();
    }
    let rustc = Command::new("rustc")
        .args([
            "-g",
            "--edition",
            "2021",
            "-o",
            "geometry",
            "lsp_geometry.rs",
        ])
        .current_dir(&root)
        .status()
        .unwrap();
    assert!(rustc.success(), "rustc failed");
    let gcc = Command::new("gcc")
        .args(["-g", "-O0", "-o", "shapes", "lsp_shapes.c"])
        .current_dir(&root)
        .status()
        .unwrap();
    assert!(gcc.success(), "gcc failed");

    let roots = vec![root.clone()];
    let ws = Workspace::start(
        WorkspaceConfig {
            roots: roots.clone(),
            binaries: vec!["geometry".into(), "shapes".into()],
            index_delay: Duration::ZERO,
            full_index_delay: Duration::ZERO,
        },
        None,
    );
    let served = ws.snapshot(Duration::from_secs(60), &|| false);
    assert_eq!(served.len(), 2);
    let queries = [
        "",
        "a",
        "main",
        "MAIN",
        "area",
        "point",
        "shp",
        "mn",
        "ara",
        "new",
        "fmt",
        "drop",
        "into",
        "zzqx",
        "::",
        "e",
        "geometry::",
    ];
    // Once while the background tables may still be building, once after.
    for pass in 0..2 {
        if pass == 1 {
            for s in &served {
                s.names.warm();
            }
        }
        for q in queries {
            let mut cx = Context {
                served: served.clone(),
                sources: Sources::new(Default::default(), ws.texts()),
                encoding: PositionEncoding::Utf8,
                roots: roots.clone(),
                live: None,
            };
            let tables: Vec<_> = served.iter().filter_map(|s| s.cached_names()).collect();
            let answer = workspace_symbol_cached(&mut cx, &tables, q, &Default::default()).unwrap();
            let expected = reference(&served, &roots, q);
            assert_eq!(listed(&answer), expected, "query {q:?}, pass {pass}");
            if matches!(q, "" | "mn" | "a") {
                assert!(
                    expected.len() > 3,
                    "query {q:?} finds too little: {expected:?}"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
