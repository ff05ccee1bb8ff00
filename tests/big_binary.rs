//! Big programs (issue #27): on the C++ program `scripts/gen-big-cpp --size ci` generates
//! (160 units, ~20 MB of DWARF), the first stop reads only the units it needs. Each test
//! drives the real `tandem dap`, reads how many units' DIE trees requests walked from
//! its debug log (`tandem::parse`, "a request walked a unit's DIEs": the background
//! index's own walks are not counted there), and compares frames and values with gdb's.
//! A function breakpoint that only the full index can find is held with a cancellable
//! progress while the index builds, and the requests after it wait their turn; in the
//! MCP face, the tool call reports progress and can be cancelled.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{json, Value};
use support::dap::{line_of, value, var, DapClient};
use support::mcp::Mcp;
use support::{Peer, Protocol};

/// Units in the generated program (its `--size ci`), plus main.cpp and common.cpp.
const UNITS: usize = 162;

/// The generated program, built once per test run (cached across runs by the script).
fn program() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        // Built where the script caches it (target/big-cpp/ci), shared with the benches.
        let script = testsupport::repo().join("scripts/gen-big-cpp");
        let run = Command::new("python3")
            .arg(script)
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
    })
}

fn unit_source(n: usize) -> PathBuf {
    program()
        .parent()
        .unwrap()
        .join(format!("src/unit{n:05}.cpp"))
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

/// From tandem's debug log: the units of the generated program whose DIEs requests
/// walked, and the program's unit count as tandem saw it.
fn request_walks(log: &str) -> (Vec<usize>, usize) {
    let name = program().display().to_string();
    let mut walked = Vec::new();
    let mut units = 0;
    for line in plain(log).lines() {
        if !line.contains("a request walked a unit's DIEs") || !line.contains(&name) {
            continue;
        }
        let field = |key: &str| -> usize {
            let at = line.find(&format!(" {key}=")).unwrap() + key.len() + 2;
            line[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        walked.push(field("unit"));
        units = field("units");
    }
    (walked, units)
}

/// gdb's answers after `break WHERE` and `run`: the frames with a source line (name,
/// line) and each expression's `output`.
fn gdb_at(location: &str, exprs: &[&str]) -> (Vec<(String, i64)>, Vec<String>) {
    gdb_at_in(program(), location, exprs)
}

/// [`gdb_at`] in another build of the program.
fn gdb_at_in(binary: &Path, location: &str, exprs: &[&str]) -> (Vec<(String, i64)>, Vec<String>) {
    let mut cmd = Command::new("gdb");
    cmd.args([
        "-batch",
        "-nx",
        "-ex",
        "set pagination off",
        "-ex",
        "set width 0",
    ]);
    cmd.args(["-ex", &format!("break {location}"), "-ex", "run"]);
    cmd.args(["-ex", "echo BT\\n", "-ex", "bt"]);
    for e in exprs {
        cmd.args(["-ex", "echo EXPR\\n", "-ex", &format!("output {e}")]);
        cmd.args(["-ex", "echo \\n"]);
    }
    let out = cmd.arg(binary).output().expect("running gdb");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (_, after) = text.split_once("BT\n").expect("gdb stopped");
    let mut frames = Vec::new();
    let mut values = Vec::new();
    for line in after.lines() {
        if let Some(frame) = line.strip_prefix('#') {
            // `#1  0x… in main (argc=1, …) at /…/main.cpp:12` or `#0  f (…) at …:3`.
            let rest = frame.split_once(' ').unwrap().1.trim_start();
            let rest = rest.split_once(" in ").map_or(rest, |(_, r)| r);
            let Some((_, at)) = rest.rsplit_once(" at ") else {
                continue;
            };
            let name = rest.split(" (").next().unwrap().to_string();
            let line_no = at.rsplit(':').next().unwrap().trim().parse().unwrap();
            frames.push((name, line_no));
        }
    }
    for part in after.split("EXPR\n").skip(1) {
        values.push(part.lines().next().unwrap_or_default().to_string());
    }
    (frames, values)
}

/// tandem's frames with a source line, as (name, line).
fn source_frames(frames: &[Value]) -> Vec<(String, i64)> {
    frames
        .iter()
        .filter(|f| f["source"]["path"].is_string() && f["line"].as_i64().unwrap_or(0) > 0)
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["line"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// A fresh, empty on-disk index cache for one session, so every test here is a cold
/// start (tests/index_cache.rs tests the warm ones).
fn cold_cache() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    support::dap::scratch_dir(&format!("big-cold-cache-{n}"))
        .display()
        .to_string()
}

fn spawn_cold() -> Peer {
    let cache = cold_cache();
    Peer::spawn(Protocol::Dap, &[], &[("XDG_CACHE_HOME", &cache)])
}

fn client() -> DapClient {
    let mut c = DapClient::with_peer(spawn_cold());
    c.initialize_with(json!({"supportsProgressReporting": true}));
    c.ok("launch", json!({"program": program()}));
    c
}

/// Disconnects and returns tandem's log.
fn finish(mut c: DapClient) -> String {
    let r = c.request("disconnect", json!({}));
    assert_eq!(r["success"], true, "{r}");
    c.peer.wait_exit(Duration::from_secs(20));
    c.peer.stderr()
}

#[test]
fn a_function_breakpoint_stops_reading_one_unit_and_matches_gdb() {
    let mut c = client();
    let body = c.ok(
        "setFunctionBreakpoints",
        json!({"breakpoints": [{"name": "big::u93::work"}]}),
    );
    assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let frames = c.frames(tid);
    let frame = frames[0]["id"].as_i64().unwrap();
    let args = c.scope_vars(frame, "Arguments");
    let locals = c.scope_vars(frame, "Locals");
    let log = finish(c);

    let (gdb_frames, gdb_values) = gdb_at("big::u93::work", &["seed"]);
    assert_eq!(source_frames(&frames), gdb_frames, "frames against gdb's");
    assert_eq!(
        value(var(&args, "seed")),
        gdb_values[0],
        "seed against gdb's"
    );
    assert!(locals.iter().any(|v| v["name"] == "total"), "{locals:?}");
    let (walked, units) = request_walks(&log);
    assert_eq!(units, UNITS, "the program's units, as tandem counts them");
    // The unit of big::u93::work (the stop's scopes and values) and main's (its
    // caller's frame); not every unit, as a full index would.
    assert!(
        !walked.is_empty() && walked.len() <= 3,
        "requests walked the DIEs of units {walked:?} of {units}"
    );
}

#[test]
fn a_line_breakpoint_reads_line_headers_not_dies_and_values_match_gdb() {
    let source = unit_source(121);
    let line = line_of(&source, "the end of work");
    let mut c = client();
    let body = c.ok(
        "setBreakpoints",
        json!({"source": {"path": source}, "breakpoints": [{"line": line}]}),
    );
    assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
    let (walked_at_set, _) = request_walks(&c.peer.stderr());
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let frames = c.frames(tid);
    let frame = frames[0]["id"].as_i64().unwrap();
    let locals = c.scope_vars(frame, "Locals");
    let exprs = [
        "total",
        "box.value",
        "box.tag",
        "dbox.value",
        "rec.id",
        "rec.weight",
    ];
    let values: Vec<String> = exprs
        .iter()
        .map(|e| {
            let r = c.evaluate(frame, e);
            r["result"].as_str().unwrap().to_string()
        })
        .collect();
    let log = finish(c);

    let file = source.file_name().unwrap().to_string_lossy().into_owned();
    let (gdb_frames, gdb_values) = gdb_at(&format!("{file}:{line}"), &exprs);
    assert_eq!(source_frames(&frames), gdb_frames, "frames against gdb's");
    assert_eq!(values, gdb_values, "{exprs:?} against gdb's");
    assert_eq!(value(var(&locals, "total")), gdb_values[0]);
    assert!(
        walked_at_set.len() <= 1,
        "resolving the line walked the DIEs of units {walked_at_set:?}"
    );
    let (walked, units) = request_walks(&log);
    assert_eq!(units, UNITS);
    assert!(
        !walked.is_empty() && walked.len() <= 3,
        "requests walked the DIEs of units {walked:?} of {units}"
    );
}

#[test]
fn inlined_copies_join_a_function_breakpoint_when_the_background_index_is_done() {
    let mut c = client();
    let body = c.ok(
        "setFunctionBreakpoints",
        json!({"breakpoints": [{"name": "mix_inline"}]}),
    );
    // Found at once through .symtab: the one out-of-line copy, which nothing calls.
    assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
    let id = body["breakpoints"][0]["id"].clone();
    let (walked, _) = request_walks(&c.peer.stderr());
    assert!(walked.len() <= 1, "setting it walked units {walked:?}");
    // The index, built in the background with progress, adds a location per unit.
    let start = loop {
        let start = c.event("progressStart");
        if start["body"]["title"] == "Indexing debug information" {
            break start;
        }
    };
    let end = loop {
        let end = c.event("progressEnd");
        if end["body"]["progressId"] == start["body"]["progressId"] {
            break end;
        }
    };
    assert_eq!(end["body"]["message"], format!("{UNITS} of {UNITS} units"));
    let changed = c.event("breakpoint");
    assert_eq!(changed["body"]["breakpoint"]["id"], id, "{changed}");
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let frames = c.frames(tid);
    finish(c);
    let (gdb_frames, _) = gdb_at("mix_inline", &[]);
    assert_eq!(
        source_frames(&frames),
        gdb_frames,
        "the first hit (inlined in big::u0::work) against gdb's"
    );
}

/// The generated program built by clang-19 with `-gpubnames`: DWARF 5 `.debug_names`
/// (cached by the script beside the g++ build).
fn names_program() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = program().parent().unwrap().with_file_name("ci-clang-names");
        let run = Command::new("python3")
            .arg(testsupport::repo().join("scripts/gen-big-cpp"))
            .args(["--size", "ci", "--cxx", "clang++-19"])
            .args(["--cxxflags", "-g -O0 -gpubnames", "--out"])
            .arg(&out)
            .output()
            .expect("running scripts/gen-big-cpp");
        assert!(
            run.status.success(),
            "gen-big-cpp (clang) failed: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let path = String::from_utf8(run.stdout).unwrap();
        PathBuf::from(path.lines().last().unwrap().trim())
    })
}

/// The generated program built with `-gsplit-dwarf`: skeletons in the executable, one
/// `.dwo` per unit beside its object (cached by the script beside the plain build).
fn split_program() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = program().parent().unwrap().with_file_name("ci-split");
        let run = Command::new("python3")
            .arg(testsupport::repo().join("scripts/gen-big-cpp"))
            .args([
                "--size",
                "ci",
                "--cxxflags",
                "-g -O0 -gsplit-dwarf",
                "--out",
            ])
            .arg(&out)
            .output()
            .expect("running scripts/gen-big-cpp");
        assert!(
            run.status.success(),
            "gen-big-cpp (split) failed: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let path = String::from_utf8(run.stdout).unwrap();
        PathBuf::from(path.lines().last().unwrap().trim())
    })
}

