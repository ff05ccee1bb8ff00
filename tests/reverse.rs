//! Going back in time over DAP (issue 30, first slice; docs/reverse.md): a launch with
//! `"reverseDebugging": true` records samples/c/rev_io.c (a file, the time, its pid and
//! getrandom() in, stdout and a file out). `reverseContinue` lands on the earlier hits
//! with the values seen there when they happened; `stepBack` by line goes where gdb's
//! `reverse-next` under `record full` goes, by instruction where `reverse-stepi` goes;
//! forward again reaches the same values and then the live program; the program's
//! output happens once; nothing is left behind. Without the attribute nothing is
//! advertised and the reverse requests say why they cannot run. A program that forks
//! (samples/c/forks.c) is recorded up to its first fork, then goes on live, unharmed.
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
use support::dap::{
    alive, build, children_of, line_of, sample_path, scratch_dir, wait_until, DapClient,
};
use support::gdb_record::gdb_record_batch;

const SAMPLE: &str = "c/rev_io.c";

fn sample() -> PathBuf {
    build(SAMPLE, "gcc", &["-g", "-O0"])
}

/// What a hit of the note line shows.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    i: String,
    r: String,
    sum: String,
}

fn top(c: &mut DapClient, tid: i64) -> Value {
    c.frames(tid)[0].clone()
}

fn seen(c: &mut DapClient, tid: i64) -> Seen {
    let fid = top(c, tid)["id"].as_i64().unwrap();
    let mut get = |e: &str| c.evaluate(fid, e)["result"].as_str().unwrap().to_string();
    Seen {
        i: get("i"),
        r: get("r"),
        sum: get("g_sum"),
    }
}

/// Waits for the next stop; its reason and thread.
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

fn pc_of(frame: &Value) -> u64 {
    let text = frame["instructionPointerReference"].as_str().unwrap();
    u64::from_str_radix(text.trim_start_matches("0x"), 16).unwrap()
}

/// gdb under `record full` from the first hit of the note line: the lines three
/// `reverse-next`s land on after going back one hit, and how many bytes before the
/// note line's pc one `reverse-stepi` goes. gdb records only with glibc's
/// AVX-512/AVX2 routines off (the tunables), and not through the vDSO's rdtscp, so it
/// starts recording at the first hit.
fn gdb_oracle(program: &Path, input: &Path, output: &Path) -> (Vec<i64>, u64) {
    let note = line_of(&sample_path(SAMPLE), "note line");
    let cmds: Vec<String> = vec![
        "set pagination off".into(),
        "set environment GLIBC_TUNABLES glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX2_Usable,-AVX2,-EVEX,-BMI2".into(),
        format!("break rev_io.c:{note}"),
        format!("run {} {}", input.display(), output.display()),
        "record full".into(),
        "continue".into(),
        "continue".into(),
        "reverse-continue".into(),
        "reverse-next".into(),
        "info line *$pc".into(),
        "reverse-next".into(),
        "info line *$pc".into(),
        "reverse-next".into(),
        "info line *$pc".into(),
        "next".into(),
        "next".into(),
        "next".into(),
        "echo HIT=".into(),
        "output (long)$pc".into(),
        "echo \n".into(),
        "reverse-stepi".into(),
        "echo BACK=".into(),
        "output (long)$pc".into(),
        "echo \n".into(),
    ];
    let (stdout, stderr) = gdb_record_batch(program, &cmds);
    let lines: Vec<i64> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("Line "))
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    let pc = |tag: &str| -> u64 {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(tag))
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or_else(|| panic!("gdb gave no {tag}:\n{stdout}\n{stderr}"))
    };
    let offset = pc("HIT=") - pc("BACK=");
    assert_eq!(
        lines.len(),
        3,
        "gdb's reverse-next lines:\n{stdout}\n{stderr}"
    );
    (lines, offset)
}

