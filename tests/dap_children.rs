//! Programs that fork and exec (issue 31): every child the program forks gets a session of
//! its own through the reverse request `startDebugging`, driven here as VS Code drives it
//! (answer the request, start a new `tandem dap`, `initialize`, `attach` with the given
//! configuration, breakpoints, `configurationDone`). samples/c/forks.c forks workers, execs
//! and posix_spawns samples/c/exec_target.c, and has a child that crashes. In every case the
//! parent's output and exit code equal an undebugged run's, each child's exit code too,
//! the stops carry the values the sample computes, and nothing is left traced or stopped.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

#[path = "children_util.rs"]
mod children_util;
mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use children_util::{forks, pipeline, plain, printed, target, Pipeline};
use serde_json::{json, Value};
use support::dap::{line_of, sample_path, DapClient};

/// The parent's session: launched with `caps` and `extra` launch attributes, no
/// breakpoints of its own, running.
fn parent(args: &[&str], caps: Value, extra: Value) -> DapClient {
    let mut c = DapClient::new();
    c.initialize_with(caps);
    let mut launch = json!({"type": "tandem", "program": forks(), "args": args,
                            "console": "internalConsole", "stdio": "pipes"});
    for (k, v) in extra.as_object().unwrap() {
        launch[k] = v.clone();
    }
    c.ok("launch", launch);
    c.ok("configurationDone", json!({}));
    c
}

/// The parent's exit: its code, after `terminated`; the output events are all in.
fn parent_exit(c: &mut DapClient) -> i64 {
    let exited = c.event("exited");
    c.event("terminated");
    exited["body"]["exitCode"].as_i64().unwrap()
}

/// A child's session as VS Code opens it for a `startDebugging` request: answered, a new
/// adapter, `initialize`, `attach` with the configuration, the breakpoints, then
/// `configurationDone`. Returns the session and the `setBreakpoints` answer.
fn child_session(parent: &mut DapClient, source: &Path, lines: &[i64]) -> (DapClient, Value) {
    let req = parent.adapter_request("startDebugging");
    let args = &req["arguments"];
    assert_eq!(args["request"], "attach", "{req}");
    let config = args["configuration"].clone();
    assert_eq!(config["request"], "attach", "{config}");
    assert_eq!(config["type"], "tandem", "the parent's type: {config}");
    let pid = config["pid"].as_i64().unwrap();
    let name = config["name"].as_str().unwrap();
    assert!(
        name.contains(&format!("[{pid}]")),
        "named after the child: {name}"
    );
    // The child waits for its session without running a single instruction of its own:
    // parked in rt_sigsuspend with every signal blocked, made from the syscall
    // instruction of its fork (no job-control stop, which its parent would be told of).
    // (It gets there as it is detached: poll for it.)
    let waits = support::dap::wait_until(Duration::from_secs(5), || parked(pid as i32));
    assert!(
        waits,
        "child {pid} should wait parked: {:?} {:?}",
        testsupport::process_state(pid as i32),
        std::fs::read_to_string(format!("/proc/{pid}/syscall"))
    );
    parent.respond(&req, true, json!({}));
    let mut c = DapClient::new();
    c.initialize_with(json!({"supportsStartDebuggingRequest": true}));
    c.ok("attach", config);
    let bps: Vec<Value> = lines.iter().map(|l| json!({"line": l})).collect();
    let set = c.ok(
        "setBreakpoints",
        json!({"source": {"path": source}, "breakpoints": bps}),
    );
    c.ok("configurationDone", json!({}));
    (c, set)
}

/// Whether `pid` waits in `rt_sigsuspend` with every signal but SIGKILL and SIGSTOP
/// blocked, untraced.
fn parked(pid: i32) -> bool {
    let syscall = std::fs::read_to_string(format!("/proc/{pid}/syscall")).unwrap_or_default();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
            .unwrap_or_default()
            .to_string()
    };
    syscall.split_whitespace().next() == Some(&libc::SYS_rt_sigsuspend.to_string())
        && field("SigBlk:") == "fffffffffffbfeff"
        && field("TracerPid:") == "0"
}

