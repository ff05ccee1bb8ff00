//! Going back by line where no system call happened since (issue 30): samples/c/rev_loop.c
//! is stopped at the 6th hit of its loop line, then `stepBack` three times, each compared
//! with gdb's `reverse-next` under `record full` (the line and the values of `i`, `acc`
//! and `g_sum`); then forward again to the point it was at (the same hit, the same
//! values) and on, live, to the next hit and the end. Then a data breakpoint on `g_sum`,
//! written by the instruction right before the loop line's: going forward in a replay
//! its stop lands on the breakpoint the live program is stopped at, and resuming from
//! it (stepping off that int3) still reaches the present, where the live program takes
//! over. And a hit condition going forward to the present counts the present's hit
//! once: the stops are the live program's.
//!
//! gdb runs through `support::gdb_record` (tests/support/gdb_record.rs): on a CPU with
//! AMX gdb 13 cannot write an SSE register back (the kernel refuses its fixed-size
//! `NT_X86_XSTATE` write with EFAULT: "Couldn't write extended state status: Bad
//! address."), so it is run with that register set hidden and writes the FXSAVE area
//! instead, on every CPU.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use serde_json::json;
use support::dap::{build, line_of, sample_path, DapClient};
use support::gdb_record::gdb_record_batch;

const SAMPLE: &str = "c/rev_loop.c";
const HITS: usize = 6;

/// The function, line and `i acc g_sum` at the top frame of `tid`.
fn here(c: &mut DapClient, tid: i64) -> (i64, String) {
    let f = c.frames(tid)[0].clone();
    let fid = f["id"].as_i64().unwrap();
    let mut get = |e: &str| c.evaluate(fid, e)["result"].as_str().unwrap().to_string();
    let values = format!("{} {} {}", get("i"), get("acc"), get("g_sum"));
    (f["line"].as_i64().unwrap(), values)
}

/// gdb under `record full` from main: at the 6th hit, then after each of three
/// `reverse-next`s, the line and `i acc g_sum`.
fn gdb_steps(program: &std::path::Path) -> Vec<(i64, String)> {
    let loop_line = line_of(&sample_path(SAMPLE), "loop line");
    let mut cmds: Vec<String> = vec![
        "set pagination off".into(),
        "set environment GLIBC_TUNABLES glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX2_Usable,-AVX2,-EVEX,-BMI2".into(),
        "break main".into(),
        "run".into(),
        "record full".into(),
        format!("break rev_loop.c:{loop_line}"),
    ];
    for _ in 0..HITS {
        cmds.push("continue".into());
    }
    let show = [
        "echo AT=".to_string(),
        "output i".into(),
        "echo \\040".into(),
        "output acc".into(),
        "echo \\040".into(),
        "output g_sum".into(),
        "echo \\n".into(),
    ];
    for k in 0..4 {
        if k > 0 {
            cmds.push("reverse-next".into());
        }
        cmds.push("info line *$pc".into());
        cmds.extend(show.iter().cloned());
    }
    let (stdout, stderr) = gdb_record_batch(program, &cmds);
    let mut lines = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("Line "))
        .filter_map(|l| l.split_whitespace().next()?.parse::<i64>().ok());
    let steps: Vec<(i64, String)> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("AT="))
        .map(|l| (lines.next().unwrap(), l.trim().to_string()))
        .collect();
    assert_eq!(steps.len(), 4, "gdb:\n{stdout}\n{stderr}");
    steps
}

