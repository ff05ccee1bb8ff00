//! Going back in time in a multi-threaded program (issue 30; docs/reverse.md,
//! "Threads"): samples/c/rev_threads.c (4 threads adding their work to a mutex-protected
//! total) recorded under DAP with `"reverseDebugging": true` runs one thread at a time.
//! Its output and exit code are an undebugged run's; `reverseContinue` lands on the
//! earlier hits of the worker's tally line, in the thread that made them, with the
//! values the forward run showed there; `stepBack` goes back by lines in a worker;
//! forward again reaches the same hits, the present, then the live program; nothing is
//! left behind. A thread spinning without system calls is preempted and replayed to
//! the same point (samples/c/rev_spin.c); a point inside a preempted tight loop that
//! a replay cannot find without a branch counter is refused, never guessed.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};
use support::dap::{alive, build, children_of, line_of, sample_path, wait_until, DapClient};

const SAMPLE: &str = "c/rev_threads.c";

fn sample() -> PathBuf {
    build(SAMPLE, "gcc", &["-g", "-O0", "-pthread"])
}

/// What a hit of the tally line shows.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    index: String,
    round: String,
    v: String,
    total: String,
    /// Threads the process has there.
    threads: usize,
}

fn top(c: &mut DapClient, tid: i64) -> Value {
    c.frames(tid)[0].clone()
}

fn seen(c: &mut DapClient, tid: i64) -> Seen {
    let fid = top(c, tid)["id"].as_i64().unwrap();
    let mut get = |e: &str| c.evaluate(fid, e)["result"].as_str().unwrap().to_string();
    let (index, round, v, total) = (get("index"), get("round"), get("v"), get("total"));
    let threads = c.ok("threads", json!({}))["threads"]
        .as_array()
        .unwrap()
        .len();
    Seen {
        index,
        round,
        v,
        total,
        threads,
    }
}

fn stopped(c: &mut DapClient) -> (String, i64) {
    let st = c.event("stopped");
    (
        st["body"]["reason"].as_str().unwrap().to_string(),
        st["body"]["threadId"].as_i64().unwrap(),
    )
}

fn line(c: &mut DapClient, tid: i64) -> (String, i64) {
    let f = top(c, tid);
    (
        f["name"].as_str().unwrap().to_string(),
        f["line"].as_i64().unwrap(),
    )
}

