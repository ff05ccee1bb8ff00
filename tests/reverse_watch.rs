//! Data breakpoints in reverse over DAP (issue 30; docs/reverse.md): with a write
//! watchpoint set, `reverseContinue` goes back to the last write to the location before
//! the point shown — the point just before the instruction that wrote, as gdb's
//! reverse watchpoints stop — with the value before and after in the stop's
//! description. gdb under `record full` is the oracle for the line and the value of
//! each write found going back, across the interval the stop is in and across system
//! calls. From a crash (SIGSEGV), a watchpoint on the bad pointer finds where it was
//! made. `restartFrame` goes back to the start of a frame's invocation with memory as
//! it was then.
//!
//! gdb runs through `support::gdb_record` (tests/support/gdb_record.rs): on a CPU with
//! AMX gdb 13 cannot write an SSE register back (the kernel refuses its fixed-size
//! `NT_X86_XSTATE` write with EFAULT: "Couldn't write extended state status: Bad
//! address."), so it is run with that register set hidden and writes the FXSAVE area
//! instead, on every CPU.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use support::dap::{build, line_of, sample_path, DapClient};
use support::gdb_record::gdb_record_batch;

const SAMPLE: &str = "c/rev_watch.c";

fn sample() -> PathBuf {
    build(SAMPLE, "gcc", &["-g", "-O0"])
}

/// A write found going back: its line, `g_total` there, the function and its `v`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Write {
    line: i64,
    total: String,
    function: String,
}

/// gdb under `record full` from main to the done line, a watchpoint on `g_total`,
/// then `reverse-continue` `n` times: where each stops and the value there.
fn gdb_oracle(program: &Path, n: usize) -> Vec<Write> {
    let done = line_of(&sample_path(SAMPLE), "done line");
    let mut cmds: Vec<String> = vec![
        "set pagination off".into(),
        "set environment GLIBC_TUNABLES glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX2_Usable,-AVX2,-EVEX,-BMI2".into(),
        "break main".into(),
        "run".into(),
        "record full".into(),
        format!("break rev_watch.c:{done}"),
        "continue".into(),
        // gdb's reverse watchpoints work as software ones under record full.
        "set can-use-hw-watchpoints 0".into(),
        "watch g_total".into(),
    ];
    for _ in 0..n {
        cmds.extend([
            "reverse-continue".to_string(),
            "echo AT=".into(),
            "info line *$pc".into(),
            "echo TOTAL=".into(),
            "output g_total".into(),
            "echo \\n".into(),
            "echo FN=".into(),
            "info symbol $pc".into(),
        ]);
    }
    let (stdout, stderr) = gdb_record_batch(program, &cmds);
    let lines: Vec<i64> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("AT=Line "))
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    let totals: Vec<String> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("TOTAL="))
        .map(|l| l.trim().to_string())
        .collect();
    let fns: Vec<String> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("FN="))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    assert!(
        lines.len() == n && totals.len() == n && fns.len() == n,
        "gdb's reverse watchpoint stops:\n{stdout}\n{stderr}"
    );
    (0..n)
        .map(|k| Write {
            line: lines[k],
            total: totals[k].clone(),
            function: fns[k].clone(),
        })
        .collect()
}

fn top(c: &mut DapClient, tid: i64) -> Value {
    c.frames(tid)[0].clone()
}

fn eval(c: &mut DapClient, tid: i64, e: &str) -> String {
    let fid = top(c, tid)["id"].as_i64().unwrap();
    c.evaluate(fid, e)["result"].as_str().unwrap().to_string()
}

/// Sets a write data breakpoint on `name` (in the top frame of `tid`); its id.
fn watch(c: &mut DapClient, tid: i64, name: &str) -> Value {
    let fid = top(c, tid)["id"].as_i64().unwrap();
    let info = c.ok("dataBreakpointInfo", json!({"name": name, "frameId": fid}));
    let data_id = info["dataId"].as_str().unwrap().to_string();
    let body = c.ok(
        "setDataBreakpoints",
        json!({"breakpoints": [{"dataId": data_id, "accessType": "write"}]}),
    );
    assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
    body["breakpoints"][0]["id"].clone()
}

