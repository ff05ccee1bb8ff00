//! Going forward to the present from a point of its interval that a search of the past
//! reached by other moves (issue 30; docs/reverse.md, "Replay"). samples/c/rev_follow.c
//! makes no system call in its loop, so wherever in the loop the program stops, the
//! whole loop is in the interval of the present: the live moves there are "the 5th trap
//! in `add`" and the steps after it, while a point found from a replay (a restartFrame,
//! a stepBack, a reverseContinue) is reached by traps at other addresses the search
//! planted. Going forward from such a point must still find the present — the live
//! process takes over there, its thread is the one that stops — and run on exactly as
//! the live program would: a replay that thought no arrival in `add` was made yet ran
//! past the present, stopped at a hit that never happened live, and ended with "the
//! replay reached the end of the recording without reaching the present".
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use support::dap::{build, line_of, sample_path, DapClient};

const SAMPLE: &str = "c/rev_follow.c";

/// A session at its first stop: the client, the source and the live thread (the
/// debuggee's pid: its main thread).
struct At {
    c: DapClient,
    src: PathBuf,
    live: i64,
}

/// Launched recording, stopped live at the hit of `add` whose `v` is 12 (its 5th call).
fn at_the_hit() -> At {
    let program = build(SAMPLE, "gcc", &["-g", "-O0"]);
    let src = sample_path(SAMPLE);
    let mut c = DapClient::new();
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program, "stdio": "pipes", "reverseDebugging": true,
               "console": "internalConsole"}),
    );
    breakpoints(&mut c, &src, &[("add line", "v == 12")]);
    c.ok("configurationDone", json!({}));
    let (reason, live) = stop(&mut c);
    assert_eq!(reason, "breakpoint");
    assert_eq!(
        Some(live),
        c.debuggee_pid,
        "the first stop is the live process's"
    );
    assert_eq!(eval(&mut c, live, "v"), "12");
    At { c, src, live }
}

/// Sets the source's breakpoints: (line marker, condition).
fn breakpoints(c: &mut DapClient, src: &Path, bps: &[(&str, &str)]) {
    let list: Vec<Value> = bps
        .iter()
        .map(|(m, cond)| json!({"line": line_of(src, m), "condition": cond}))
        .collect();
    let body = c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": list}),
    );
    for bp in body["breakpoints"].as_array().unwrap() {
        assert_eq!(bp["verified"], true, "{bp}");
    }
}

/// The next stop: its reason and thread.
fn stop(c: &mut DapClient) -> (String, i64) {
    let st = c.event("stopped");
    (
        st["body"]["reason"].as_str().unwrap().to_string(),
        st["body"]["threadId"].as_i64().unwrap(),
    )
}

/// `command` on `tid`, then the stop it leads to.
fn go(c: &mut DapClient, tid: i64, command: &str) -> (String, i64) {
    c.ok(command, json!({"threadId": tid}));
    stop(c)
}

/// The function and line of the top frame.
fn top(c: &mut DapClient, tid: i64) -> (String, i64) {
    let f = c.frames(tid)[0].clone();
    (
        f["name"].as_str().unwrap().to_string(),
        f["line"].as_i64().unwrap(),
    )
}

/// `e` evaluated in frame `depth` of `tid`.
fn eval_in(c: &mut DapClient, tid: i64, depth: usize, e: &str) -> String {
    let fid = c.frames(tid)[depth]["id"].as_i64().unwrap();
    c.evaluate(fid, e)["result"].as_str().unwrap().to_string()
}

fn eval(c: &mut DapClient, tid: i64, e: &str) -> String {
    eval_in(c, tid, 0, e)
}

/// `restartFrame` of the frame at `depth`; the stop's thread.
fn restart(c: &mut DapClient, tid: i64, depth: usize) -> i64 {
    let fid = c.frames(tid)[depth]["id"].as_i64().unwrap();
    c.ok("restartFrame", json!({"frameId": fid}));
    let (reason, tid) = stop(c);
    assert_eq!(reason, "restart");
    tid
}

/// With no breakpoint left, `continue` runs to the end as the live program does: no
/// stop on the way, its exit code and output, and nothing said about the recording.
fn on_to_the_end(mut at: At, tid: i64) {
    breakpoints(&mut at.c, &at.src, &[]);
    at.c.ok("continue", json!({"threadId": tid}));
    let ev =
        at.c.first_event_of(&["stopped", "exited"], Duration::from_secs(60))
            .expect("the program ends");
    assert_eq!(
        ev["event"],
        "exited",
        "{ev} {:?} {:?}",
        top(&mut at.c, tid),
        at.c.output
    );
    assert_eq!(ev["body"]["exitCode"], 0);
    at.c.event("terminated");
    let stdout: String =
        at.c.output
            .iter()
            .filter(|(cat, _)| cat == "stdout")
            .map(|(_, t)| t.as_str())
            .collect();
    assert_eq!(stdout, "total 45\n");
    let said: Vec<&(String, String)> = at
        .c
        .output
        .iter()
        .filter(|(cat, t)| cat != "stdout" && (t.contains("recording") || t.contains("diverged")))
        .collect();
    assert!(said.is_empty(), "{said:?}");
    at.c.finish();
}