#[test]
fn four_threads_recorded_go_back_to_their_hits_and_forward_to_the_live_end() {
    let program = sample();
    let plain = Command::new(&program).output().unwrap();
    assert!(plain.status.success());
    let plain_out = String::from_utf8(plain.stdout).unwrap();

    let src = sample_path(SAMPLE);
    let tally = line_of(&src, "/* tally */");
    let lock_line = line_of(&src, "pthread_mutex_lock(&lock);");
    let work_line = line_of(&src, "long v = work(index, round);");
    let mut c = DapClient::new();
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program, "stdio": "pipes", "reverseDebugging": true}),
    );
    let ev = c.event("capabilities");
    assert_eq!(ev["body"]["capabilities"]["supportsStepBack"], true, "{ev}");
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [{"line": tally}]}),
    );
    c.ok("configurationDone", json!({}));
    let pid = c.debuggee_pid.unwrap();

    // Forward: the first seven hits (a worker's five rounds, then the next worker's).
    let mut hits = Vec::new();
    let mut tids = Vec::new();
    let (reason, mut tid) = stopped(&mut c);
    assert_eq!(reason, "breakpoint");
    for k in 0..7 {
        assert_eq!(line(&mut c, tid), ("worker".to_string(), tally));
        hits.push(seen(&mut c, tid));
        tids.push(tid);
        if k < 6 {
            c.ok("continue", json!({"threadId": tid}));
            let (reason, t) = stopped(&mut c);
            assert_eq!(reason, "breakpoint");
            tid = t;
        }
    }
    assert_ne!(tids[4], tids[5], "the hits come from two threads: {hits:?}");
    assert_eq!(tids[0], tids[4]);
    assert_ne!(hits[4].index, hits[5].index);
    let present_tid = tid;

    // Back to the hits before, across the switch between the two threads (each
    // reverseContinue is a new replay, whose threads have ids of their own: the
    // thread is told by its `index` and the process's thread count).
    for k in [5, 4, 3] {
        c.ok("reverseContinue", json!({"threadId": tid}));
        let (reason, t) = stopped(&mut c);
        tid = t;
        assert_eq!(reason, "breakpoint");
        assert_eq!(line(&mut c, tid), ("worker".to_string(), tally));
        assert_eq!(seen(&mut c, tid), hits[k], "reverse-continue to hit {k}");
        assert_ne!(tid, tids[k], "a replay's thread");
    }

    // Back by lines in the worker: the lock, then the work of this round.
    c.ok("stepBack", json!({"threadId": tid}));
    let (reason, t) = stopped(&mut c);
    assert_eq!(reason, "step");
    tid = t;
    assert_eq!(line(&mut c, tid), ("worker".to_string(), lock_line));
    c.ok("stepBack", json!({"threadId": tid}));
    tid = stopped(&mut c).1;
    assert_eq!(line(&mut c, tid), ("worker".to_string(), work_line));
    let fid = top(&mut c, tid)["id"].as_i64().unwrap();
    assert_eq!(c.evaluate(fid, "round")["result"], hits[3].round.as_str());
    // The total before this round's tally: the one after hit 2's.
    assert_eq!(c.evaluate(fid, "total")["result"], hits[3].total.as_str());

    // Forward again by lines, to hit 3's tally with its values.
    for expect in [lock_line, tally] {
        c.ok("next", json!({"threadId": tid}));
        tid = stopped(&mut c).1;
        assert_eq!(line(&mut c, tid), ("worker".to_string(), expect));
    }
    assert_eq!(seen(&mut c, tid), hits[3]);

    // Forward through the replay to the present, then live.
    for k in [4, 5, 6] {
        c.ok("continue", json!({"threadId": tid}));
        let (reason, t) = stopped(&mut c);
        tid = t;
        assert_eq!(reason, "breakpoint");
        assert_eq!(seen(&mut c, tid), hits[k], "forward again to hit {k}");
    }
    assert_eq!(tid, present_tid, "the present is the live thread");
    c.ok("continue", json!({"threadId": tid}));
    let (reason, t) = stopped(&mut c);
    assert_eq!(reason, "breakpoint");
    tid = t;
    let live = seen(&mut c, tid);
    assert_eq!(live.index, hits[6].index, "live, the same worker goes on");
    assert_eq!(live.round, "2");
    assert!(
        children_of(pid).is_empty(),
        "the program has no child of ours"
    );
    let ours: Vec<i64> = children_of(i64::from(c.peer.pid()))
        .into_iter()
        .filter(|p| *p != pid)
        .collect();

    let exited = c.run_to_exit(&src, tid);
    assert_eq!(exited["body"]["exitCode"], 0);
    assert_eq!(
        c.stdout(),
        plain_out,
        "the output is an undebugged run's, once"
    );
    c.finish();
    assert!(
        wait_until(std::time::Duration::from_secs(5), || !alive(pid)),
        "the debuggee is gone"
    );
    for p in ours {
        assert!(!alive(p), "process {p} left behind");
    }
}

