//! One backend end to end: `tandem lsp` serves a workspace holding `samples/c/live_values.c`
//! (built `gcc -g -O0`); `tandem dap` started on stdio in that workspace finds the language
//! server's socket and bridges to it, so the debuggee lives in the language server's process
//! manager. While it is paused, `textDocument/inlineValue` and hover show the values DAP's
//! `variables` shows; each stop and continue asks the client to refresh; breakpoints the
//! adapter moved get hint diagnostics; after the program exits no value is left. In a
//! recorded session they follow the point in time shown (issue 30).
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::{json, Value};
use support::bridged::{at, Lsp, Workspace};
use support::dap::{line_of, DapClient};
use support::{Protocol, PATIENCE};

const SAMPLE: &str = "live_values.c";

fn workspace(tag: &str) -> Workspace {
    Workspace::new(tag, SAMPLE, "live", &["src/deep"])
}

/// The language server, initialized with inline values on and the sample open.
fn start_lsp(fx: &Workspace) -> Lsp {
    let caps = json!({"textDocument": {"inlineValue": {"dynamicRegistration": false}}});
    let (mut lsp, init) = Lsp::initialize(fx, caps, Value::Null);
    assert_eq!(
        init["result"]["capabilities"]["inlineValueProvider"], true,
        "{init}"
    );
    lsp.open(fx);
    lsp
}

fn inline_refreshes(lsp: &Lsp) -> usize {
    lsp.count("workspace/inlineValue/refresh")
}

