//! A raw MCP client over `tandem mcp --standalone`'s stdio (one JSON-RPC message a line):
//! for tests that need what the SDK suite (tests/mcp) cannot set up, such as the
//! generated big program, and for looking at every message, notifications included.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

pub struct Mcp {
    child: Child,
    out: BufReader<ChildStdout>,
    next: i64,
}

impl Mcp {
    /// `tandem mcp --standalone --root ROOT` with `env`, initialized.
    pub fn start(root: &Path, env: &[(&str, &str)]) -> Mcp {
        let mut command = Command::new(super::tandem_bin());
        command
            .args(["mcp", "--standalone", "--root"])
            .arg(root)
            .env("XDG_RUNTIME_DIR", super::private_runtime_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let mut m = Mcp {
            child,
            out,
            next: 1,
        };
        m.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "tandem-tests", "version": "1"}}),
        );
        m.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        m
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn send(&mut self, msg: Value) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends request `method` and returns its id, without waiting for the answer.
    pub fn send_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next;
        self.next += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The next message tandem sends.
    pub fn message(&mut self) -> Value {
        let mut line = String::new();
        assert!(
            self.out.read_line(&mut line).unwrap() > 0,
            "tandem mcp ended"
        );
        serde_json::from_str(&line).unwrap()
    }

    /// Every message up to and with the response to request `id`.
    pub fn messages_until_response(&mut self, id: i64) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let msg = self.message();
            let done = msg["id"] == json!(id) && msg.get("method").is_none();
            seen.push(msg);
            if done {
                return seen;
            }
        }
    }

    /// Request `method`'s result (messages before its response are dropped).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        let response = self.messages_until_response(id).pop().unwrap();
        response["result"].clone()
    }

    /// A tool's result: its structured content, whether it is an error, and its text.
    pub fn tool(&mut self, name: &str, args: Value) -> (Value, bool, String) {
        let r = self.request("tools/call", json!({"name": name, "arguments": args}));
        tool_result(&r)
    }
}

/// A `tools/call` result as (structured content, whether it is an error, text).
pub fn tool_result(r: &Value) -> (Value, bool, String) {
    let text = r["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (r["structuredContent"].clone(), r["isError"] == true, text)
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