#[test]
fn reverse_continue_with_a_watchpoint_stops_at_the_last_writes_as_gdb_does() {
    let program = sample();
    let oracle = gdb_oracle(&program, 4);
    let src = sample_path(SAMPLE);
    let mut c = DapClient::new();
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program, "stdio": "pipes", "reverseDebugging": true}),
    );
    c.event("capabilities");
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [{"line": line_of(&src, "done line")}]}),
    );
    c.ok("configurationDone", json!({}));
    let st = c.event("stopped");
    let mut tid = st["body"]["threadId"].as_i64().unwrap();
    assert_eq!(eval(&mut c, tid, "g_total"), "90");
    let id = watch(&mut c, tid, "g_total");
    let mut after = "90".to_string();
    let mut ours = Vec::new();
    for _ in 0..oracle.len() {
        let started = std::time::Instant::now();
        c.ok("reverseContinue", json!({"threadId": tid}));
        let st = c.event("stopped");
        eprintln!("reverseContinue to a write: {:?}", started.elapsed());
        assert_eq!(st["body"]["reason"], "data breakpoint", "{st}");
        assert_eq!(st["body"]["hitBreakpointIds"], json!([id]), "{st}");
        tid = st["body"]["threadId"].as_i64().unwrap();
        let f = top(&mut c, tid);
        let total = eval(&mut c, tid, "g_total");
        let description = st["body"]["description"].as_str().unwrap();
        assert!(
            description.contains(&format!("g_total: {total} → {after}")),
            "the value before and after the write: {description}"
        );
        after = total.clone();
        ours.push(Write {
            line: f["line"].as_i64().unwrap(),
            total,
            function: f["name"].as_str().unwrap().to_string(),
        });
    }
    assert_eq!(ours, oracle, "reverse watchpoint stops vs gdb");
    // The write found is where the program made it: forward again, the watchpoint
    // stops right after it with the value it wrote.
    c.ok("continue", json!({"threadId": tid}));
    let st = c.event("stopped");
    assert_eq!(st["body"]["reason"], "data breakpoint", "{st}");
    tid = st["body"]["threadId"].as_i64().unwrap();
    assert_eq!(eval(&mut c, tid, "g_total"), oracle[2].total);
    c.ok("setDataBreakpoints", json!({"breakpoints": []}));
    c.ok("continue", json!({"threadId": tid}));
    let st = c.event("stopped");
    assert_eq!(st["body"]["reason"], "breakpoint", "{st}");
    c.ok("continue", json!({"threadId": tid}));
    assert_eq!(c.event("exited")["body"]["exitCode"], 0);
    c.finish();
}

#[test]
fn from_a_crash_a_watchpoint_on_the_bad_pointer_finds_where_it_was_made() {
    let program = sample();
    let src = sample_path(SAMPLE);
    let mut c = DapClient::new();
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program, "args": ["crash"], "stdio": "pipes",
               "reverseDebugging": true}),
    );
    c.event("capabilities");
    c.ok("configurationDone", json!({}));
    let st = c.event("stopped");
    assert_eq!(st["body"]["reason"], "exception", "{st}");
    let mut tid = st["body"]["threadId"].as_i64().unwrap();
    let f = top(&mut c, tid);
    assert_eq!(f["line"].as_i64().unwrap(), line_of(&src, "store line"));
    assert_eq!(eval(&mut c, tid, "g_slot"), "0x9000");
    let id = watch(&mut c, tid, "g_slot");
    // Back from the crash to the write that made the bad pointer, then to the one before.
    for (k, before, after) in [
        (9, "&g_cells[3]", "0x9000"),
        (3, "&g_cells[0]", "&g_cells[3]"),
    ] {
        c.ok("reverseContinue", json!({"threadId": tid}));
        let st = c.event("stopped");
        assert_eq!(st["body"]["reason"], "data breakpoint", "{st}");
        assert_eq!(st["body"]["hitBreakpointIds"], json!([id]), "{st}");
        tid = st["body"]["threadId"].as_i64().unwrap();
        let f = top(&mut c, tid);
        assert_eq!(f["name"], "pick", "{f}");
        assert_eq!(f["line"].as_i64().unwrap(), line_of(&src, "pick line"));
        assert_eq!(eval(&mut c, tid, "k"), k.to_string());
        let description = st["body"]["description"].as_str().unwrap().to_string();
        let slot = eval(&mut c, tid, "g_slot");
        let before_addr = eval(&mut c, tid, before);
        let after_addr = if after.starts_with('&') {
            eval(&mut c, tid, after)
        } else {
            after.to_string()
        };
        assert!(
            slot.starts_with(before_addr.split_whitespace().next().unwrap()),
            "{slot} vs {before_addr}"
        );
        assert!(
            description.contains(after_addr.split_whitespace().next().unwrap()),
            "{description} names the value written, {after_addr}"
        );
    }
    // Forward again: the write of pick(3) happens, then pick(9)'s, then the crash.
    c.ok("continue", json!({"threadId": tid}));
    let st = c.event("stopped");
    assert_eq!(st["body"]["reason"], "data breakpoint", "{st}");
    tid = st["body"]["threadId"].as_i64().unwrap();
    assert_eq!(
        eval(&mut c, tid, "g_slot == &g_cells[3]"),
        "1",
        "after the write of pick(3)"
    );
    c.ok("setDataBreakpoints", json!({"breakpoints": []}));
    c.ok("continue", json!({"threadId": tid}));
    let st = c.event("stopped");
    assert_eq!(st["body"]["reason"], "exception", "the crash again: {st}");
    tid = st["body"]["threadId"].as_i64().unwrap();
    assert_eq!(Some(tid), c.debuggee_pid, "the present is the live process");
    c.ok("continue", json!({"threadId": tid}));
    c.event("terminated");
    c.finish();
}

