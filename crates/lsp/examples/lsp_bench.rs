//! Benchmark of the language server on a large binary, side by side with gdb:
//! workspace/symbol cold (the first query waits for the symbol index) and warm (p50/p99
//! over many queries), and hover (p50/p99 over identifiers of one source file).
//!
//! Usage:
//!
//! ```text
//! cargo build --release -p tandem
//! cargo run --release -p lsp --example lsp_bench -- TANDEM ROOT BINARY FILE FUNCTION
//! # e.g. target/release/tandem ~/.cargo/registry/src/*/ripgrep-15.2.0 \
//! #      /work/symbench/rg/bin/rg crates/core/main.rs rg::search
//! ```
//!
//! The server is started as editors start it (`TANDEM lsp` on stdio), told to serve
//! BINARY for the workspace ROOT, and timed from this process: each figure is the time
//! from writing a request to reading its response. gdb's figure is the wall time of
//! `gdb -batch -nx -ex 'info functions ^FUNCTION' BINARY`.

#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wire::{Inbound, Limits};

/// Warm workspace/symbol queries and hovers timed.
const SAMPLES: usize = 200;

struct Server {
    stdin: std::process::ChildStdin,
    rx: crossbeam_channel::Receiver<Inbound>,
    child: std::process::Child,
    next: i64,
}

impl Server {
    fn start(tandem: &Path) -> Server {
        let mut child = Command::new(tandem)
            .arg("lsp")
            .arg("--no-dap-socket")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start tandem lsp");
        let stdout = child.stdout.take().unwrap();
        let rx = wire::spawn_reader(stdout, Limits::default()).unwrap();
        Server {
            stdin: child.stdin.take().unwrap(),
            rx,
            child,
            next: 1,
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

    /// Sends a request and returns its result and how long the answer took.
    fn request(&mut self, method: &str, params: Value) -> (Value, Duration) {
        let id = self.next;
        self.next += 1;
        let start = Instant::now();
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            match self.rx.recv_timeout(Duration::from_secs(120)) {
                Ok(Inbound::Frame(body)) => {
                    let v: Value = serde_json::from_slice(&body).unwrap();
                    if v.get("id") == Some(&json!(id)) && v.get("method").is_none() {
                        return (v["result"].clone(), start.elapsed());
                    }
                    // A request from the server (progress, registration): answer it.
                    if let (Some(rid), Some(_)) = (v.get("id"), v.get("method")) {
                        let rid = rid.clone();
                        self.send(&json!({"jsonrpc": "2.0", "id": rid, "result": null}));
                    }
                }
                other => panic!("no answer to {method}: {other:?}"),
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
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [tandem, root, binary, file, function] = args.as_slice() else {
        eprintln!("usage: bench TANDEM ROOT BINARY FILE FUNCTION");
        return ExitCode::from(2);
    };
    let root = PathBuf::from(root).canonicalize().expect("root");
    let file_path = root.join(file);
    let text = std::fs::read_to_string(&file_path).expect("source file");
    let root_uri = format!("file://{}", root.display());
    let file_uri = format!("file://{}", file_path.display());

    let mut s = Server::start(Path::new(tandem));
    s.request(
        "initialize",
        json!({"processId": null, "rootUri": root_uri,
               "capabilities": {"general": {"positionEncodings": ["utf-8", "utf-16"]}},
               "initializationOptions": {"tandem": {"binaries": [binary]}}}),
    );
    s.notify("initialized", json!({}));
    let short = function.rsplit("::").next().unwrap_or(function);
    let (result, cold) = s.request("workspace/symbol", json!({"query": short}));
    let found = result.as_array().map_or(0, Vec::len);

    let queries = [
        "search", "printer", "Searcher", "walk", "matcher", "flags", "haystack", "lines", "glob",
        "regex", "json", "sink", "path", "hi", "args", "run", "main", "config", "decoder",
        "ignore",
    ];
    let mut warm = Vec::new();
    for i in 0..SAMPLES {
        let (_, t) = s.request(
            "workspace/symbol",
            json!({"query": queries[i % queries.len()]}),
        );
        warm.push(t);
    }
    warm.sort();

    s.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": file_uri, "languageId": "rust", "version": 1, "text": text}}),
    );
    // Identifier positions spread over the file.
    let mut positions = Vec::new();
    for (line, l) in text.lines().enumerate() {
        let bytes = l.as_bytes();
        let mut col = 0;
        while col < bytes.len() {
            if bytes[col].is_ascii_alphabetic() || bytes[col] == b'_' {
                positions.push((line, col));
                while col < bytes.len()
                    && (bytes[col].is_ascii_alphanumeric() || bytes[col] == b'_')
                {
                    col += 1;
                }
            } else {
                col += 1;
            }
        }
    }
    let step = (positions.len() / SAMPLES).max(1);
    let mut hovers = Vec::new();
    let mut answered = 0;
    for &(line, character) in positions.iter().step_by(step).take(SAMPLES) {
        let (r, t) = s.request(
            "textDocument/hover",
            json!({"textDocument": {"uri": file_uri}, "position": {"line": line, "character": character}}),
        );
        if !r.is_null() {
            answered += 1;
        }
        hovers.push(t);
    }
    hovers.sort();
    drop(s);

    let gdb_start = Instant::now();
    let gdb = Command::new("gdb")
        .args(["-batch", "-nx", "-ex"])
        .arg(format!("info functions ^{function}"))
        .arg(binary)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let gdb_time = gdb
        .ok()
        .filter(|s| s.success())
        .map(|_| gdb_start.elapsed());

    println!("binary: {binary}");
    println!(
        "workspace/symbol cold (index included): {} ({found} results for '{short}')",
        ms(cold)
    );
    println!(
        "workspace/symbol warm over {SAMPLES}: p50 {} p99 {}",
        ms(percentile(&warm, 0.5)),
        ms(percentile(&warm, 0.99))
    );
    println!(
        "hover over {} identifiers of {file} ({answered} with an answer): p50 {} p99 {}",
        hovers.len(),
        ms(percentile(&hovers, 0.5)),
        ms(percentile(&hovers, 0.99))
    );
    match gdb_time {
        Some(t) => println!(
            "gdb -batch 'info functions ^{function}': {} (tandem's cold query is {:.1}x faster)",
            ms(t),
            t.as_secs_f64() / cold.as_secs_f64()
        ),
        None => println!("gdb: not available"),
    }
    ExitCode::SUCCESS
}
