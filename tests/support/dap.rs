//! A DAP client for the end-to-end tests: requests and their responses, with the events
//! that arrive meanwhile kept in order for the test to wait on; samples compiled once per
//! test binary.
#![allow(dead_code, unused_imports)]

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{gdb, Peer, PATIENCE};

pub use testsupport::{repo, sample_path};

static BUILD_LOCK: Mutex<()> = Mutex::new(());

/// Compiles `samples/<rel>` with `compiler` and `flags` (once per test binary run) and
/// returns the executable.
pub fn build(rel: &str, compiler: &str, flags: &[&str]) -> PathBuf {
    build_sources(&[rel], compiler, flags)
}

/// Compiles several `samples/` files into one executable named after the first (once per
/// test binary run) and returns it.
pub fn build_sources(rels: &[&str], compiler: &str, flags: &[&str]) -> PathBuf {
    let _guard = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let rel = rels[0];
    let tag: String = flags
        .iter()
        .map(|f| f.replace(['-', '=', '/', ' '], ""))
        .collect::<Vec<_>>()
        .join("_");
    let stem = Path::new(rel)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dap-samples");
    std::fs::create_dir_all(&dir).unwrap();
    let many = if rels.len() > 1 { "-multi" } else { "" };
    let out = dir.join(format!(
        "{stem}{many}-{compiler}-{tag}-{}",
        std::process::id()
    ));
    if out.exists() {
        return out;
    }
    let tmp = out.with_extension("tmp");
    let sources: Vec<PathBuf> = rels.iter().map(|r| sample_path(r)).collect();
    testsupport::compile_into(compiler, &sources, flags, &tmp);
    std::fs::rename(&tmp, &out).unwrap();
    out
}

/// A variable's or value's rendered `value`.
pub fn value(v: &Value) -> String {
    v["value"].as_str().unwrap().to_string()
}

/// (name, value) of each child of a variable (none when it has no children).
pub fn child_values(dap: &mut DapClient, v: &Value) -> Vec<(String, String)> {
    let r = &v["variablesReference"];
    if r.as_i64() == Some(0) {
        return Vec::new();
    }
    dap.children(r)
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_string(), value(c)))
        .collect()
}

/// A directory of this test binary's own under Cargo's test scratch directory.
pub fn scratch_dir(tag: &str) -> PathBuf {
    let d = super::process_dir(tag);
    assert!(d.is_dir(), "cannot create {}", d.display());
    d
}

/// Launches the C sample of the DAP suites to the line marked `marker` in its source:
/// the stopped thread and its frames.
pub fn stop_at(c: &mut DapClient, marker: &str) -> (i64, Vec<Value>) {
    let src = sample_path("c/dap_main.c");
    let stop = c.launch_to_stop(
        json!({"program": dap_sample()}),
        &src,
        &[line_of(&src, marker)],
    );
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let frames = c.frames(tid);
    (tid, frames)
}

/// The C sample of the DAP suites, built `-g -O0`.
pub fn dap_sample() -> PathBuf {
    build("c/dap_main.c", "gcc", &["-g", "-O0", "-pthread"])
}

