//! Harness for the end-to-end tests: runs the real `tandem` binary, talks to it through the
//! same `wire` framing the front-ends use, and validates every message it emits against the
//! protocol definitions in ../shared/protocol.
#![allow(dead_code)]

pub mod bridged;
pub mod dap;
pub mod gdb;
pub mod gdb_record;
pub mod lsp_types_check;
pub mod lsp_workspace;
pub mod mcp;
pub mod schema;

use std::collections::HashMap;
use std::io::Write;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use serde_json::{json, Value};
use wire::{Inbound, Limits};

/// How long any single expected message may take before a test fails.
pub const PATIENCE: Duration = Duration::from_secs(20);

pub fn tandem_bin() -> &'static str {
    env!("CARGO_BIN_EXE_tandem")
}

/// gdb's text for a core: `thread apply all bt` (no line wrapping), then each of `prints`
/// on a line of its own (`output P`). gdb runs as every oracle runs it ([`gdb::command`]).
pub fn gdb_core_text(program: &std::path::Path, core: &std::path::Path, prints: &[&str]) -> String {
    let mut cmd = gdb::command();
    cmd.args([
        "-batch",
        "-nx",
        "-ex",
        "set width 0",
        "-ex",
        "thread apply all bt",
    ]);
    for p in prints {
        cmd.args(["-ex", &format!("output {p}"), "-ex", "echo \\n"]);
    }
    let out = cmd.arg(program).arg(core).output().expect("running gdb");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `tandem debug --json --max-frames 64 --core CORE PROGRAM --print P…`: its report, after
/// checking that it succeeded.
pub fn tandem_debug_core(
    program: &std::path::Path,
    core: &std::path::Path,
    prints: &[&str],
) -> Value {
    let mut cmd = Command::new(tandem_bin());
    cmd.args(["debug", "--json", "--max-frames", "64", "--core"])
        .arg(core)
        .arg(program);
    for p in prints {
        cmd.args(["--print", p]);
    }
    let out = cmd.output().expect("running tandem debug --core");
    assert!(
        out.status.success(),
        "tandem debug --core failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("tandem debug --json prints JSON")
}

/// This test process's own `XDG_RUNTIME_DIR` for the tandems it starts (tests that want
/// a shared one pass `XDG_RUNTIME_DIR` in their environment).
pub fn private_runtime_dir() -> std::path::PathBuf {
    process_dir("runtime")
}

/// A directory of this test process's own, `TAG-PID` under Cargo's test scratch
/// directory. The ones earlier test processes left (their pid no longer running) are
/// removed first: a machine that runs the suites again and again does not fill its disk
/// with them.
pub fn process_dir(tag: &str) -> std::path::PathBuf {
    let root = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let prefix = format!("{tag}-");
    for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|pid| pid.parse::<u32>().ok());
        if let Some(pid) = pid {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let dir = root.join(format!("{tag}-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// Which protocol a peer speaks, and so how its output is validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Lsp,
    Dap,
}

static DAP_SCHEMA: OnceLock<Option<schema::DapSchema>> = OnceLock::new();
static LSP_MODEL: OnceLock<Option<schema::LspModel>> = OnceLock::new();

pub fn dap_schema() -> Option<&'static schema::DapSchema> {
    DAP_SCHEMA
        .get_or_init(|| match schema::DapSchema::load() {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("DAP schema unavailable, DAP messages are NOT validated: {e:#}");
                None
            }
        })
        .as_ref()
}

pub fn lsp_model() -> Option<&'static schema::LspModel> {
    LSP_MODEL
        .get_or_init(|| match schema::LspModel::load() {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!(
                    "LSP meta model unavailable ({e:#}): LSP messages are checked against {} instead",
                    lsp_types_check::SOURCE
                );
                None
            }
        })
        .as_ref()
}

/// A small deterministic generator (xorshift64*), so a failing sequence can be replayed
/// from its seed.
pub struct Rng(pub u64);

impl Rng {
    /// A generator seeded from the environment variable `var` (else the clock), which it
    /// prints (after `tag`) so a failing sequence can be replayed.
    pub fn seeded(var: &str, tag: &str) -> Rng {
        let seed = std::env::var(var)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
                    | 1
            });
        eprintln!("{tag}: {var}={seed}");
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }
}

/// A running `tandem` speaking one protocol on its stdio.
pub struct Peer {
    pub protocol: Protocol,
    child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<Inbound>,
    stderr: Arc<Mutex<String>>,
    /// Set when tandem's stderr reached its end (everything it wrote is in `stderr`).
    stderr_done: Arc<std::sync::atomic::AtomicBool>,
    /// Methods of the LSP requests sent, by id, to validate their responses.
    sent_methods: HashMap<String, String>,
    next_id: i64,
    next_seq: i64,
    /// Messages validated against the protocol definition.
    pub validated: usize,
    /// Messages that could not be validated: no definition of the protocol was found.
    pub unvalidated: usize,
}