#[test]
fn restart_frame_goes_back_to_the_entry_of_the_invocation_with_memory_as_it_was() {
    let program = sample();
    let src = sample_path(SAMPLE);
    let add_line = line_of(&src, "add line");
    let mut c = DapClient::new();
    let caps = c.initialize();
    assert!(caps.get("supportsRestartFrame").is_none(), "{caps}");
    c.ok(
        "launch",
        json!({"program": program, "stdio": "pipes", "reverseDebugging": true}),
    );
    let ev = c.event("capabilities");
    assert_eq!(
        ev["body"]["capabilities"]["supportsRestartFrame"], true,
        "{ev}"
    );
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [
            {"line": add_line, "condition": "v == 12"}]}),
    );
    c.ok("configurationDone", json!({}));
    let st = c.event("stopped");
    let mut tid = st["body"]["threadId"].as_i64().unwrap();
    assert_eq!(eval(&mut c, tid, "g_total"), "18");
    // Out of add and a line further in main: the memory changed since.
    c.ok("stepOut", json!({"threadId": tid}));
    tid = c.event("stopped")["body"]["threadId"].as_i64().unwrap();
    assert_eq!(eval(&mut c, tid, "g_total"), "30");
    assert_eq!(eval(&mut c, tid, "i"), "4");

    // Restarting main's frame: back to its first line, before anything was added.
    let frames = c.frames(tid);
    assert_eq!(frames[0]["name"], "main");
    c.ok("restartFrame", json!({"frameId": frames[0]["id"]}));
    let st = c.event("stopped");
    assert_eq!(st["body"]["reason"], "restart", "{st}");
    tid = st["body"]["threadId"].as_i64().unwrap();
    let f = top(&mut c, tid);
    assert_eq!(f["name"], "main");
    assert_eq!(
        f["line"].as_i64().unwrap(),
        line_of(&src, "int crash ="),
        "main's first line"
    );
    assert_eq!(eval(&mut c, tid, "g_total"), "0", "memory as it was then");
    assert_eq!(eval(&mut c, tid, "argc"), "1");

    // Forward to the hit again, a step inside add, then restart add's frame.
    c.ok("continue", json!({"threadId": tid}));
    let st = c.event("stopped");
    assert_eq!(st["body"]["reason"], "breakpoint", "{st}");
    tid = st["body"]["threadId"].as_i64().unwrap();
    assert_eq!(eval(&mut c, tid, "v"), "12");
    c.ok("next", json!({"threadId": tid}));
    tid = c.event("stopped")["body"]["threadId"].as_i64().unwrap();
    assert_eq!(eval(&mut c, tid, "g_total"), "30");
    let frames = c.frames(tid);
    assert_eq!(frames[0]["name"], "add");
    c.ok("restartFrame", json!({"frameId": frames[0]["id"]}));
    let st = c.event("stopped");
    assert_eq!(st["body"]["reason"], "restart", "{st}");
    tid = st["body"]["threadId"].as_i64().unwrap();
    let f = top(&mut c, tid);
    assert_eq!(f["name"], "add");
    assert_eq!(f["line"].as_i64().unwrap(), add_line);
    assert_eq!(
        eval(&mut c, tid, "v"),
        "12",
        "the argument of that invocation"
    );
    assert_eq!(eval(&mut c, tid, "g_total"), "18", "memory as it was then");
    let frames = c.frames(tid);
    assert_eq!(frames[1]["name"], "main");
    let fid = frames[1]["id"].as_i64().unwrap();
    assert_eq!(c.evaluate(fid, "i")["result"], "4", "the caller as it was");

    c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": []}),
    );
    c.ok("continue", json!({"threadId": tid}));
    assert_eq!(c.event("exited")["body"]["exitCode"], 0);
    c.finish();
}