/// The generated program with a `.gdb_index` added by gdb-add-index (a copy).
fn indexed_program() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let copy = program().with_file_name("big-gdb-index");
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        if modified(&copy) < modified(program()) {
            let tmp = copy.with_extension("tmp");
            std::fs::copy(program(), &tmp).unwrap();
            let run = Command::new("gdb-add-index").arg(&tmp).output().unwrap();
            assert!(
                run.status.success(),
                "gdb-add-index failed: {}",
                String::from_utf8_lossy(&run.stderr)
            );
            std::fs::rename(&tmp, &copy).unwrap();
        }
        copy
    })
}

/// Sets a function breakpoint on `name` in `binary`, runs to it and returns: the units
/// of `binary` whose DIEs setting it walked, whether it was answered before the
/// background index was done, and the stop's frames.
fn break_on(binary: &Path, name: &str) -> (Vec<usize>, bool, Vec<(String, i64)>) {
    let mut c = DapClient::with_peer(spawn_cold());
    c.initialize();
    c.ok("launch", json!({"program": binary}));
    let body = c.ok(
        "setFunctionBreakpoints",
        json!({"breakpoints": [{"name": name}]}),
    );
    assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
    let name_of = binary.display().to_string();
    let walked: Vec<usize> = plain(&c.peer.stderr())
        .lines()
        .filter(|l| l.contains("a request walked a unit's DIEs"))
        .filter(|l| l.contains(&format!("path={name_of} ")))
        .map(|l| {
            l.split(" unit=")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let frames = source_frames(&c.frames(tid));
    let log = plain(&finish(c));
    let answered = log.find("handled command=setFunctionBreakpoints").unwrap();
    let indexed = log
        .find(&format!("background index built path={name_of} "))
        .unwrap_or(usize::MAX);
    (walked, answered < indexed, frames)
}

#[test]
fn a_gdb_index_names_the_one_unit_of_a_function_no_elf_symbol_has() {
    // big::u93::local_step93 is only inlined: .symtab does not have it. With
    // gdb-add-index's .gdb_index, finding it walks only the unit the index names (or
    // none, if the background index walked that unit first).
    let name = "big::u93::local_step93";
    let (_, _, plain_frames) = break_on(program(), name);
    let (indexed_walks, indexed_early, indexed_frames) = break_on(indexed_program(), name);
    assert!(
        indexed_early,
        "with .gdb_index, the answer does not wait for it"
    );
    assert!(
        indexed_walks.len() <= 1,
        "with .gdb_index, finding it walked units {indexed_walks:?}"
    );
    assert_eq!(
        indexed_frames, plain_frames,
        "the stop equals the plain build's"
    );
    let (gdb_frames, _) = gdb_at(name, &[]);
    assert_eq!(indexed_frames, gdb_frames, "frames against gdb's");
}

#[test]
fn a_function_no_elf_symbol_has_is_found_in_its_siblings_units() {
    // Without an index section, big::u93::local_step93 (only inlined) is looked for in
    // the units holding the code of the functions of its scope that .symtab has
    // (big::u93::work and the others of `big::u93::`): one unit, not the name table of
    // all 162. Its stop is gdb's.
    let name = "big::u93::local_step93";
    let (walks, early, frames) = break_on(program(), name);
    assert!(early, "the answer does not wait for the full index");
    assert!(
        !walks.is_empty() && walks.len() <= 2,
        "finding it walked units {walks:?}"
    );
    let (gdb_frames, _) = gdb_at(name, &[]);
    assert_eq!(frames, gdb_frames, "frames against gdb's");
}

#[test]
fn debug_names_names_the_one_unit_of_a_function_no_elf_symbol_has() {
    // As with .gdb_index above: clang's .debug_names says which unit has the inlined-only
    // big::u93::local_step93, so setting the breakpoint does not wait for the full index
    // and walks at most that unit.
    let binary = names_program();
    let sections = Command::new("readelf")
        .args(["-S", "-W"])
        .arg(binary)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&sections.stdout).contains(".debug_names"));
    let name = "big::u93::local_step93";
    let (walks, early, frames) = break_on(binary, name);
    assert!(
        early,
        "with .debug_names, the answer does not wait for the full index"
    );
    assert!(
        walks.len() <= 1,
        "with .debug_names, finding it walked units {walks:?}"
    );
    let (gdb_frames, _) = gdb_at_in(binary, name, &[]);
    assert_eq!(frames, gdb_frames, "frames against gdb's");
}

