//! Children in the parent's session (issue 31, `followChildren: "same"`, the default for a
//! client without `supportsStartDebuggingRequest`): the program's breakpoints stop its fork
//! and exec children in the same session, their threads listed beside the program's and
//! named with their process, each child announced by a `process` event; the values are the
//! child's, its output and exit code and the program's equal an undebugged run's, and
//! nothing is left traced or stopped when the session ends.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

#[path = "children_util.rs"]
mod children_util;
mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use children_util::{forks, pipeline, plain, printed, target, Pipeline};
use serde_json::{json, Value};
use support::dap::{alive, line_of, sample_path, DapClient};

/// A session of a client without `startDebugging` (unless `caps` says otherwise): the
/// program launched with `extra`, breakpoints at `lines` of `source`, running.
fn session(
    args: &[&str],
    caps: Value,
    extra: Value,
    source: &str,
    lines: &[i64],
) -> (DapClient, i64) {
    let mut c = DapClient::new();
    c.initialize_with(caps);
    let mut launch = json!({"type": "tandem", "program": forks(), "args": args,
                            "console": "internalConsole", "stdio": "pipes"});
    for (k, v) in extra.as_object().unwrap() {
        launch[k] = v.clone();
    }
    c.ok("launch", launch);
    let process = c.event("process");
    let pid = process["body"]["systemProcessId"].as_i64().unwrap();
    let bps: Vec<Value> = lines.iter().map(|l| json!({"line": l})).collect();
    // A line of another program (exec'd later) is pending until then.
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": sample_path(source)}, "breakpoints": bps}),
    );
    c.ok("configurationDone", json!({}));
    (c, pid)
}

/// Waits for the next stop (`Ok(stopped)`) or the program's exit (`Err(exit code)`).
fn next_stop(c: &mut DapClient) -> Result<Value, i64> {
    let e = c
        .first_event_of(&["stopped", "exited"], Duration::from_secs(60))
        .unwrap_or_else(|| panic!("no stop and no exit: {:?}", c.output));
    match e["event"].as_str() {
        Some("stopped") => Ok(e),
        _ => Err(e["body"]["exitCode"].as_i64().unwrap()),
    }
}