#[test]
fn restart_frame_without_a_recording_says_why() {
    let program = sample();
    let src = sample_path(SAMPLE);
    let mut c = DapClient::new();
    let st = c.launch_to_stop(
        json!({"program": program, "stdio": "pipes"}),
        &src,
        &[line_of(&src, "add line")],
    );
    let tid = st["body"]["threadId"].as_i64().unwrap();
    let frames = c.frames(tid);
    let e = c.err("restartFrame", json!({"frameId": frames[0]["id"]}));
    assert!(e.contains("does not record"), "{e}");
    let e = c.err("restartFrame", json!({"frameId": 999_999}));
    assert!(e.contains("unknown frame"), "{e}");
    c.finish();
}

/// Searching a long recording from the snapshot nearest to the point: samples/c/
/// rev_bench.c makes 2 system calls per round, so 12,000 rounds leave a dozen snapshots
/// behind. A reverse-continue to a hit 6,000 rounds back crosses many stretches of the
/// search and lands on the values seen there; stepping back by line agrees with the
/// lines `next` went through going forward.
#[test]
fn a_long_recording_is_searched_back_from_the_nearest_snapshot() {
    let src = sample_path("c/rev_bench.c");
    let program = build("c/rev_bench.c", "gcc", &["-g", "-O0"]);
    let tick_line = line_of(&src, "tick(i, acc);");
    let acc_line = line_of(&src, "acc += (unsigned long)getppid()");
    let mut c = DapClient::new();
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program, "args": ["syscalls", "12000"], "stdio": "pipes",
               "reverseDebugging": true}),
    );
    c.event("capabilities");
    let set = |c: &mut DapClient, cond: &str, line: i64| {
        c.ok(
            "setBreakpoints",
            json!({"source": {"path": src}, "breakpoints": [{"line": line, "condition": cond}]}),
        );
    };
    set(&mut c, "i == 5999", tick_line);
    c.ok("configurationDone", json!({}));
    let mut tid = c.event("stopped")["body"]["threadId"].as_i64().unwrap();
    let then = eval(&mut c, tid, "acc");
    set(&mut c, "i == 11998", acc_line);
    c.ok("continue", json!({"threadId": tid}));
    tid = c.event("stopped")["body"]["threadId"].as_i64().unwrap();
    // Forward by lines through a round and a half, then back the same way.
    let mut forward = vec![top(&mut c, tid)["line"].as_i64().unwrap()];
    for _ in 0..5 {
        c.ok("next", json!({"threadId": tid}));
        tid = c.event("stopped")["body"]["threadId"].as_i64().unwrap();
        forward.push(top(&mut c, tid)["line"].as_i64().unwrap());
    }
    let mut back = Vec::new();
    for _ in 0..5 {
        let started = std::time::Instant::now();
        c.ok("stepBack", json!({"threadId": tid}));
        let st = c.event("stopped");
        eprintln!("stepBack on a long recording: {:?}", started.elapsed());
        assert_eq!(st["body"]["reason"], "step", "{st}");
        tid = st["body"]["threadId"].as_i64().unwrap();
        back.push(top(&mut c, tid)["line"].as_i64().unwrap());
    }
    back.reverse();
    assert_eq!(back, forward[..5], "stepBack retraces next");
    assert_eq!(eval(&mut c, tid, "i"), "11998");

    set(&mut c, "i == 5999", tick_line);
    let started = std::time::Instant::now();
    c.ok("reverseContinue", json!({"threadId": tid}));
    let st = c.event("stopped");
    eprintln!(
        "reverseContinue across 6,000 rounds: {:?}",
        started.elapsed()
    );
    assert_eq!(st["body"]["reason"], "breakpoint", "{st}");
    tid = st["body"]["threadId"].as_i64().unwrap();
    assert_eq!(eval(&mut c, tid, "i"), "5999");
    assert_eq!(eval(&mut c, tid, "acc"), then, "the values seen there");
    c.finish();
}