fn inline_values(
    lsp: &mut Lsp,
    uri: &str,
    first: u32,
    last: u32,
    stopped: Option<u32>,
) -> Vec<Value> {
    let mut params = json!({
        "textDocument": {"uri": uri},
        "range": {"start": {"line": first, "character": 0}, "end": {"line": last, "character": 0}},
        "context": {"frameId": 1},
    });
    if let Some(line) = stopped {
        params["context"]["stoppedLocation"] =
            json!({"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}});
    }
    let resp = lsp.request("textDocument/inlineValue", params);
    assert!(resp.get("error").is_none(), "{resp}");
    resp["result"].as_array().cloned().unwrap_or_default()
}

/// The hover's text at a position ("" when there is none).
fn hover_text(lsp: &mut Lsp, uri: &str, line: u32, character: u32) -> String {
    lsp.hover(uri, (line, character))["contents"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// "name = value" for each variable DAP shows in the frame's Arguments and Locals.
fn dap_values(dap: &mut DapClient, frame: i64) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for scope in ["Arguments", "Locals"] {
        for v in dap.scope_vars(frame, scope) {
            out.insert(format!(
                "{} = {}",
                v["name"].as_str().unwrap(),
                v["value"].as_str().unwrap()
            ));
        }
    }
    out
}

/// The process a thread belongs to.
fn tid_process(tid: i64) -> i64 {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn parent_pid(pid: i64) -> i64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("PPid:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn inline_values_and_hovers_follow_the_bridged_debugger() {
    let fx = workspace("e2e");
    let src = fx.source();
    let uri = fx.uri();
    let mut lsp = start_lsp(&fx);
    assert_eq!(
        fx.sockets().len(),
        1,
        "the language server serves one socket"
    );

    // Lines with code, from DWARF, before any debugging session.
    let blank = line_of(&src, "LINE_BLANK") as u32;
    let sum_line = line_of(&src, "LINE_SUM") as u32;
    let total_line = line_of(&src, "LINE_TOTAL") as u32;
    let locations = lsp.request(
        "tandem/breakpointLocations",
        json!({"textDocument": {"uri": uri}}),
    );
    let lines: Vec<u64> = locations["result"]["lines"]
        .as_array()
        .unwrap_or_else(|| panic!("{locations}"))
        .iter()
        .map(|l| l.as_u64().unwrap())
        .collect();
    assert!(lines.contains(&u64::from(sum_line - 1)), "{lines:?}");
    assert!(lines.contains(&u64::from(total_line - 1)), "{lines:?}");
    assert!(!lines.contains(&u64::from(blank - 1)), "{lines:?}");
    let ranged = lsp.request(
        "tandem/breakpointLocations",
        json!({"textDocument": {"uri": uri}, "range": {"start": {"line": blank - 1, "character": 0}, "end": {"line": sum_line - 1, "character": 0}}}),
    );
    assert_eq!(ranged["result"]["lines"], json!([sum_line - 1]), "{ranged}");

    // Nothing is paused: no inline values.
    assert!(inline_values(&mut lsp, &uri, 0, 40, None).is_empty());

    // `tandem dap` on stdio, started in a subdirectory of the workspace, bridges to the
    // language server: the program is relative to its working directory.
    let deep = fx.root.join("src/deep");
    let mut dap = DapClient::with_peer(fx.spawn(Protocol::Dap, &[], &deep));
    dap.initialize();
    dap.ok("launch", json!({"program": "../../live"}));
    let bps = dap.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [{"line": blank}, {"line": total_line}]}),
    );
    assert_eq!(bps["breakpoints"][0]["line"], sum_line, "{bps}");
    dap.ok("configurationDone", json!({}));
    let stop = dap.event("stopped");
    let debuggee = dap.debuggee_pid.expect("a process event");
    assert_eq!(
        parent_pid(debuggee),
        i64::from(lsp.peer.pid()),
        "the debuggee belongs to the language server's process manager"
    );

    // The moved breakpoint is a hint on the line the user chose.
    let expected_hint = format!("breakpoint moved to line {sum_line}: no code on line {blank}");
    lsp.wait_until("the breakpoint hint", |l| {
        l.diagnostics.iter().any(|d| {
            d["uri"] == uri
                && d["diagnostics"].as_array().unwrap().iter().any(|x| {
                    x["message"] == expected_hint.as_str()
                        && x["severity"] == 4
                        && x["range"]["start"]["line"] == blank - 1
                })
        })
    });
    lsp.wait_until("a refresh after the first stop", |l| {
        inline_refreshes(l) >= 1
    });

    // Continue to LINE_TOTAL: every local is assigned there.
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let before = inline_refreshes(&lsp);
    dap.ok("continue", json!({"threadId": tid}));
    let stop = dap.event("stopped");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let frames = dap.frames(tid);
    assert_eq!(frames[0]["line"], total_line, "{frames:#?}");
    let frame = frames[0]["id"].as_i64().unwrap();
    let shown = dap_values(&mut dap, frame);
    for name in ["factor = 5", "sx = 15", "sy = 20", "sum = 35"] {
        assert!(shown.contains(name), "{shown:?}");
    }
    lsp.wait_until("refreshes for the continue and the stop", |l| {
        inline_refreshes(l) >= before + 2
    });

    // Inline values over the function: the same strings DAP shows.
    let (scale_line, _) = at(&src, "int scale(", "scale");
    let values = inline_values(
        &mut lsp,
        &uri,
        scale_line,
        scale_line + 10,
        Some(total_line - 1),
    );
    let texts: BTreeSet<String> = values
        .iter()
        .map(|v| v["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(texts, shown, "{values:#?}");
    // Each value sits on an occurrence of its variable, never before its declaration nor
    // after the stopped line.
    let text = std::fs::read_to_string(&src).unwrap();
    let lines_of: Vec<&str> = text.lines().collect();
    for v in &values {
        let line = v["range"]["start"]["line"].as_u64().unwrap() as usize;
        let start = v["range"]["start"]["character"].as_u64().unwrap() as usize;
        let end = v["range"]["end"]["character"].as_u64().unwrap() as usize;
        let name = v["text"].as_str().unwrap().split(" = ").next().unwrap();
        assert_eq!(&lines_of[line][start..end], name, "{v}");
        assert!(line < total_line as usize, "{v}");
        if name == "sum" {
            assert!(
                line + 1 >= sum_line as usize,
                "sum before its declaration: {v}"
            );
        }
    }
    let sum_on_total = values.iter().any(|v| {
        v["range"]["start"]["line"] == total_line - 1
            && v["text"].as_str().unwrap().starts_with("sum = ")
    });
    assert!(sum_on_total, "{values:#?}");

    // Hover on a local and on a member: the same values.
    let (line, col) = at(&src, "LINE_TOTAL", "sum");
    let hover = hover_text(&mut lsp, &uri, line, col);
    let sum_value = shown.iter().find(|s| s.starts_with("sum = ")).unwrap();
    assert!(hover.contains("local variable"), "{hover}");
    assert!(hover.contains(sum_value.as_str()), "{hover}");
    let (line, col) = at(&src, "int sx = p.x", "x *");
    let hover = hover_text(&mut lsp, &uri, line, col);
    let px = dap.evaluate(frame, "p.x");
    assert!(
        hover.contains(&format!("p.x = {}", px["result"].as_str().unwrap())),
        "{hover}"
    );

    let (line, col) = at(&src, "LINE_TOTAL", "total");
    let hover = hover_text(&mut lsp, &uri, line, col);
    let total = dap.evaluate(frame, "total");
    assert!(hover.contains("global variable"), "{hover}");
    assert!(
        hover.contains(&format!("total = {}", total["result"].as_str().unwrap())),
        "{hover}"
    );

    // Continue to the end: values vanish, and the client is told to refresh.
    let before = inline_refreshes(&lsp);
    dap.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": []}),
    );
    dap.ok("continue", json!({"threadId": tid}));
    let exited = dap.event("exited");
    assert_eq!(exited["body"]["exitCode"], 0);
    dap.event("terminated");
    lsp.wait_until("refreshes for the continue and the end", |l| {
        inline_refreshes(l) >= before + 2
    });
    assert!(inline_values(&mut lsp, &uri, scale_line, scale_line + 10, None).is_empty());
    let (line, col) = at(&src, "LINE_TOTAL", "sum");
    let hover = hover_text(&mut lsp, &uri, line, col);
    assert!(hover.contains("local variable"), "{hover}");
    assert!(!hover.contains("live value"), "{hover}");
    // The hints went with the session.
    lsp.wait_until("the hints to clear", |l| {
        l.diagnostics
            .iter()
            .rev()
            .find(|d| d["uri"] == uri)
            .is_some_and(|d| d["diagnostics"].as_array().unwrap().is_empty())
    });

    // The bridged adapter ends as a standalone one would: 0 after disconnect.
    dap.finish();
    lsp.finish();
    assert!(fx.sockets().is_empty(), "the socket is removed at exit");
}

#[test]
fn without_a_language_server_dap_runs_standalone_and_connect_is_explicit() {
    let fx = workspace("alone");
    // No `tandem lsp`: the adapter serves the session itself.
    let mut dap = DapClient::with_peer(fx.spawn(Protocol::Dap, &[], &fx.root));
    dap.initialize();
    dap.ok("launch", json!({"program": "live"}));
    dap.ok("configurationDone", json!({}));
    dap.event("exited");
    assert!(dap.debuggee_pid.is_some(), "the program ran");
    assert!(fx.sockets().is_empty());
    dap.finish();

    // A language server whose client names no workspace root opens no socket.
    let mut rootless = fx.spawn(Protocol::Lsp, &[], &fx.root);
    rootless.lsp_initialize(json!({}));
    let r = rootless.lsp_request("shutdown", Value::Null);
    assert!(r.get("error").is_none(), "{r}");
    assert!(fx.sockets().is_empty(), "{:?}", fx.sockets());
    rootless.lsp_notify("exit", Value::Null);
    assert_eq!(rootless.wait_exit(PATIENCE).code(), Some(0));

    // `--connect` to a socket nobody serves fails clearly instead of running standalone.
    let missing = fx.runtime.join("nobody.sock");
    let mut peer = fx.spawn(
        Protocol::Dap,
        &["--connect", missing.to_str().unwrap()],
        &fx.root,
    );
    let status = peer.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(2));
    // stderr is read by a thread of its own: give it the time to see the end.
    let said = support::dap::wait_until(PATIENCE, || peer.stderr().contains("cannot connect"));
    assert!(said, "{}", peer.stderr());

    // With a language server, `--connect SOCKET` reaches it from anywhere.
    let lsp = start_lsp(&fx);
    let socket = fx.sockets().pop().expect("a socket");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&socket).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "socket mode {mode:o}");
    let dir_mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(socket.parent().unwrap())
            .unwrap()
            .permissions(),
    );
    assert_eq!(dir_mode & 0o777, 0o700, "directory mode {dir_mode:o}");
    let elsewhere = std::env::temp_dir();
    let mut dap = DapClient::with_peer(fx.spawn(
        Protocol::Dap,
        &["--connect", socket.to_str().unwrap()],
        &elsewhere,
    ));
    dap.initialize();
    dap.ok(
        "launch",
        json!({"program": fx.root.join("live"), "stopOnEntry": true}),
    );
    dap.ok("configurationDone", json!({}));
    dap.event("stopped");
    let debuggee = dap.debuggee_pid.unwrap();
    assert_eq!(parent_pid(debuggee), i64::from(lsp.peer.pid()));
    dap.finish();
    // `--standalone` ignores the language server.
    let mut dap = DapClient::with_peer(fx.spawn(Protocol::Dap, &["--standalone"], &fx.root));
    dap.initialize();
    dap.ok("launch", json!({"program": "live", "stopOnEntry": true}));
    dap.ok("configurationDone", json!({}));
    dap.event("stopped");
    let debuggee = dap.debuggee_pid.unwrap();
    assert_eq!(parent_pid(debuggee), i64::from(dap.peer.pid()));
    dap.finish();
    lsp.finish();
}

