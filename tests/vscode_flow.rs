//! Replays the request flow VS Code sends to a debug adapter (issue 18): its own
//! `initialize` arguments; `launch`; `setBreakpoints`, `setFunctionBreakpoints`,
//! `setDataBreakpoints`, then `setExceptionBreakpoints` with exactly the filters the
//! adapter marked `default` plus the ones the user ticked; `configurationDone`; at a stop
//! `threads`, `stackTrace {startFrame 0, levels 20}`, `scopes`, `variables` and
//! `exceptionInfo`; the Stop button is `terminate` then `disconnect`.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use support::dap::{alive, build, line_of, sample_path, wait_until, DapClient};

/// The arguments VS Code 1.9x sends in `initialize` (src/vs/workbench/contrib/debug/
/// browser/rawDebugSession.ts and debugSession.ts).
fn vscode_initialize() -> Value {
    json!({
        "clientID": "vscode",
        "clientName": "Visual Studio Code",
        "adapterID": "tandem",
        "pathFormat": "path",
        "linesStartAt1": true,
        "columnsStartAt1": true,
        "supportsVariableType": true,
        "supportsVariablePaging": true,
        "supportsRunInTerminalRequest": true,
        "locale": "en",
        "supportsProgressReporting": true,
        "supportsInvalidatedEvent": true,
        "supportsMemoryReferences": true,
        "supportsArgsCanBeInterpretedByShell": true,
        "supportsMemoryEvent": true,
        "supportsStartDebuggingRequest": true,
        "supportsANSIStyling": true
    })
}

/// What the user set up before pressing F5.
#[derive(Default)]
struct Setup<'a> {
    /// Line breakpoints of one source file.
    lines: Option<(&'a Path, Vec<i64>)>,
    functions: Vec<&'a str>,
    /// Filters the user ticked in the Breakpoints view, beyond the defaults.
    ticked: Vec<&'a str>,
}

/// A debugging session driven as VS Code drives it.
struct VsCode {
    c: DapClient,
    caps: Value,
}