#[test]
fn a_split_dwarf_first_stop_opens_only_the_dwo_files_it_needs() {
    // With -gsplit-dwarf the executable's skeletons are tiny; the first stop must still
    // not open every unit's .dwo (the background index does, on its own thread).
    let binary = split_program();
    let mut c = DapClient::with_peer(spawn_cold());
    c.initialize();
    c.ok("launch", json!({"program": binary}));
    let body = c.ok(
        "setFunctionBreakpoints",
        json!({"breakpoints": [{"name": "big::u93::work"}]}),
    );
    assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let frames = c.frames(tid);
    let frame = frames[0]["id"].as_i64().unwrap();
    let args = c.scope_vars(frame, "Arguments");
    let seed = value(var(&args, "seed"));
    let log = plain(&finish(c));
    let name = format!("path={} ", binary.display());
    let loaded: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("loaded a split unit") && l.contains(&name))
        .filter(|l| l.contains("background=false"))
        .collect();
    assert!(
        !loaded.is_empty() && loaded.len() <= 3,
        "requests opened {} .dwo files: {loaded:#?}",
        loaded.len()
    );
    let (gdb_frames, gdb_values) = gdb_at_in(binary, "big::u93::work", &["seed"]);
    assert_eq!(source_frames(&frames), gdb_frames, "frames against gdb's");
    assert_eq!(seed, gdb_values[0], "seed against gdb's");
}

