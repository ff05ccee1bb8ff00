//! Step into the call you choose, over DAP (`stepInTargets`, `stepIn` with a `targetId`),
//! in C and C++ at -O0 and -O2, with gdb as the oracle: the targets of a line are the
//! calls gdb sees the rest of the line make, in the order it makes them, one per call
//! (a function called twice is two targets), named by the function actually called
//! (through a function pointer, a vtable, a PLT stub); stepping into each lands where
//! gdb's `step` into that call lands, with the same frames and arguments.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use support::dap::{self, line_of, sample_path, scratch_dir, DapClient};

/// What gdb says of one line (see tests/support/gdb_calls.py).
#[derive(Debug, Default)]
struct Oracle {
    /// The calls in the order the program makes them (`strlen@plt` for a PLT stub).
    calls: Vec<String>,
    /// For each call: `function:line` of each frame from the landing to the caller.
    lands: Vec<String>,
    /// For each call whose step stopped in the callee: `info args`.
    args: Vec<Option<String>>,
}

fn gdb_calls(program: &Path, src: &Path, line: i64) -> Oracle {
    // One file per call: the tests run in parallel, and rewriting a shared one while
    // another gdb reads it gave that gdb an empty script.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let script = scratch_dir("step-targets").join(format!("gdb_calls_{line}_{n}.py"));
    std::fs::write(&script, include_str!("support/gdb_calls.py")).unwrap();
    let name = src.file_name().unwrap().to_string_lossy().into_owned();
    let out = std::process::Command::new("gdb")
        .args(["-nx", "-batch", "-ex"])
        .arg(format!("set $line={line}"))
        .arg("-ex")
        .arg(format!("set $src=\"{name}\""))
        .arg("-x")
        .arg(&script)
        .arg(program)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut o = Oracle::default();
    for l in text.lines().filter_map(|l| l.strip_prefix("ORACLE ")) {
        let mut words = l.splitn(3, ' ');
        let (kind, _, rest) = (
            words.next().unwrap_or_default(),
            words.next(),
            words.next().unwrap_or_default().to_string(),
        );
        match kind {
            "CALL" => {
                o.calls.push(rest);
                o.args.push(None);
            }
            "LAND" => o.lands.push(rest),
            "ARGS" if rest == "No arguments." => *o.args.last_mut().unwrap() = Some(String::new()),
            "ARGS" => *o.args.last_mut().unwrap() = Some(rest),
            _ => {}
        }
    }
    assert!(
        !o.calls.is_empty() && o.lands.len() == o.calls.len(),
        "gdb found no calls on line {line} of {}: {text}\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    o
}

/// A session stopped at `line`, its thread and the targets of its innermost frame.
fn stop_with_targets(program: &Path, src: &Path, line: i64) -> (DapClient, i64, Vec<Value>) {
    let mut c = DapClient::new();
    let caps = c.initialize();
    assert_eq!(caps["supportsStepInTargetsRequest"], true);
    let stop = c.launch_to_stop_after_init(json!({"program": program}), src, &[line]);
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let frames = c.frames(tid);
    let body = c.ok("stepInTargets", json!({"frameId": frames[0]["id"]}));
    let targets = body["targets"].as_array().unwrap().clone();
    (c, tid, targets)
}

/// A target's function name: its label without the `#k` of a repeated call.
fn target_function(t: &Value) -> String {
    let label = t["label"].as_str().unwrap();
    match label.rsplit_once(" #") {
        Some((name, k)) if k.parse::<u32>().is_ok() => name.to_string(),
        _ => label.to_string(),
    }
}

/// The line's targets against gdb's calls, then a step into each (in a fresh session)
/// against gdb's landing.
fn check_line(program: &Path, src: &Path, marker: &str) {
    check_line_with(program, src, marker, false);
}

/// [`check_line`]; with `may_be_indirect`, a target may also be labelled `indirect call`
/// (its pointer can change before the call), but never named otherwise than gdb does.
fn check_line_with(program: &Path, src: &Path, marker: &str, may_be_indirect: bool) {
    let line = line_of(src, marker);
    let gdb = gdb_calls(program, src, line);
    let (c, _, targets) = stop_with_targets(program, src, line);
    c.finish();
    let expected: Vec<String> = gdb
        .calls
        .iter()
        .map(|c| c.trim_end_matches("@plt").to_string())
        .collect();
    let names: Vec<String> = targets
        .iter()
        .map(target_function)
        .zip(expected.iter().chain(std::iter::repeat(&String::new())))
        .map(|(name, gdb)| {
            if may_be_indirect && name == "indirect call" {
                gdb.clone()
            } else {
                name
            }
        })
        .collect();
    assert_eq!(
        names,
        expected,
        "{marker} in {}: the targets, in order, are the calls gdb sees: {targets:#?}",
        program.display()
    );
    for t in &targets {
        assert_eq!(t["line"], line, "{marker}: the call's line: {t}");
        assert!(
            t["column"].as_i64().unwrap_or(0) >= 1,
            "{marker}: a column: {t}"
        );
    }
    // Repeated calls are told apart by their labels.
    let mut labels: Vec<&str> = targets
        .iter()
        .map(|t| t["label"].as_str().unwrap())
        .collect();
    labels.sort_unstable();
    labels.dedup();
    assert_eq!(
        labels.len(),
        targets.len(),
        "{marker}: labels are distinct: {targets:#?}"
    );

    for (k, want) in gdb.lands.iter().enumerate() {
        let (mut c, tid, targets) = stop_with_targets(program, src, line);
        assert_eq!(targets.len(), gdb.lands.len(), "{marker}: {targets:#?}");
        c.ok(
            "stepIn",
            json!({"threadId": tid, "targetId": targets[k]["id"]}),
        );
        let stop = c.event("stopped");
        assert_eq!(stop["body"]["reason"], "step", "{stop}");
        let frames = c.frames(tid);
        // gdb rebuilds the frames tail calls removed (`wack` in `add ← wack ← main`) from
        // call-site information and marks them `(tailcall)`; tandem rebuilds them too and
        // marks them subtle (a frame whose source is on disk: not one subtle for want of
        // it, whose source is deemphasized).
        let depth = want.split(' ').count();
        let got: Vec<String> = frames
            .iter()
            .take(depth)
            .map(|f| {
                let tail = f["presentationHint"] == "subtle"
                    && f["source"].is_object()
                    && f["source"]["presentationHint"].is_null();
                let tail = if tail { "(tailcall)" } else { "" };
                format!("{}:{}{tail}", f["name"].as_str().unwrap(), f["line"])
            })
            .collect();
        assert_eq!(
            got.join(" "),
            *want,
            "{marker} in {}: stepIn into target {k} ({}) lands where gdb's step does",
            program.display(),
            targets[k]["label"]
        );
        if let Some(args) = &gdb.args[k] {
            let vars = c.scope_vars(frames[0]["id"].as_i64().unwrap(), "Arguments");
            let shown: Vec<String> = vars
                .iter()
                .map(|v| format!("{} = {}", v["name"].as_str().unwrap(), dap::value(v)))
                .collect();
            assert_eq!(
                shown.join("; "),
                *args,
                "{marker}: the arguments of the call entered (it is that call)"
            );
        }
        c.finish();
    }
}

fn c_program(opt: &str) -> PathBuf {
    dap::build("c/step_targets.c", "gcc", &["-g", opt])
}

fn c_source() -> PathBuf {
    sample_path("c/step_targets.c")
}

#[test]
fn nested_calls_are_listed_in_the_order_they_run_and_each_can_be_entered() {
    for opt in ["-O0", "-O2"] {
        check_line(&c_program(opt), &c_source(), "/* NESTED */");
    }
}

#[test]
fn a_function_called_twice_on_a_line_is_two_targets() {
    for opt in ["-O0", "-O2"] {
        check_line(&c_program(opt), &c_source(), "/* TWICE */");
    }
}

#[test]
fn calls_through_function_pointers_are_named_by_the_function_called() {
    for opt in ["-O0", "-O2"] {
        check_line(&c_program(opt), &c_source(), "/* FPTR */");
        check_line(&c_program(opt), &c_source(), "/* GLOBAL_FPTR */");
    }
}

/// An earlier call of the line changes the pointer a later call goes through: that call
/// is named by the function it reaches or labelled `indirect call`, never by the
/// pointer's value at the stop.
#[test]
fn a_pointer_changed_before_its_call_is_never_named_wrongly() {
    for opt in ["-O0", "-O2"] {
        check_line_with(&c_program(opt), &c_source(), "/* SWAPPED */", true);
    }
}

#[test]
fn plt_calls_are_named_by_the_library_function() {
    for opt in ["-O0", "-O2"] {
        check_line(&c_program(opt), &c_source(), "/* PLT */");
        check_line(&c_program(opt), &c_source(), "/* PUTS */");
    }
}

#[test]
fn a_tail_call_is_a_target_and_can_be_entered() {
    for opt in ["-O0", "-O2"] {
        check_line(&c_program(opt), &c_source(), "/* TAIL */");
    }
}

#[test]
fn a_virtual_call_is_named_by_the_override_that_runs() {
    let src = sample_path("cpp/step_targets.cpp");
    for opt in ["-O0", "-O2"] {
        let program = dap::build("cpp/step_targets.cpp", "g++", &["-g", opt]);
        check_line(&program, &src, "// VIRTUAL");
    }
}

/// A target id is valid only at the stop that listed it, and only the innermost frame
/// has targets.
#[test]
fn stale_and_unknown_target_ids_are_refused_by_name() {
    let src = c_source();
    let program = c_program("-O0");
    let (mut c, tid, targets) = stop_with_targets(&program, &src, line_of(&src, "/* NESTED */"));
    let frames = c.frames(tid);
    let caller = c.ok("stepInTargets", json!({"frameId": frames[1]["id"]}));
    assert_eq!(
        caller["targets"],
        json!([]),
        "a caller frame lists no targets"
    );
    let stale = targets[0]["id"].as_i64().unwrap();
    c.ok("next", json!({"threadId": tid}));
    c.event("stopped");
    let m = c.err("stepIn", json!({"threadId": tid, "targetId": stale}));
    assert!(
        m.contains(&format!("step-in target {stale}")),
        "the error names the stale target: {m}"
    );
    let m = c.err("stepIn", json!({"threadId": tid, "targetId": 999_999}));
    assert!(m.contains("step-in target 999999"), "{m}");
    c.finish();
}

/// A target belongs to the thread whose frame listed it: another thread's step into it
/// is refused, naming it, and the refusal changes nothing.
#[test]
fn a_target_of_another_thread_is_refused_by_name() {
    let mut c = DapClient::new();
    let (tid, frames) = dap::stop_at(&mut c, "LINE_WORKER");
    let body = c.ok("stepInTargets", json!({"frameId": frames[0]["id"]}));
    let targets = body["targets"].as_array().unwrap().clone();
    let labels: Vec<&str> = targets
        .iter()
        .map(|t| t["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["add"], "the worker's line calls add: {targets:#?}");
    let threads = c.ok("threads", json!({}));
    let main = threads["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_i64().unwrap())
        .find(|&t| t != tid)
        .unwrap();
    // The main thread (in pthread_join) lists its own line's calls, under other ids.
    let main_frames = c.frames(main);
    let own = c.ok("stepInTargets", json!({"frameId": main_frames[0]["id"]}));
    assert!(own["targets"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["id"] != targets[0]["id"]));
    let id = targets[0]["id"].as_i64().unwrap();
    let m = c.err("stepIn", json!({"threadId": main, "targetId": id}));
    assert!(
        m.contains(&format!("step-in target {id} (add)")) && m.contains("another thread"),
        "the error names the target and why: {m}"
    );
    // The refusal changed nothing: the worker still steps into its own call.
    c.ok("stepIn", json!({"threadId": tid, "targetId": id}));
    let stop = c.event("stopped");
    assert_eq!(stop["body"]["threadId"], tid);
    assert_eq!(c.frames(tid)[0]["name"], "add");
    c.finish();
}