/// The 1-based line of the first line of `file` containing `marker`.
pub fn line_of(file: &Path, marker: &str) -> i64 {
    let text = std::fs::read_to_string(file).unwrap();
    text.lines()
        .position(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no line with {marker} in {}", file.display())) as i64
        + 1
}

pub struct DapClient {
    pub peer: Peer,
    events: VecDeque<Value>,
    /// Output events' text by category, in order.
    pub output: Vec<(String, String)>,
    /// The debuggee's pid, from the `process` event.
    pub debuggee_pid: Option<i64>,
    next_seq: i64,
}

impl DapClient {
    pub fn new() -> DapClient {
        DapClient::with_peer(Peer::dap())
    }

    /// A client of a `tandem dap` started some other way (a working directory, options).
    pub fn with_peer(peer: Peer) -> DapClient {
        DapClient {
            peer,
            events: VecDeque::new(),
            output: Vec::new(),
            debuggee_pid: None,
            next_seq: 0,
        }
    }

    /// The next message from tandem; output and process events are noted on the way.
    fn next_message(&mut self, timeout: Duration) -> Option<Value> {
        let m = self.peer.try_recv(timeout)?;
        if m["event"] == "output" {
            self.output.push((
                m["body"]["category"]
                    .as_str()
                    .unwrap_or("console")
                    .to_string(),
                m["body"]["output"].as_str().unwrap_or_default().to_string(),
            ));
        }
        if m["event"] == "process" {
            self.debuggee_pid = m["body"]["systemProcessId"].as_i64();
        }
        Some(m)
    }

    fn keep(&mut self, m: Value) {
        self.events.push_back(m);
    }

    /// Sends a request and returns its response (success or not).
    pub fn request(&mut self, command: &str, arguments: Value) -> Value {
        let seq = self.send_request(command, arguments);
        self.response_to(seq)
    }

    /// Sends a request without waiting; returns its seq.
    pub fn send_request(&mut self, command: &str, arguments: Value) -> i64 {
        let seq = self.peer_next_seq();
        let mut msg = json!({"seq": seq, "type": "request", "command": command});
        if !arguments.is_null() {
            msg["arguments"] = arguments;
        }
        self.peer.send(&msg);
        seq
    }

    fn peer_next_seq(&mut self) -> i64 {
        self.next_seq += 1;
        self.next_seq
    }

    pub fn response_to(&mut self, seq: i64) -> Value {
        // A response that arrived while the test waited for something else was kept.
        if let Some(i) = self
            .events
            .iter()
            .position(|m| m["type"] == "response" && m["request_seq"] == json!(seq))
        {
            return self.events.remove(i).unwrap();
        }
        loop {
            let m = self
                .next_message(PATIENCE)
                .unwrap_or_else(|| panic!("no response; stderr:\n{}", self.peer.stderr()));
            if m["type"] == "response" && m["request_seq"] == json!(seq) {
                return m;
            }
            self.keep(m);
        }
    }

    /// A request that must succeed; returns its body.
    pub fn ok(&mut self, command: &str, arguments: Value) -> Value {
        let r = self.request(command, arguments);
        assert_eq!(r["success"], true, "{command} failed: {r}");
        r.get("body").cloned().unwrap_or(Value::Null)
    }

    /// A request that must fail; returns its message.
    pub fn err(&mut self, command: &str, arguments: Value) -> String {
        let r = self.request(command, arguments);
        assert_eq!(r["success"], false, "{command} should fail: {r}");
        let m = r["message"].as_str().unwrap_or_default().to_string();
        assert!(!m.is_empty(), "error without a message: {r}");
        m
    }

    /// Waits for the next event named `name`, skipping (and keeping) others.
    pub fn event(&mut self, name: &str) -> Value {
        self.event_within(name, PATIENCE)
            .unwrap_or_else(|| panic!("no '{name}' event; stderr:\n{}", self.peer.stderr()))
    }

    pub fn event_within(&mut self, name: &str, timeout: Duration) -> Option<Value> {
        self.first_event_of(&[name], timeout)
    }

    /// The next event named one of `names` within `timeout`. Consuming an event
    /// consumes every event before it (those after it are kept), so waits stay in order.
    pub fn first_event_of(&mut self, names: &[&str], timeout: Duration) -> Option<Value> {
        let named = |e: &Value| {
            names
                .iter()
                .any(|n| e["type"] == "event" && e["event"] == *n)
        };
        if let Some(i) = self.events.iter().position(named) {
            let e = self.events.remove(i).unwrap();
            self.events.drain(..i);
            return Some(e);
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let m = self.next_message(left)?;
            if named(&m) {
                self.events.clear();
                return Some(m);
            }
            self.keep(m);
        }
    }

    /// Every message up to and including the first that `stop` accepts, in the order
    /// they arrived (those kept by earlier waits first), consumed: for tests of what
    /// comes before what.
    pub fn messages_until(&mut self, stop: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(m) = self.events.pop_front() {
            let done = stop(&m);
            out.push(m);
            if done {
                return out;
            }
        }
        loop {
            let m = self
                .next_message(PATIENCE)
                .unwrap_or_else(|| panic!("no such message; stderr:\n{}", self.peer.stderr()));
            let done = stop(&m);
            out.push(m);
            if done {
                return out;
            }
        }
    }

    /// Waits for a request from tandem (a reverse request such as `runInTerminal`).
    pub fn adapter_request(&mut self, command: &str) -> Value {
        if let Some(i) = self
            .events
            .iter()
            .position(|e| e["type"] == "request" && e["command"] == command)
        {
            return self.events.remove(i).unwrap();
        }
        loop {
            let m = self
                .next_message(PATIENCE)
                .unwrap_or_else(|| panic!("no {command} request; stderr:\n{}", self.peer.stderr()));
            if m["type"] == "request" && m["command"] == command {
                return m;
            }
            self.keep(m);
        }
    }

    /// Answers a request from tandem.
    pub fn respond(&mut self, request: &Value, success: bool, body: Value) {
        let seq = self.peer_next_seq();
        let mut msg = json!({"seq": seq, "type": "response", "request_seq": request["seq"],
                             "command": request["command"], "success": success, "body": body});
        if !success {
            msg["message"] = json!("refused by the test client");
        }
        self.peer.send(&msg);
    }

    /// Every event already received (and those arriving within `settle`).
    pub fn drain_events(&mut self, settle: Duration) -> Vec<Value> {
        while let Some(m) = self.next_message(settle) {
            self.keep(m);
        }
        self.events.drain(..).collect()
    }

    pub fn initialize(&mut self) -> Value {
        self.initialize_with(json!({}))
    }

    /// initialize with extra client capabilities.
    pub fn initialize_with(&mut self, extra: Value) -> Value {
        let mut args = json!({"adapterID": "tandem", "clientID": "tests", "linesStartAt1": true,
                   "columnsStartAt1": true, "pathFormat": "path", "supportsVariableType": true,
                   "supportsVariablePaging": true, "supportsMemoryReferences": true});
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        let caps = self.ok("initialize", args);
        self.event("initialized");
        caps
    }

    /// initialize → launch → the given breakpoints → configurationDone; returns the first
    /// stopped event (or panics when the program exits first).
    pub fn launch_to_stop(&mut self, launch: Value, source: &Path, lines: &[i64]) -> Value {
        self.initialize();
        self.launch_to_stop_after_init(launch, source, lines)
    }

    /// launch → the given breakpoints → configurationDone, after initialize.
    pub fn launch_to_stop_after_init(
        &mut self,
        launch: Value,
        source: &Path,
        lines: &[i64],
    ) -> Value {
        self.ok("launch", launch);
        if !lines.is_empty() {
            let bps: Vec<Value> = lines.iter().map(|l| json!({"line": l})).collect();
            let body = self.ok(
                "setBreakpoints",
                json!({"source": {"path": source}, "breakpoints": bps}),
            );
            for bp in body["breakpoints"].as_array().unwrap() {
                assert_eq!(bp["verified"], true, "{bp}");
            }
        }
        self.ok("configurationDone", json!({}));
        self.event("stopped")
    }

    /// The stack of a thread (every frame).
    pub fn frames(&mut self, thread: i64) -> Vec<Value> {
        let body = self.ok("stackTrace", json!({"threadId": thread}));
        body["stackFrames"].as_array().unwrap().clone()
    }

    /// The variables of one scope (by name) of a frame, as (name, value) pairs.
    pub fn scope_vars(&mut self, frame_id: i64, scope: &str) -> Vec<Value> {
        let scopes = self.ok("scopes", json!({"frameId": frame_id}));
        let r = scopes["scopes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"].as_str().unwrap().starts_with(scope))
            .unwrap_or_else(|| panic!("no scope {scope}: {scopes}"))["variablesReference"]
            .clone();
        let body = self.ok("variables", json!({"variablesReference": r}));
        body["variables"].as_array().unwrap().clone()
    }

    pub fn children(&mut self, reference: &Value) -> Vec<Value> {
        let body = self.ok("variables", json!({"variablesReference": reference}));
        body["variables"].as_array().unwrap().clone()
    }

    pub fn evaluate(&mut self, frame_id: i64, expression: &str) -> Value {
        self.ok(
            "evaluate",
            json!({"expression": expression, "frameId": frame_id, "context": "watch"}),
        )
    }

    /// Disconnects and waits for tandem to exit 0.
    /// Clears the breakpoints of `source`, lets thread `thread` run the program to its
    /// end and waits for `exited` and `terminated`: the `exited` event.
    pub fn run_to_exit(&mut self, source: &Path, thread: i64) -> Value {
        self.ok(
            "setBreakpoints",
            json!({"source": {"path": source}, "breakpoints": []}),
        );
        self.ok("continue", json!({"threadId": thread}));
        let exited = self.event("exited");
        self.event("terminated");
        exited
    }

    /// What the program wrote to its standard output, as `output` events gave it.
    pub fn stdout(&self) -> String {
        self.output
            .iter()
            .filter(|(category, _)| category == "stdout")
            .map(|(_, text)| text.as_str())
            .collect()
    }

    pub fn finish(mut self) {
        let r = self.request("disconnect", json!({}));
        assert_eq!(r["success"], true, "{r}");
        let status = self.peer.wait_exit(PATIENCE);
        assert!(status.success(), "tandem exited with {status}");
    }
}

