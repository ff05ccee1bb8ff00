//! A language server and debug adapter sharing one workspace, as an editor runs them:
//! a private workspace holding one C sample built `gcc -g -O0`, a private runtime
//! directory for the sockets, and an LSP client that answers the server's requests and
//! keeps what it sent.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::dap::line_of;
use super::{Peer, Protocol, PATIENCE};

/// A private workspace (the sample and its binary) and a private runtime directory, so
/// tests never meet each other's sockets or a real editor's.
pub struct Workspace {
    pub root: PathBuf,
    pub runtime: PathBuf,
    sample: &'static str,
}

impl Workspace {
    /// Copies `samples/c/<sample>` into a fresh workspace (with the extra directories
    /// `dirs` made in it) and builds it there as `exe`.
    pub fn new(tag: &str, sample: &'static str, exe: &str, dirs: &[&str]) -> Workspace {
        let base =
            std::env::temp_dir().join(format!("tandem-ws-{}-{tag}-{}", exe, std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("ws");
        let runtime = base.join("run");
        std::fs::create_dir_all(&root).unwrap();
        for d in dirs {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::create_dir_all(&runtime).unwrap();
        let root = root.canonicalize().unwrap();
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../samples/c")
            .join(sample);
        std::fs::copy(from, root.join(sample)).unwrap();
        let status = Command::new("gcc")
            .args(["-g", "-O0", "-o", exe, sample])
            .current_dir(&root)
            .status()
            .unwrap();
        assert!(status.success(), "gcc failed");
        Workspace {
            root,
            runtime,
            sample,
        }
    }

    pub fn source(&self) -> PathBuf {
        self.root.join(self.sample)
    }

    pub fn uri(&self) -> String {
        format!("file://{}", self.source().display())
    }

    /// Starts `tandem <protocol> <args>` in `cwd` with this runtime directory and the
    /// test hooks on.
    pub fn spawn(&self, protocol: Protocol, args: &[&str], cwd: &Path) -> Peer {
        let runtime = self.runtime.display().to_string();
        Peer::spawn_in(
            protocol,
            args,
            &[
                ("XDG_RUNTIME_DIR", runtime.as_str()),
                ("TANDEM_TEST_HOOKS", "1"),
            ],
            Some(cwd),
        )
    }

    /// The sockets in the private runtime directory.
    pub fn sockets(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.runtime.join("tandem"))
            .map(|d| {
                d.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "sock"))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        if let Some(base) = self.root.parent() {
            let _ = std::fs::remove_dir_all(base);
        }
    }
}

/// An LSP client that answers the server's requests (with `null`) and keeps what the
/// server sent.
pub struct Lsp {
    pub peer: Peer,
    next_id: i64,
    /// Server requests received (method), in order.
    pub server_requests: Vec<String>,
    /// publishDiagnostics params received, in order.
    pub diagnostics: Vec<Value>,
}

impl Lsp {
    /// Starts the server in the workspace and sends `initialize` with the refresh
    /// capabilities an editor has, `capabilities` merged over them at the top level
    /// and `options` as `initializationOptions`; returns the client and the response.
    pub fn initialize(ws: &Workspace, capabilities: Value, options: Value) -> (Lsp, Value) {
        let mut lsp = Lsp {
            peer: ws.spawn(Protocol::Lsp, &[], &ws.root),
            next_id: 1,
            server_requests: Vec::new(),
            diagnostics: Vec::new(),
        };
        let root_uri = format!("file://{}", ws.root.display());
        let mut caps = json!({
            "general": {"positionEncodings": ["utf-16"]},
            "workspace": {
                "inlineValue": {"refreshSupport": true},
                "codeLens": {"refreshSupport": true},
            },
        });
        if let (Some(caps), Some(extra)) = (caps.as_object_mut(), capabilities.as_object()) {
            for (k, v) in extra {
                caps.insert(k.clone(), v.clone());
            }
        }
        let mut params = json!({
            "processId": null,
            "rootUri": root_uri,
            "workspaceFolders": [{"uri": root_uri, "name": "ws"}],
            "capabilities": caps,
        });
        if !options.is_null() {
            params["initializationOptions"] = options;
        }
        let init = lsp.request("initialize", params);
        (lsp, init)
    }

    /// `initialized`, then the sample opened as an editor opens it.
    pub fn open(&mut self, ws: &Workspace) {
        self.peer.lsp_notify("initialized", json!({}));
        let text = std::fs::read_to_string(ws.source()).unwrap();
        self.peer.lsp_notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": ws.uri(), "languageId": "c", "version": 1, "text": text}}),
        );
    }

    /// Handles one message that is not the response awaited.
    pub fn note(&mut self, msg: Value) {
        match (msg.get("id"), msg["method"].as_str()) {
            (Some(id), Some(method)) => {
                self.server_requests.push(method.to_owned());
                let id = id.clone();
                self.peer
                    .send(&json!({"jsonrpc": "2.0", "id": id, "result": null}));
            }
            (None, Some("textDocument/publishDiagnostics")) => {
                self.diagnostics.push(msg["params"].clone());
            }
            _ => {}
        }
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.peer
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let msg = self.peer.recv();
            if msg.get("method").is_none() && msg["id"] == json!(id) {
                return msg;
            }
            self.note(msg);
        }
    }

    /// How many server requests of `method` arrived (refreshes, say).
    pub fn count(&self, method: &str) -> usize {
        self.server_requests.iter().filter(|m| *m == method).count()
    }

    /// Reads (and handles) messages for `wait`, or until `done` holds; whether it held.
    pub fn read_until(&mut self, wait: Duration, mut done: impl FnMut(&Lsp) -> bool) -> bool {
        let deadline = Instant::now() + wait;
        while !done(self) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            if let Some(msg) = self.peer.try_recv(left.min(Duration::from_millis(100))) {
                self.note(msg);
            }
        }
        true
    }

    /// Reads (and handles) messages until `done` holds, or fails after PATIENCE.
    pub fn wait_until(&mut self, what: &str, done: impl FnMut(&Lsp) -> bool) {
        assert!(
            self.read_until(PATIENCE, done),
            "timed out waiting for {what}"
        );
    }

    /// The hover's result at a position (`null` when there is none).
    pub fn hover(&mut self, uri: &str, (line, character): (u32, u32)) -> Value {
        let r = self.request(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}),
        );
        assert!(r.get("error").is_none(), "{r}");
        r["result"].clone()
    }

    /// `shutdown` and `exit`; the server must end with 0.
    pub fn finish(mut self) {
        let r = self.request("shutdown", Value::Null);
        assert!(r.get("error").is_none(), "{r}");
        self.peer.lsp_notify("exit", json!(null));
        let status = self.peer.wait_exit(PATIENCE);
        assert_eq!(status.code(), Some(0), "{}", self.peer.stderr());
    }
}

/// The 0-based line of a marker and the column of `word` on it (UTF-16 = bytes here).
pub fn at(file: &Path, marker: &str, word: &str) -> (u32, u32) {
    let line = line_of(file, marker) as u32 - 1;
    let text = std::fs::read_to_string(file).unwrap();
    let col = text.lines().nth(line as usize).unwrap().find(word).unwrap() as u32;
    (line, col)
}