/// A core file opened by the bridged adapter is a paused debuggee for the language server
/// too: its inline values and hovers are the core's, DAP's `variables` strings exactly, and
/// they vanish when the adapter lets the core go.
#[test]
fn a_core_file_opened_by_the_adapter_shows_its_values_in_the_editor() {
    let fx = workspace("core");
    let src = fx.source();
    let uri = fx.uri();
    let total_line = line_of(&src, "LINE_TOTAL") as u32;
    let program = fx.root.join("live");
    let core = fx.root.join("live.core");
    let gdb = Command::new("gdb")
        .args(["-batch", "-nx", "-ex"])
        .arg(format!("break {SAMPLE}:{total_line}"))
        .args(["-ex", "run", "-ex"])
        .arg(format!("gcore {}", core.display()))
        .args(["-ex", "kill"])
        .arg(&program)
        .output()
        .unwrap();
    assert!(
        core.is_file(),
        "gdb wrote no core: {}",
        String::from_utf8_lossy(&gdb.stdout)
    );

    let mut lsp = start_lsp(&fx);
    let mut dap = DapClient::with_peer(fx.spawn(Protocol::Dap, &[], &fx.root));
    dap.initialize();
    let refreshes = inline_refreshes(&lsp);
    dap.ok("attach", json!({"program": program, "coreFile": core}));
    let stop = dap.event("stopped");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let frames = dap.frames(tid);
    assert_eq!(frames[0]["line"], total_line, "{frames:#?}");
    let frame = frames[0]["id"].as_i64().unwrap();
    let shown = dap_values(&mut dap, frame);
    for name in ["factor = 5", "sx = 15", "sy = 20", "sum = 35"] {
        assert!(shown.contains(name), "{shown:?}");
    }
    lsp.wait_until("a refresh when the core opens", |l| {
        inline_refreshes(l) > refreshes
    });

    let (scale_line, _) = at(&src, "int scale(", "scale");
    let values = inline_values(
        &mut lsp,
        &uri,
        scale_line,
        scale_line + 10,
        Some(total_line - 1),
    );
    let texts: BTreeSet<String> = values
        .iter()
        .map(|v| v["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(texts, shown, "{values:#?}");
    let (line, col) = at(&src, "LINE_TOTAL", "sum");
    let hover = hover_text(&mut lsp, &uri, line, col);
    assert!(hover.contains("live value"), "{hover}");
    assert!(hover.contains("sum = 35"), "{hover}");
    let (line, col) = at(&src, "LINE_TOTAL", "total");
    let hover = hover_text(&mut lsp, &uri, line, col);
    let total = dap.evaluate(frame, "total");
    assert!(
        hover.contains(&format!("total = {}", total["result"].as_str().unwrap())),
        "{hover}"
    );

    // The adapter lets the core go: the editor is told, and no value is left.
    let refreshes = inline_refreshes(&lsp);
    dap.finish();
    lsp.wait_until("a refresh when the core closes", |l| {
        inline_refreshes(l) > refreshes
    });
    assert!(inline_values(&mut lsp, &uri, scale_line, scale_line + 10, None).is_empty());
    let (line, col) = at(&src, "LINE_TOTAL", "sum");
    let hover = hover_text(&mut lsp, &uri, line, col);
    assert!(!hover.contains("live value"), "{hover}");
    lsp.finish();
}

/// Issue 31: a forking program debugged with its children in the same session (a client
/// without `startDebugging`): the workers run at once and may all be stopped together;
/// the editor shows one thread (`tandem.focusSession` with its `threadId`, as the VS Code
/// extension sends it), and hovers show that worker's values (its own `k`), then the next
/// one's. The language server follows the process shown.
#[test]
fn hovers_follow_the_child_process_that_stopped() {
    let fx = Workspace::new("children", "forks.c", "forks", &[]);
    let src = fx.source();
    let uri = fx.uri();
    let mut lsp = start_lsp(&fx);
    let mut dap = DapClient::with_peer(fx.spawn(Protocol::Dap, &[], &fx.root));
    dap.initialize();
    dap.ok("launch", json!({"program": "./forks", "args": ["prefork"]}));
    let job = line_of(&src, "S:job");
    dap.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [{"line": job}]}),
    );
    dap.ok("configurationDone", json!({}));
    let parent = dap.debuggee_pid.expect("a process event");
    let (line, k_col) = at(&src, "int acc = k * 7", "k *");
    let (_, acc_col) = at(&src, "int acc = k * 7", "acc");
    let mut seen = BTreeSet::new();
    for _ in 0..3 {
        let stop = dap.event("stopped");
        assert_eq!(stop["body"]["reason"], "breakpoint", "{stop}");
        let tid = stop["body"]["threadId"].as_i64().unwrap();
        assert_ne!(tid, parent, "a worker stops, not the parent");
        let frame = dap.frames(tid)[0]["id"].as_i64().unwrap();
        let k = dap.evaluate(frame, "k")["result"]
            .as_str()
            .unwrap()
            .to_owned();
        let acc = dap.evaluate(frame, "acc")["result"]
            .as_str()
            .unwrap()
            .to_owned();
        // As the VS Code extension does when the thread shown changes: the session's
        // pid and the thread.
        let focus = lsp.request(
            "workspace/executeCommand",
            json!({"command": "tandem.focusSession", "arguments": [{"pid": parent, "threadId": tid}]}),
        );
        assert_eq!(focus["result"]["pid"], json!(tid_process(tid)), "{focus}");
        let hover = hover_text(&mut lsp, &uri, line, k_col);
        assert!(hover.contains(&format!("k = {k}")), "worker k={k}: {hover}");
        let hover = hover_text(&mut lsp, &uri, line, acc_col);
        assert!(
            hover.contains(&format!("acc = {acc}")),
            "worker k={k}: {hover}"
        );
        assert!(seen.insert(k), "{seen:?}");
        dap.ok("continue", json!({"threadId": tid}));
    }
    assert_eq!(seen.len(), 3);
    dap.event("terminated");
    dap.finish();
    lsp.finish();
}

