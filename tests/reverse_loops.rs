//! Going back by line where no system call happened since (issue 30): samples/c/rev_loop.c
//! is stopped at the 6th hit of its loop line, then `stepBack` three times, each compared
//! with gdb's `reverse-next` under `record full` (the line and the values of `i`, `acc`
//! and `g_sum`); then forward again to the point it was at (the same hit, the same
//! values) and on, live, to the next hit and the end.
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