/// What the stop at the end of `big::u93::work` evaluates in other units' names: their
/// globals, enums and enumerators, and a cast to another unit's class.
const ACROSS_UNITS: [&str; 8] = [
    "unit_count5",
    "unit_level7",
    "level9_high",
    "level9_high + 1",
    "(Level5)1005",
    "((Tally5 *)&rec)->id",
    "unit_tally140.weight",
    "unit_count150 + unit_count151",
];

/// A session stopped at the end of `big::u93::work` with the program's name table ready
/// (`envs`: its cache directory, or `TANDEM_INDEX_CACHE=0`): the values of
/// [`ACROSS_UNITS`], how many units' DIEs requests walked to evaluate them, and its log.
fn across_units(envs: &[(&str, &str)]) -> (Vec<String>, Vec<usize>, String) {
    let source = unit_source(93);
    let line = line_of(&source, "the end of work");
    let mut c = DapClient::with_peer(Peer::spawn(Protocol::Dap, &[], envs));
    c.initialize();
    c.ok("launch", json!({"program": program()}));
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": source}, "breakpoints": [{"line": line}]}),
    );
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let frame = c.frames(tid)[0]["id"].as_i64().unwrap();
    // A cold session's table is built in the background; a warm one maps the file.
    let name = program().display().to_string();
    let log = c.peer.stderr_when(
        |log| {
            let log = plain(log);
            log.contains("index cache hit")
                || log.contains(&format!("background index built path={name} "))
        },
        Duration::from_secs(120),
    );
    let (before, _) = request_walks(&log);
    let values: Vec<String> = ACROSS_UNITS
        .iter()
        .map(|e| {
            let r = c.evaluate(frame, e);
            r["result"].as_str().unwrap_or_default().to_string()
        })
        .collect();
    let log = finish(c);
    let (after, _) = request_walks(&log);
    (values, after[before.len()..].to_vec(), plain(&log))
}

