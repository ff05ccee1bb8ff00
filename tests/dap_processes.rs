//! `tandem dap` starting and ending programs end to end: launch options, stop on entry,
//! disconnect and terminate, attach by pid and by name, wait-for and suspend, the
//! integrated terminal — every message validated against the DAP schema.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::dap::{self, dap_sample, line_of, sample_path, scratch_dir, stop_at, var, DapClient};

#[test]
fn stop_on_entry_args_env_and_cwd() {
    let mut c = DapClient::new();
    c.initialize();
    let cwd = std::env::temp_dir();
    c.ok(
        "launch",
        json!({"program": dap_sample(), "stopOnEntry": true,
               "args": ["two words", "quote\"d", "it's", ""],
               "env": {"TANDEM_TEST_VAR": "hello world"}, "cwd": cwd,
               "someUnknownKey": {"ignored": true}}),
    );
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    assert_eq!(stop["body"]["reason"], "entry");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    c.ok("continue", json!({"threadId": tid}));
    assert_eq!(c.event("exited")["body"]["exitCode"], 3);
    let stdout: String = c
        .output
        .iter()
        .filter(|(cat, _)| cat == "stdout")
        .map(|(_, t)| t.as_str())
        .collect();
    assert!(
        stdout.contains("args=4 [two words] [quote\"d] [it's] []"),
        "{stdout}"
    );
    assert!(stdout.contains("env=hello world"), "{stdout}");
    assert!(
        stdout.contains(&format!("cwd={}", cwd.canonicalize().unwrap().display())),
        "{stdout}"
    );
    let stderr: String = c
        .output
        .iter()
        .filter(|(cat, _)| cat == "stderr")
        .map(|(_, t)| t.as_str())
        .collect();
    assert_eq!(stderr, "to stderr 58\n");
    // The env list form works too.
    let mut c2 = DapClient::new();
    c2.initialize();
    c2.ok(
        "launch",
        json!({"program": dap_sample(), "env": ["TANDEM_TEST_VAR=a=b"]}),
    );
    c2.ok("configurationDone", json!({}));
    c2.event("exited");
    assert!(c2.output.iter().any(|(_, t)| t.contains("env=a=b")));
    c.finish();
    c2.finish();
}

#[test]
fn disconnect_kills_a_launched_program() {
    let mut c = DapClient::new();
    let (_tid, _) = stop_at(&mut c, "LINE_ADD");
    let pid = pid_of(&mut c);
    assert!(dap::alive(pid));
    c.finish();
    assert!(dap::wait_until(Duration::from_secs(5), || !dap::alive(pid)));
}

#[test]
fn terminate_ends_the_program_with_terminated() {
    let mut c = DapClient::new();
    let (_tid, _) = stop_at(&mut c, "LINE_ADD");
    let pid = pid_of(&mut c);
    c.ok("terminate", json!({}));
    c.event("terminated");
    assert!(dap::wait_until(Duration::from_secs(5), || !dap::alive(pid)));
    c.finish();
}

fn pid_of(c: &mut DapClient) -> i64 {
    c.debuggee_pid.expect("a process event")
}

#[test]
fn attach_by_pid_then_detach_leaves_it_running() {
    let program = dap::build("c/dap_attach.c", "gcc", &["-g", "-O0"]);
    let mut child = dap::KillOnDrop::spawn(&program);
    let pid = child.pid();
    let src = sample_path("c/dap_attach.c");
    let mut c = DapClient::new();
    c.initialize();
    c.ok("attach", json!({"pid": pid}));
    let body = c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [{"line": line_of(&src, "LINE_TICK")}]}),
    );
    assert_eq!(body["breakpoints"][0]["verified"], true);
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    assert_eq!(stop["body"]["reason"], "breakpoint");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let f = c.frames(tid);
    assert_eq!(f[0]["name"], "tick");
    let args = c.scope_vars(frame_id(&f[0]), "Arguments");
    assert_eq!(var(&args, "step")["value"], "1");
    // Traced by a thread of this tandem.
    let tracer = dap::tracer_of(pid);
    assert!(std::path::Path::new(&format!("/proc/{}/task/{tracer}", c.peer.pid())).exists());
    // Disconnect detaches an attached program by default: it keeps running, untraced.
    c.finish();
    assert!(dap::wait_until(Duration::from_secs(5), || dap::tracer_of(
        pid
    ) == 0));
    std::thread::sleep(Duration::from_millis(100));
    assert!(dap::alive(pid));
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "the attached program died"
    );
}