impl VsCode {
    /// initialize → launch → breakpoints of every kind → setExceptionBreakpoints →
    /// configurationDone, in VS Code's order.
    fn start(launch: Value, setup: Setup) -> VsCode {
        let mut c = DapClient::new();
        let caps = c.ok("initialize", vscode_initialize());
        // VS Code sends `launch` right after the initialize response, and the
        // configuration requests once `initialized` arrives.
        let launch_seq = c.send_request("launch", launch);
        c.event("initialized");
        if let Some((path, lines)) = &setup.lines {
            let bps: Vec<Value> = lines.iter().map(|l| json!({"line": l})).collect();
            let body = c.ok(
                "setBreakpoints",
                json!({"source": {"path": path, "name": path.file_name().unwrap().to_str()},
                       "lines": lines, "breakpoints": bps, "sourceModified": false}),
            );
            for bp in body["breakpoints"].as_array().unwrap() {
                assert_eq!(bp["verified"], true, "{bp}");
            }
        }
        let fbps: Vec<Value> = setup.functions.iter().map(|f| json!({"name": f})).collect();
        c.ok("setFunctionBreakpoints", json!({"breakpoints": fbps}));
        c.ok("setDataBreakpoints", json!({"breakpoints": []}));
        let mut filters: Vec<String> = caps["exceptionBreakpointFilters"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["default"] == true)
            .map(|f| f["filter"].as_str().unwrap().to_string())
            .collect();
        for t in &setup.ticked {
            assert!(
                caps["exceptionBreakpointFilters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f["filter"] == *t),
                "{t} is not offered, so it cannot be ticked"
            );
            filters.push(t.to_string());
        }
        let body = c.ok(
            "setExceptionBreakpoints",
            json!({"filters": filters, "filterOptions": []}),
        );
        for bp in body["breakpoints"].as_array().unwrap() {
            assert_eq!(bp["verified"], true, "{bp}");
        }
        c.ok("configurationDone", json!({}));
        let r = c.response_to(launch_seq);
        assert_eq!(r["success"], true, "{r}");
        VsCode { c, caps }
    }

    /// What VS Code asks at a stop: the threads, the first 20 frames, the scopes of the
    /// top frame and the variables of its inexpensive scopes, and for an exception stop
    /// `exceptionInfo`. Returns (stopped event, frames, variables by scope, exceptionInfo).
    fn at_stop(&mut self) -> AtStop {
        let stopped = self.c.event("stopped");
        // Messages are read in order and none past the stopped event yet: this is the
        // output sent before it.
        let stdout = self.printed("stdout");
        let stderr = self.printed("stderr");
        let tid = stopped["body"]["threadId"].as_i64().unwrap();
        let threads = self.c.ok("threads", json!({}));
        assert!(threads["threads"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == tid));
        let st = self.c.ok(
            "stackTrace",
            json!({"threadId": tid, "startFrame": 0, "levels": 20}),
        );
        let frames = st["stackFrames"].as_array().unwrap().clone();
        let top = frames
            .iter()
            .find(|f| f["source"]["path"].is_string())
            .unwrap_or(&frames[0]);
        let mut vars = Vec::new();
        let scopes = self.c.ok("scopes", json!({"frameId": top["id"]}));
        for s in scopes["scopes"].as_array().unwrap() {
            if s["expensive"] == true {
                continue;
            }
            let v = self.c.ok(
                "variables",
                json!({"variablesReference": s["variablesReference"]}),
            );
            vars.push((
                s["name"].as_str().unwrap().to_string(),
                v["variables"].clone(),
            ));
        }
        let exception = (stopped["body"]["reason"] == "exception")
            .then(|| self.c.ok("exceptionInfo", json!({"threadId": tid})));
        AtStop {
            stdout,
            stderr,
            stopped,
            tid,
            frames,
            total_frames: st["totalFrames"].as_i64(),
            exception,
        }
    }

    /// The Stop button: `terminate`, then `disconnect` once `terminated` arrives; tandem
    /// exits and leaves no process behind.
    fn stop_button(mut self) {
        let pid = self.c.debuggee_pid.expect("a process event");
        self.c.ok("terminate", json!({}));
        self.c.event("terminated");
        self.c.ok(
            "disconnect",
            json!({"restart": false, "terminateDebuggee": true}),
        );
        let status = self.c.peer.wait_exit(Duration::from_secs(10));
        assert!(status.success(), "tandem exited with {status}");
        assert!(
            wait_until(Duration::from_secs(5), || !alive(pid)),
            "the debuggee {pid} is still there"
        );
    }

    /// Everything the debuggee printed on `category` so far.
    fn printed(&self, category: &str) -> String {
        self.c
            .output
            .iter()
            .filter(|(c, _)| c == category)
            .map(|(_, t)| t.as_str())
            .collect()
    }
}

struct AtStop {
    /// The program's output sent before the stopped event.
    stdout: String,
    stderr: String,
    stopped: Value,
    tid: i64,
    frames: Vec<Value>,
    total_frames: Option<i64>,
    exception: Option<Value>,
}

fn panics() -> PathBuf {
    build("rust/vscode_panics.rs", "rustc", &["-g", "-Copt-level=0"])
}

#[test]
fn every_filter_tandem_implements_is_offered_with_its_default() {
    let mut c = DapClient::new();
    let caps = c.ok("initialize", vscode_initialize());
    let filters = caps["exceptionBreakpointFilters"].as_array().unwrap();
    let find = |id: &str| {
        filters
            .iter()
            .find(|f| f["filter"] == id)
            .unwrap_or_else(|| panic!("{id} is not offered: {filters:#?}"))
    };
    for (id, default) in [
        ("rust-panic", true),
        ("cpp-throw", false),
        ("cpp-catch", false),
        ("SIGSEGV", true),
        ("SIGABRT", true),
        ("SIGUSR1", false),
    ] {
        let f = find(id);
        assert_eq!(f["default"], default, "{f}");
        assert!(!f["label"].as_str().unwrap().is_empty(), "{f}");
        assert!(!f["description"].as_str().unwrap().is_empty(), "{f}");
    }
    c.finish();
}

#[test]
fn a_rust_panic_stops_with_the_default_filters() {
    let mut v = VsCode::start(
        json!({"type": "tandem", "request": "launch", "name": "Debug",
               "program": panics(), "args": ["index"], "cwd": std::env::temp_dir(),
               "__configurationTarget": 6, "__sessionId": "5e7f"}),
        Setup::default(),
    );
    let s = v.at_stop();
    assert_eq!(s.stopped["body"]["reason"], "exception", "{}", s.stopped);
    assert_eq!(s.stopped["body"]["text"], "panic");
    let description = s.stopped["body"]["description"].as_str().unwrap();
    assert!(description.contains("index out of bounds"), "{description}");
    let info = s.exception.unwrap();
    assert_eq!(info["exceptionId"], "rust-panic");
    assert!(
        info["description"]
            .as_str()
            .unwrap()
            .contains("index out of bounds: the len is 3 but the index is 6"),
        "{info}"
    );
    // The stack reaches the user's function that panicked.
    assert!(
        s.frames.iter().any(|f| f["name"] == "vscode_panics::pick"),
        "{:#?}",
        s.frames
    );
    let _ = (s.tid, s.total_frames);
    let _ = &v.caps;
    v.stop_button();
}

/// The program's own panic message and location, run without a debugger:
/// (`index out of bounds: …`, `/path/to/file.rs:5:5`).
fn printed_panic(program: &Path, kind: &str) -> (String, String) {
    let out = std::process::Command::new(program)
        .arg(kind)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(101));
    let err = String::from_utf8(out.stderr).unwrap();
    let mut lines = err.lines().skip_while(|l| !l.contains("panicked at "));
    let header = lines.next().unwrap();
    let location = header
        .split("panicked at ")
        .nth(1)
        .unwrap()
        .trim_end_matches(':')
        .to_string();
    (lines.next().unwrap().to_string(), location)
}