#[test]
fn other_units_globals_enumerators_and_classes_are_read_from_the_name_table_as_gdb_reads_them() {
    let source = unit_source(93);
    let line = line_of(&source, "the end of work");
    let file = source.file_name().unwrap().to_string_lossy().into_owned();
    let (_, gdb_values) = gdb_at(&format!("{file}:{line}"), &ACROSS_UNITS);
    let cache = cold_cache();
    let sessions = [
        ("cold cache", vec![("XDG_CACHE_HOME", cache.as_str())]),
        ("warm cache", vec![("XDG_CACHE_HOME", cache.as_str())]),
        ("no cache", vec![("TANDEM_INDEX_CACHE", "0")]),
    ];
    for (what, envs) in sessions {
        let (values, walked, log) = across_units(&envs);
        assert_eq!(values, gdb_values, "{what}: {ACROSS_UNITS:?} against gdb's");
        // The table names the DIEs: evaluating walks no unit's DIE tree, where the full
        // index walked every unit (a warm session built it on the tracer thread).
        assert!(
            walked.len() <= 3,
            "{what}: evaluating walked the DIEs of units {walked:?}"
        );
        let hit = log.contains("index cache hit");
        assert_eq!(
            hit,
            what == "warm cache",
            "{what}: whether the cache file was read"
        );
        if what == "no cache" {
            assert!(
                !log.contains("index cache written"),
                "{what}: nothing written"
            );
        }
    }
}

/// The title of the progress of a request waiting for the name table.
const WAITING: &str = "Waiting for the debug information index";

fn response_to(seq: i64) -> impl Fn(&Value) -> bool {
    move |m: &Value| m["type"] == "response" && m["request_seq"] == seq
}

/// The `progressStart` of the wait for the name table among `messages`, and where.
fn waiting_progress(messages: &[Value]) -> Option<(usize, &Value)> {
    messages
        .iter()
        .enumerate()
        .find(|(_, m)| m["event"] == "progressStart" && m["body"]["title"] == WAITING)
}

/// The id of the indexing progress among `messages`.
fn indexing_progress(messages: &[Value]) -> Option<&Value> {
    messages
        .iter()
        .find(|m| {
            m["event"] == "progressStart" && m["body"]["title"] == "Indexing debug information"
        })
        .map(|m| &m["body"]["progressId"])
}

