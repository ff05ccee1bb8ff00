//! `workspace/symbol` from the on-disk index cache (issue #27): a cold `tandem lsp` on the
//! generated C++ program (`scripts/gen-big-cpp --size ci`) builds the full index, answers
//! from its in-memory tables and writes the cache file; a second server on the same build
//! answers from the cache file's symbol table (its log says so, target `tandem::cache`),
//! before and after its own full index is built, and every answer equals the cold one's.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::dap::scratch_dir;
use support::{Peer, Protocol};

fn program() -> PathBuf {
    let run = Command::new("python3")
        .arg(testsupport::repo().join("scripts/gen-big-cpp"))
        .args(["--size", "ci"])
        .output()
        .expect("running scripts/gen-big-cpp");
    assert!(
        run.status.success(),
        "gen-big-cpp failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let path = String::from_utf8(run.stdout).unwrap();
    PathBuf::from(path.lines().last().unwrap().trim())
}

/// Text without ANSI colour sequences (the log is coloured).
fn plain(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A server on the generated program's folder (its sources are under `src/`), with the
/// index cache in `cache`.
fn serve(program: &Path, cache: &Path) -> Peer {
    let root = program.parent().unwrap();
    let cache = cache.display().to_string();
    let mut peer = Peer::spawn(Protocol::Lsp, &[], &[("XDG_CACHE_HOME", cache.as_str())]);
    let root_uri = format!("file://{}", root.display());
    let name = program.file_name().unwrap().to_str().unwrap();
    let init = peer.lsp_request(
        "initialize",
        json!({
            "processId": null,
            "rootUri": root_uri,
            "workspaceFolders": [{"uri": root_uri, "name": "big"}],
            "capabilities": {},
            "initializationOptions": {"tandem": {"binaries": [name]}},
        }),
    );
    assert!(init.get("result").is_some(), "{init}");
    peer.lsp_notify("initialized", json!({}));
    peer
}

/// Queries of every tier: exact, prefix, substring (few and past the cap), fuzzy only,
/// mixed case, none, and the empty query (the first symbols in ranking order).
const QUERIES: &[&str] = &[
    "big::u93::work",
    "local_step93",
    "u93",
    "work",
    "Record",
    "BOX",
    "scaled",
    "mix_inline",
    "bgu9wrk",
    "zzqqxxjj",
    "",
];

fn answers(peer: &mut Peer) -> Vec<(Value, Duration)> {
    QUERIES
        .iter()
        .map(|q| {
            let started = Instant::now();
            let resp = peer.lsp_request("workspace/symbol", json!({"query": q}));
            let elapsed = started.elapsed();
            let result = resp
                .get("result")
                .cloned()
                .unwrap_or_else(|| panic!("{q}: {resp}"));
            (result, elapsed)
        })
        .collect()
}

fn stop(mut peer: Peer) -> String {
    let r = peer.lsp_request("shutdown", json!(null));
    assert!(r.get("error").is_none(), "{r}");
    peer.lsp_notify("exit", json!(null));
    peer.wait_exit(Duration::from_secs(20));
    plain(&peer.stderr())
}

#[test]
fn a_second_server_answers_workspace_symbols_from_the_cache_as_the_first_did() {
    let program = program();
    let cache = scratch_dir("lsp-cache");

    let mut cold = serve(&program, &cache);
    let cold_answers = answers(&mut cold);
    let log = cold.stderr_when(
        |l| plain(l).contains("index cache written"),
        Duration::from_secs(120),
    );
    assert!(plain(&log).contains("index cache written"), "{log}");
    let cold_log = stop(cold);
    assert!(
        !cold_log.contains("answered from the index cache"),
        "the cold server has no cache to answer from:\n{cold_log}"
    );

    let started = Instant::now();
    let mut warm = serve(&program, &cache);
    let first = warm.lsp_request("workspace/symbol", json!({"query": "work"}));
    let first_elapsed = started.elapsed();
    let warm_answers = answers(&mut warm);
    let warm_log = stop(warm);
    assert!(warm_log.contains("index cache hit"), "{warm_log}");
    assert!(
        warm_log.contains("workspace symbols served from the index cache"),
        "{warm_log}"
    );
    let from_cache = warm_log
        .lines()
        .filter(|l| l.contains("workspace/symbol answered from the index cache"))
        .count();
    assert_eq!(
        from_cache,
        QUERIES.len() + 1,
        "every warm query is answered from the cache:\n{warm_log}"
    );
    assert!(
        !warm_log.contains("index cache written"),
        "the warm server writes no cache file"
    );
    assert_eq!(first["result"], cold_answers[3].0, "the first warm answer");
    eprintln!("warm server: first workspace/symbol answer after {first_elapsed:?}");

    for (q, ((c, ct), (w, wt))) in QUERIES.iter().zip(cold_answers.iter().zip(&warm_answers)) {
        let n = c.as_array().map_or(0, Vec::len);
        eprintln!("{q:?}: {n} results, cold {ct:?}, warm {wt:?}");
        assert_eq!(
            c, w,
            "query {q:?}: the warm answer differs from the cold one"
        );
    }
    // The queries reach every tier and the cap, so the comparison means something.
    let count = |q: &str| {
        let i = QUERIES.iter().position(|x| *x == q).unwrap();
        cold_answers[i].0.as_array().unwrap().len()
    };
    assert!(count("big::u93::work") >= 1);
    assert_eq!(count("work"), lsp::features::MAX_WORKSPACE_SYMBOLS);
    assert_eq!(count(""), lsp::features::MAX_WORKSPACE_SYMBOLS);
    assert!(count("bgu9wrk") >= 1, "a fuzzy-only query finds something");
    assert_eq!(count("zzqqxxjj"), 0);
}