impl Peer {
    pub fn spawn(protocol: Protocol, extra_args: &[&str], envs: &[(&str, &str)]) -> Peer {
        Peer::spawn_in(protocol, extra_args, envs, None)
    }

    /// [`Peer::spawn`] with a working directory.
    pub fn spawn_in(
        protocol: Protocol,
        extra_args: &[&str],
        envs: &[(&str, &str)],
        cwd: Option<&std::path::Path>,
    ) -> Peer {
        let sub = match protocol {
            Protocol::Lsp => "lsp",
            Protocol::Dap => "dap",
        };
        let mut cmd = Command::new(tandem_bin());
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        cmd.arg(sub).args(extra_args);
        // TANDEM_TEST_LOG raises it (e.g. `trace`) when a failing test needs more.
        cmd.env(
            "TANDEM_LOG",
            std::env::var("TANDEM_TEST_LOG").unwrap_or_else(|_| "debug".into()),
        );
        // A private runtime directory: a `tandem dap` under test never finds the workspace
        // socket of a language server started by another test or by an editor.
        cmd.env("XDG_RUNTIME_DIR", private_runtime_dir());
        // No test shares the user's on-disk index cache, nor another run's: only a test
        // that names its own XDG_CACHE_HOME gets one (tests/index_cache.rs).
        if !envs.iter().any(|(k, _)| *k == "XDG_CACHE_HOME") {
            cmd.env("TANDEM_INDEX_CACHE", "0");
        }
        for (k, v) in envs {
            cmd.env(k, v);
        }
        Peer::from_command(protocol, cmd)
    }

    /// Runs a command line that starts tandem (as an editor's configuration names it) and
    /// talks `protocol` with it on its stdio.
    pub fn from_command(protocol: Protocol, mut cmd: Command) -> Peer {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn tandem");
        let stdout = child.stdout.take().unwrap();
        let rx = wire::spawn_reader(stdout, Limits::default()).unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err_pipe = child.stderr.take().unwrap();
        let sink = stderr.clone();
        let stderr_done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = stderr_done.clone();
        std::thread::spawn(move || {
            use std::io::Read;
            let mut buf = [0u8; 4096];
            while let Ok(n) = err_pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
            done.store(true, std::sync::atomic::Ordering::Release);
        });
        Peer {
            protocol,
            stdin: child.stdin.take(),
            child,
            rx,
            stderr,
            stderr_done,
            sent_methods: HashMap::new(),
            next_id: 1,
            next_seq: 1,
            validated: 0,
            unvalidated: 0,
        }
    }

    pub fn lsp() -> Peer {
        Peer::spawn(Protocol::Lsp, &[], &[("TANDEM_TEST_HOOKS", "1")])
    }