/// The value of `expr` in the top frame of the stopped thread.
fn top_value(c: &mut DapClient, stopped: &Value, expr: &str) -> String {
    let tid = stopped["body"]["threadId"].as_i64().unwrap();
    let frames = c.frames(tid);
    let frame = frames[0]["id"].as_i64().unwrap();
    c.evaluate(frame, expr)["result"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A child's session stopped at a breakpoint: the values of `exprs` in its top frame,
/// then continued to its end: those values and its exit code.
fn breakpoint_then_exit(mut c: DapClient, exprs: &[&str]) -> (Vec<String>, i64) {
    let stopped = c.event("stopped");
    assert_eq!(stopped["body"]["reason"], "breakpoint", "{stopped}");
    let values = exprs
        .iter()
        .map(|e| top_value(&mut c, &stopped, e))
        .collect();
    let tid = stopped["body"]["threadId"].as_i64().unwrap();
    c.ok("continue", json!({"threadId": tid}));
    (values, child_exit(c))
}

/// The child's session to its end: the exit code it reported.
fn child_exit(mut c: DapClient) -> i64 {
    let exited = c.event("exited");
    c.event("terminated");
    c.ok("disconnect", json!({}));
    exited["body"]["exitCode"].as_i64().unwrap()
}

#[test]
fn prefork_workers_each_in_a_session() {
    let src = sample_path("c/forks.c");
    let job = line_of(&src, "S:job");
    let (expected, code) = plain(&["prefork"]);
    let mut p = parent(
        &["prefork"],
        json!({"supportsStartDebuggingRequest": true}),
        json!({}),
    );
    let mut codes = Vec::new();
    for k in 0..3 {
        let (c, set) = child_session(&mut p, &src, &[job]);
        assert_eq!(set["breakpoints"][0]["verified"], true, "{set}");
        let (values, exit) = breakpoint_then_exit(c, &["k", "acc"]);
        // Worker k stops in its job with its own k: the child's memory, not the parent's.
        assert_eq!(values[0], k.to_string());
        assert_eq!(exit, values[1].parse::<i64>().unwrap() % 50, "worker {k}");
        codes.push(exit);
    }
    assert_eq!(parent_exit(&mut p), i64::from(code));
    assert_eq!(printed(&p), expected);
    for (k, exit) in codes.iter().enumerate() {
        assert!(
            expected.contains(&format!("worker {k} exit {exit}\n")),
            "{expected}"
        );
    }
    p.finish();
}

/// A parent that handles SIGCHLD without SA_NOCLDSTOP and waits with WUNTRACED |
/// WCONTINUED sees no stop and no continue of its workers, whose sessions took them
/// over; each worker's signal mask is the one it inherited.
#[test]
fn handing_workers_over_is_invisible_to_their_parent() {
    let src = sample_path("c/forks.c");
    let job = line_of(&src, "S:job");
    let (expected, code) = plain(&["sigchld"]);
    assert!(expected.contains("job-control notices 0\n"), "{expected}");
    let mut p = parent(
        &["sigchld"],
        json!({"supportsStartDebuggingRequest": true}),
        json!({}),
    );
    for k in 0..3 {
        let (c, set) = child_session(&mut p, &src, &[job]);
        assert_eq!(set["breakpoints"][0]["verified"], true, "{set}");
        let (values, exit) = breakpoint_then_exit(c, &["k"]);
        assert_eq!(values[0], k.to_string());
        assert_ne!(exit, 99, "worker {k}'s signal mask changed");
    }
    assert_eq!(parent_exit(&mut p), i64::from(code));
    assert_eq!(printed(&p), expected);
    p.finish();
}

#[test]
fn fork_then_exec_stops_in_the_new_program() {
    let target = target();
    let tsrc = sample_path("c/exec_target.c");
    let line = line_of(&tsrc, "S:target");
    let t = target.to_str().unwrap();
    let (expected, code) = plain(&["exec", t]);
    let mut p = parent(
        &["exec", t],
        json!({"supportsStartDebuggingRequest": true}),
        json!({}),
    );
    // Before the exec the line is not in the child's program: pending until it is.
    let (c, _) = child_session(&mut p, &tsrc, &[line]);
    let (values, exit) = breakpoint_then_exit(c, &["n"]);
    assert_eq!(values, ["5"]);
    assert_eq!(exit, 28);
    assert_eq!(parent_exit(&mut p), i64::from(code));
    assert_eq!(printed(&p), expected);
    p.finish();
}

#[test]
/// A posix_spawn loop of 20 children (vfork + exec), each in a session of its own.
fn posix_spawn_children_each_in_a_session() {
    let target = target();
    let tsrc = sample_path("c/exec_target.c");
    let line = line_of(&tsrc, "S:target");
    let t = target.to_str().unwrap();
    let n = 20;
    let count = n.to_string();
    let (expected, code) = plain(&["spawn", &count, t]);
    let mut p = parent(
        &["spawn", &count, t],
        json!({"supportsStartDebuggingRequest": true}),
        json!({}),
    );
    for i in 0..n {
        // A vfork child shares its parent's memory until it execs: its breakpoints go in
        // after the exec, never into the parent.
        let (c, _) = child_session(&mut p, &tsrc, &[line]);
        let (values, exit) = breakpoint_then_exit(c, &["n"]);
        assert_eq!(values, [i.to_string()]);
        assert_eq!(exit, (i * i + 3) % 64);
    }
    assert_eq!(parent_exit(&mut p), i64::from(code));
    assert_eq!(printed(&p), expected);
    p.finish();
}

#[test]
fn a_crashing_child_stops_in_its_own_session() {
    let src = sample_path("c/forks.c");
    let line = line_of(&src, "S:crash");
    let (expected, code) = plain(&["crash"]);
    let mut p = parent(
        &["crash"],
        json!({"supportsStartDebuggingRequest": true}),
        json!({}),
    );
    let (mut c, _) = child_session(&mut p, &src, &[]);
    let stopped = c.event("stopped");
    assert_eq!(stopped["body"]["reason"], "exception", "{stopped}");
    let tid = stopped["body"]["threadId"].as_i64().unwrap();
    let frames = c.frames(tid);
    assert_eq!(frames[0]["name"], "crash", "{frames:?}");
    assert_eq!(frames[0]["line"], line, "{frames:?}");
    // Going on delivers the SIGSEGV, as without the debugger.
    c.ok("continue", json!({"threadId": tid}));
    c.event("terminated");
    c.ok("disconnect", json!({}));
    assert_eq!(parent_exit(&mut p), i64::from(code));
    assert_eq!(printed(&p), expected);
    assert!(expected.contains("crash 0 signal 11"), "{expected}");
    p.finish();
}

#[test]
fn refused_sessions_leave_the_children_running_free() {
    let (expected, code) = plain(&["prefork"]);
    let mut p = parent(
        &["prefork"],
        json!({"supportsStartDebuggingRequest": true}),
        json!({}),
    );
    for _ in 0..3 {
        let req = p.adapter_request("startDebugging");
        p.respond(&req, false, json!({}));
    }
    assert_eq!(parent_exit(&mut p), i64::from(code));
    assert_eq!(printed(&p), expected);
    let said = p
        .output
        .iter()
        .filter(|(_, t)| t.contains("did not open a session for child process"))
        .count();
    assert_eq!(said, 3, "{:?}", p.output);
    p.finish();
}

/// Children no session is opened for: not asked for, and run as without the debugger.
fn runs_without_child_sessions(caps: Value, extra: Value) {
    let (expected, code) = plain(&["prefork"]);
    let mut p = parent(&["prefork"], caps, extra);
    assert_eq!(parent_exit(&mut p), i64::from(code));
    assert_eq!(printed(&p), expected);
    let asked = p
        .drain_events(Duration::from_millis(100))
        .into_iter()
        .filter(|m| m["type"] == "request")
        .count();
    assert_eq!(asked, 0, "no startDebugging expected");
    // Each child let go is said, as gdb's "[Detaching after fork ...]".
    let said = p
        .output
        .iter()
        .filter(|(_, t)| t.contains("it runs without the debugger"))
        .count();
    assert_eq!(said, 3, "{:?}", p.output);
    p.finish();
}

#[test]
fn a_client_without_start_debugging_detaches_children_when_told() {
    runs_without_child_sessions(json!({}), json!({"followChildren": "detach"}));
}

#[test]
fn children_the_filter_rejects_are_detached() {
    runs_without_child_sessions(
        json!({"supportsStartDebuggingRequest": true}),
        json!({"childFilter": "^nothing-matches$"}),
    );
}

#[test]
fn follow_children_detach_opens_no_sessions() {
    runs_without_child_sessions(
        json!({"supportsStartDebuggingRequest": true}),
        json!({"followChildren": "detach"}),
    );
}

#[test]
fn the_filter_is_matched_again_at_exec() {
    let target = target();
    let t = target.to_str().unwrap();
    let (expected, code) = plain(&["exec", t]);
    // At the fork the child's command line is the parent's (it has "forks"); after the
    // exec it is exec_target's, which the filter does not match: detached there.
    let mut p = parent(
        &["exec", t],
        json!({"supportsStartDebuggingRequest": true}),
        json!({"childFilter": "forks"}),
    );
    let tsrc = sample_path("c/exec_target.c");
    let (mut c, _) = child_session(&mut p, &tsrc, &[line_of(&tsrc, "S:target")]);
    c.event("terminated");
    assert!(
        c.output
            .iter()
            .any(|(_, t)| t.contains("childFilter does not match")),
        "{:?}",
        c.output
    );
    c.ok("disconnect", json!({}));
    assert_eq!(parent_exit(&mut p), i64::from(code));
    // The breakpoint on its line was never hit: it ran as without the debugger.
    assert_eq!(printed(&p), expected);
    p.finish();
}

#[test]
fn a_shell_pipeline_each_command_in_a_session() {
    let Pipeline {
        script,
        source: tsrc,
        line,
        expected,
    } = pipeline();
    let mut p = DapClient::new();
    p.initialize_with(json!({"supportsStartDebuggingRequest": true}));
    p.ok(
        "launch",
        json!({"type": "tandem", "program": "/bin/sh", "args": ["-c", script],
               "console": "internalConsole", "stdio": "pipes", "childFilter": "exec_target"}),
    );
    p.ok("configurationDone", json!({}));
    // Three children: `exec_target 2`, `cat` (detached at its exec: the filter does not
    // match it) and `exec_target 3`; each target stops at its line with its argument.
    let mut seen = Vec::new();
    for _ in 0..3 {
        let (mut c, _) = child_session(&mut p, &tsrc, &[line]);
        match c.event_within("stopped", Duration::from_secs(5)) {
            Some(stopped) => {
                assert_eq!(stopped["body"]["reason"], "breakpoint", "{stopped}");
                let n: i64 = top_value(&mut c, &stopped, "n").parse().unwrap();
                let tid = stopped["body"]["threadId"].as_i64().unwrap();
                c.ok("continue", json!({"threadId": tid}));
                assert_eq!(child_exit(c), (n * n + 3) % 64);
                seen.push(n);
            }
            None => {
                c.event("terminated");
                c.ok("disconnect", json!({}));
                seen.push(0);
            }
        }
    }
    seen.sort_unstable();
    assert_eq!(seen, [0, 2, 3], "cat detached, both targets stopped");
    assert_eq!(parent_exit(&mut p), 0);
    assert_eq!(printed(&p), expected);
    p.finish();
}

#[test]
fn ending_the_parent_ends_its_children() {
    let src = sample_path("c/forks.c");
    let job = line_of(&src, "S:job");
    let mut p = parent(
        &["prefork"],
        json!({"supportsStartDebuggingRequest": true}),
        json!({}),
    );
    let parent_pid = p.debuggee_pid.unwrap();
    // One worker stopped in its session, the two others still waiting for theirs.
    let (mut c, _) = child_session(&mut p, &src, &[job]);
    let stopped = c.event("stopped");
    assert_eq!(stopped["body"]["reason"], "breakpoint", "{stopped}");
    let tid = stopped["body"]["threadId"].as_i64().unwrap();
    let waiting: Vec<i64> = (0..2)
        .map(|_| {
            let req = p.adapter_request("startDebugging");
            req["arguments"]["configuration"]["pid"].as_i64().unwrap()
        })
        .collect();
    // The launched program's session ends (terminateDebuggee by default): all of it.
    p.ok("disconnect", json!({}));
    c.event("terminated");
    c.ok("disconnect", json!({}));
    for pid in waiting.iter().copied().chain([tid, parent_pid]) {
        assert!(
            support::dap::wait_until(Duration::from_secs(10), || !support::dap::alive(pid)),
            "process {pid} outlived its session"
        );
    }
    drop(p);
}

/// `tandem debug --follow-children --json`: every worker's stop and exit come with its
/// pid, the values are each worker's own, and the program's output is unchanged.
#[test]
fn the_cli_follows_children_too() {
    let src = sample_path("c/forks.c");
    let job = line_of(&src, "S:job");
    let (expected, code) = plain(&["prefork"]);
    let mut child = Command::new(support::tandem_bin())
        .args([
            "debug",
            "--follow-children",
            "--json",
            "--max-frames",
            "4",
            "-p",
            "k",
            "-b",
        ])
        .arg(format!("{}:{job}", src.display()))
        .arg(forks())
        .arg("prefork")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A hang is a failure, not a stuck suite.
    let ended = support::dap::wait_until(Duration::from_secs(60), || {
        child.try_wait().ok().flatten().is_some()
    });
    if !ended {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        ended,
        "tandem debug --follow-children did not end: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(out.status.code(), Some(code), "{lines:?}");
    let printed: String = lines
        .iter()
        .filter(|l| l["event"] == "output")
        .map(|l| l["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(printed, expected);
    let mut ks: Vec<(i64, String)> = lines
        .iter()
        .filter(|l| l["event"] == "stopped")
        .map(|l| {
            (
                l["pid"].as_i64().unwrap(),
                l["values"][0]["value"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    ks.sort_by(|a, b| a.1.cmp(&b.1));
    let values: Vec<&str> = ks.iter().map(|(_, v)| v.as_str()).collect();
    assert_eq!(values, ["0", "1", "2"], "{lines:?}");
    for (pid, k) in &ks {
        let exit = lines
            .iter()
            .find(|l| l["event"] == "exited" && l["pid"] == json!(pid))
            .unwrap_or_else(|| panic!("no exit of worker {pid}: {lines:?}"));
        let reported = exit["code"].as_i64().unwrap();
        assert!(
            expected.contains(&format!("worker {k} exit {reported}\n")),
            "{expected} vs {exit}"
        );
    }
}

/// clone(2) without CLONE_THREAD makes a process: it gets a session like a fork child,
/// and without one it runs free of the parent's breakpoints (not taken for a thread).
#[test]
fn a_clone_without_clone_thread_is_a_child_process() {
    let src = sample_path("c/forks.c");
    let job = line_of(&src, "S:job");
    let (expected, code) = plain(&["clone"]);
    let mut p = parent(
        &["clone"],
        json!({"supportsStartDebuggingRequest": true}),
        json!({}),
    );
    let (mut c, _) = child_session(&mut p, &src, &[job]);
    let stopped = c.event("stopped");
    assert_eq!(top_value(&mut c, &stopped, "k"), "7");
    let tid = stopped["body"]["threadId"].as_i64().unwrap();
    c.ok("continue", json!({"threadId": tid}));
    child_exit(c);
    assert_eq!(parent_exit(&mut p), i64::from(code));
    assert_eq!(printed(&p), expected);
    p.finish();

    // Not followed, the parent's breakpoint on the child's line: the child must not meet
    // that int3.
    let mut p = DapClient::new();
    p.initialize();
    p.ok(
        "launch",
        json!({"program": forks(), "args": ["clone"], "console": "internalConsole",
               "stdio": "pipes", "followChildren": "detach"}),
    );
    p.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [{"line": job}]}),
    );
    p.ok("configurationDone", json!({}));
    assert_eq!(parent_exit(&mut p), i64::from(code));
    assert_eq!(printed(&p), expected);
    p.finish();
}

/// A child that ends before its session takes it over (killed while it waits): the
/// session the client opens for it ends cleanly, with a note, and nothing is left behind.
#[test]
fn a_child_gone_before_its_session_ends_that_session_cleanly() {
    let mut p = parent(
        &["prefork"],
        json!({"supportsStartDebuggingRequest": true}),
        json!({}),
    );
    let req = p.adapter_request("startDebugging");
    let config = req["arguments"]["configuration"].clone();
    let pid = config["pid"].as_i64().unwrap();
    // SAFETY: kill(2) on the child the test was just told about, waiting stopped.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    assert!(support::dap::wait_until(Duration::from_secs(10), || {
        !support::dap::alive(pid)
    }));
    p.respond(&req, true, json!({}));
    let mut c = DapClient::new();
    c.initialize_with(json!({"supportsStartDebuggingRequest": true}));
    c.ok("attach", config);
    c.event("terminated");
    assert!(
        c.output
            .iter()
            .any(|(_, t)| t.contains("ended before its session started")),
        "{:?}",
        c.output
    );
    c.ok("disconnect", json!({}));
    for _ in 0..2 {
        let req = p.adapter_request("startDebugging");
        p.respond(&req, false, json!({}));
    }
    assert_eq!(parent_exit(&mut p), 0);
    assert!(
        printed(&p).contains("worker 0 signal 9\n"),
        "{}",
        printed(&p)
    );
    p.finish();
}

/// tandem killed outright while a child waits for its session: the guard process ends
/// the children of the launched program (which dies with tandem, PTRACE_O_EXITKILL), so
/// no child is left stopped for good.
#[test]
fn a_child_waiting_for_its_session_dies_with_a_killed_tandem() {
    let mut p = parent(
        &["prefork"],
        json!({"supportsStartDebuggingRequest": true}),
        json!({}),
    );
    let program = p.debuggee_pid.expect("the process event");
    let req = p.adapter_request("startDebugging");
    let child = req["arguments"]["configuration"]["pid"].as_i64().unwrap();
    let waits = support::dap::wait_until(Duration::from_secs(5), || parked(child as i32));
    assert!(waits, "child {child} waits parked");
    // SAFETY: kill(2) on the adapter process this test started.
    unsafe { libc::kill(p.peer.pid() as i32, libc::SIGKILL) };
    let gone = support::dap::wait_until(Duration::from_secs(10), || {
        !support::dap::alive(child) && !support::dap::alive(program)
    });
    assert!(
        gone,
        "left behind: child {child} {:?}, program {program} {:?}",
        testsupport::process_state(child as i32),
        testsupport::process_state(program as i32)
    );
}

/// tandem killed outright while a child of an *attached* program waits for its session:
/// the guard lets that child run on from its fork (the program is not tandem's to end),
/// so the program completes as it would have.
#[test]
fn a_child_of_an_attached_program_runs_on_after_tandem_is_killed() {
    let t = target().display().to_string();
    let out = std::env::temp_dir().join(format!("tandem-guard-{}", std::process::id()));
    let _ = std::fs::remove_file(&out);
    let script = format!(
        "read go; {t} 2; echo \"status $?\" > {out}",
        out = out.display()
    );
    let mut sh = Command::new("sh")
        .args(["-c", &script])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut p = DapClient::new();
    p.initialize_with(json!({"supportsStartDebuggingRequest": true}));
    p.ok("attach", json!({"type": "tandem", "pid": sh.id()}));
    p.ok("configurationDone", json!({}));
    // The shell forks the command once it reads its line.
    use std::io::Write;
    sh.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let req = p.adapter_request("startDebugging");
    let child = req["arguments"]["configuration"]["pid"].as_i64().unwrap();
    let waits = support::dap::wait_until(Duration::from_secs(5), || parked(child as i32));
    assert!(waits, "child {child} waits parked");
    // SAFETY: kill(2) on the adapter process this test started.
    unsafe { libc::kill(p.peer.pid() as i32, libc::SIGKILL) };
    let ended =
        support::dap::wait_until(Duration::from_secs(20), || sh.try_wait().unwrap().is_some());
    if !ended {
        let _ = sh.kill();
        // SAFETY: kill(2) on the child the test saw forked.
        unsafe { libc::kill(child as i32, libc::SIGKILL) };
        panic!(
            "the program did not complete: child {child} {:?}",
            testsupport::process_state(child as i32)
        );
    }
    assert!(sh.wait().unwrap().success());
    let plain = Command::new(&t).arg("2").status().unwrap();
    let wrote = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    assert_eq!(wrote, format!("status {}\n", plain.code().unwrap()));
}
