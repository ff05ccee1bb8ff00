//! Fault paths of `tandem dap` with `samples/c/rel_faults.c` (`gcc -g -O0 -pthread`): the
//! debuggee crashes, aborts, exits during a step, is killed from outside, churns threads,
//! forks and execs, or races many threads into one breakpoint; the client closes stdin,
//! sends garbage and vanishes; tandem gets SIGTERM; the language server of a bridged
//! session loses its client. Every test ends by checking that nothing is left behind.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod reliability_util;
mod support;

use std::collections::HashSet;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use reliability_util::{assert_clean, faults_sample};
use serde_json::{json, Value};
use support::dap::{alive, line_of, sample_path, tracer_of, wait_until, DapClient, KillOnDrop};
use support::{Peer, Protocol, PATIENCE};

fn source() -> PathBuf {
    sample_path("c/rel_faults.c")
}

fn launch(mode: &str) -> Value {
    json!({"program": faults_sample(), "args": [mode]})
}

fn tandem_pid(c: &DapClient) -> i64 {
    i64::from(c.peer.pid())
}

/// Launches `mode` with breakpoints on the lines of `markers`; returns the first stop.
fn start(c: &mut DapClient, mode: &str, markers: &[&str]) -> Value {
    let lines: Vec<i64> = markers.iter().map(|m| line_of(&source(), m)).collect();
    c.launch_to_stop(launch(mode), &source(), &lines)
}

/// A spinning copy of the sample, not traced by anyone.
fn spinner() -> KillOnDrop {
    let child = std::process::Command::new(faults_sample())
        .arg("spin")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    KillOnDrop(child)
}

#[test]
fn a_segfault_stops_with_reason_exception_and_the_fault_address() {
    let mut c = DapClient::new();
    let stop = start(&mut c, "segv", &[]);
    assert_eq!(stop["body"]["reason"], "exception", "{stop}");
    let description = stop["body"]["description"].as_str().unwrap_or_default();
    assert!(description.contains("0x10"), "{stop}");
    let pid = c.debuggee_pid.unwrap();
    let frames = c.frames(stop["body"]["threadId"].as_i64().unwrap());
    assert_eq!(frames[0]["line"], line_of(&source(), "LINE_SEGV"));
    c.ok("continue", json!({"threadId": stop["body"]["threadId"]}));
    assert_eq!(c.event("exited")["body"]["exitCode"], 128 + 11);
    c.event("terminated");
    let tandem = tandem_pid(&c);
    c.finish();
    assert_clean(tandem, &[pid], &[]);
}

#[test]
fn abort_stops_with_sigabrt_and_exits_with_it() {
    let mut c = DapClient::new();
    let stop = start(&mut c, "abort", &[]);
    assert_eq!(stop["body"]["reason"], "exception", "{stop}");
    assert_eq!(stop["body"]["text"], "SIGABRT", "{stop}");
    let pid = c.debuggee_pid.unwrap();
    c.ok("continue", json!({"threadId": stop["body"]["threadId"]}));
    assert_eq!(c.event("exited")["body"]["exitCode"], 128 + 6);
    c.event("terminated");
    let tandem = tandem_pid(&c);
    c.finish();
    assert_clean(tandem, &[pid], &[]);
}

#[test]
fn the_program_exits_during_a_step() {
    let mut c = DapClient::new();
    let stop = start(&mut c, "exit", &["LINE_EXIT"]);
    let thread = stop["body"]["threadId"].clone();
    let pid = c.debuggee_pid.unwrap();
    // Stepping over exit() never reaches the next line: the step ends with the program.
    c.ok("next", json!({"threadId": thread}));
    assert_eq!(c.event("exited")["body"]["exitCode"], 7);
    c.event("terminated");
    // The session is still usable: requests about the gone program fail, disconnect works.
    let r = c.request("stackTrace", json!({"threadId": thread}));
    assert_eq!(r["success"], false, "{r}");
    let tandem = tandem_pid(&c);
    c.finish();
    assert_clean(tandem, &[pid], &[]);
}

#[test]
fn sigkill_from_outside_while_paused() {
    let mut c = DapClient::new();
    let stop = start(&mut c, "spin", &["LINE_TICK"]);
    let pid = c.debuggee_pid.unwrap();
    assert_eq!(stop["body"]["reason"], "breakpoint");
    // SAFETY: kill has no memory preconditions; pid is the debuggee this test launched.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    assert_eq!(c.event("exited")["body"]["exitCode"], 128 + 9);
    c.event("terminated");
    let r = c.request("threads", json!({}));
    assert_eq!(r["type"], "response", "{r}");
    let tandem = tandem_pid(&c);
    c.finish();
    assert_clean(tandem, &[pid], &[]);
}