/// The lead's flow (tests/reverse_watch.rs has it on a sample that writes in its loop):
/// live at the hit then out of `add`; restartFrame of `main` (a replay at its start),
/// forward to the hit again, a line further, restartFrame of `add`: that point is the
/// 5th arrival in `add`, reached by traps at `main`'s entry and its prologue's end.
#[test]
fn restarted_frames_then_on_to_the_end_as_the_live_program() {
    let mut at = at_the_hit();
    let live = at.live;
    let c = &mut at.c;
    let (_, tid) = go(c, live, "stepOut");
    assert_eq!(tid, live);
    assert_eq!(top(c, tid).0, "main");
    assert_eq!(eval(c, tid, "i"), "4");
    assert_eq!(eval(c, tid, "g_total"), "30");

    let tid = restart(c, tid, 0);
    assert_ne!(tid, live, "a replay");
    assert_eq!(top(c, tid), ("main".into(), line_of(&at.src, "for (int i")));
    assert_eq!(eval(c, tid, "g_total"), "0");
    let (reason, tid) = go(c, tid, "continue");
    assert_eq!(reason, "breakpoint");
    assert_ne!(tid, live, "before the present: a replay");
    assert_eq!(eval(c, tid, "v"), "12");
    let (_, tid) = go(c, tid, "next");
    assert_eq!(eval(c, tid, "g_total"), "30");
    assert_eq!(top(c, tid).0, "add");
    let tid = restart(c, tid, 0);
    assert_eq!(top(c, tid), ("add".into(), line_of(&at.src, "add line")));
    assert_eq!(eval(c, tid, "v"), "12");
    assert_eq!(eval(c, tid, "g_total"), "18");
    assert_eq!(eval_in(c, tid, 1, "i"), "4");
    on_to_the_end(at, tid);
}

/// A replay from `main`'s start, stopped at the call of `add` where `i` is `k`: a point
/// of the present's interval before it, reached by other moves than the live ones.
fn replay_at_the_call(at: &mut At, k: i64) -> i64 {
    let tid = restart(&mut at.c, at.live, 1);
    assert_ne!(tid, at.live, "a replay");
    let cond = format!("i == {k}");
    breakpoints(
        &mut at.c,
        &at.src,
        &[("add line", "v == 12"), ("call line", &cond)],
    );
    let (reason, tid) = go(&mut at.c, tid, "continue");
    assert_eq!(reason, "breakpoint");
    assert_ne!(tid, at.live, "before the present: a replay");
    assert_eq!(top(&mut at.c, tid).1, line_of(&at.src, "call line"));
    assert_eq!(eval(&mut at.c, tid, "i"), k.to_string());
    tid
}

/// Forward from a replay to the hit the live program is stopped at: the present, so the
/// stop is the live process's.
fn continue_to_the_present(at: &mut At, tid: i64) {
    let (reason, tid) = go(&mut at.c, tid, "continue");
    assert_eq!(reason, "breakpoint");
    assert_eq!(
        tid, at.live,
        "the hit is the present: the live process stops"
    );
    assert_eq!(eval(&mut at.c, tid, "v"), "12");
    assert_eq!(eval(&mut at.c, tid, "g_total"), "18");
    assert_eq!(eval_in(&mut at.c, tid, 1, "i"), "4");
}

/// A step back by line from a replay found by other moves: from the call where `i` is 2
/// to the loop's line before it, reached by a search whose moves are traps on `main`'s
/// lines.
#[test]
fn a_step_back_then_forward_to_the_present() {
    let mut at = at_the_hit();
    let tid = replay_at_the_call(&mut at, 2);
    breakpoints(&mut at.c, &at.src, &[("add line", "v == 12")]);
    let (reason, tid) = go(&mut at.c, tid, "stepBack");
    assert_eq!(reason, "step");
    assert_ne!(tid, at.live);
    assert_eq!(
        top(&mut at.c, tid),
        ("main".into(), line_of(&at.src, "for (int i"))
    );
    // The start of the line: its `i++`, not made yet.
    assert_eq!(eval(&mut at.c, tid, "i"), "1");
    assert_eq!(eval(&mut at.c, tid, "g_total"), "3");
    continue_to_the_present(&mut at, tid);
    let live = at.live;
    on_to_the_end(at, live);
}