#[test]
fn reverse_continue_and_step_back_show_the_past_and_effects_happen_once() {
    let program = sample();
    let dir = scratch_dir("reverse-io");
    let input = dir.join("in.txt");
    let output = dir.join("out.txt");
    let gdb_out = dir.join("gdb-out.txt");
    std::fs::write(&input, "from the file\n").unwrap();
    let (gdb_lines, gdb_offset) = gdb_oracle(&program, &input, &gdb_out);

    let src = sample_path(SAMPLE);
    let note_line = line_of(&src, "note line");
    let mut c = DapClient::new();
    let caps = c.initialize();
    assert!(caps.get("supportsStepBack").is_none(), "{caps}");
    c.ok(
        "launch",
        json!({"program": program, "args": [input, output], "stdio": "pipes",
               "reverseDebugging": true}),
    );
    let ev = c.event("capabilities");
    assert_eq!(ev["body"]["capabilities"]["supportsStepBack"], true, "{ev}");
    let log_line = line_of(&src, "fprintf(out, \"%d %d\\n\"");
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [
            {"line": note_line}, {"line": log_line, "logMessage": "logged {i}"}]}),
    );
    c.ok("configurationDone", json!({}));
    let pid = c.debuggee_pid;
    let mut hits = Vec::new();
    let (reason, mut tid) = stopped(&mut c);
    assert_eq!(reason, "breakpoint");
    for k in 0..5 {
        hits.push(seen(&mut c, tid));
        if k < 4 {
            c.ok("continue", json!({"threadId": tid}));
            tid = stopped(&mut c).1;
        }
    }
    let is: Vec<&str> = hits.iter().map(|h| h.i.as_str()).collect();
    assert_eq!(is, ["0", "1", "2", "3", "4"]);

    // Back to the hits before: the values they had.
    for k in [3, 2] {
        let started = std::time::Instant::now();
        c.ok("reverseContinue", json!({"threadId": tid}));
        let (reason, t) = stopped(&mut c);
        eprintln!("reverseContinue: {:?}", started.elapsed());
        tid = t;
        assert_eq!(reason, "breakpoint");
        assert_eq!(seen(&mut c, tid), hits[k], "reverse-continue to hit {k}");
        assert_eq!(line(&mut c, tid), ("note".to_string(), note_line));
    }

    // Back by lines, as gdb's reverse-next goes: out of note into main, then back.
    let mut ours = Vec::new();
    for _ in 0..3 {
        let started = std::time::Instant::now();
        c.ok("stepBack", json!({"threadId": tid}));
        let (reason, t) = stopped(&mut c);
        eprintln!("stepBack: {:?}", started.elapsed());
        tid = t;
        assert_eq!(reason, "step");
        let (f, l) = line(&mut c, tid);
        assert_eq!(f, "main");
        ours.push(l);
    }
    assert_eq!(ours, gdb_lines, "stepBack lines vs gdb reverse-next");

    // Forward again: two lines, then the call stops at the breakpoint with hit 2's values.
    for expect in [gdb_lines[1], gdb_lines[0]] {
        c.ok("next", json!({"threadId": tid}));
        let (_, t) = stopped(&mut c);
        tid = t;
        assert_eq!(line(&mut c, tid), ("main".to_string(), expect));
    }
    c.ok("next", json!({"threadId": tid}));
    let (reason, t) = stopped(&mut c);
    tid = t;
    assert_eq!(reason, "breakpoint");
    assert_eq!(seen(&mut c, tid), hits[2]);

    // One instruction back, where gdb's reverse-stepi goes, and forward again.
    let hit_pc = pc_of(&top(&mut c, tid));
    c.ok(
        "stepBack",
        json!({"threadId": tid, "granularity": "instruction"}),
    );
    tid = stopped(&mut c).1;
    let back_pc = pc_of(&top(&mut c, tid));
    assert_eq!(
        hit_pc - back_pc,
        gdb_offset,
        "stepBack by instruction vs reverse-stepi"
    );
    c.ok(
        "stepIn",
        json!({"threadId": tid, "granularity": "instruction"}),
    );
    tid = stopped(&mut c).1;
    assert_eq!(line(&mut c, tid), ("note".to_string(), note_line));
    assert_eq!(seen(&mut c, tid), hits[2]);

    // Forward through the replay to the present, then live to the end.
    for k in [3, 4] {
        c.ok("continue", json!({"threadId": tid}));
        let (reason, t) = stopped(&mut c);
        tid = t;
        assert_eq!(reason, "breakpoint");
        assert_eq!(seen(&mut c, tid), hits[k], "forward again to hit {k}");
    }
    assert_eq!(Some(tid), pid, "the present is the live process");
    assert!(
        children_of(pid.unwrap()).is_empty(),
        "the program has no child of ours"
    );
    let snapshots: Vec<i64> = children_of(i64::from(c.peer.pid()))
        .into_iter()
        .filter(|p| Some(*p) != pid)
        .collect();
    assert!(!snapshots.is_empty(), "snapshots are forks kept stopped");
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [
            {"line": log_line, "logMessage": "logged {i}"}]}),
    );
    c.ok("continue", json!({"threadId": tid}));
    let exited = c.event("exited");
    c.event("terminated");
    let stdout: String = c
        .output
        .iter()
        .filter(|(cat, _)| cat == "stdout")
        .map(|(_, t)| t.as_str())
        .collect();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 5, "each line printed once: {stdout:?}");
    let mut sum = 0i64;
    for (k, h) in hits.iter().enumerate() {
        let (i, r): (i64, i64) = (h.i.parse().unwrap(), h.r.parse().unwrap());
        sum = h.sum.parse::<i64>().unwrap() + r + i;
        assert_eq!(lines[k], format!("step {i} r={r} sum={sum}"));
    }
    assert_eq!(exited["body"]["exitCode"], sum % 7 + 10);
    let logged: Vec<&str> = c
        .output
        .iter()
        .filter(|(_, t)| t.starts_with("logged "))
        .map(|(_, t)| t.trim_end())
        .collect();
    assert_eq!(
        logged,
        ["logged 0", "logged 1", "logged 2", "logged 3", "logged 4"],
        "a logpoint logs once per hit, never again on replay"
    );
    let written = std::fs::read_to_string(&output).unwrap();
    assert_eq!(
        written.lines().count(),
        6,
        "the file written once: {written:?}"
    );
    assert!(written.ends_with("in=from the file\n"), "{written:?}");
    c.finish();
    for p in snapshots {
        assert!(!alive(p), "snapshot {p} left behind");
    }
}