#[test]
fn step_back_inside_a_loop_without_system_calls_equals_gdb() {
    let program = build(SAMPLE, "gcc", &["-g", "-O0"]);
    let expected = gdb_steps(&program);
    let source = sample_path(SAMPLE);
    let loop_line = line_of(&source, "loop line");
    let mut c = DapClient::new();
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program, "reverseDebugging": true, "stdio": "pipes",
               "console": "internalConsole"}),
    );
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": source}, "breakpoints": [{"line": loop_line}]}),
    );
    c.ok("configurationDone", json!({}));
    let mut tid = 0;
    for hit in 1..=HITS {
        let st = c.event("stopped");
        tid = st["body"]["threadId"].as_i64().unwrap();
        if hit < HITS {
            c.ok("continue", json!({"threadId": tid}));
        }
    }
    let present = here(&mut c, tid);
    assert_eq!(present, expected[0], "the 6th hit");
    for (k, want) in expected.iter().enumerate().skip(1) {
        c.ok("stepBack", json!({"threadId": tid}));
        let st = c.event("stopped");
        assert_eq!(st["body"]["reason"], "step", "{st} {:?}", c.output);
        tid = st["body"]["threadId"].as_i64().unwrap();
        assert_eq!(&here(&mut c, tid), want, "after {k} stepBack(s)");
    }
    // Forward: the breakpoint at the point the program was at, with its values.
    c.ok("continue", json!({"threadId": tid}));
    let st = c.event("stopped");
    tid = st["body"]["threadId"].as_i64().unwrap();
    assert_eq!(here(&mut c, tid), present, "back at the present");
    c.ok("continue", json!({"threadId": tid}));
    let st = c.event("stopped");
    tid = st["body"]["threadId"].as_i64().unwrap();
    let next = here(&mut c, tid);
    assert_eq!(next.0, loop_line);
    assert_ne!(next.1, present.1, "the next hit, live");
    // A line stepped over live (the present reached by the steps of `next`), then back
    // over it: the hit again, with its values.
    c.ok("next", json!({"threadId": tid}));
    let st = c.event("stopped");
    tid = st["body"]["threadId"].as_i64().unwrap();
    assert_ne!(here(&mut c, tid).0, loop_line, "next leaves the loop line");
    c.ok("stepBack", json!({"threadId": tid}));
    let st = c.event("stopped");
    assert_eq!(st["body"]["reason"], "step", "{st} {:?}", c.output);
    tid = st["body"]["threadId"].as_i64().unwrap();
    assert_eq!(here(&mut c, tid), next, "back over the line stepped");
    c.ok("next", json!({"threadId": tid}));
    let st = c.event("stopped");
    tid = st["body"]["threadId"].as_i64().unwrap();
    assert_ne!(
        here(&mut c, tid).0,
        loop_line,
        "forward over it again, to the present"
    );
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": source}, "breakpoints": []}),
    );
    c.ok("continue", json!({"threadId": tid}));
    let exited = c.event("exited");
    assert_eq!(exited["body"]["exitCode"], 0);
    c.finish();
}

/// A stop: its reason, thread, line and `g_sum`.
type Stop = (String, i64, i64, String);

/// Waits for the next stop.
fn next_stop(c: &mut DapClient) -> Stop {
    let st = c.event("stopped");
    let reason = st["body"]["reason"].as_str().unwrap().to_string();
    let tid = st["body"]["threadId"].as_i64().unwrap();
    let f = c.frames(tid)[0].clone();
    let sum = c.evaluate(f["id"].as_i64().unwrap(), "g_sum")["result"]
        .as_str()
        .unwrap()
        .to_string();
    (reason, tid, f["line"].as_i64().unwrap(), sum)
}

/// `command`, then the stop it leads to.
fn go(c: &mut DapClient, tid: i64, command: &str) -> Stop {
    c.ok(command, json!({"threadId": tid}));
    next_stop(c)
}