/// A reverse-continue from a replay found by other moves: the call where `i` is 1.
#[test]
fn a_reverse_continue_then_forward_to_the_present() {
    let mut at = at_the_hit();
    let tid = replay_at_the_call(&mut at, 3);
    breakpoints(
        &mut at.c,
        &at.src,
        &[("add line", "v == 12"), ("call line", "i == 1")],
    );
    let (reason, tid) = go(&mut at.c, tid, "reverseContinue");
    assert_eq!(reason, "breakpoint");
    assert_ne!(tid, at.live);
    assert_eq!(top(&mut at.c, tid).1, line_of(&at.src, "call line"));
    assert_eq!(eval(&mut at.c, tid, "i"), "1");
    breakpoints(&mut at.c, &at.src, &[("add line", "v == 12")]);
    continue_to_the_present(&mut at, tid);
    let live = at.live;
    on_to_the_end(at, live);
}

/// The present one line past the hit (`next` live); from a point found by a step back
/// from a replay, forward to the hit (a replay still) and a `next` onto the present.
#[test]
fn a_step_forward_onto_the_present() {
    let mut at = at_the_hit();
    let live = at.live;
    let (_, tid) = go(&mut at.c, live, "next");
    assert_eq!(tid, live);
    let present = top(&mut at.c, tid);
    assert_eq!(present.0, "add");
    assert_ne!(present.1, line_of(&at.src, "add line"));
    assert_eq!(eval(&mut at.c, tid, "g_total"), "30");

    let tid = replay_at_the_call(&mut at, 4);
    breakpoints(&mut at.c, &at.src, &[("add line", "v == 12")]);
    let (reason, tid) = go(&mut at.c, tid, "stepBack");
    assert_eq!(reason, "step");
    assert_eq!(eval(&mut at.c, tid, "i"), "3");
    let (reason, tid) = go(&mut at.c, tid, "continue");
    assert_eq!(reason, "breakpoint");
    assert_ne!(tid, live, "the hit is before the present: a replay");
    assert_eq!(eval(&mut at.c, tid, "v"), "12");
    let (_, tid) = go(&mut at.c, tid, "next");
    assert_eq!(tid, live, "the step ends at the present: the live process");
    assert_eq!(top(&mut at.c, tid), present);
    assert_eq!(eval(&mut at.c, tid, "g_total"), "30");
    on_to_the_end(at, tid);
}

/// The pc of the top frame.
fn pc(c: &mut DapClient, tid: i64) -> String {
    c.frames(tid)[0]["instructionPointerReference"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The present two instructions into the hit's line (stepped live): going forward in a
/// replay, those steps are made as the live process made them, and an instruction
/// breakpoint between them, set in the replay, stops there — the steps did not run
/// over it. Going back from that stop and forward again finds it again, and a step
/// from it reaches the present.
#[test]
fn a_breakpoint_among_the_live_steps_stops_going_forward() {
    let mut at = at_the_hit();
    let live = at.live;
    let stepi = json!({"threadId": live, "granularity": "instruction"});
    at.c.ok("next", stepi.clone());
    assert_eq!(stop(&mut at.c).1, live);
    let between = pc(&mut at.c, live);
    at.c.ok("next", stepi);
    assert_eq!(stop(&mut at.c).1, live);
    let present = pc(&mut at.c, live);

    let tid = restart(&mut at.c, live, 1);
    assert_ne!(tid, live, "a replay");
    let body = at.c.ok(
        "setInstructionBreakpoints",
        json!({"breakpoints": [{"instructionReference": between, "condition": "v == 12"}]}),
    );
    assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
    let (reason, tid) = go(&mut at.c, tid, "continue");
    assert_eq!(reason, "breakpoint");
    assert_ne!(tid, live, "before the present: a replay");
    assert_eq!(eval(&mut at.c, tid, "v"), "12");
    for round in 0..2 {
        let (reason, tid) = go(&mut at.c, tid, "continue");
        assert_eq!(reason, "instruction breakpoint", "round {round}");
        assert_ne!(tid, live, "before the present: a replay");
        assert_eq!(pc(&mut at.c, tid), between);
        assert_eq!(eval(&mut at.c, tid, "v"), "12");
        if round == 0 {
            let (reason, back) = go(&mut at.c, tid, "reverseContinue");
            assert_eq!(reason, "breakpoint", "back to the hit");
            assert_eq!(eval(&mut at.c, back, "v"), "12");
            assert_ne!(pc(&mut at.c, back), between);
            continue;
        }
        at.c.ok(
            "next",
            json!({"threadId": tid, "granularity": "instruction"}),
        );
        let (_, tid) = stop(&mut at.c);
        assert_eq!(tid, live, "the step ends at the present: the live process");
        assert_eq!(pc(&mut at.c, tid), present);
    }
    at.c.ok("setInstructionBreakpoints", json!({"breakpoints": []}));
    on_to_the_end(at, live);
}