#[test]
fn a_function_breakpoint_that_needs_the_index_waits_with_progress_and_holds_what_follows() {
    // `local_step93` unqualified: only inlined (no ELF symbol) and without a scope whose
    // siblings' units could have it, so only the name table finds it. The request is
    // held while the table builds: the indexing progress goes on meanwhile, and the
    // `configurationDone` sent right after it is not served before it.
    let mut c = client();
    let set = c.send_request(
        "setFunctionBreakpoints",
        json!({"breakpoints": [{"name": "local_step93"}]}),
    );
    let done = c.send_request("configurationDone", json!({}));
    let before = c.messages_until(response_to(set));
    let response = before.last().unwrap();
    assert_eq!(response["success"], true, "{response}");
    let bp = &response["body"]["breakpoints"][0];
    assert_eq!(bp["verified"], true, "{bp}");

    let (at, wait) = waiting_progress(&before).expect("a progress for the wait");
    assert_eq!(wait["body"]["cancellable"], true, "{wait}");
    let message = wait["body"]["message"].as_str().unwrap();
    assert!(message.contains("local_step93"), "{message}");
    let indexing = indexing_progress(&before).expect("the indexing progress");
    let updates_while_held = before[at..]
        .iter()
        .filter(|m| m["event"] == "progressUpdate" && m["body"]["progressId"] == *indexing)
        .count();
    assert!(
        updates_while_held > 0,
        "the indexing progress flowed while the request waited: {before:#?}"
    );
    let ended = |id: &Value| {
        before
            .iter()
            .any(|m| m["event"] == "progressEnd" && m["body"]["progressId"] == *id)
    };
    assert!(ended(indexing), "answered once the table was done");
    assert!(
        ended(&wait["body"]["progressId"]),
        "the wait's progress ended"
    );
    assert!(
        !before.iter().any(response_to(done)),
        "configurationDone was served before the request sent ahead of it"
    );

    let r = c.response_to(done);
    assert_eq!(r["success"], true, "{r}");
    let stop = c.event("stopped");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let frames = source_frames(&c.frames(tid));
    finish(c);
    let (gdb_frames, _) = gdb_at("big::u93::local_step93", &[]);
    assert_eq!(frames, gdb_frames, "the stop against gdb's");
}

#[test]
fn a_function_breakpoint_waiting_for_the_index_is_cancelled_by_its_request_id() {
    // `big::` has ELF symbols in far more than 32 units: a name of that scope no symbol
    // has is looked for in the name table, which alone can say there is none.
    let mut c = client();
    let set = c.send_request(
        "setFunctionBreakpoints",
        json!({"breakpoints": [{"name": "big::no_such_function_anywhere"}]}),
    );
    let mut seen =
        c.messages_until(|m| m["event"] == "progressStart" && m["body"]["title"] == WAITING);
    let cancel = c.send_request("cancel", json!({"requestId": set}));
    seen.extend(c.messages_until(response_to(set)));
    let response = seen.last().unwrap();
    assert_eq!(response["success"], false, "{response}");
    assert_eq!(response["message"], "cancelled", "{response}");
    // Well before the table was done: its progress had not ended.
    if let Some(indexing) = indexing_progress(&seen) {
        assert!(
            !seen
                .iter()
                .any(|m| m["event"] == "progressEnd" && m["body"]["progressId"] == *indexing),
            "answered only once the table was done: {seen:#?}"
        );
    }
    let r = c.response_to(cancel);
    assert_eq!(r["success"], true, "{r}");

    // The session goes on: the program runs to its end, no breakpoint in its way.
    c.ok("configurationDone", json!({}));
    let exited = c.event("exited");
    assert_eq!(exited["body"]["exitCode"], 0, "{exited}");
    finish(c);
}

#[test]
fn a_disconnect_answers_a_function_breakpoint_waiting_for_the_index() {
    let mut c = client();
    let set = c.send_request(
        "setFunctionBreakpoints",
        json!({"breakpoints": [{"name": "big::no_such_function_anywhere"}]}),
    );
    c.messages_until(|m| m["event"] == "progressStart" && m["body"]["title"] == WAITING);
    let bye = c.send_request("disconnect", json!({}));
    let r = c.response_to(set);
    assert_eq!(r["success"], false, "{r}");
    assert!(
        r["message"].as_str().unwrap().contains("session ends"),
        "{r}"
    );
    let r = c.response_to(bye);
    assert_eq!(r["success"], true, "{r}");
    c.peer.wait_exit(Duration::from_secs(20));
}