/// Panics of several kinds: the stopped event's description and `exceptionInfo` give
/// the message exactly as the program prints it; an argument tandem cannot render
/// without running code (a `Debug` impl of a library type) is `{}`, never a guess.
#[test]
fn a_panic_message_is_the_text_the_program_prints() {
    let program = panics();
    for (kind, exact) in [
        ("index", true),
        ("format", true),
        ("none", true),
        ("literal", true),
        ("expect", true),
        ("str", true),
        ("err", false),
    ] {
        let (message, location) = printed_panic(&program, kind);
        let mut v = VsCode::start(
            json!({"program": program, "args": [kind]}),
            Setup::default(),
        );
        let s = v.at_stop();
        let description = s.stopped["body"]["description"].as_str().unwrap();
        let info = s.exception.unwrap();
        let shown = info["details"]["message"].as_str().unwrap().to_string();
        let (text, at) = shown.rsplit_once(" at ").unwrap();
        assert_eq!(at, location, "{kind}: {shown}");
        if exact {
            assert_eq!(text, message, "{kind}");
        } else {
            // `called `Result::unwrap()` on an `Err` value: {}` for a ParseIntError.
            let (before, after) = text.split_once("{}").unwrap_or_else(|| panic!("{text}"));
            assert!(
                message.starts_with(before) && message.ends_with(after),
                "{kind}: {text} vs {message}"
            );
        }
        assert_eq!(description, format!("Rust panic: {shown}"), "{kind}");
        assert_eq!(info["description"], shown.as_str(), "{kind}");
        v.stop_button();
    }
}