#[test]
fn two_hundred_threads_come_and_go_through_a_breakpoint() {
    let mut c = DapClient::new();
    let mut stop = start(&mut c, "threads", &["LINE_BODY"]);
    let pid = c.debuggee_pid.unwrap();
    let mut hits = 0;
    loop {
        assert_eq!(stop["body"]["reason"], "breakpoint", "{stop}");
        hits += 1;
        c.ok("continue", json!({"threadId": stop["body"]["threadId"]}));
        match next_of(&mut c, &["stopped", "exited"]) {
            (name, e) if name == "stopped" => stop = e,
            (_, e) => {
                assert_eq!(e["body"]["exitCode"], 0, "the program counted its threads");
                break;
            }
        }
    }
    assert_eq!(hits, 200, "every thread's hit reported once");
    c.event("terminated");
    let tandem = tandem_pid(&c);
    c.finish();
    assert_clean(tandem, &[pid], &[]);
}

/// Placing a condition in the debuggee maps memory there with a system call run by one
/// of its threads. A breakpoint set while the program runs stops every thread first, and
/// this program's main thread is almost always inside `clone` (it does nothing but create
/// threads), where it stops at the clone's ptrace event with the call not yet returned:
/// a call run from there has its number overwritten by the clone's return, and the
/// program's clone returns that call's error instead (`pthread_create` fails, or the new
/// thread runs on a stack the program frees: SIGSEGV). Several rounds, the breakpoint set
/// at a different moment of each, and the log must say the condition went into the
/// debuggee (else the test checked nothing).
#[test]
fn a_condition_placed_while_the_main_thread_creates_threads_leaves_clone_alone() {
    let line = line_of(&source(), "LINE_CHURN");
    let mut placed = 0;
    for round in 0..6u64 {
        let mut c = DapClient::with_peer(Peer::spawn(
            Protocol::Dap,
            &[],
            &[("TANDEM_LOG", "engine=debug")],
        ));
        c.initialize();
        c.ok("launch", launch("churn"));
        c.ok("configurationDone", json!({}));
        let pid = c.debuggee_pid.unwrap();
        std::thread::sleep(Duration::from_millis(20 + 15 * round));
        let body = c.ok(
            "setBreakpoints",
            json!({"source": {"path": source()},
                   "breakpoints": [{"line": line, "condition": "k < 0"}]}),
        );
        assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
        let (name, e) = next_of(&mut c, &["exited", "stopped"]);
        assert_eq!(name, "exited", "round {round}: the program stopped: {e}");
        assert_eq!(
            e["body"]["exitCode"], 0,
            "round {round}: every pthread_create worked and every thread ran"
        );
        c.event("terminated");
        if c.peer.stderr().contains("condition runs in the debuggee") {
            placed += 1;
        }
        let tandem = tandem_pid(&c);
        c.finish();
        assert_clean(tandem, &[pid], &[]);
    }
    // A round whose program ended before the breakpoint was set places nothing; most
    // must place it, or this test proved nothing.
    assert!(
        placed >= 4,
        "the condition was placed in {placed} of 6 rounds"
    );
}

/// The next event among `names` (the others are skipped).
fn next_of(c: &mut DapClient, names: &[&str]) -> (String, Value) {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        for name in names {
            if let Some(e) = c.event_within(name, Duration::from_millis(0)) {
                return (name.to_string(), e);
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "none of {names:?} within {PATIENCE:?}; stderr:\n{}",
            c.peer.stderr()
        );
        // Wait a little for anything to arrive, keeping it for the checks above.
        let _ = c.event_within("\u{0}never", Duration::from_millis(20));
    }
}

#[test]
fn many_threads_hit_one_breakpoint_at_once() {
    let mut c = DapClient::new();
    let mut stop = start(&mut c, "race", &["LINE_MEET"]);
    let pid = c.debuggee_pid.unwrap();
    let mut threads = HashSet::new();
    loop {
        assert_eq!(stop["body"]["reason"], "breakpoint", "{stop}");
        let tid = stop["body"]["threadId"].as_i64().unwrap();
        assert!(threads.insert(tid), "thread {tid} reported twice");
        // The thread that stopped is one the threads request knows.
        let listed = c.ok("threads", json!({}));
        assert!(
            listed["threads"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["id"] == tid),
            "{listed}"
        );
        c.ok("continue", json!({"threadId": tid}));
        match next_of(&mut c, &["stopped", "exited"]) {
            (name, e) if name == "stopped" => stop = e,
            (_, e) => {
                assert_eq!(e["body"]["exitCode"], 0);
                break;
            }
        }
    }
    assert_eq!(threads.len(), 8, "every racing thread accounted for");
    let tandem = tandem_pid(&c);
    c.finish();
    assert_clean(tandem, &[pid], &[]);
}