/// Issue 31 with a client that opens a session per child (`startDebugging`, answered as
/// VS Code answers it: a new `tandem dap` in the workspace, which bridges to the language
/// server): each worker's session is focused by its pid (the VS Code extension sends the
/// pid of the session shown) and hovers show that worker's values.
#[test]
fn hovers_follow_the_child_session_shown() {
    let fx = Workspace::new("child-sessions", "forks.c", "forks", &[]);
    let src = fx.source();
    let uri = fx.uri();
    let mut lsp = start_lsp(&fx);
    let mut dap = DapClient::with_peer(fx.spawn(Protocol::Dap, &[], &fx.root));
    dap.initialize_with(json!({"supportsStartDebuggingRequest": true}));
    dap.ok("launch", json!({"program": "./forks", "args": ["prefork"]}));
    dap.ok("configurationDone", json!({}));
    let job = line_of(&src, "S:job");
    let (line, k_col) = at(&src, "int acc = k * 7", "k *");
    let mut seen = BTreeSet::new();
    for _ in 0..3 {
        let req = dap.adapter_request("startDebugging");
        let config = req["arguments"]["configuration"].clone();
        let pid = config["pid"].as_i64().unwrap();
        dap.respond(&req, true, json!({}));
        let mut child = DapClient::with_peer(fx.spawn(Protocol::Dap, &[], &fx.root));
        child.initialize_with(json!({"supportsStartDebuggingRequest": true}));
        child.ok("attach", config);
        child.ok(
            "setBreakpoints",
            json!({"source": {"path": src}, "breakpoints": [{"line": job}]}),
        );
        child.ok("configurationDone", json!({}));
        let stop = child.event("stopped");
        let tid = stop["body"]["threadId"].as_i64().unwrap();
        let frame = child.frames(tid)[0]["id"].as_i64().unwrap();
        let k = child.evaluate(frame, "k")["result"]
            .as_str()
            .unwrap()
            .to_owned();
        let focus = lsp.request(
            "workspace/executeCommand",
            json!({"command": "tandem.focusSession", "arguments": [{"pid": pid}]}),
        );
        assert_eq!(focus["result"]["pid"], json!(pid), "{focus}");
        let hover = hover_text(&mut lsp, &uri, line, k_col);
        assert!(hover.contains(&format!("k = {k}")), "worker {pid}: {hover}");
        assert!(seen.insert(k), "{seen:?}");
        child.ok("continue", json!({"threadId": tid}));
        child.event("terminated");
        child.ok("disconnect", json!({}));
    }
    assert_eq!(seen.len(), 3);
    dap.event("terminated");
    dap.finish();
    lsp.finish();
}