    pub fn dap() -> Peer {
        Peer::spawn(Protocol::Dap, &[], &[])
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// tandem's stderr once `ready` holds for it (a line it wrote may still be in the
    /// pipe, not yet read), or as it is after `timeout`.
    pub fn stderr_when(&self, ready: impl Fn(&str) -> bool, timeout: Duration) -> String {
        let until = Instant::now() + timeout;
        loop {
            let text = self.stderr();
            if ready(&text) || Instant::now() >= until {
                return text;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes bytes as they are, framing included.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    pub fn send_body(&mut self, body: &[u8]) {
        self.send_raw(&wire::encode_frame(body));
    }

    pub fn send(&mut self, message: &Value) {
        if let (Some(id), Some(method)) = (
            message.get("id"),
            message.get("method").and_then(Value::as_str),
        ) {
            self.sent_methods.insert(id.to_string(), method.to_owned());
        }
        self.send_body(&serde_json::to_vec(message).unwrap());
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next message, validated; `None` when nothing arrives within `timeout`.
    pub fn try_recv(&mut self, timeout: Duration) -> Option<Value> {
        match self.rx.recv_timeout(timeout) {
            Ok(Inbound::Frame(body)) => {
                let value: Value = serde_json::from_slice(&body).unwrap_or_else(|e| {
                    panic!(
                        "tandem sent invalid json ({e}): {}",
                        String::from_utf8_lossy(&body)
                    )
                });
                self.validate(&value);
                Some(value)
            }
            Ok(Inbound::Closed) | Err(RecvTimeoutError::Disconnected) => None,
            Ok(Inbound::Failed(e)) => panic!("tandem's output is not framed correctly: {e}"),
            Err(RecvTimeoutError::Timeout) => None,
        }
    }

    pub fn recv(&mut self) -> Value {
        self.try_recv(PATIENCE).unwrap_or_else(|| {
            panic!(
                "no message from tandem within {PATIENCE:?}; stderr:\n{}",
                self.stderr()
            )
        })
    }

    /// True when stdout has closed with no further message.
    pub fn output_closed(&mut self, timeout: Duration) -> bool {
        matches!(
            self.rx.recv_timeout(timeout),
            Ok(Inbound::Closed) | Err(RecvTimeoutError::Disconnected)
        )
    }

    fn validate(&mut self, msg: &Value) {
        let outcome = match self.protocol {
            Protocol::Dap => dap_schema().map(|s| s.validate(msg)),
            Protocol::Lsp => {
                let answered = msg
                    .get("id")
                    .filter(|_| msg.get("method").is_none())
                    .and_then(|id| self.sent_methods.get(&id.to_string()))
                    .cloned();
                match lsp_model() {
                    Some(m) => Some(m.validate_server_message(msg, answered.as_deref())),
                    None => lsp_types_check::check_server_message(msg, answered.as_deref()),
                }
            }
        };
        match outcome {
            Some(Ok(())) => self.validated += 1,
            Some(Err(e)) => {
                panic!("tandem sent a message the protocol does not allow: {e}\n{msg:#}")
            }
            None => self.unvalidated += 1,
        }
    }

    /// Waits for the process to exit and returns its status.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // What it wrote last may still be in the pipe: wait (bounded) for the
                // reader to reach its end, so `stderr()` after this has all of it.
                let until = Instant::now() + Duration::from_secs(2);
                while !self.stderr_done.load(std::sync::atomic::Ordering::Acquire)
                    && Instant::now() < until
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                return status;
            }
            if start.elapsed() > timeout {
                let _ = self.child.kill();
                panic!(
                    "tandem did not exit within {timeout:?}; stderr:\n{}",
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    // ---- LSP helpers ----

    pub fn lsp_request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.recv_response(&json!(id))
    }

    pub fn lsp_notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Reads until the response with `id`, skipping server notifications.
    pub fn recv_response(&mut self, id: &Value) -> Value {
        loop {
            let msg = self.recv();
            if msg.get("method").is_none() && msg.get("id") == Some(id) {
                return msg;
            }
        }
    }

    pub fn lsp_initialize(&mut self, capabilities: Value) -> Value {
        let resp = self.lsp_request(
            "initialize",
            json!({"processId": null, "rootUri": null, "capabilities": capabilities}),
        );
        self.lsp_notify("initialized", json!({}));
        resp
    }

    // ---- DAP helpers ----

    pub fn dap_request(&mut self, command: &str, arguments: Value) -> Value {
        let seq = self.next_seq;
        self.next_seq += 1;
        let mut msg = json!({"seq": seq, "type": "request", "command": command});
        if !arguments.is_null() {
            msg["arguments"] = arguments;
        }
        self.send(&msg);
        loop {
            let m = self.recv();
            if m["type"] == "response" && m["request_seq"] == json!(seq) {
                return m;
            }
        }
    }

    pub fn dap_initialize(&mut self) -> Value {
        self.dap_request(
            "initialize",
            json!({"adapterID": "tandem", "clientID": "tests", "linesStartAt1": true, "columnsStartAt1": true, "pathFormat": "path"}),
        )
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let source = match self.protocol {
            Protocol::Dap => dap_schema().map(|s| s.source().display().to_string()),
            Protocol::Lsp => Some(
                lsp_model()
                    .map(|m| m.source().display().to_string())
                    .unwrap_or_else(|| lsp_types_check::SOURCE.to_string()),
            ),
        };
        let name = match self.protocol {
            Protocol::Dap => "DAP",
            Protocol::Lsp => "LSP",
        };
        if self.validated > 0 {
            eprintln!(
                "validated {} {name} messages from tandem against {}",
                self.validated,
                source.as_deref().unwrap_or("?")
            );
        }
        if self.unvalidated > 0 {
            eprintln!(
                "{} {name} messages from tandem were NOT validated: no definition found",
                self.unvalidated
            );
        }
        record_validated(self.protocol, self.validated, self.unvalidated, source);
    }
}

/// Adds to the tally scripts/test prints after the suites: one line per peer in
/// target/tmp/validated-{dap,lsp}.log (one `write` per line, so appends are atomic):
/// `VALIDATED<TAB>UNVALIDATED<TAB>SOURCE` (`-` when no definition was found).
fn record_validated(
    protocol: Protocol,
    validated: usize,
    unvalidated: usize,
    source: Option<String>,
) {
    if validated == 0 && unvalidated == 0 {
        return;
    }
    let name = match protocol {
        Protocol::Dap => "validated-dap.log",
        Protocol::Lsp => "validated-lsp.log",
    };
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let source = source.unwrap_or_else(|| "-".into());
        // One write: `writeln!` on a File writes each piece on its own, and two test
        // processes appending at once interleaved them into a line of garbage.
        let line = format!("{validated}\t{unvalidated}\t{source}\n");
        let _ = f.write_all(line.as_bytes());
    }
}
