//! `workspace/symbol` from the on-disk index cache (issue #27) on the generated C++ program
//! (`scripts/gen-big-cpp --size ci`): a server without a cache answers from its in-memory
//! tables once its full index is built (the reference); a cold server with a cache answers
//! in part from the ELF functions while its index is built (each item checked against
//! binutils' `nm -C -l`), writes the cache file and answers from it; a second server on the
//! same build answers from the cache file's symbol table (its log says so, target
//! `tandem::cache`), before and after its own full index is built, and every answer equals
//! the reference's.
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
    serve_with(program, cache, &[], json!({}))
}

/// [`serve`] with more environment and `initializationOptions.tandem` options.
fn serve_with(program: &Path, cache: &Path, env: &[(&str, &str)], options: Value) -> Peer {
    let root = program.parent().unwrap();
    let cache = cache.display().to_string();
    let mut envs = vec![
        ("XDG_CACHE_HOME", cache.as_str()),
        ("TANDEM_TEST_HOOKS", "1"),
    ];
    envs.extend_from_slice(env);
    let mut peer = Peer::spawn(Protocol::Lsp, &[], &envs);
    let root_uri = format!("file://{}", root.display());
    let name = program.file_name().unwrap().to_str().unwrap();
    let init = peer.lsp_request(
        "initialize",
        json!({
            "processId": null,
            "rootUri": root_uri,
            "workspaceFolders": [{"uri": root_uri, "name": "big"}],
            "capabilities": {},
            "initializationOptions": {"tandem": tandem_options(name, options)},
        }),
    );
    assert!(init.get("result").is_some(), "{init}");
    peer.lsp_notify("initialized", json!({}));
    peer
}

fn tandem_options(binary: &str, mut options: Value) -> Value {
    options["binaries"] = json!([binary]);
    options
}

/// Waits until the server's log says `what`.
fn wait_log(peer: &mut Peer, what: &str) -> String {
    let log = peer.stderr_when(|l| plain(l).contains(what), Duration::from_secs(180));
    assert!(plain(&log).contains(what), "no {what:?} in the log:\n{log}");
    plain(&log)
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

    // The reference: no cache, asked once the binary serves from its table built in
    // memory.
    let mut reference = serve_with(&program, &cache, &[("TANDEM_INDEX_CACHE", "0")], json!({}));
    wait_log(&mut reference, "binary serves the workspace");
    let memory_answers = answers(&mut reference);
    let reference_log = stop(reference);
    assert!(
        reference_log.contains("answered from the symbol tables built in memory")
            && !reference_log.contains("answered from the index cache")
            && !reference_log.contains("answered in part"),
        "the reference answers from its in-memory tables:\n{reference_log}"
    );

    // Cold: builds the table, writes the cache file, then answers from it.
    let mut cold = serve(&program, &cache);
    wait_log(&mut cold, "binary serves the workspace");
    let cold_answers = answers(&mut cold);
    let cold_log = stop(cold);
    assert!(cold_log.contains("index cache written"), "{cold_log}");
    for (q, ((m, _), (c, _))) in QUERIES.iter().zip(memory_answers.iter().zip(&cold_answers)) {
        assert_eq!(
            m, c,
            "query {q:?}: the cold server's answer from its own cache file"
        );
    }

    let started = Instant::now();
    let mut warm = serve(&program, &cache);
    let first = warm.lsp_request("workspace/symbol", json!({"query": "work"}));
    let first_elapsed = started.elapsed();
    let warm_answers = answers(&mut warm);
    let warm_log = stop(warm);
    assert!(warm_log.contains("index cache hit"), "{warm_log}");
    assert!(
        warm_log.contains("workspace symbols served from a quick table"),
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
    assert_eq!(
        first["result"], memory_answers[3].0,
        "the first warm answer"
    );
    eprintln!("warm server: first workspace/symbol answer after {first_elapsed:?}");

    for (q, ((c, ct), (w, wt))) in QUERIES.iter().zip(memory_answers.iter().zip(&warm_answers)) {
        let n = c.as_array().map_or(0, Vec::len);
        eprintln!("{q:?}: {n} results, in memory {ct:?}, warm {wt:?}");
        assert_eq!(
            c, w,
            "query {q:?}: the warm answer differs from the in-memory one"
        );
    }
    // The queries reach every tier and the cap, so the comparison means something.
    let count = |q: &str| {
        let i = QUERIES.iter().position(|x| *x == q).unwrap();
        memory_answers[i].0.as_array().unwrap().len()
    };
    assert!(count("big::u93::work") >= 1);
    assert_eq!(count("work"), lsp::features::MAX_WORKSPACE_SYMBOLS);
    assert_eq!(count(""), lsp::features::MAX_WORKSPACE_SYMBOLS);
    assert!(count("bgu9wrk") >= 1, "a fuzzy-only query finds something");
    assert_eq!(count("zzqqxxjj"), 0);
}

/// `nm -C -l --defined-only` of the program's functions: (name without parameters, file,
/// line), binutils' line for each function's address.
fn nm_functions(program: &Path) -> std::collections::HashSet<(String, String, u32)> {
    let out = Command::new("nm")
        .args(["-C", "-l", "--defined-only"])
        .arg(program)
        .output()
        .expect("running nm");
    assert!(out.status.success());
    let mut set = std::collections::HashSet::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((sym, place)) = l.split_once('\t') else {
            continue;
        };
        let mut parts = sym.splitn(3, ' ');
        let (_, kind, name) = (parts.next(), parts.next(), parts.next());
        if !matches!(kind, Some("T" | "t" | "W" | "w")) {
            continue;
        }
        let Some(name) = name else { continue };
        if name.contains("operator") {
            continue;
        }
        // tandem's names (`symbols::names::normalize`): no parameter list, no template
        // arguments.
        let mut depth = 0i32;
        let mut plain_name = String::new();
        for ch in name.chars() {
            match ch {
                '<' => depth += 1,
                '>' => depth -= 1,
                '(' if depth == 0 => break,
                _ if depth == 0 => plain_name.push(ch),
                _ => {}
            }
        }
        let Some((file, line)) = place.rsplit_once(':') else {
            continue;
        };
        let Ok(line) = line.split_whitespace().next().unwrap_or("").parse() else {
            continue;
        };
        // A template function's demangled name starts with its return type.
        let plain_name = plain_name.trim();
        let plain_name = plain_name.rsplit(' ').next().unwrap_or(plain_name);
        set.insert((plain_name.to_string(), file.to_string(), line));
    }
    set
}