fn flow_c() -> PathBuf {
    build("c/vscode_flow.c", "gcc", &["-g", "-O0"])
}

fn flow_src() -> PathBuf {
    sample_path("c/vscode_flow.c")
}

/// The program runs on terminals by default: stdio line-buffers, so what it printed
/// before a breakpoint is in the debug console at the stop, stderr still as `stderr`.
#[test]
fn output_before_a_breakpoint_is_visible_at_the_stop() {
    let src = flow_src();
    let line = line_of(&src, "// BREAK_OUTPUT");
    let mut v = VsCode::start(
        json!({"program": flow_c(), "args": ["output"]}),
        Setup {
            lines: Some((&src, vec![line])),
            ..Setup::default()
        },
    );
    let s = v.at_stop();
    assert_eq!(s.stopped["body"]["reason"], "breakpoint");
    assert_eq!(s.frames[0]["line"], line);
    let out = &s.stdout;
    assert!(out.starts_with("tty: 1 1 1\nline 0000 "), "{out:?}");
    assert!(
        out.ends_with("line 2999 of the output before the breakpoint\nbefore the breakpoint\n"),
        "{out:?}"
    );
    assert!(!out.contains("after"), "{out:?}");
    assert_eq!(s.stderr, "on stderr\n");
    v.c.ok("continue", json!({"threadId": s.tid}));
    assert_eq!(v.c.event("exited")["body"]["exitCode"], 1);
    assert!(v.printed("stdout").ends_with("after the breakpoint 42 3\n"));
    v.c.event("terminated");
    v.c.finish();
}

/// `"stdio": "pipes"` asks for pipes: the program sees no terminal, and C's stdio
/// buffers its output until it exits.
#[test]
fn pipes_can_be_asked_for() {
    let src = flow_src();
    let line = line_of(&src, "// BREAK_OUTPUT");
    let mut v = VsCode::start(
        json!({"program": flow_c(), "args": ["output"], "stdio": "pipes"}),
        Setup {
            lines: Some((&src, vec![line])),
            ..Setup::default()
        },
    );
    let s = v.at_stop();
    assert_eq!(s.stopped["body"]["reason"], "breakpoint");
    // stdout is buffered in the program: what it flushed is whole buffers.
    assert!(
        !s.stdout.contains("\nbefore the breakpoint\n"),
        "{:?}",
        s.stdout
    );
    assert_eq!(s.stderr, "on stderr\n", "stderr is unbuffered");
    v.c.ok("continue", json!({"threadId": s.tid}));
    v.c.event("exited");
    let out = v.printed("stdout");
    assert!(out.starts_with("tty: 0 0 0\nline 0000 "), "{out:?}");
    v.c.event("terminated");
    v.c.finish();
    let mut c = DapClient::new();
    c.ok("initialize", vscode_initialize());
    let r = c.request("launch", json!({"program": flow_c(), "stdio": "files"}));
    assert_eq!(r["success"], false, "{r}");
    c.finish();
}

#[test]
fn output_before_a_crash_is_visible_at_the_stop() {
    let mut v = VsCode::start(
        json!({"program": flow_c(), "args": ["crash"]}),
        Setup::default(),
    );
    let s = v.at_stop();
    assert_eq!(s.stopped["body"]["text"], "SIGSEGV", "{}", s.stopped);
    assert_eq!(s.frames[0]["name"], "crash");
    assert_eq!(s.frames[0]["line"], line_of(&flow_src(), "// CRASH_LINE"));
    assert_eq!(s.stdout, "before the crash\n");
    let info = s.exception.unwrap();
    assert_eq!(info["exceptionId"], "SIGSEGV");
    v.stop_button();
}