/// Issue 30: the editor's live values follow the point in time the debugger shows. A
/// recorded session stops at LINE_TOTAL (`total` still 0), steps over it (35), then steps
/// back: the hover of `total` and the inline values say what DAP says at each point —
/// the past's value after the step back, not the live process's.
#[test]
fn live_values_follow_a_step_back_in_a_recording() {
    let fx = workspace("reverse");
    let src = fx.source();
    let uri = fx.uri();
    let mut lsp = start_lsp(&fx);
    let total_line = line_of(&src, "LINE_TOTAL") as u32;
    let mut dap = DapClient::with_peer(fx.spawn(Protocol::Dap, &[], &fx.root));
    dap.initialize();
    dap.ok(
        "launch",
        json!({"program": "live", "reverseDebugging": true}),
    );
    dap.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [{"line": total_line}]}),
    );
    dap.ok("configurationDone", json!({}));
    let stop = dap.event("stopped");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let (line, col) = at(&src, "LINE_TOTAL", "total");
    // What DAP and the editor show of `total` in the top frame now.
    let seen = |dap: &mut DapClient, lsp: &mut Lsp| -> (String, String) {
        let frame = dap.frames(tid)[0]["id"].as_i64().unwrap();
        let dap_total = dap.evaluate(frame, "total")["result"]
            .as_str()
            .unwrap()
            .to_owned();
        (dap_total, hover_text(lsp, &uri, line, col))
    };
    let (before, hover) = seen(&mut dap, &mut lsp);
    assert_eq!(before, "0");
    assert!(hover.contains("total = 0"), "{hover}");
    dap.ok("next", json!({"threadId": tid}));
    dap.event("stopped");
    let (after, hover) = seen(&mut dap, &mut lsp);
    assert_eq!(after, "35");
    assert!(hover.contains("total = 35"), "{hover}");
    dap.ok("stepBack", json!({"threadId": tid}));
    let back = dap.event("stopped");
    let tid_back = back["body"]["threadId"].as_i64().unwrap();
    let frames = dap.frames(tid_back);
    assert_eq!(frames[0]["line"], total_line, "{frames:#?}");
    let frame = frames[0]["id"].as_i64().unwrap();
    let past = dap.evaluate(frame, "total")["result"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(past, "0", "the recording's value at that point");
    let hover = hover_text(&mut lsp, &uri, line, col);
    assert!(
        hover.contains("total = 0"),
        "the editor shows the past, not the live 35: {hover}"
    );
    // Inline values over the function: the same strings DAP shows there.
    let shown = dap_values(&mut dap, frame);
    let (scale_line, _) = at(&src, "int scale(", "scale");
    let texts: BTreeSet<String> = inline_values(
        &mut lsp,
        &uri,
        scale_line,
        scale_line + 10,
        Some(total_line - 1),
    )
    .iter()
    .map(|v| v["text"].as_str().unwrap().to_owned())
    .collect();
    assert_eq!(texts, shown);
    dap.finish();
    lsp.finish();
}
