//! Stepping by instruction over the program's own `syscall` instruction while recording
//! (issue 30): the step runs as PTRACE_SYSCALL from the instruction and from the call's
//! entry stop too, so the call is recorded with its result. samples/c/rev_sysinsn.c makes
//! getpid by inline `syscall`; after stepping over it the value is the pid, and going
//! back (a replay through that call from the recording's start) and forward again shows
//! the same values, ending live with the program's own output. (A single-step from the
//! entry stop would run the call with no exit stop: the recording would miss it and
//! every replay diverge there — the cause of the four-thread stepBack regression, where
//! a search's breakpoint sat on a `syscall` in glibc's start_thread.)
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use serde_json::{json, Value};
use support::dap::{build, line_of, sample_path, DapClient};

const SAMPLE: &str = "c/rev_sysinsn.c";

fn stopped(c: &mut DapClient) -> (String, i64) {
    let st = c.event("stopped");
    (
        st["body"]["reason"].as_str().unwrap().to_string(),
        st["body"]["threadId"].as_i64().unwrap(),
    )
}

fn top(c: &mut DapClient, tid: i64) -> Value {
    c.frames(tid)[0].clone()
}

fn eval(c: &mut DapClient, tid: i64, e: &str) -> String {
    let fid = top(c, tid)["id"].as_i64().unwrap();
    c.evaluate(fid, e)["result"].as_str().unwrap().to_string()
}

/// The two bytes at the top frame's pc.
fn insn_at_pc(c: &mut DapClient, tid: i64) -> Vec<u8> {
    let ip = top(c, tid)["instructionPointerReference"]
        .as_str()
        .unwrap()
        .to_string();
    let read = c.ok("readMemory", json!({"memoryReference": ip, "count": 2}));
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(read["data"].as_str().unwrap())
        .unwrap()
}

#[test]
fn a_syscall_instruction_stepped_over_is_recorded_and_replayed() {
    let program = build(SAMPLE, "gcc", &["-g", "-O0"]);
    let source = sample_path(SAMPLE);
    let sys_line = line_of(&source, "syscall line");
    let after_line = line_of(&source, "after line");
    let loop_line = line_of(&source, "loop line");
    let mut c = DapClient::new();
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program, "reverseDebugging": true, "stdio": "pipes"}),
    );
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": source}, "breakpoints": [{"line": sys_line}]}),
    );
    c.ok("configurationDone", json!({}));
    let pid = c.debuggee_pid.unwrap().to_string();
    let (reason, mut tid) = stopped(&mut c);
    assert_eq!(reason, "breakpoint");

    // By instruction to the `syscall`, then over it.
    let mut k = 0;
    while insn_at_pc(&mut c, tid) != [0x0f, 0x05] {
        k += 1;
        assert!(k < 10, "no syscall instruction on the syscall line");
        c.ok(
            "stepIn",
            json!({"threadId": tid, "granularity": "instruction"}),
        );
        tid = stopped(&mut c).1;
    }
    c.ok(
        "next",
        json!({"threadId": tid, "granularity": "instruction"}),
    );
    let (reason, t) = stopped(&mut c);
    tid = t;
    assert_eq!(reason, "step");
    assert_eq!(
        top(&mut c, tid)["line"],
        sys_line,
        "right after the syscall"
    );
    assert_eq!(eval(&mut c, tid, "$rax"), pid, "the call's result");

    // On: the line after the call, then two hits of the loop line.
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": source},
               "breakpoints": [{"line": after_line}, {"line": loop_line}]}),
    );
    c.ok("continue", json!({"threadId": tid}));
    let (reason, t) = stopped(&mut c);
    tid = t;
    assert_eq!(reason, "breakpoint");
    assert_eq!(top(&mut c, tid)["line"], after_line);
    assert_eq!(eval(&mut c, tid, "g_pid"), pid);
    let acc = eval(&mut c, tid, "acc");
    for i in ["0", "1"] {
        c.ok("continue", json!({"threadId": tid}));
        let (reason, t) = stopped(&mut c);
        tid = t;
        assert_eq!(reason, "breakpoint");
        assert_eq!(eval(&mut c, tid, "i"), i);
    }

    // Back: each a replay from the recording's start through the call.
    c.ok("reverseContinue", json!({"threadId": tid}));
    let (reason, t) = stopped(&mut c);
    tid = t;
    assert_eq!(reason, "breakpoint", "{:?}", c.output);
    assert_eq!(eval(&mut c, tid, "i"), "0");
    c.ok("reverseContinue", json!({"threadId": tid}));
    let (reason, t) = stopped(&mut c);
    tid = t;
    assert_eq!(reason, "breakpoint", "{:?}", c.output);
    assert_eq!(top(&mut c, tid)["line"], after_line);
    assert_eq!(eval(&mut c, tid, "g_pid"), pid, "the recorded pid");
    assert_eq!(eval(&mut c, tid, "acc"), acc);

    // Forward to the present and on, live, to the end.
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": source}, "breakpoints": []}),
    );
    c.ok("continue", json!({"threadId": tid}));
    let exited = c.event("exited");
    assert_eq!(exited["body"]["exitCode"], 0);
    let stdout: String = c
        .output
        .iter()
        .filter(|(cat, _)| cat == "stdout")
        .map(|(_, t)| t.as_str())
        .collect();
    let words: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(words.len(), 3, "{stdout}");
    assert_eq!(words[0], pid, "the pid the call returned");
    assert_eq!(words[1], pid, "getpid agrees");
    c.finish();
}