/// The value of `expr` in the top frame of the thread that stopped.
fn top_value(c: &mut DapClient, stopped: &Value, expr: &str) -> String {
    let tid = stopped["body"]["threadId"].as_i64().unwrap();
    let frames = c.frames(tid);
    let frame = frames[0]["id"].as_i64().unwrap();
    c.evaluate(frame, expr)["result"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The process a thread belongs to.
fn tgid(tid: i64) -> i64 {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn prefork_workers(caps: Value, extra: Value) {
    let src = sample_path("c/forks.c");
    let job = line_of(&src, "S:job");
    let (expected, code) = plain(&["prefork"]);
    let (mut c, parent) = session(&["prefork"], caps, extra, "c/forks.c", &[job]);
    let mut ks = BTreeSet::new();
    let exit = loop {
        let stopped = match next_stop(&mut c) {
            Ok(s) => s,
            Err(exit) => break exit,
        };
        assert_eq!(stopped["body"]["reason"], "breakpoint", "{stopped}");
        let tid = stopped["body"]["threadId"].as_i64().unwrap();
        let child = tgid(tid);
        assert_ne!(child, parent, "the parent runs no job: {stopped}");
        // The thread is listed, named with its process, beside the parent's.
        let threads = c.ok("threads", json!({}));
        let threads = threads["threads"].as_array().unwrap();
        let listed = threads.iter().find(|t| t["id"] == tid).unwrap();
        let name = listed["name"].as_str().unwrap();
        assert!(name.contains(&format!("process {child}")), "{name}");
        assert!(
            threads.iter().any(|t| t["id"] == parent),
            "the parent's thread too: {threads:?}"
        );
        // Frames, scopes and values are the child's (its own k).
        let frames = c.frames(tid);
        assert_eq!(frames[0]["name"], "job", "{frames:?}");
        assert_eq!(frames[0]["line"], job, "{frames:?}");
        let scopes = c.ok("scopes", json!({"frameId": frames[0]["id"]}));
        let locals = scopes["scopes"][0]["variablesReference"].as_i64().unwrap();
        let vars = c.ok("variables", json!({"variablesReference": locals}));
        assert!(
            vars["variables"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v["name"] == "acc"),
            "{vars}"
        );
        let k = top_value(&mut c, &stopped, "k");
        let acc: i64 = top_value(&mut c, &stopped, "acc").parse().unwrap();
        assert!(
            expected.contains(&format!("worker {k} exit {}\n", acc % 50)),
            "worker {k} with acc {acc}: {expected}"
        );
        assert!(ks.insert(k.clone()), "worker {k} stopped twice");
        c.ok("continue", json!({"threadId": tid}));
    };
    assert_eq!(ks.len(), 3, "every worker stops once: {ks:?}");
    assert_eq!(exit, i64::from(code), "the program's exit code");
    c.event("terminated");
    // What the children's sessions said last may come just after the program's end.
    c.drain_events(Duration::from_millis(500));
    assert_eq!(printed(&c), expected);
    let said = c
        .output
        .iter()
        .filter(|(_, t)| t.contains("is debugged in this session"))
        .count();
    assert_eq!(said, 3, "{:?}", c.output);
    // Each child's end is said in the console, with its process.
    assert_eq!(
        c.output
            .iter()
            .filter(|(_, t)| t.starts_with("[process ") && t.contains("exited with code"))
            .count(),
        3,
        "{:?}",
        c.output
    );
    c.finish();
}

#[test]
fn prefork_workers_stop_in_the_parents_session() {
    prefork_workers(json!({}), json!({}));
}

#[test]
fn follow_children_same_with_a_client_that_could_open_sessions() {
    prefork_workers(
        json!({"supportsStartDebuggingRequest": true}),
        json!({"followChildren": "same"}),
    );
}

/// A parent that handles SIGCHLD without SA_NOCLDSTOP and waits with WUNTRACED |
/// WCONTINUED sees no stop and no continue of its workers while they are handed to
/// their child adapters; each worker's signal mask is the one it inherited.
#[test]
fn handing_workers_over_is_invisible_to_their_parent() {
    let src = sample_path("c/forks.c");
    let job = line_of(&src, "S:job");
    let (expected, code) = plain(&["sigchld"]);
    assert!(expected.contains("job-control notices 0\n"), "{expected}");
    let (mut c, parent) = session(&["sigchld"], json!({}), json!({}), "c/forks.c", &[job]);
    let mut stops = 0;
    let exit = loop {
        let stopped = match next_stop(&mut c) {
            Ok(s) => s,
            Err(exit) => break exit,
        };
        let tid = stopped["body"]["threadId"].as_i64().unwrap();
        assert_ne!(tgid(tid), parent, "{stopped}");
        stops += 1;
        c.ok("continue", json!({"threadId": tid}));
    };
    assert_eq!(stops, 3);
    assert_eq!(exit, i64::from(code));
    c.event("terminated");
    c.drain_events(Duration::from_millis(500));
    assert_eq!(printed(&c), expected);
    c.finish();
}

#[test]
fn fork_then_exec_stops_in_the_new_program_in_the_same_session() {
    let target = target();
    let t = target.to_str().unwrap();
    let tsrc = sample_path("c/exec_target.c");
    let line = line_of(&tsrc, "S:target");
    let (expected, code) = plain(&["exec", t]);
    let (mut c, parent) = session(
        &["exec", t],
        json!({}),
        json!({}),
        "c/exec_target.c",
        &[line],
    );
    let stopped = next_stop(&mut c).expect("the exec'd child stops");
    let tid = stopped["body"]["threadId"].as_i64().unwrap();
    assert_ne!(tgid(tid), parent);
    assert_eq!(top_value(&mut c, &stopped, "n"), "5");
    let frames = c.frames(tid);
    assert_eq!(frames[0]["line"], line, "{frames:?}");
    c.ok("continue", json!({"threadId": tid}));
    assert_eq!(next_stop(&mut c).err(), Some(i64::from(code)));
    c.event("terminated");
    assert_eq!(printed(&c), expected);
    c.finish();
}

#[test]
fn a_crashing_child_stops_in_the_same_session() {
    let src = sample_path("c/forks.c");
    let line = line_of(&src, "S:crash");
    let (expected, code) = plain(&["crash"]);
    let (mut c, parent) = session(&["crash"], json!({}), json!({}), "c/forks.c", &[]);
    let stopped = next_stop(&mut c).expect("the child's SIGSEGV stops");
    assert_eq!(stopped["body"]["reason"], "exception", "{stopped}");
    let tid = stopped["body"]["threadId"].as_i64().unwrap();
    assert_ne!(tgid(tid), parent);
    let frames = c.frames(tid);
    assert_eq!(frames[0]["name"], "crash", "{frames:?}");
    assert_eq!(frames[0]["line"], line, "{frames:?}");
    // Going on delivers the SIGSEGV, as without the debugger.
    c.ok("continue", json!({"threadId": tid}));
    assert_eq!(next_stop(&mut c).err(), Some(i64::from(code)));
    c.event("terminated");
    assert_eq!(printed(&c), expected);
    assert!(expected.contains("crash 0 signal 11"), "{expected}");
    c.finish();
}

#[test]
fn a_clone_without_clone_thread_stops_in_the_same_session() {
    let src = sample_path("c/forks.c");
    let job = line_of(&src, "S:job");
    let (expected, code) = plain(&["clone"]);
    let (mut c, parent) = session(&["clone"], json!({}), json!({}), "c/forks.c", &[job]);
    let stopped = next_stop(&mut c).expect("the clone child stops");
    let tid = stopped["body"]["threadId"].as_i64().unwrap();
    assert_ne!(tgid(tid), parent);
    assert_eq!(top_value(&mut c, &stopped, "k"), "7");
    c.ok("continue", json!({"threadId": tid}));
    assert_eq!(next_stop(&mut c).err(), Some(i64::from(code)));
    c.event("terminated");
    assert_eq!(printed(&c), expected);
    c.finish();
}

/// `sh -c` with a pipeline and a plain command: every process of it in the one session
/// (the shell, `exec_target 2`, `cat`, `exec_target 3`); the breakpoint in exec_target's
/// source, pending in the shell, stops each target with its own argument.
#[test]
fn a_shell_pipeline_in_the_same_session() {
    let Pipeline {
        script,
        source: tsrc,
        line,
        expected,
    } = pipeline();
    let mut c = DapClient::new();
    c.initialize();
    c.ok(
        "launch",
        json!({"type": "tandem", "program": "/bin/sh", "args": ["-c", script],
               "console": "internalConsole", "stdio": "pipes"}),
    );
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": tsrc}, "breakpoints": [{"line": line}]}),
    );
    c.ok("configurationDone", json!({}));
    let mut seen = Vec::new();
    let exit = loop {
        match next_stop(&mut c) {
            Ok(stopped) => {
                assert_eq!(stopped["body"]["reason"], "breakpoint", "{stopped}");
                seen.push(top_value(&mut c, &stopped, "n"));
                let tid = stopped["body"]["threadId"].as_i64().unwrap();
                c.ok("continue", json!({"threadId": tid}));
            }
            Err(code) => break code,
        }
    };
    seen.sort();
    assert_eq!(seen, ["2", "3"], "each target stops once with its argument");
    assert_eq!(exit, 0);
    c.event("terminated");
    assert_eq!(printed(&c), expected);
    c.finish();
}

/// Ending the launched program's session while a child is stopped at a breakpoint ends
/// the child too: nothing is left running, stopped or as a zombie.
#[test]
fn ending_the_session_ends_its_children() {
    let src = sample_path("c/forks.c");
    let job = line_of(&src, "S:job");
    let (mut c, parent) = session(&["prefork"], json!({}), json!({}), "c/forks.c", &[job]);
    let stopped = next_stop(&mut c).expect("a worker stops");
    let child = tgid(stopped["body"]["threadId"].as_i64().unwrap());
    assert!(alive(child));
    c.finish();
    let gone =
        support::dap::wait_until(Duration::from_secs(10), || !alive(child) && !alive(parent));
    assert!(gone, "child {child} or parent {parent} left behind");
}

#[test]
fn an_unknown_follow_children_value_is_refused_clearly() {
    let mut c = DapClient::new();
    c.initialize();
    let msg = c.err(
        "launch",
        json!({"program": forks(), "args": ["prefork"], "followChildren": "all"}),
    );
    assert!(msg.contains("followChildren"), "{msg}");
    c.finish();
}