/// A thread that never makes a system call (samples/c/rev_spin.c: the main thread
/// spinning on a flag a worker sets) is preempted after a time slice; going back
/// replays the preemption where the recording made it (found by the thread's
/// registers), so the main thread sees what it saw, and forward again reaches the
/// present and the program's end with its output.
#[test]
fn a_preempted_thread_is_replayed_to_the_same_point() {
    let program = build("c/rev_spin.c", "gcc", &["-g", "-O0", "-pthread"]);
    let plain = Command::new(&program).output().unwrap();
    let plain_out = String::from_utf8(plain.stdout).unwrap();
    let src = sample_path("c/rev_spin.c");
    let after = line_of(&src, "/* after the spin */");
    let print = line_of(&src, "/* print */");
    let spin = line_of(&src, "while (!ready)");
    let call = line_of(&src, "/* a call */");
    let mut c = DapClient::new();
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program, "stdio": "pipes", "reverseDebugging": true}),
    );
    c.event("capabilities");
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [{"line": after}, {"line": print}]}),
    );
    c.ok("configurationDone", json!({}));
    let pid = c.debuggee_pid.unwrap();
    let get = |c: &mut DapClient, tid: i64, e: &str| -> String {
        let fid = top(c, tid)["id"].as_i64().unwrap();
        c.evaluate(fid, e)["result"].as_str().unwrap().to_string()
    };
    let (reason, tid) = stopped(&mut c);
    assert_eq!(reason, "breakpoint");
    assert_eq!(line(&mut c, tid), ("main".to_string(), after));
    let produced = get(&mut c, tid, "produced");
    c.ok("continue", json!({"threadId": tid}));
    let (_, tid) = stopped(&mut c);
    assert_eq!(line(&mut c, tid), ("main".to_string(), print));
    assert_eq!(get(&mut c, tid, "seen"), produced);

    c.ok("reverseContinue", json!({"threadId": tid}));
    let (reason, tid) = stopped(&mut c);
    assert_eq!(reason, "breakpoint");
    assert_eq!(line(&mut c, tid), ("main".to_string(), after));
    assert_eq!(
        get(&mut c, tid, "produced"),
        produced,
        "the past, as it was"
    );
    // Back by lines: the call after the spin, then the spin's last test of the flag.
    c.ok("stepBack", json!({"threadId": tid}));
    let (reason, tid) = stopped(&mut c);
    assert_eq!(reason, "step", "{:?}", c.output);
    assert_eq!(line(&mut c, tid), ("main".to_string(), call));
    c.ok("stepBack", json!({"threadId": tid}));
    let (reason, tid) = stopped(&mut c);
    assert_eq!(reason, "step", "{:?}", c.output);
    assert_eq!(line(&mut c, tid), ("main".to_string(), spin));
    c.ok("continue", json!({"threadId": tid}));
    let (_, tid) = stopped(&mut c);
    assert_eq!(line(&mut c, tid), ("main".to_string(), after));
    c.ok("continue", json!({"threadId": tid}));
    let (_, tid) = stopped(&mut c);
    assert_eq!(tid, pid, "the present is the live process");
    assert_eq!(
        get(&mut c, tid, "seen"),
        produced,
        "forward again to the present"
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
    assert_eq!(stdout, plain_out);
    c.finish();
    assert!(
        wait_until(std::time::Duration::from_secs(5), || !alive(pid)),
        "the debuggee is gone"
    );
}

/// A thread preempted in a tight loop that changes its registers at every pass
/// (samples/c/eng_threads.c's worker incrementing a counter): the recording goes on
/// and the program runs right, but a replay cannot find that point again without a
/// branch counter: going back says the recording diverged there, and the live process
/// is shown again, never a wrong past.
#[test]
fn a_point_in_a_preempted_tight_loop_is_refused_not_guessed() {
    let program = build("c/eng_threads.c", "gcc", &["-g", "-O0", "-pthread"]);
    let src = sample_path("c/eng_threads.c");
    let last = line_of(&src, "return 0;");
    let mut c = DapClient::new();
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program, "stdio": "pipes", "reverseDebugging": true}),
    );
    c.event("capabilities");
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [{"line": last}]}),
    );
    c.ok("configurationDone", json!({}));
    let pid = c.debuggee_pid.unwrap();
    let (reason, tid) = stopped(&mut c);
    assert_eq!(reason, "breakpoint");
    assert_eq!(tid, pid);
    c.ok("reverseContinue", json!({"threadId": tid}));
    let st = c.event("stopped");
    let text: String = c.output.iter().map(|(_, t)| t.as_str()).collect();
    assert!(text.contains("the recording diverged here"), "{text}");
    assert!(text.contains("branch counter"), "{text}");
    assert_eq!(st["body"]["threadId"], pid, "the live process again: {st}");
    c.ok("continue", json!({"threadId": tid}));
    let exited = c.event("exited");
    assert_eq!(exited["body"]["exitCode"], 0);
    let stdout: String = c
        .output
        .iter()
        .filter(|(cat, _)| cat == "stdout")
        .map(|(_, t)| t.as_str())
        .collect();
    assert_eq!(stdout, "6\n");
    c.finish();
    assert!(
        wait_until(std::time::Duration::from_secs(5), || !alive(pid)),
        "the debuggee is gone"
    );
}
