//! Going back in time against gdb's `record full` on program shapes the other reverse
//! suites never saw (issue 30): recursion, a loop line making two calls, a function
//! called from several sites, struct and array element writes, writes through pointers
//! and in a callee (samples/c/rev_shapes.c, `-O0` and `-O2`), a global written by a
//! signal handler (samples/c/rev_signal.c), a C++ class's methods
//! (samples/cpp/rev_account.cpp) and a crash through a bad pointer. For each, tandem's
//! `stepBack`, `reverseContinue` (conditions, hit counts) and reverse data breakpoints
//! land where gdb's `reverse-next`, `reverse-continue` and reverse watchpoints land,
//! with the same values there.
//!
//! One difference is gdb 13's and is normalised, not hidden: its `reverse-next` stops at
//! the start of every line-table row of a line (a line with a call, or two statements'
//! worth of code, has several), so going back over `long r = n * fact(n - 1);` it
//! stops on that line two or three times, where its forward `next` passes the same line
//! in one step (checked: `next` goes 57 → 58 → 59 in rev_shapes.c, `reverse-next` goes
//! 59 → 58 → 58 → 57). tandem's `stepBack` goes to the start of the line, as a reverse
//! of `next` must (and as docs/reverse.md says); so gdb's consecutive stops on one line
//! of one frame are taken as one, the last (the line's start, with its values there).
//!
//! gdb runs through `support::gdb_record` (tests/support/gdb_record.rs): on a CPU with
//! AMX gdb 13 cannot write an SSE register back (the kernel refuses its fixed-size
//! `NT_X86_XSTATE` write with EFAULT: "Couldn't write extended state status: Bad
//! address."), which `record full` does going back over `-O2` code moving 16 bytes
//! through %xmm0 (to `g_hist[4]` and `g_hist[5]`) or over glibc's SSE2 string routines
//! (in the signal case, the dynamic linker's `strcmp` binding a function at its first
//! call). So it is run with that register set hidden and writes the FXSAVE area
//! instead, on every CPU.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use support::dap::{build, line_of, sample_path, DapClient};
use support::gdb_record::gdb_record_batch;

const SHAPES: &str = "c/rev_shapes.c";
const SIGNAL: &str = "c/rev_signal.c";
const ACCOUNT: &str = "cpp/rev_account.cpp";

/// Where a stop is and what it shows: the function, the line, some expressions'
/// values ("?" where the expression does not evaluate there) and, for gdb, the frame's
/// depth (only to tell a recursion's frames apart).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stop {
    function: String,
    line: i64,
    values: Vec<String>,
}

fn shapes() -> PathBuf {
    build(SHAPES, "gcc", &["-g", "-O0"])
}

fn line(rel: &str, marker: &str) -> i64 {
    line_of(&sample_path(rel), marker)
}

