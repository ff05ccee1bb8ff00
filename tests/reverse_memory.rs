//! Snapshots under memory pressure (issue 30): with the machine's available memory below
//! the snapshot floor (forced here with `TANDEM_SNAPSHOT_MIN_AVAILABLE_MB`), a recording
//! of samples/c/rev_heap.c — a heap rewritten a stripe at a time between system calls,
//! which makes each snapshot own a copy of what changed — makes no snapshot past the
//! first and says so once in the log, and going back still shows the past exactly: the
//! hit of an earlier round, its round number, the heap stripe that round wrote, and the
//! stripe it had not written yet.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use serde_json::json;
use support::dap::{build, line_of, sample_path, DapClient};
use support::{Peer, Protocol};

const SAMPLE: &str = "c/rev_heap.c";

/// `round_no` and the first byte of the stripes of rounds 1 and 2, at the top frame.
fn state(c: &mut DapClient, tid: i64) -> (String, String, String) {
    let fid = c.frames(tid)[0]["id"].as_i64().unwrap();
    let mut get = |e: &str| c.evaluate(fid, e)["result"].as_str().unwrap().to_string();
    (
        get("round"),
        get("heap[heap_len / 8 * 1]"),
        get("heap[heap_len / 8 * 2]"),
    )
}

#[test]
fn going_back_works_when_memory_is_too_short_for_snapshots() {
    let program = build(SAMPLE, "gcc", &["-g", "-O0"]);
    let source = sample_path(SAMPLE);
    let line = line_of(&source, "LINE_ROUND");
    let mut c = DapClient::with_peer(Peer::spawn(
        Protocol::Dap,
        &[],
        &[
            ("TANDEM_SNAPSHOT_MIN_AVAILABLE_MB", "1000000000"),
            ("TANDEM_LOG", "tracer=debug"),
            // Every call traced: with the calls buffered in the program this short run
            // has too few events for a second snapshot to be due, and the floor would
            // never be asked (what is checked here is the floor, not the buffer).
            ("TANDEM_SYSCALL_BUFFER", "0"),
        ],
    ));
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program, "args": ["16", "40"], "reverseDebugging": true,
               "stdio": "pipes", "console": "internalConsole"}),
    );
    let bp = |cond: &str| json!({"source": {"path": source}, "breakpoints": [{"line": line, "condition": cond}]});
    c.ok("setBreakpoints", bp("round == 30"));
    c.ok("configurationDone", json!({}));
    let st = c.event("stopped");
    let tid = st["body"]["threadId"].as_i64().unwrap();
    // Round 30 rewrote stripe 6; rounds 25 and 26 last wrote stripes 1 and 2.
    assert_eq!(
        state(&mut c, tid),
        ("30".into(), "25 '\\031'".into(), "26 '\\032'".into())
    );
    c.ok("setBreakpoints", bp("round == 1"));
    c.ok("reverseContinue", json!({"threadId": tid}));
    let st = c.event("stopped");
    assert_eq!(st["body"]["reason"], "breakpoint", "{st}");
    let tid = st["body"]["threadId"].as_i64().unwrap();
    // Round 1 has just written stripe 1; stripe 2 is still the initial 0xff.
    assert_eq!(
        state(&mut c, tid),
        ("1".into(), "1 '\\001'".into(), "255 '\\377'".into())
    );
    c.ok("setBreakpoints", bp("round == 0"));
    c.ok("continue", json!({"threadId": tid}));
    let exited = c.event("exited");
    assert_eq!(exited["body"]["exitCode"], 0, "{exited}");
    c.event("terminated");
    let log = c.peer.stderr();
    assert_eq!(
        log.matches("memory is short").count(),
        1,
        "said once:\n{}",
        &log[log.len().saturating_sub(3000)..]
    );
    // The first snapshot only (the recording's start): the tracer logs each one made.
    let made = log
        .lines()
        .filter(|l| l.contains("DEBUG") && l.contains(" snapshot ") && l.contains("pid"))
        .count();
    assert_eq!(made, 1, "snapshots made");
    c.finish();
}