#[test]
fn cancelling_the_progress_of_the_wait_answers_the_request_then_those_behind_it() {
    let mut c = client();
    let set = c.send_request(
        "setFunctionBreakpoints",
        json!({"breakpoints": [{"name": "big::no_such_function_anywhere"}]}),
    );
    let threads = c.send_request("threads", json!({}));
    let seen = c.messages_until(|m| m["event"] == "progressStart" && m["body"]["title"] == WAITING);
    assert!(
        !seen.iter().any(response_to(threads)),
        "threads overtook it"
    );
    let progress = seen.last().unwrap()["body"]["progressId"].clone();
    c.send_request("cancel", json!({"progressId": progress}));
    let seen = c.messages_until(response_to(threads));
    let answered = seen
        .iter()
        .position(response_to(set))
        .expect("the held request answered before the one behind it");
    assert_eq!(seen[answered]["message"], "cancelled", "{}", seen[answered]);
    let ended = seen
        .iter()
        .find(|m| m["event"] == "progressEnd" && m["body"]["progressId"] == progress)
        .expect("the wait's progress ended");
    assert_eq!(ended["body"]["message"], "cancelled", "{ended}");
    let threads = seen.last().unwrap();
    assert_eq!(threads["success"], true, "{threads}");
    finish(c);
}

#[test]
fn function_breakpoints_set_before_launch_are_set_when_the_index_is_done() {
    // Set before the launch, `local_step93` (only the name table finds it) does not hold
    // the launch back: it is answered pending, the launch at once, and the breakpoint is
    // set (a `breakpoint` event) when the table is done, before the configurationDone
    // sent meanwhile is served.
    let mut c = DapClient::with_peer(spawn_cold());
    c.initialize_with(json!({"supportsProgressReporting": true}));
    let body = c.ok(
        "setFunctionBreakpoints",
        json!({"breakpoints": [{"name": "local_step93"}]}),
    );
    assert_eq!(body["breakpoints"][0]["verified"], false, "{body}");
    let id = body["breakpoints"][0]["id"].clone();
    let launch = c.send_request("launch", json!({"program": program()}));
    let seen = c.messages_until(response_to(launch));
    assert_eq!(seen.last().unwrap()["success"], true, "{seen:#?}");
    let wait = waiting_progress(&seen).expect("a progress for the wait").1;
    assert_eq!(wait["body"]["cancellable"], true, "{wait}");
    if let Some(indexing) = indexing_progress(&seen) {
        assert!(
            !seen
                .iter()
                .any(|m| m["event"] == "progressEnd" && m["body"]["progressId"] == *indexing),
            "the launch waited for the index: {seen:#?}"
        );
    }
    let done = c.send_request("configurationDone", json!({}));
    let seen = c.messages_until(response_to(done));
    let changed = seen
        .iter()
        .find(|m| m["event"] == "breakpoint" && m["body"]["breakpoint"]["id"] == id)
        .expect("the breakpoint set before configurationDone was answered");
    assert_eq!(changed["body"]["breakpoint"]["verified"], true, "{changed}");
    let stop = c.event("stopped");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let frames = source_frames(&c.frames(tid));
    let log = plain(&finish(c));
    let launched = log.find("handled command=launch").unwrap();
    let indexed = log.find("background index built").unwrap();
    assert!(launched < indexed, "the launch waited for the index");
    let (gdb_frames, _) = gdb_at("big::u93::local_step93", &[]);
    assert_eq!(frames, gdb_frames, "the stop against gdb's");
}

/// `tandem mcp` with a cold index cache, its workspace the generated program's.
fn mcp_cold() -> Mcp {
    let cache = cold_cache();
    Mcp::start(program().parent().unwrap(), &[("XDG_CACHE_HOME", &cache)])
}

/// The `notifications/progress` of token `token` among `messages`.
fn mcp_progress<'a>(messages: &'a [Value], token: &str) -> Vec<&'a Value> {
    messages
        .iter()
        .filter(|m| {
            m["method"] == "notifications/progress" && m["params"]["progressToken"] == token
        })
        .collect()
}