#[test]
fn without_a_recording_the_reverse_requests_say_why() {
    let program = sample();
    let dir = scratch_dir("reverse-none");
    let input = dir.join("in.txt");
    std::fs::write(&input, "x\n").unwrap();
    let src = sample_path(SAMPLE);
    let mut c = DapClient::new();
    let stop = c.launch_to_stop(
        json!({"program": program, "args": [input, dir.join("out.txt")], "stdio": "pipes"}),
        &src,
        &[line_of(&src, "note line")],
    );
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let e = c.err("stepBack", json!({"threadId": tid}));
    assert!(e.contains("does not record"), "{e}");
    let e = c.err("reverseContinue", json!({"threadId": tid}));
    assert!(e.contains("reverseDebugging"), "{e}");
    assert!(c
        .drain_events(std::time::Duration::from_millis(100))
        .iter()
        .all(|e| e["event"] != "capabilities"));
    c.finish();
}

#[test]
fn disconnect_while_replaying_leaves_nothing_behind() {
    let program = sample();
    let dir = scratch_dir("reverse-disconnect");
    let input = dir.join("in.txt");
    std::fs::write(&input, "x\n").unwrap();
    let src = sample_path(SAMPLE);
    let mut c = DapClient::new();
    let stop = c.launch_to_stop(
        json!({"program": program, "args": [input, dir.join("out.txt")], "stdio": "pipes",
               "reverseDebugging": true}),
        &src,
        &[line_of(&src, "note line")],
    );
    let mut tid = stop["body"]["threadId"].as_i64().unwrap();
    let pid = c.debuggee_pid.unwrap();
    c.ok("continue", json!({"threadId": tid}));
    tid = stopped(&mut c).1;
    // At the first hit already: back to it, then back past it to the recording's start.
    c.ok("reverseContinue", json!({"threadId": tid}));
    tid = stopped(&mut c).1;
    assert_eq!(seen(&mut c, tid).i, "0");
    c.ok("reverseContinue", json!({"threadId": tid}));
    let st = c.event("stopped");
    assert_eq!(st["body"]["reason"], "entry", "{st}");
    let tid = st["body"]["threadId"].as_i64().unwrap();
    let e = c.err("stepBack", json!({"threadId": tid}));
    assert!(e.contains("start of the recording"), "{e}");
    let replay = tid;
    assert_ne!(replay, pid, "a replay is shown");
    assert!(
        children_of(pid).is_empty(),
        "the program has no child of ours"
    );
    let snapshots: Vec<i64> = children_of(i64::from(c.peer.pid()))
        .into_iter()
        .filter(|p| *p != pid)
        .collect();
    assert!(snapshots.contains(&replay), "the replay is tandem's child");
    c.finish();
    assert!(
        wait_until(std::time::Duration::from_secs(5), || !alive(pid)),
        "the debuggee is gone"
    );
    for p in snapshots.into_iter().chain([replay]) {
        assert!(!alive(p), "process {p} left behind");
    }
}