fn file_name(rel: &str) -> String {
    Path::new(rel)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// gdb under `record full` from `main` (run with `args`): `setup`, then each of
/// `moves`; the stop before the moves and after each, with `exprs` evaluated there.
/// Recording needs glibc's AVX-512/AVX2 routines off (gdb cannot record their
/// instructions), hence the tunables.
fn gdb_stops(
    program: &Path,
    args: &str,
    setup: &[String],
    moves: &[&str],
    exprs: &[&str],
) -> Vec<(Stop, usize)> {
    let list = exprs
        .iter()
        .map(|e| format!("{e:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let show = format!("python tandem_show([{list}])");
    let mut cmds: Vec<String> = vec![
        "set pagination off".into(),
        "set environment GLIBC_TUNABLES glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX2_Usable,-AVX2,-EVEX,-BMI2".into(),
        "handle SIGFPE nostop noprint pass".into(),
        concat!(
            "python exec(\"def tandem_value(e):\\n try:\\n  return str(gdb.parse_and_eval(e))\\n",
            " except Exception:\\n  return '?'\\n",
            "def tandem_show(es):\\n f = gdb.selected_frame()\\n depth = 0\\n g = f\\n",
            " while g is not None:\\n  depth += 1\\n  g = g.older()\\n",
            " name = (f.name() or '?').split('(')[0]\\n",
            " print('STOP|%s|%d|%d|%s' % (name, f.find_sal().line, depth,",
            " '|'.join(tandem_value(e) for e in es)))\\n\")"
        )
        .into(),
        "break main".into(),
        format!("run {args}"),
        "record full".into(),
        "delete".into(),
    ];
    cmds.extend(setup.iter().cloned());
    cmds.push(show.clone());
    for m in moves {
        cmds.push((*m).to_string());
        cmds.push(show.clone());
    }
    let (stdout, stderr) = gdb_record_batch(program, &cmds);
    let stops: Vec<(Stop, usize)> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("STOP|"))
        .map(|l| {
            let mut parts = l.split('|');
            let function = parts.next().unwrap().to_string();
            let line = parts.next().unwrap().parse().unwrap();
            let depth = parts.next().unwrap().parse().unwrap();
            let values = parts.map(str::to_string).collect();
            (
                Stop {
                    function,
                    line,
                    values,
                },
                depth,
            )
        })
        .collect();
    assert_eq!(
        stops.len(),
        moves.len() + 1,
        "gdb's stops:\n{stdout}\n{stderr}"
    );
    assert!(
        !stdout.contains("No more reverse-execution history"),
        "gdb went back past main: the oracle asks too much\n{stdout}"
    );
    stops
}

/// gdb's `reverse-next` stops with its consecutive stops on one line of one frame taken
/// as one, the last (see the file's comment), the first `n` after the start.
fn collapsed(stops: Vec<(Stop, usize)>, n: usize) -> Vec<Stop> {
    let mut out: Vec<(Stop, usize)> = Vec::new();
    for (s, depth) in stops {
        let len = out.len();
        match out.last_mut() {
            // The start of the row before, still the line: the later stop is the
            // line's start, unless the earlier one is the stop we started from.
            Some((last, d))
                if len > 1 && *d == depth && last.function == s.function && last.line == s.line =>
            {
                *last = s;
            }
            _ => out.push((s, depth)),
        }
    }
    assert!(
        out.len() > n,
        "gdb gave too few distinct lines: {out:?} (ask for more moves)"
    );
    out.into_iter().take(n + 1).map(|(s, _)| s).collect()
}

/// A recorded DAP session stopped at the first of `lines` hit (`conditions` by line).
fn launch(program: &Path, rel: &str, args: &[&str], breakpoints: Value) -> (DapClient, i64) {
    let mut c = DapClient::new();
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program, "args": args, "stdio": "pipes", "reverseDebugging": true}),
    );
    c.event("capabilities");
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": sample_path(rel)}, "breakpoints": breakpoints}),
    );
    c.ok("configurationDone", json!({}));
    let st = c.event("stopped");
    (c, st["body"]["threadId"].as_i64().unwrap())
}

/// tandem's stop: the top frame's function and line and `exprs` there.
fn here(c: &mut DapClient, tid: i64, exprs: &[&str]) -> Stop {
    let f = c.frames(tid)[0].clone();
    let fid = f["id"].as_i64().unwrap();
    let values = exprs
        .iter()
        .map(|e| {
            let r = c.request(
                "evaluate",
                json!({"expression": e, "frameId": fid, "context": "watch"}),
            );
            match r["body"]["result"].as_str() {
                Some(v) if r["success"] == true => v.to_string(),
                _ => "?".to_string(),
            }
        })
        .collect();
    Stop {
        function: f["name"].as_str().unwrap().to_string(),
        line: f["line"].as_i64().unwrap(),
        values,
    }
}