/// A session stopped at the `HITS`th hit of the loop line (the present), with a write
/// data breakpoint on `g_sum` set there, its condition made of the present's `g_sum` by
/// `condition`: the live thread and that value. `g_sum` is written by the instruction
/// right before the loop line's first one, so the watchpoint fires with the pc on that
/// breakpoint.
fn at_the_hit_watching(
    c: &mut DapClient,
    program: &std::path::Path,
    condition: impl Fn(&str) -> Option<String>,
) -> (i64, String) {
    let source = sample_path(SAMPLE);
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program, "reverseDebugging": true, "stdio": "pipes",
               "console": "internalConsole"}),
    );
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": source}, "breakpoints": [{"line": line_of(&source, "loop line")}]}),
    );
    c.ok("configurationDone", json!({}));
    let mut tid = 0;
    for hit in 1..=HITS {
        tid = c.event("stopped")["body"]["threadId"].as_i64().unwrap();
        if hit < HITS {
            c.ok("continue", json!({"threadId": tid}));
        }
    }
    let fid = c.frames(tid)[0]["id"].as_i64().unwrap();
    let sum = c.evaluate(fid, "g_sum")["result"]
        .as_str()
        .unwrap()
        .to_string();
    let info = c.ok(
        "dataBreakpointInfo",
        json!({"name": "g_sum", "frameId": fid}),
    );
    let mut bp = json!({"dataId": info["dataId"], "accessType": "write"});
    if let Some(cond) = condition(&sum) {
        bp["condition"] = json!(cond);
    }
    let body = c.ok("setDataBreakpoints", json!({"breakpoints": [bp]}));
    assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
    (tid, sum)
}

/// Reason, line and `g_sum` of stops (not their threads).
fn shown(v: &[Stop]) -> Vec<(String, i64, String)> {
    v.iter()
        .map(|(r, _, l, s)| (r.clone(), *l, s.clone()))
        .collect()
}

/// Going forward in a replay, a data breakpoint stops with the pc exactly on the
/// breakpoint that was the present's last move (the live program stopped there, the
/// `HITS`th arrival since the last system call). Resuming from it steps off that int3,
/// which must count as the arrival: else the present is missed and the replay runs
/// past it, making stops that never happened live (in the replay's thread) and
/// taking the live program for being further on than it is.
#[test]
fn a_watch_stop_on_the_presents_breakpoint_going_forward_reaches_the_present() {
    let program = build(SAMPLE, "gcc", &["-g", "-O0"]);
    let loop_line = line_of(&sample_path(SAMPLE), "loop line");
    const AFTER: usize = 3;
    // What the live program does from the hit with the watch set: its next writes.
    let mut live = DapClient::new();
    let (mut tid, _) = at_the_hit_watching(&mut live, &program, |_| None);
    let mut expected = Vec::new();
    for _ in 0..AFTER {
        let stop = go(&mut live, tid, "continue");
        tid = stop.1;
        expected.push(stop);
    }
    live.finish();
    assert!(
        expected
            .iter()
            .all(|(reason, _, line, _)| reason == "data breakpoint" && *line == loop_line),
        "{expected:?}"
    );

    // Back over the writes of the last two rounds (and the hit between them), then
    // forward over them: the stop right after each write is on the loop line's
    // breakpoint (an arrival there), the second one where the live program is; from
    // there the live program's next writes, in its thread.
    let mut c = DapClient::new();
    let (live_tid, present) = at_the_hit_watching(&mut c, &program, |_| None);
    let mut tid = live_tid;
    for want in ["data breakpoint", "breakpoint", "data breakpoint"] {
        let (reason, t, _, _) = go(&mut c, tid, "reverseContinue");
        assert_eq!(reason, want);
        assert_ne!(t, live_tid, "a replay shows the past");
        tid = t;
    }
    let (reason, t, line, _) = go(&mut c, tid, "continue");
    assert_eq!((reason.as_str(), line), ("data breakpoint", loop_line));
    assert_ne!(t, live_tid, "the round before the present's, replayed");
    let (reason, t, line, sum) = go(&mut c, t, "continue");
    assert_eq!(
        (reason.as_str(), line, sum.as_str()),
        ("data breakpoint", loop_line, present.as_str()),
        "right after the write, on the breakpoint where the program is"
    );
    let mut tid = t;
    let mut ours = Vec::new();
    for _ in 0..AFTER {
        let stop = go(&mut c, tid, "continue");
        tid = stop.1;
        ours.push(stop);
    }
    assert_eq!(
        shown(&ours),
        shown(&expected),
        "the live program's next writes"
    );
    assert!(
        ours.iter().all(|s| s.1 == live_tid),
        "the stops after the present are the live program's: {ours:?} (live thread {live_tid})"
    );
    c.ok("setDataBreakpoints", json!({"breakpoints": []}));
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": sample_path(SAMPLE)}, "breakpoints": []}),
    );
    c.ok("continue", json!({"threadId": tid}));
    assert_eq!(c.event("exited")["body"]["exitCode"], 0);
    c.finish();

    // The same with a condition false at the present's write: that trigger is passed
    // over (resumed without stepping off), so the int3 traps and the present is the
    // breakpoint's hit, the live program's own stop.
    let mut c = DapClient::new();
    let (live_tid, present) =
        at_the_hit_watching(&mut c, &program, |sum| Some(format!("g_sum != {sum}")));
    let mut tid = live_tid;
    for want in ["breakpoint", "data breakpoint"] {
        let (reason, t, _, _) = go(&mut c, tid, "reverseContinue");
        assert_eq!(reason, want);
        tid = t;
    }
    let (reason, t, line, _) = go(&mut c, tid, "continue");
    assert_eq!((reason.as_str(), line), ("data breakpoint", loop_line));
    let stop = go(&mut c, t, "continue");
    assert_eq!(
        stop,
        (
            "breakpoint".to_string(),
            live_tid,
            loop_line,
            present.clone()
        ),
        "the present: the live program at its hit"
    );
    let (reason, t, line, _) = go(&mut c, live_tid, "continue");
    assert_eq!(
        (reason.as_str(), t, line),
        ("data breakpoint", live_tid, loop_line),
        "the next round's write, live"
    );
    c.finish();
}