#[test]
fn an_mcp_launch_whose_breakpoint_needs_the_index_reports_progress_then_stops_as_gdb() {
    // The agent face waits as the DAP face does: `local_step93` is found only by the
    // name table, so the call reports the table's progress (it asked for it with a
    // progress token) until it is built, then stops there.
    let mut m = mcp_cold();
    let call = m.send_request(
        "tools/call",
        json!({"name": "debug_launch", "_meta": {"progressToken": "wait"},
               "arguments": {"program": program(), "wait_ms": 60000,
                             "breakpoints": [{"location": "local_step93"}]}}),
    );
    let seen = m.messages_until_response(call);
    let progress = mcp_progress(&seen, "wait");
    assert!(!progress.is_empty(), "no progress while waiting: {seen:#?}");
    let values: Vec<u64> = progress
        .iter()
        .map(|p| p["params"]["progress"].as_u64().unwrap())
        .collect();
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "each progress greater than the last: {values:?}"
    );
    let first = &progress[0]["params"];
    assert!(first["total"].as_u64().unwrap() >= UNITS as u64, "{first}");
    let message = first["message"].as_str().unwrap();
    assert!(message.contains("local_step93"), "{message}");

    let (st, err, text) = support::mcp::tool_result(&seen.last().unwrap()["result"]);
    assert!(!err, "{text}");
    assert_eq!(st["breakpoints"][0]["verified"], true, "{st}");
    assert_eq!(st["state"], "stopped", "{st}");
    let frames: Vec<(String, i64)> = st["frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| Some((f["function"].as_str()?.to_string(), f["line"].as_i64()?)))
        .collect();
    let (gdb_frames, _) = gdb_at("big::u93::local_step93", &[]);
    assert_eq!(frames.first(), gdb_frames.first(), "the stop against gdb's");
    let (_, err, text) = m.tool("debug_end", json!({"session": st["session"]}));
    assert!(!err, "{text}");
}

#[test]
fn an_mcp_launch_waiting_for_the_index_is_cancelled_and_leaves_no_program() {
    // A `notifications/cancelled` naming the call while it waits for the name table
    // ends it: no response comes for it, the program it launched is killed (not left
    // stopped at its entry), and the requests sent after it are served.
    let mut m = mcp_cold();
    let call = m.send_request(
        "tools/call",
        json!({"name": "debug_launch", "_meta": {"progressToken": 7},
               "arguments": {"program": program(), "wait_ms": 60000,
                             "breakpoints": [{"location": "local_step93"}]}}),
    );
    let first = m.message();
    assert_eq!(first["method"], "notifications/progress", "{first}");
    assert_eq!(first["params"]["progressToken"], 7, "{first}");
    m.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": call, "reason": "the user went on"}}),
    );
    let sessions = m.send_request("tools/call", json!({"name": "debug_sessions"}));
    let seen = m.messages_until_response(sessions);
    assert!(
        !seen.iter().any(|msg| msg["id"] == json!(call)),
        "the cancelled call was answered: {seen:#?}"
    );
    let (st, err, text) = support::mcp::tool_result(&seen.last().unwrap()["result"]);
    assert!(!err, "{text}");
    let live: Vec<&Value> = st["sessions"]
        .as_array()
        .map(|s| s.iter().filter(|s| s["state"] != "exited").collect())
        .unwrap_or_default();
    assert!(live.is_empty(), "the cancelled launch left a session: {st}");
    // tandem's children: the program it launched, until it is killed and reaped.
    let children = || {
        std::fs::read_dir(format!("/proc/{}/task", m.pid()))
            .map(|tasks| {
                tasks
                    .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("children")).ok())
                    .collect::<String>()
            })
            .unwrap_or_default()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !children().trim().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(children().trim(), "", "the launched program is still there");
}

#[test]
fn the_command_line_says_it_waits_for_the_index_then_stops_there() {
    // `tandem debug` has no progress to show but says why it pauses: only the name
    // table, still building, finds `local_step93`.
    let cache = cold_cache();
    let out = Command::new(support::tandem_bin())
        .args(["debug", "--json", "--break", "local_step93"])
        .arg(program())
        .env("XDG_CACHE_HOME", &cache)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("tandem: waiting for the debug information index to find local_step93"),
        "{stderr}"
    );
    let stops: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "stopped")
        .collect();
    assert!(!stops.is_empty(), "no stop: {stderr}");
    let top = stops[0]["frames"][0]["function"]
        .as_str()
        .unwrap_or_default();
    assert!(top.contains("local_step93"), "{}", stops[0]);
}