/// Makes one request that moves (`stepBack`, `reverseContinue`, `next`, ...) and
/// waits for its stop: the reason, the description and the thread.
fn go(c: &mut DapClient, tid: i64, command: &str) -> (String, String, i64) {
    c.ok(command, json!({"threadId": tid}));
    let st = c.event("stopped");
    (
        st["body"]["reason"].as_str().unwrap().to_string(),
        st["body"]["description"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        st["body"]["threadId"].as_i64().unwrap(),
    )
}

/// Sets a write data breakpoint on `name` alone (none when `None`).
fn watch(c: &mut DapClient, tid: i64, name: Option<&str>) {
    let Some(name) = name else {
        c.ok("setDataBreakpoints", json!({"breakpoints": []}));
        return;
    };
    let fid = c.frames(tid)[0]["id"].as_i64().unwrap();
    let info = c.ok("dataBreakpointInfo", json!({"name": name, "frameId": fid}));
    let body = c.ok(
        "setDataBreakpoints",
        json!({"breakpoints": [{"dataId": info["dataId"], "accessType": "write"}]}),
    );
    assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
}

/// `stepBack` `n` times from the first hit of `bp` (a DAP source breakpoint): each
/// stop, the start one first.
fn step_back(program: &Path, rel: &str, bp: Value, n: usize, exprs: &[&str]) -> Vec<Stop> {
    let (mut c, mut tid) = launch(program, rel, &[], json!([bp]));
    let mut out = vec![here(&mut c, tid, exprs)];
    for _ in 0..n {
        let (reason, _, t) = go(&mut c, tid, "stepBack");
        assert_eq!(reason, "step", "{:?}", c.output);
        tid = t;
        out.push(here(&mut c, tid, exprs));
    }
    c.finish();
    out
}

#[test]
fn step_back_through_recursion_and_loops_lands_where_gdb_reverse_next_does() {
    let program = shapes();
    let file = file_name(SHAPES);
    // (line, condition, stepBacks, gdb's reverse-nexts, expressions)
    type Case<'a> = (i64, Option<&'a str>, usize, usize, &'a [&'a str]);
    let cases: [Case; 3] = [
        // From the deepest call of a recursion: back out of each invocation into the
        // caller's line, one frame up each time.
        (
            line(SHAPES, "fact base line"),
            None,
            7,
            11,
            &["n", "g_calls"],
        ),
        // Over a recursive call as one line, then out of the outermost one into main.
        (
            line(SHAPES, "fact return line"),
            Some("n == 5"),
            4,
            7,
            &["g_calls"],
        ),
        // Back through loops whose lines make calls (two on one line, one callee from
        // three sites), writes through a pointer.
        (
            line(SHAPES, "done line"),
            None,
            12,
            16,
            &["acc", "g_hist[4]"],
        ),
    ];
    for (at, condition, n, reverse_nexts, exprs) in cases {
        let setup = match condition {
            Some(c) => vec![format!("break {file}:{at} if {c}"), "continue".into()],
            None => vec![format!("break {file}:{at}"), "continue".into()],
        };
        let moves = vec!["reverse-next"; reverse_nexts];
        let expected = collapsed(gdb_stops(&program, "", &setup, &moves, exprs), n);
        let bp = match condition {
            Some(c) => json!({"line": at, "condition": c}),
            None => json!({"line": at}),
        };
        let ours = step_back(&program, SHAPES, bp, n, exprs);
        assert_eq!(
            ours, expected,
            "stepBack from line {at} vs gdb reverse-next"
        );
    }
}