/// The loop's `i` at each of `n` stops, `command` sent before each: with the thread.
fn loop_stops(c: &mut DapClient, tid: &mut i64, command: &str, n: usize) -> Vec<(String, i64)> {
    (0..n)
        .map(|_| {
            c.ok(command, json!({"threadId": *tid}));
            let st = c.event("stopped");
            *tid = st["body"]["threadId"].as_i64().unwrap();
            let fid = c.frames(*tid)[0]["id"].as_i64().unwrap();
            let i = c.evaluate(fid, "i")["result"].as_str().unwrap().to_string();
            (i, *tid)
        })
        .collect()
}

/// The hit where a replay going forward reaches the present is the live program's own,
/// counted when it happened: a hit condition sees it with that count (before, it was
/// counted again there, so `% 2` passed over the present and then stopped at the hits
/// the live program passes over, and never at the ones it stops at).
#[test]
fn the_presents_hit_is_counted_once_going_forward_to_it() {
    let program = build(SAMPLE, "gcc", &["-g", "-O0"]);
    let source = sample_path(SAMPLE);
    let mut c = DapClient::new();
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program, "reverseDebugging": true, "stdio": "pipes",
               "console": "internalConsole"}),
    );
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": source}, "breakpoints": [
            {"line": line_of(&source, "loop line"), "hitCondition": "% 2"}]}),
    );
    c.ok("configurationDone", json!({}));
    let mut tid = c.event("stopped")["body"]["threadId"].as_i64().unwrap();
    let live_tid = tid;
    // Live: every second hit, the rounds with an odd `i`.
    let live = loop_stops(&mut c, &mut tid, "continue", 3);
    let odd = |from: i64| -> Vec<(String, i64)> {
        (0..3)
            .map(|k| ((from + 2 * k).to_string(), live_tid))
            .collect()
    };
    assert_eq!(live, odd(3));
    // Back a line, then forward: the present (i = 7, the live program again), then
    // the live program's next stops.
    c.ok("stepBack", json!({"threadId": tid}));
    tid = c.event("stopped")["body"]["threadId"].as_i64().unwrap();
    assert_ne!(tid, live_tid, "a replay");
    assert_eq!(loop_stops(&mut c, &mut tid, "continue", 3), odd(7));
    c.finish();
}