/// The value of variable `name` in a variables list.
pub fn var<'a>(vars: &'a [Value], name: &str) -> &'a Value {
    vars.iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no variable {name} in {vars:#?}"))
}

/// Whether a process exists and is not a zombie.
pub fn alive(pid: i64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit(')').next().map(|r| !r.trim().starts_with('Z')))
        .unwrap_or(false)
}

/// The process's tracer pid (0 when nobody traces it).
pub fn tracer_of(pid: i64) -> i64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("TracerPid:")
                    .map(|v| v.trim().parse().unwrap_or(0))
            })
        })
        .unwrap_or(0)
}

pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    f()
}

/// A child process killed and reaped when the test ends, passing or not (a leftover would
/// keep the test runner's output pipe open).
pub struct KillOnDrop(pub std::process::Child);

impl KillOnDrop {
    pub fn spawn(program: &Path) -> KillOnDrop {
        KillOnDrop(
            Command::new(program)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        )
    }

    pub fn pid(&self) -> i64 {
        i64::from(self.0.id())
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// gdb stopped at the line of `marker` in the sample `rel` (its libstdc++ printers on):
/// `info locals` as name → text, and each expression's `output` text (empty when gdb
/// cannot evaluate it: the error goes to stderr). gdb runs as [`gdb::batch`] runs it, so
/// it can call functions in the debuggee ([`gdb::can_call_functions`] says whether it
/// can here).
pub fn gdb_locals_at(
    program: &Path,
    rel: &str,
    marker: &str,
    exprs: &[&str],
) -> (std::collections::HashMap<String, String>, Vec<String>) {
    let source = sample_path(rel);
    let line = line_of(&source, marker);
    let file = source.file_name().unwrap().to_string_lossy().into_owned();
    let mut commands = vec![
        "set pagination off".to_string(),
        format!("break {file}:{line}"),
        "run".into(),
        "echo LOCALS\\n".into(),
        "info locals".into(),
    ];
    for e in exprs {
        commands.extend([
            "echo EXPR\\n".to_string(),
            format!("output {e}"),
            "echo \\n".into(),
        ]);
    }
    let (stdout, stderr) = gdb::batch(program, &commands);
    let (_, rest) = stdout
        .split_once("LOCALS\n")
        .unwrap_or_else(|| panic!("gdb did not stop: {stdout}\n{stderr}"));
    let mut parts = rest.split("EXPR\n");
    let locals = parts
        .next()
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once(" = "))
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    (locals, parts.map(|p| p.trim_end().to_string()).collect())
}

/// `text` with its stack addresses (`0x7ff…`) as `<stack>` and the string such a
/// pointer points to dropped: gdb's run and tandem's place the stack differently, so a
/// pointer to a local compares by being one (the gdb-oracle value suites).
pub fn stack_free(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("0x7ff") {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 2..];
        let end = tail
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(tail.len());
        out.push_str(if end >= 12 {
            "<stack>"
        } else {
            &rest[i..i + 2 + end]
        });
        rest = &tail[end..];
        // The string a pointer into the stack points to is that stack's bytes.
        if end >= 12 && rest.starts_with(" \"") {
            let close = rest[2..].find('"').map_or(rest.len(), |k| k + 3);
            rest = &rest[close..];
        }
    }
    out.push_str(rest);
    out
}

/// The processes whose parent is `pid` (from each `/proc/PID/stat`'s ppid field).
pub fn children_of(pid: i64) -> Vec<i64> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i64>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit(')')
                        .next()?
                        .split_whitespace()
                        .nth(1)?
                        .parse::<i64>()
                        .ok()
                })
                == Some(pid)
        })
        .collect()
}