#[test]
fn fork_and_exec_in_the_debuggee() {
    let mut c = DapClient::new();
    let stop = start(&mut c, "forkexec", &["LINE_AFTER_FORK"]);
    assert_eq!(stop["body"]["reason"], "breakpoint", "{stop}");
    let pid = c.debuggee_pid.unwrap();
    let frames = c.frames(stop["body"]["threadId"].as_i64().unwrap());
    let status = c.evaluate(frames[0]["id"].as_i64().unwrap(), "status");
    assert_eq!(
        status["result"], "5",
        "the child ran and exited with its code"
    );
    // The debuggee's own children are its business: none is left traced or stopped.
    for (child, state) in reliability_util::children_of(pid) {
        assert_eq!(tracer_of(child), 0, "child {child} is traced");
        assert!(!matches!(state, 't' | 'T'), "child {child} is stopped");
    }
    c.ok("continue", json!({"threadId": stop["body"]["threadId"]}));
    assert_eq!(c.event("exited")["body"]["exitCode"], 0);
    let tandem = tandem_pid(&c);
    c.finish();
    assert_clean(tandem, &[pid], &[]);
}

#[test]
fn closing_stdin_mid_run_kills_a_launched_program() {
    let mut c = DapClient::new();
    c.initialize();
    c.ok("launch", launch("spin"));
    c.ok("configurationDone", json!({}));
    c.event("process");
    let pid = c.debuggee_pid.unwrap();
    let tandem = tandem_pid(&c);
    c.peer.close_stdin();
    let status = c.peer.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(1), "end of input without disconnect");
    assert_clean(tandem, &[pid], &[]);
}

#[test]
fn closing_stdin_mid_run_detaches_an_attached_program() {
    let target = spinner();
    let program = faults_sample();
    let mut c = DapClient::new();
    c.initialize();
    c.ok("attach", json!({"pid": target.pid()}));
    let line = line_of(&source(), "LINE_TICK");
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": source()}, "breakpoints": [{"line": line}]}),
    );
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    // Running again with the breakpoint planted: it is hit every millisecond, so the end
    // of input meets the program stopped at it or about to be.
    c.ok("continue", json!({"threadId": stop["body"]["threadId"]}));
    let tandem = tandem_pid(&c);
    c.peer.close_stdin();
    c.peer.wait_exit(PATIENCE);
    assert_clean(tandem, &[], &[(target.pid(), program.as_path())]);
    still_ticking(target.pid());
}

/// The sample's `ticks` counter advances: the process runs its loop.
fn still_ticking(pid: i64) {
    // The loop sleeps a millisecond per tick: its voluntary context switches keep growing.
    let switches = || {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .map(|v| v.trim().parse::<u64>().unwrap())
            .unwrap()
    };
    let before = switches();
    assert!(
        wait_until(Duration::from_secs(5), || switches() > before + 5),
        "process {pid} does not run"
    );
}

#[test]
fn garbage_then_vanishing_client() {
    let mut c = DapClient::new();
    c.initialize();
    c.ok("launch", launch("spin"));
    c.ok("configurationDone", json!({}));
    c.event("process");
    let pid = c.debuggee_pid.unwrap();
    let tandem = tandem_pid(&c);
    // Valid framing, invalid JSON: an error response, the session goes on.
    c.peer
        .send_body(b"{\"seq\": 99, \"type\": \"request\", \"command\": ");
    let mut answered = false;
    for _ in 0..50 {
        match c.peer.try_recv(PATIENCE) {
            Some(m) if m["type"] == "response" => {
                assert_eq!(m["success"], false, "{m}");
                answered = true;
                break;
            }
            Some(_) => continue,
            None => break,
        }
    }
    assert!(answered, "no error response to invalid JSON");
    // Broken framing, then the client disappears.
    c.peer
        .send_raw(b"Content-Length: nope\r\n\r\n\x00\xff\xfe garbage \r\n\r\n");
    c.peer.close_stdin();
    let status = c.peer.wait_exit(PATIENCE);
    assert!(!status.success(), "{status}");
    assert_clean(tandem, &[pid], &[]);
}