/// `> text` in the debug console is a line of the program's stdin.
#[test]
fn the_debug_console_writes_to_stdin() {
    let mut v = VsCode::start(
        json!({"program": flow_c(), "args": ["echo"]}),
        Setup::default(),
    );
    assert!(wait_until(Duration::from_secs(10), || {
        v.c.drain_events(Duration::from_millis(50));
        v.printed("stdout").contains("type something")
    }));
    let r = v.c.ok(
        "evaluate",
        json!({"expression": "> hello there", "context": "repl"}),
    );
    assert_eq!(r["variablesReference"], 0);
    assert_eq!(v.c.event("exited")["body"]["exitCode"], 0);
    assert!(
        v.printed("stdout").contains("got: hello there\n"),
        "{:?}",
        v.printed("stdout")
    );
    v.c.event("terminated");
    v.c.finish();
}

/// With `cpp-throw` ticked, a throw stops; `exceptionInfo` gives the demangled type and,
/// for the standard exceptions, the `what()` text; a class that overrides `what()` and a
/// thrown `int` give the type only.
#[test]
fn a_ticked_cpp_throw_stops_with_its_type_and_what() {
    let program = build("cpp/vscode_throw.cpp", "g++", &["-g", "-O0"]);
    for (kind, type_name, what) in [
        (
            "invalid",
            "std::invalid_argument",
            Some("bad value: invalid"),
        ),
        (
            "runtime",
            "std::runtime_error",
            Some("a runtime error with a message longer than fifteen"),
        ),
        ("custom", "Custom", None),
        ("int", "int", None),
    ] {
        let mut v = VsCode::start(
            json!({"program": program, "args": [kind]}),
            Setup {
                ticked: vec!["cpp-throw"],
                ..Setup::default()
            },
        );
        let s = v.at_stop();
        assert_eq!(s.stopped["body"]["reason"], "exception", "{}", s.stopped);
        assert_eq!(s.stopped["body"]["text"], "throw");
        let info = s.exception.unwrap();
        assert_eq!(info["exceptionId"], "cpp-throw");
        assert_eq!(info["details"]["typeName"], type_name, "{info}");
        assert_eq!(info["details"]["message"].as_str(), what, "{info}");
        let full = match what {
            Some(w) => format!("{type_name}: {w}"),
            None => type_name.to_string(),
        };
        assert_eq!(info["description"], full.as_str());
        assert_eq!(
            s.stopped["body"]["description"],
            format!("C++ exception thrown: {full}").as_str()
        );
        assert!(
            s.frames.iter().any(|f| f["name"] == "parse"),
            "{:#?}",
            s.frames
        );
        v.stop_button();
    }
    // Not ticked: the same program runs to its catch.
    let mut v = VsCode::start(
        json!({"program": program, "args": ["invalid"]}),
        Setup::default(),
    );
    assert_eq!(v.c.event("exited")["body"]["exitCode"], 1);
    assert!(v.printed("stdout").contains("caught: bad value: invalid"));
    v.c.event("terminated");
    v.c.finish();
}