#[test]
fn reverse_continue_honours_conditions_and_hit_counts_as_gdb_does() {
    let program = shapes();
    let file = file_name(SHAPES);
    let done = line(SHAPES, "done line");
    let twice = line(SHAPES, "twice line");
    let entry = line(SHAPES, "fact entry line");
    let exprs = ["v", "n", "g_calls"];
    let n = 6;
    let setup = vec![
        format!("break {file}:{done}"),
        "continue".into(),
        format!("break {file}:{twice} if v % 3 == 1"),
        format!("break {file}:{entry} if n == 3"),
    ];
    let expected: Vec<Stop> = gdb_stops(&program, "", &setup, &vec!["reverse-continue"; n], &exprs)
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    let (mut c, mut tid) = launch(&program, SHAPES, &[], json!([{"line": done}]));
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": sample_path(SHAPES)}, "breakpoints": [
            {"line": done}, {"line": twice, "condition": "v % 3 == 1"},
            {"line": entry, "condition": "n == 3"}]}),
    );
    let mut ours = vec![here(&mut c, tid, &exprs)];
    for _ in 0..n {
        let (reason, _, t) = go(&mut c, tid, "reverseContinue");
        assert_eq!(reason, "breakpoint");
        tid = t;
        ours.push(here(&mut c, tid, &exprs));
    }
    assert_eq!(ours, expected, "reverseContinue with conditions vs gdb");

    // A hit count: `% 2` stops at every second hit counted from the recording's start.
    // gdb has no reverse hit count; its forward run gives each hit's `by`, and the
    // even-numbered ones are the ones going back must find, latest first.
    let bump = line(SHAPES, "bump line");
    let forward = gdb_stops(
        &program,
        "",
        &[format!("break {file}:{bump}"), "continue".into()],
        &["continue"; 5],
        &["by"],
    );
    let hits: Vec<String> = forward
        .into_iter()
        .map(|(s, _)| s.values[0].clone())
        .collect();
    // Back to the present first: the done line, where the program is.
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": sample_path(SHAPES)}, "breakpoints": [{"line": done}]}),
    );
    let (reason, _, t) = go(&mut c, tid, "continue");
    assert_eq!(reason, "breakpoint");
    tid = t;
    assert_eq!(here(&mut c, tid, &[]).line, done);
    assert_eq!(Some(tid), c.debuggee_pid, "the present is the live process");
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": sample_path(SHAPES)}, "breakpoints": [
            {"line": done}, {"line": bump, "hitCondition": "% 2"}]}),
    );
    for k in [5, 3, 1] {
        let (reason, _, t) = go(&mut c, tid, "reverseContinue");
        assert_eq!(reason, "breakpoint");
        tid = t;
        let s = here(&mut c, tid, &["by"]);
        assert_eq!(
            (s.line, s.values[0].as_str()),
            (bump, hits[k].as_str()),
            "hit {}",
            k + 1
        );
    }
    c.finish();
}

/// Reverse watchpoints on `program` from the first hit of the breakpoint `at`: for each
/// (expression, writes), that many `reverseContinue`s with a write data breakpoint on
/// it alone, each stop (function, line, the value there) compared with gdb's reverse
/// watchpoint; between two expressions, forward to the present again.
fn watches_equal_gdb(program: &Path, rel: &str, args: &[&str], at: i64, cases: &[(&str, usize)]) {
    let file = file_name(rel);
    let mut expected = Vec::new();
    for (expr, n) in cases {
        let setup = vec![
            format!("break {file}:{at}"),
            "continue".into(),
            // gdb's reverse watchpoints work as software ones under record full.
            "set can-use-hw-watchpoints 0".into(),
            format!("watch {expr}"),
        ];
        let stops = gdb_stops(
            program,
            &args.join(" "),
            &setup,
            &vec!["reverse-continue"; *n],
            &[expr],
        );
        expected.push(
            stops
                .into_iter()
                .skip(1)
                .map(|(s, _)| s)
                .collect::<Vec<_>>(),
        );
    }
    let (mut c, mut tid) = launch(program, rel, args, json!([{"line": at}]));
    // A fault a handler takes stops first, as live.
    while here(&mut c, tid, &[]).line != at {
        tid = go(&mut c, tid, "continue").2;
    }
    for ((expr, n), want) in cases.iter().zip(expected) {
        watch(&mut c, tid, Some(expr));
        let mut ours = Vec::new();
        let mut after = here(&mut c, tid, &[expr]).values[0].clone();
        for _ in 0..*n {
            let (reason, description, t) = go(&mut c, tid, "reverseContinue");
            assert_eq!(reason, "data breakpoint", "{description} {:?}", c.output);
            tid = t;
            let s = here(&mut c, tid, &[expr]);
            assert!(
                description.contains(&format!("{} → {after}", s.values[0])),
                "the value before and after: {description}"
            );
            after = s.values[0].clone();
            ours.push(s);
        }
        assert_eq!(ours, want, "reverse watchpoint on {expr} vs gdb");
        watch(&mut c, tid, None);
        // Forward to the present again; the replay stops at a fault where the
        // program did (a handled SIGFPE stops as an exception, live and replayed).
        let (mut reason, _, t) = go(&mut c, tid, "continue");
        tid = t;
        while reason == "exception" {
            (reason, _, tid) = go(&mut c, tid, "continue");
        }
        assert_eq!(reason, "breakpoint", "forward to the present again");
        assert_eq!(Some(tid), c.debuggee_pid, "the present is the live process");
    }
    c.finish();
}

