//! The language-feature suites' workspace: a fresh directory with the C sample
//! `samples/c/lsp_shapes.c` built `gcc -g -O0`, a server initialized on it, and the small
//! helpers that read its answers.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};

use super::Peer;

pub const SAMPLE: &str = "lsp_shapes.c";

/// A fresh workspace directory with the sample copied in and built into `bin_rel`.
pub struct Workspace {
    pub root: PathBuf,
}

impl Workspace {
    /// An empty workspace directory.
    pub fn empty(tag: &str) -> Workspace {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let root =
            std::env::temp_dir().join(format!("tandem-lsp-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        Workspace {
            root: root.canonicalize().unwrap(),
        }
    }

    /// A workspace with the C sample built into `bin_rel`.
    pub fn new(tag: &str, bin_rel: &str) -> Workspace {
        let ws = Workspace::empty(tag);
        let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../samples/c")
            .join(SAMPLE);
        std::fs::copy(sample, ws.source()).unwrap();
        ws.build(bin_rel);
        ws
    }

    pub fn build(&self, bin_rel: &str) {
        let out = self.root.join(bin_rel);
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        let status = Command::new("gcc")
            .args(["-g", "-O0", "-o"])
            .arg(&out)
            .arg(SAMPLE)
            .current_dir(&self.root)
            .status()
            .unwrap();
        assert!(status.success(), "gcc failed");
    }

    pub fn source(&self) -> PathBuf {
        self.root.join(SAMPLE)
    }

    pub fn uri(&self) -> String {
        format!("file://{}", self.source().display())
    }

    pub fn root_uri(&self) -> String {
        format!("file://{}", self.root.display())
    }

    /// A server initialized on this workspace with the given encodings and options.
    pub fn serve(&self, encodings: &[&str], options: Value) -> (Peer, Value) {
        let mut peer = Peer::lsp();
        let resp = peer.lsp_request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": self.root_uri(),
                "workspaceFolders": [{"uri": self.root_uri(), "name": "ws"}],
                "capabilities": {"general": {"positionEncodings": encodings}},
                "initializationOptions": options,
            }),
        );
        peer.lsp_notify("initialized", json!({}));
        (peer, resp)
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

pub fn result(resp: Value) -> Value {
    assert!(resp.get("error").is_none(), "error response: {resp}");
    resp["result"].clone()
}

pub fn range(l1: u32, c1: u32, l2: u32, c2: u32) -> Value {
    json!({"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}})
}

/// (name, kind) of each symbol in a `workspace/symbol` answer.
pub fn names(symbols: &Value) -> Vec<(String, u64)> {
    symbols
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_owned(),
                s["kind"].as_u64().unwrap(),
            )
        })
        .collect()
}

pub fn owned(list: &[(&str, u64)]) -> Vec<(String, u64)> {
    list.iter().map(|&(n, k)| (n.to_owned(), k)).collect()
}

pub fn at(ws: &Workspace, line: u32, character: u32) -> Value {
    json!({"textDocument": {"uri": ws.uri()}, "position": {"line": line, "character": character}})
}

/// A workspace holding `samples/c/lsp_tokens.c` and its header, built into `build/tokens`.
pub fn tokens_workspace(tag: &str) -> (Workspace, String, String) {
    let ws = Workspace::empty(tag);
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/c");
    for f in ["lsp_tokens.c", "lsp_tokens.h"] {
        std::fs::copy(samples.join(f), ws.root.join(f)).unwrap();
    }
    std::fs::create_dir_all(ws.root.join("build")).unwrap();
    let status = Command::new("gcc")
        .args(["-g", "-O0", "-o", "build/tokens", "lsp_tokens.c"])
        .current_dir(&ws.root)
        .status()
        .unwrap();
    assert!(status.success(), "gcc failed");
    let c = format!("{}/lsp_tokens.c", ws.root_uri());
    let h = format!("{}/lsp_tokens.h", ws.root_uri());
    (ws, c, h)
}