#[test]
fn attach_by_name_lists_candidates_when_ambiguous() {
    let program = dap::build("c/dap_attach.c", "gcc", &["-g", "-O0"]);
    let dir = scratch_dir("dap-processes");
    let unique = dir.join("tandem-attach-by-name");
    std::fs::copy(&program, &unique).unwrap();
    let mut a = dap::KillOnDrop::spawn(&unique);
    let mut c = DapClient::new();
    c.initialize();
    c.ok("attach", json!({"program": "tandem-attach-by-name"}));
    c.ok("configurationDone", json!({}));
    c.ok("pause", json!({"threadId": a.pid()}));
    assert_eq!(c.event("stopped")["body"]["reason"], "pause");
    c.finish();
    let mut b = dap::KillOnDrop::spawn(&unique);
    let mut c = DapClient::new();
    c.initialize();
    let m = c.err("attach", json!({"program": "tandem-attach-by-name"}));
    assert!(
        m.contains(&a.pid().to_string()) && m.contains(&b.pid().to_string()),
        "{m}"
    );
    c.finish();
    for p in [&mut a, &mut b] {
        assert!(p.0.try_wait().unwrap().is_none());
    }
}

#[test]
fn integrated_terminal_runs_the_relay_the_client_starts() {
    use std::io::{Read, Write};
    let program = dap::build("c/dap_echo.c", "gcc", &["-g", "-O0"]);
    let mut c = DapClient::new();
    c.initialize_with(json!({"supportsRunInTerminalRequest": true}));
    c.ok(
        "launch",
        json!({"program": program, "console": "integratedTerminal"}),
    );
    let req = c.adapter_request("runInTerminal");
    assert_eq!(req["arguments"]["kind"], "integrated");
    let argv: Vec<String> = req["arguments"]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    // The client runs the command line it was given, as a terminal would.
    let mut term = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(req["arguments"]["cwd"].as_str().unwrap())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    c.respond(&req, true, json!({"processId": term.id()}));
    c.ok("configurationDone", json!({}));
    term.stdin.as_mut().unwrap().write_all(b"hello\n").unwrap();
    assert_eq!(c.event("exited")["body"]["exitCode"], 0);
    let mut screen = String::new();
    term.stdout
        .as_mut()
        .unwrap()
        .read_to_string(&mut screen)
        .unwrap();
    // The program's stdin was a terminal, and what it printed reached the client's one.
    assert!(screen.contains("tty=1"), "{screen:?}");
    assert!(screen.contains("got: hello"), "{screen:?}");
    assert!(term.wait().unwrap().success());
    c.finish();
}

#[test]
fn a_refused_terminal_falls_back_to_the_console() {
    let program = dap::build("c/dap_echo.c", "gcc", &["-g", "-O0"]);
    let mut c = DapClient::new();
    c.initialize_with(json!({"supportsRunInTerminalRequest": true}));
    c.ok(
        "launch",
        json!({"program": program, "console": "integratedTerminal"}),
    );
    let req = c.adapter_request("runInTerminal");
    c.respond(&req, false, json!({}));
    c.ok("configurationDone", json!({}));
    c.event("exited");
    assert!(
        c.output
            .iter()
            .any(|(cat, t)| cat == "stdout" && t.contains("tty=1")),
        "{:?}",
        c.output
    );
    c.finish();
}

#[test]
fn attach_wait_for_and_suspend_on_disconnect() {
    let program = dap::build("c/dap_attach.c", "gcc", &["-g", "-O0"]);
    let dir = scratch_dir("dap-processes");
    let unique = dir.join("tandem-wait-for-me");
    std::fs::copy(&program, &unique).unwrap();
    let mut c = DapClient::new();
    c.initialize();
    let seq = c.send_request(
        "attach",
        json!({"program": "tandem-wait-for-me", "waitFor": true, "timeout": 20}),
    );
    std::thread::sleep(Duration::from_millis(300));
    let mut child = dap::KillOnDrop::spawn(&unique);
    let r = c.response_to(seq);
    assert_eq!(r["success"], true, "{r}");
    c.event("process");
    assert_eq!(c.debuggee_pid, Some(child.pid()));
    c.ok("configurationDone", json!({}));
    let r = c.request(
        "disconnect",
        json!({"terminateDebuggee": false, "suspendDebuggee": true}),
    );
    assert_eq!(r["success"], true);
    let pid = child.pid();
    // Detached and stopped: state T, no tracer; SIGCONT lets it run on.
    let state = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap()
            .rsplit(')')
            .next()
            .unwrap()
            .trim()
            .chars()
            .next()
            .unwrap()
    };
    assert!(dap::wait_until(Duration::from_secs(5), || state() == 'T'
        && dap::tracer_of(pid) == 0));
    unsafe_kill(pid as i32, 18);
    assert!(dap::wait_until(Duration::from_secs(5), || state() != 'T'));
    assert!(child.0.try_wait().unwrap().is_none());
    c.peer.wait_exit(Duration::from_secs(10));
}

fn unsafe_kill(pid: i32, sig: i32) {
    let status = std::process::Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

fn frame_id(f: &Value) -> i64 {
    f["id"].as_i64().unwrap()
}