#[test]
fn reverse_watchpoints_find_writes_through_pointers_and_in_callees_as_gdb_does() {
    watches_equal_gdb(
        &shapes(),
        SHAPES,
        &[],
        line(SHAPES, "done line"),
        &[
            // Through a pointer parameter, in a callee called from a loop.
            ("g_hist[1]", 2),
            // A struct field in an array, written through a struct pointer.
            ("g_pts[2].y", 1),
            // In a recursion: each invocation's write.
            ("g_calls", 4),
            // Through a local pointer in main.
            ("g_hist[4]", 1),
            // Written in main through a struct pointer, before that in a callee.
            ("g_pts[0].tag", 2),
        ],
    );
}

#[test]
fn from_a_crash_a_watchpoint_goes_back_to_the_bad_pointer_as_gdb_does() {
    let program = shapes();
    let file = file_name(SHAPES);
    let exprs = ["g_pts[2].y"];
    let setup = vec![
        "continue".into(),
        "set can-use-hw-watchpoints 0".into(),
        "watch bad".into(),
    ];
    let moves = [
        "reverse-continue",
        "delete",
        "watch g_pts[2].y",
        "reverse-continue",
    ];
    let gdb: Vec<Stop> = gdb_stops(&program, "crash", &setup, &moves, &exprs)
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    let expected = [gdb[0].clone(), gdb[1].clone(), gdb[4].clone()];
    assert_eq!(
        expected[0].line,
        line(SHAPES, "bad write line"),
        "{file}: {gdb:?}"
    );

    let (mut c, mut tid) = launch(&program, SHAPES, &["crash"], json!([]));
    let mut ours = vec![here(&mut c, tid, &exprs)];
    for name in ["bad", "g_pts[2].y"] {
        watch(&mut c, tid, Some(name));
        let (reason, _, t) = go(&mut c, tid, "reverseContinue");
        assert_eq!(reason, "data breakpoint", "{:?}", c.output);
        tid = t;
        ours.push(here(&mut c, tid, &exprs));
    }
    assert_eq!(
        ours, expected,
        "from the SIGSEGV back to the bad pointer vs gdb"
    );
    // Forward again to the crash: the present.
    watch(&mut c, tid, None);
    let (reason, _, t) = go(&mut c, tid, "continue");
    assert_eq!(reason, "exception");
    assert_eq!(here(&mut c, t, &[]).line, line(SHAPES, "bad write line"));
    c.finish();
}