/// A recorded program that forks (samples/c/forks.c `prefork`: three workers, each
/// exit reported): going back works before the fork; at the fork the recording ends
/// with an `output` event that says why, the program goes on live and unharmed (its
/// output and exit code are the undebugged run's), and going back then says why it
/// cannot. Nothing tandem made is left behind.
#[test]
fn a_program_that_forks_is_recorded_up_to_its_fork_and_goes_on_unharmed() {
    let program = build("c/forks.c", "gcc", &["-g", "-O0"]);
    let plain = std::process::Command::new(&program)
        .arg("prefork")
        .output()
        .unwrap();
    let src = sample_path("c/forks.c");
    // `pids[k] = fork();`, two lines above the worker's `_exit`.
    let fork_line = line_of(&src, "S:worker") - 2;
    let mut c = DapClient::new();
    let stop = c.launch_to_stop(
        json!({"program": program, "args": ["prefork"], "stdio": "pipes",
               "reverseDebugging": true}),
        &src,
        &[fork_line],
    );
    let mut tid = stop["body"]["threadId"].as_i64().unwrap();
    let pid = c.debuggee_pid.unwrap();
    // tandem's children running the program: the program, and the recording's snapshots.
    let ours = i64::from(c.peer.pid());
    let copies = || -> Vec<i64> {
        children_of(ours)
            .into_iter()
            .filter(|p| {
                std::fs::read_link(format!("/proc/{p}/exe")).ok().as_ref() == Some(&program)
            })
            .collect()
    };
    assert!(
        copies().len() > 1,
        "the recording has snapshots: {:?}",
        copies()
    );
    // Before the first fork the past is there.
    c.ok("stepBack", json!({"threadId": tid}));
    let (reason, t) = stopped(&mut c);
    assert_eq!(reason, "step");
    tid = t;
    assert!(line(&mut c, tid).1 < fork_line, "{:?}", line(&mut c, tid));
    c.ok("continue", json!({"threadId": tid}));
    tid = stopped(&mut c).1;
    assert_eq!(line(&mut c, tid).1, fork_line);
    // The first fork ends the recording: the next hit is live.
    c.ok("continue", json!({"threadId": tid}));
    tid = stopped(&mut c).1;
    assert_eq!(line(&mut c, tid).1, fork_line);
    let said: String = c.output.iter().map(|(_, t)| t.as_str()).collect();
    assert!(
        said.contains("recording stopped") && said.contains("forks"),
        "the end of the recording is said: {said}"
    );
    let e = c.err("stepBack", json!({"threadId": tid}));
    assert!(e.contains("no recording") && e.contains("forks"), "{e}");
    // The snapshots went with the recording: the only one of tandem's children running
    // the program is the program.
    let left: Vec<i64> = copies().into_iter().filter(|p| *p != pid).collect();
    assert!(left.is_empty(), "snapshots left behind: {left:?}");
    let exited = c.run_to_exit(&src, tid);
    assert_eq!(
        exited["body"]["exitCode"].as_i64().unwrap(),
        i64::from(plain.status.code().unwrap())
    );
    let printed = c.stdout().replace("\r\n", "\n");
    assert_eq!(printed, String::from_utf8_lossy(&plain.stdout));
    c.finish();
    assert!(!alive(pid), "the program is gone");
}