#[test]
fn a_cold_server_answers_from_the_elf_functions_while_its_index_is_built() {
    let program = program();
    let cache = scratch_dir("lsp-cache-partial");
    let oracle = nm_functions(&program);
    assert!(!oracle.is_empty(), "nm lists the program's functions");
    // The full index is held back 30 s once the quick table is served (the server is
    // shut down long before).
    let mut peer = serve_with(
        &program,
        &cache,
        &[],
        json!({"testFullIndexDelayMs": 30000}),
    );
    let log = wait_log(&mut peer, "workspace symbols served from a quick table");
    assert!(log.contains("partial=true"), "{log}");
    let mut checked = 0;
    let mut bad = Vec::new();
    for q in ["big::u93::work", "work", "main", "scaled"] {
        let started = Instant::now();
        let resp = peer.lsp_request("workspace/symbol", json!({"query": q}));
        let elapsed = started.elapsed();
        let items = resp["result"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| panic!("{resp}"));
        eprintln!("{q:?}: {} partial results in {elapsed:?}", items.len());
        assert!(!items.is_empty(), "{q:?}: the ELF functions answer");
        for item in &items {
            if item["kind"] != 12 {
                bad.push(format!("{q:?}: not a function: {item}"));
            }
            let name = item["name"].as_str().unwrap();
            let container = item["containerName"].as_str().unwrap_or("");
            let full = if container.is_empty() || name.contains("::") {
                name.to_string()
            } else {
                format!("{container}::{name}")
            };
            let uri = item["location"]["uri"].as_str().unwrap();
            let file = percent_decoded(uri.strip_prefix("file://").unwrap());
            let line = item["location"]["range"]["start"]["line"].as_u64().unwrap() as u32 + 1;
            if full.contains("operator") {
                continue;
            }
            if !oracle.contains(&(full.clone(), file.clone(), line)) {
                bad.push(format!("{q:?}: {full} at {file}:{line} ({item})"));
            }
            checked += 1;
        }
    }
    assert!(
        items_named(&mut peer, "big::u93::work"),
        "the exact name is found"
    );
    let log = stop(peer);
    assert!(
        bad.is_empty(),
        "{} of {checked} partial results are not nm's functions:\n{}\n{log}",
        bad.len(),
        bad.join("\n")
    );
    assert!(log.contains("answered in part"), "{log}");
    assert!(
        !log.contains("binary serves the workspace"),
        "answered before the full index"
    );
    eprintln!("{checked} partial results checked against nm -C -l");
}

fn items_named(peer: &mut Peer, name: &str) -> bool {
    let resp = peer.lsp_request("workspace/symbol", json!({"query": name}));
    resp["result"].as_array().is_some_and(|items| {
        items.iter().any(|i| {
            let n = i["name"].as_str().unwrap_or("");
            let c = i["containerName"].as_str().unwrap_or("");
            n == name || format!("{c}::{n}") == name
        })
    })
}

/// A URI path with its `%XX` escapes decoded.
fn percent_decoded(path: &str) -> String {
    let b = path.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&path[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap()
}