#[test]
fn a_write_and_a_hit_in_a_signal_handler_are_found_going_back_as_gdb_finds_them() {
    let program = build(SIGNAL, "gcc", &["-g", "-O0"]);
    let file = file_name(SIGNAL);
    let done = line(SIGNAL, "done line");
    let handler = line(SIGNAL, "handler line");
    watches_equal_gdb(&program, SIGNAL, &[], done, &[("g_sig", 2)]);

    // A breakpoint in the handler: reverseContinue stops in it, as gdb's does.
    let setup = vec![
        format!("break {file}:{done}"),
        "continue".into(),
        format!("break {file}:{handler}"),
    ];
    let gdb = gdb_stops(
        &program,
        "",
        &setup,
        &["reverse-continue"],
        &["sig", "g_sig"],
    );
    let (mut c, mut tid) = launch(&program, SIGNAL, &[], json!([{"line": done}]));
    let (_, _, t) = go(&mut c, tid, "continue");
    tid = t;
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": sample_path(SIGNAL)}, "breakpoints": [
            {"line": done}, {"line": handler}]}),
    );
    let (reason, _, t) = go(&mut c, tid, "reverseContinue");
    assert_eq!(reason, "breakpoint", "{:?}", c.output);
    tid = t;
    assert_eq!(here(&mut c, tid, &["sig", "g_sig"]), gdb[1].0);
    // Forward from the handler through the rest of the replay to the present.
    let (reason, _, t) = go(&mut c, tid, "continue");
    assert_eq!(reason, "breakpoint");
    assert_eq!(here(&mut c, t, &["sig", "g_sig"]), gdb[0].0);
    assert_eq!(Some(t), c.debuggee_pid, "the present is the live process");
    c.finish();

    // Live at the handler's breakpoint (the fault was passed to it after the
    // exception stop): back from its first line to the faulting line, where the
    // signal entered it, then on back through main.
    let exprs = ["g_sig", "q"];
    let setup = vec![format!("break {file}:{handler}"), "continue".into()];
    let expected = collapsed(
        gdb_stops(&program, "", &setup, &["reverse-next"; 5], &exprs),
        3,
    );
    let (mut c, mut tid) = launch(&program, SIGNAL, &[], json!([{"line": handler}]));
    let (reason, _, t) = go(&mut c, tid, "continue");
    assert_eq!(reason, "breakpoint", "{:?}", c.output);
    tid = t;
    let mut ours = vec![here(&mut c, tid, &exprs)];
    for _ in 0..3 {
        let (reason, _, t) = go(&mut c, tid, "stepBack");
        assert_eq!(reason, "step", "{:?}", c.output);
        tid = t;
        ours.push(here(&mut c, tid, &exprs));
    }
    assert_eq!(
        ours, expected,
        "stepBack out of a signal handler vs gdb reverse-next"
    );
    c.finish();
}

#[test]
fn optimized_code_conditions_and_watchpoints_go_back_as_gdb_does() {
    let program = build(SHAPES, "gcc", &["-g", "-O2"]);
    let file = file_name(SHAPES);
    let done = line(SHAPES, "done line");
    let bump = line(SHAPES, "bump line");
    let place = line(SHAPES, "place x line");
    // -O2 arguments live in registers: the conditions read them at each hit.
    let exprs = ["by", "x"];
    let setup = vec![
        format!("break {file}:{done}"),
        "continue".into(),
        format!("break {file}:{bump} if by > 30"),
        format!("break {file}:{place} if x == 2"),
    ];
    let expected: Vec<Stop> = gdb_stops(&program, "", &setup, &["reverse-continue"; 4], &exprs)
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    let (mut c, mut tid) = launch(&program, SHAPES, &[], json!([{"line": done}]));
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": sample_path(SHAPES)}, "breakpoints": [
            {"line": done}, {"line": bump, "condition": "by > 30"},
            {"line": place, "condition": "x == 2"}]}),
    );
    let mut ours = vec![here(&mut c, tid, &exprs)];
    for _ in 0..4 {
        let (reason, _, t) = go(&mut c, tid, "reverseContinue");
        assert_eq!(reason, "breakpoint");
        tid = t;
        ours.push(here(&mut c, tid, &exprs));
    }
    assert_eq!(ours, expected, "-O2 reverseContinue with conditions vs gdb");
    c.finish();
    watches_equal_gdb(&program, SHAPES, &[], done, &[("g_hist[2]", 2)]);
}

