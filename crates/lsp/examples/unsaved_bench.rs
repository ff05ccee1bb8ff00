//! Benchmark of diagnostics of unsaved text: the time from sending a `didChange` of a small
//! C file to receiving the `publishDiagnostics` that reflects it, over 50 edits that add and
//! remove an error in turn (p50/p95/max), and the compiler's own time for the same check.
//!
//! Usage (any language server command; tandem and clangd side by side):
//!
//! ```text
//! cargo build --release -p tandem -p lsp --bin tandem --example unsaved_bench
//! target/release/examples/unsaved_bench target/release/tandem lsp --no-dap-socket
//! target/release/examples/unsaved_bench clangd
//! ```
//!
//! The file is samples/c/lsp_tokens.c (31 lines, one quoted include), copied to a scratch
//! directory; each edit waits for its own answer before the next is sent.

#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wire::{Inbound, Limits};

/// Edits timed.
const EDITS: usize = 50;

struct Server {
    stdin: std::process::ChildStdin,
    rx: crossbeam_channel::Receiver<Inbound>,
    child: std::process::Child,
}

impl Server {
    fn start(command: &[String], cwd: &Path) -> Server {
        let mut child = Command::new(&command[0])
            .args(&command[1..])
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the language server");
        let stdout = child.stdout.take().unwrap();
        let rx = wire::spawn_reader(stdout, Limits::default()).unwrap();
        Server {
            stdin: child.stdin.take().unwrap(),
            rx,
            child,
        }
    }

    fn send(&mut self, msg: &Value) {
        let body = serde_json::to_vec(msg).unwrap();
        self.stdin.write_all(&wire::encode_frame(&body)).unwrap();
        self.stdin.flush().unwrap();
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Reads messages until one satisfies `done`, answering the server's requests.
    fn wait(&mut self, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        loop {
            match self.rx.recv_timeout(Duration::from_secs(30)) {
                Ok(Inbound::Frame(body)) => {
                    let v: Value = serde_json::from_slice(&body).unwrap();
                    if let (Some(id), Some(_)) = (v.get("id"), v.get("method")) {
                        let id = id.clone();
                        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": null}));
                        continue;
                    }
                    if done(&v) {
                        return v;
                    }
                }
                other => panic!("waiting for {what}: {other:?}"),
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() -> ExitCode {
    let mut command: Vec<String> = std::env::args().skip(1).collect();
    // The server runs in the scratch directory: a relative program path is made absolute.
    if let Some(program) = command.first_mut().filter(|p| p.contains('/')) {
        *program = std::fs::canonicalize(&*program)
            .expect("the server program")
            .display()
            .to_string();
    }
    if command.is_empty() {
        eprintln!("usage: unsaved_bench SERVER [ARGS...]");
        return ExitCode::from(2);
    }
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/c");
    let dir: PathBuf = std::env::temp_dir().join(format!("tandem-unsaved-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["lsp_tokens.c", "lsp_tokens.h"] {
        std::fs::copy(samples.join(f), dir.join(f)).unwrap();
    }
    let file = dir.join("lsp_tokens.c");
    let good = std::fs::read_to_string(&file).unwrap();
    let uri = format!("file://{}", file.display());

    let mut s = Server::start(&command, &dir);
    s.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": null, "rootUri": format!("file://{}", dir.display()),
        "capabilities": {"textDocument": {"publishDiagnostics": {}},
                         "general": {"positionEncodings": ["utf-16"]}}}}),
    );
    s.wait("initialize", |v| v.get("id") == Some(&json!(1)));
    s.notify("initialized", json!({}));
    s.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "c", "version": 1, "text": good}}),
    );
    // Let the server settle (an opening check, indexing) before timing.
    std::thread::sleep(Duration::from_millis(1500));
    while s.rx.try_recv().is_ok() {}

    let mut times = Vec::new();
    for i in 0..EDITS {
        let marker = format!("undeclared_{i}");
        let text = if i % 2 == 0 {
            good.replace("int total;", &format!("int total = {marker};"))
        } else {
            good.clone()
        };
        let start = Instant::now();
        s.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": i + 2},
                   "contentChanges": [{"text": text}]}),
        );
        s.wait("publishDiagnostics", |v| {
            if v["method"] != "textDocument/publishDiagnostics" || v["params"]["uri"] != uri {
                return false;
            }
            let diags = v["params"]["diagnostics"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if i % 2 == 0 {
                diags
                    .iter()
                    .any(|d| d["message"].as_str().unwrap_or("").contains(&marker))
            } else {
                diags.is_empty()
            }
        });
        times.push(start.elapsed());
    }
    drop(s);
    times.sort();

    // The compiler alone, as the server runs it.
    let mut cc = Vec::new();
    for _ in 0..20 {
        let start = Instant::now();
        let mut child = Command::new("cc")
            .args(["-fsyntax-only", "-fdiagnostics-format=json", "-iquote"])
            .arg(&dir)
            .args(["-x", "c", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(good.as_bytes())
            .unwrap();
        child.wait().unwrap();
        cc.push(start.elapsed());
    }
    cc.sort();
    let _ = std::fs::remove_dir_all(&dir);

    println!("server: {}", command.join(" "));
    println!(
        "didChange -> publishDiagnostics over {EDITS} edits: p50 {} p95 {} max {}",
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.95)),
        ms(times[times.len() - 1])
    );
    println!(
        "cc -fsyntax-only of the buffer alone over 20 runs: p50 {} p95 {}",
        ms(percentile(&cc, 0.5)),
        ms(percentile(&cc, 0.95))
    );
    ExitCode::SUCCESS
}