/// `name = value` lines gdb prints for the arguments and locals of frame `frame` at the
/// first stop in `function` (the oracle for values).
fn gdb_frame_values(
    program: &Path,
    arg: &str,
    function: &str,
    frame: usize,
) -> Vec<(String, String)> {
    let out = std::process::Command::new("gdb")
        .args(["-nx", "-batch", "-ex"])
        .arg(format!("break {function}"))
        .args(["-ex", &format!("run {arg}")])
        .args(["-ex", &format!("frame {frame}")])
        .args(["-ex", "info args", "-ex", "info locals", "-ex", "kill"])
        .arg(program)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .filter_map(|l| l.split_once(" = "))
        .filter(|(n, _)| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

/// A 45-deep recursion stopped by a function breakpoint: VS Code pages the stack 20 +
/// 20 frames, opens frame 20's scopes and variables (checked against gdb), hovers and
/// watches expressions there, and the Stop button ends the program.
#[test]
fn a_deep_stack_is_paged_and_its_frames_inspected() {
    let program = flow_c();
    let mut v = VsCode::start(
        json!({"program": program, "args": ["recurse"]}),
        Setup {
            functions: vec!["stop_here"],
            ..Setup::default()
        },
    );
    let s = v.at_stop();
    assert_eq!(
        s.stopped["body"]["reason"], "function breakpoint",
        "{}",
        s.stopped
    );
    assert_eq!(s.frames.len(), 20);
    assert_eq!(s.frames[0]["name"], "stop_here");
    // 45 calls of recurse, stop_here and main (then libc's start frames).
    let total = s.total_frames.unwrap();
    assert!(total >= 47, "{total}");
    let next = v.c.ok(
        "stackTrace",
        json!({"threadId": s.tid, "startFrame": 20, "levels": 20}),
    );
    let more = next["stackFrames"].as_array().unwrap();
    assert_eq!(more.len(), 20);
    assert!(more.iter().all(|f| f["name"] == "recurse"), "{more:#?}");
    let ids: std::collections::HashSet<i64> = s
        .frames
        .iter()
        .chain(more.iter())
        .map(|f| f["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids.len(), 40, "frame ids are distinct across pages");
    let last = v.c.ok(
        "stackTrace",
        json!({"threadId": s.tid, "startFrame": 40, "levels": 20}),
    );
    let tail = last["stackFrames"].as_array().unwrap();
    assert_eq!(tail.len() as i64, total - 40);
    assert_eq!(tail[6]["name"], "main");

    // Frame 20: its scopes and variables, as gdb shows them.
    let frame20 = &more[0];
    assert_eq!(
        frame20["line"],
        line_of(&flow_src(), "return recurse(depth + 1")
    );
    let oracle = gdb_frame_values(&program, "recurse", "stop_here", 20);
    assert_eq!(oracle.len(), 3, "{oracle:?}");
    let scopes = v.c.ok("scopes", json!({"frameId": frame20["id"]}));
    let mut seen = Vec::new();
    for sc in scopes["scopes"].as_array().unwrap() {
        if sc["expensive"] == true {
            continue;
        }
        let vars = v.c.ok(
            "variables",
            json!({"variablesReference": sc["variablesReference"]}),
        );
        for var in vars["variables"].as_array().unwrap() {
            seen.push((
                var["name"].as_str().unwrap().to_string(),
                var["value"].as_str().unwrap().to_string(),
            ));
        }
    }
    for (name, value) in &oracle {
        assert!(
            seen.iter().any(|(n, v)| n == name && v == value),
            "{name} = {value} (gdb) not in {seen:?}"
        );
    }

    // Hover and watch in frame 20; a hover over nothing shows nothing.
    let hover = v.c.ok(
        "evaluate",
        json!({"expression": "local", "frameId": frame20["id"], "context": "hover"}),
    );
    assert_eq!(hover["result"], "260");
    let watch = v.c.ok(
        "evaluate",
        json!({"expression": "depth * 2 + limit", "frameId": frame20["id"], "context": "watch"}),
    );
    assert_eq!(watch["result"], "97");
    let global = v.c.ok(
        "evaluate",
        json!({"expression": "depth_reached", "frameId": s.frames[0]["id"], "context": "watch"}),
    );
    assert_eq!(global["result"], "0");
    let r = v.c.request(
        "evaluate",
        json!({"expression": "no_such_name", "frameId": frame20["id"], "context": "hover"}),
    );
    assert_eq!(r["success"], false, "{r}");
    v.stop_button();
}

/// The Stop button while the program runs (blocked reading its terminal): `terminate`
/// then `disconnect` end it, and tandem, without leaving a process.
#[test]
fn the_stop_button_on_a_running_program_leaves_no_process() {
    let mut v = VsCode::start(
        json!({"program": flow_c(), "args": ["echo"]}),
        Setup::default(),
    );
    assert!(wait_until(Duration::from_secs(10), || {
        v.c.drain_events(Duration::from_millis(50));
        v.printed("stdout").contains("type something")
    }));
    v.stop_button();
}