#[test]
fn a_class_member_written_by_methods_is_found_going_back_as_gdb_finds_it() {
    let program = build(ACCOUNT, "g++", &["-g", "-O0"]);
    watches_equal_gdb(
        &program,
        ACCOUNT,
        &[],
        line(ACCOUNT, "done line"),
        &[("g_acct.balance_", 3)],
    );
    // Out of a method into its caller's line, then back through the loop's lines.
    let file = file_name(ACCOUNT);
    let at = line(ACCOUNT, "withdraw line");
    let exprs = ["v", "g_acct.balance_", "total"];
    let setup = vec![format!("break {file}:{at} if v > 40"), "continue".into()];
    let expected = collapsed(
        gdb_stops(&program, "", &setup, &["reverse-next"; 8], &exprs),
        4,
    );
    let ours = step_back(
        &program,
        ACCOUNT,
        json!({"line": at, "condition": "v > 40"}),
        4,
        &exprs,
    );
    assert_eq!(
        ours, expected,
        "stepBack in and out of a method vs gdb reverse-next"
    );
}

#[test]
fn step_back_by_instruction_goes_into_the_callee_s_return_as_gdb_reverse_stepi() {
    let program = shapes();
    let file = file_name(SHAPES);
    let at = line(SHAPES, "bump call line");
    // The pc as a number: where each reverse-stepi lands, back into twice's `ret`.
    let setup = vec![format!("break {file}:{at}"), "continue".into()];
    let expected: Vec<Stop> =
        gdb_stops(&program, "", &setup, &["reverse-stepi"; 4], &["(long)$pc"])
            .into_iter()
            .map(|(s, _)| s)
            .collect();
    let (mut c, mut tid) = launch(&program, SHAPES, &[], json!([{"line": at}]));
    let pc_here = |c: &mut DapClient, tid: i64| -> Stop {
        let mut s = here(c, tid, &[]);
        let f = c.frames(tid)[0].clone();
        let text = f["instructionPointerReference"].as_str().unwrap();
        let pc = u64::from_str_radix(text.trim_start_matches("0x"), 16).unwrap();
        s.values = vec![pc.to_string()];
        s
    };
    let mut ours = vec![pc_here(&mut c, tid)];
    for _ in 0..4 {
        c.ok(
            "stepBack",
            json!({"threadId": tid, "granularity": "instruction"}),
        );
        let st = c.event("stopped");
        tid = st["body"]["threadId"].as_i64().unwrap();
        ours.push(pc_here(&mut c, tid));
    }
    assert_eq!(
        ours, expected,
        "stepBack by instruction vs gdb reverse-stepi"
    );
    assert_eq!(ours[4].function, "twice", "the last is in the callee");
    c.finish();
}

/// A `stepBack` whose line is before the recording (a few instructions into `_start`,
/// which has no line before) says so and leaves the program shown where it was, not
/// where its search of the past ended (it showed a point inside the dynamic loader).
#[test]
fn a_step_back_that_cannot_go_back_stays_where_it_was() {
    let program = shapes();
    let mut c = DapClient::new();
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program, "stdio": "pipes", "reverseDebugging": true,
               "stopOnEntry": true}),
    );
    c.event("capabilities");
    c.ok("configurationDone", json!({}));
    let mut tid = c.event("stopped")["body"]["threadId"].as_i64().unwrap();
    for _ in 0..6 {
        c.ok(
            "stepIn",
            json!({"threadId": tid, "granularity": "instruction"}),
        );
        tid = c.event("stopped")["body"]["threadId"].as_i64().unwrap();
    }
    let before = c.frames(tid)[0]["instructionPointerReference"].clone();
    let (reason, _, t) = go(&mut c, tid, "stepBack");
    assert_eq!(reason, "pause");
    assert!(
        c.output
            .iter()
            .any(|(_, text)| text.contains("before the start of the recording")),
        "{:?}",
        c.output
    );
    let after = c.frames(t)[0]["instructionPointerReference"].clone();
    assert_eq!(after, before, "shown where it was");
    c.finish();
}