#[test]
fn sigterm_kills_launched_and_detaches_attached_programs() {
    let target = spinner();
    let program = faults_sample();
    // One adapter with a launched program running into a breakpoint again and again, one
    // attached with a breakpoint planted.
    let mut launched = DapClient::new();
    let stop = start(&mut launched, "spin", &["LINE_TICK"]);
    launched.ok("continue", json!({"threadId": stop["body"]["threadId"]}));
    let launched_pid = launched.debuggee_pid.unwrap();
    let mut attached = DapClient::new();
    attached.initialize();
    attached.ok("attach", json!({"pid": target.pid()}));
    let line = line_of(&source(), "LINE_TICK");
    attached.ok(
        "setBreakpoints",
        json!({"source": {"path": source()}, "breakpoints": [{"line": line}]}),
    );
    attached.ok("configurationDone", json!({}));
    let stop = attached.event("stopped");
    attached.ok("continue", json!({"threadId": stop["body"]["threadId"]}));
    for c in [&mut launched, &mut attached] {
        let pid = tandem_pid(c);
        // SAFETY: kill has no memory preconditions; pid is the tandem this test started.
        assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGTERM) }, 0);
        // tandem cleans up, then dies of the signal it got (the conventional ending).
        let status = c.peer.wait_exit(PATIENCE);
        assert!(
            status.code().is_some() || status.signal() == Some(libc::SIGTERM),
            "tandem ended with {status}"
        );
    }
    assert_clean(tandem_pid(&launched), &[launched_pid], &[]);
    assert_clean(
        tandem_pid(&attached),
        &[],
        &[(target.pid(), program.as_path())],
    );
    still_ticking(target.pid());
}

/// A private workspace holding the sample's binary and a private runtime directory.
struct Workspace {
    base: PathBuf,
    root: PathBuf,
    runtime: PathBuf,
}

impl Workspace {
    fn new(tag: &str) -> Workspace {
        let base = std::env::temp_dir().join(format!("tandem-rel-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("ws");
        let runtime = base.join("run");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&runtime).unwrap();
        let root = root.canonicalize().unwrap();
        std::fs::copy(source(), root.join("rel_faults.c")).unwrap();
        std::fs::copy(faults_sample(), root.join("rel_faults")).unwrap();
        Workspace {
            base,
            root,
            runtime,
        }
    }

    fn spawn(&self, protocol: Protocol, cwd: &Path) -> Peer {
        let runtime = self.runtime.display().to_string();
        Peer::spawn_in(protocol, &[], &[("XDG_RUNTIME_DIR", &runtime)], Some(cwd))
    }

    fn socket_count(&self) -> usize {
        std::fs::read_dir(self.runtime.join("tandem"))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

#[test]
fn the_language_client_dies_with_a_bridged_session() {
    let ws = Workspace::new("bridge");
    let mut lsp = ws.spawn(Protocol::Lsp, &ws.root);
    let root_uri = format!("file://{}", ws.root.display());
    let init = lsp.lsp_request(
        "initialize",
        json!({"processId": null, "rootUri": root_uri,
               "workspaceFolders": [{"uri": root_uri, "name": "ws"}], "capabilities": {}}),
    );
    assert!(init.get("result").is_some(), "{init}");
    lsp.lsp_notify("initialized", json!({}));
    assert!(
        wait_until(PATIENCE, || ws.socket_count() > 0),
        "the language server opened no socket"
    );
    let mut dap = DapClient::with_peer(ws.spawn(Protocol::Dap, &ws.root));
    dap.initialize();
    let line = line_of(&source(), "LINE_TICK");
    dap.ok("launch", json!({"program": "rel_faults", "args": ["spin"]}));
    dap.ok(
        "setBreakpoints",
        json!({"source": {"path": source()}, "breakpoints": [{"line": line}]}),
    );
    dap.ok("configurationDone", json!({}));
    let stop = dap.event("stopped");
    let debuggee = dap.debuggee_pid.unwrap();
    let lsp_pid = i64::from(lsp.pid());
    assert_eq!(
        reliability_util::ppid(debuggee),
        Some(lsp_pid),
        "the session is bridged to the language server"
    );
    dap.ok("continue", json!({"threadId": stop["body"]["threadId"]}));
    // The editor's language client dies: the server's input ends.
    lsp.close_stdin();
    lsp.wait_exit(PATIENCE);
    // The relay sees its session end and exits; the debuggee went with the server.
    let relay = dap.peer.wait_exit(PATIENCE);
    assert!(relay.code().is_some(), "relay died of a signal: {relay}");
    assert!(!alive(debuggee), "debuggee {debuggee} outlived the server");
    assert_clean(lsp_pid, &[debuggee], &[]);
    assert_clean(i64::from(dap.peer.pid()), &[], &[]);
}
