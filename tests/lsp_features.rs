//! `tandem lsp` language features over stdio, on a workspace holding the C sample
//! `samples/c/lsp_shapes.c` built with `gcc -g -O0`: workspace model (discovery, configured
//! globs, re-indexing a rebuilt binary), workspace/symbol, documentSymbol, definition and
//! hover, with exact expected results and positions in the negotiated encoding.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};
use support::Peer;

const SAMPLE: &str = "lsp_shapes.c";

/// A fresh workspace directory with the sample copied in and built into `bin_rel`.
struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// An empty workspace directory.
    fn empty(tag: &str) -> Workspace {
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
    fn new(tag: &str, bin_rel: &str) -> Workspace {
        let ws = Workspace::empty(tag);
        let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../samples/c")
            .join(SAMPLE);
        std::fs::copy(sample, ws.source()).unwrap();
        ws.build(bin_rel);
        ws
    }

    fn build(&self, bin_rel: &str) {
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

    fn source(&self) -> PathBuf {
        self.root.join(SAMPLE)
    }

    fn uri(&self) -> String {
        format!("file://{}", self.source().display())
    }

    fn root_uri(&self) -> String {
        format!("file://{}", self.root.display())
    }

    /// A server initialized on this workspace with the given encodings and options.
    fn serve(&self, encodings: &[&str], options: Value) -> (Peer, Value) {
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

fn result(resp: Value) -> Value {
    assert!(resp.get("error").is_none(), "error response: {resp}");
    resp["result"].clone()
}

fn range(l1: u32, c1: u32, l2: u32, c2: u32) -> Value {
    json!({"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}})
}

/// (name, kind) of each symbol in a `workspace/symbol` answer.
fn names(symbols: &Value) -> Vec<(String, u64)> {
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

fn owned(list: &[(&str, u64)]) -> Vec<(String, u64)> {
    list.iter().map(|&(n, k)| (n.to_owned(), k)).collect()
}

fn at(ws: &Workspace, line: u32, character: u32) -> Value {
    json!({"textDocument": {"uri": ws.uri()}, "position": {"line": line, "character": character}})
}

#[test]
fn workspace_symbol_is_discovered_ranked_and_located() {
    // Not configured: the binary is discovered under build/.
    let ws = Workspace::new("wsym", "build/shapes");
    let (mut peer, init) = ws.serve(&["utf-16"], Value::Null);
    assert_eq!(
        init["result"]["capabilities"]["workspaceSymbolProvider"],
        true
    );

    let area = result(peer.lsp_request("workspace/symbol", json!({"query": "area"})));
    assert_eq!(
        area,
        json!([{"name": "area", "kind": 12, "location": {"uri": ws.uri(), "range": range(16, 4, 16, 8)}}])
    );
    // Exact before prefix before substring before fuzzy; shorter names first within a tier.
    let co = result(peer.lsp_request("workspace/symbol", json!({"query": "co"})));
    assert_eq!(names(&co), owned(&[("color", 10), ("counter", 13)]));
    let p = result(peer.lsp_request("workspace/symbol", json!({"query": "POINT"})));
    assert_eq!(names(&p), owned(&[("point", 23), ("point_t", 26)]));
    let a = result(peer.lsp_request("workspace/symbol", json!({"query": "a"})));
    assert_eq!(
        names(&a),
        owned(&[("area", 12), ("main", 12), ("flags", 23), ("scale", 13)])
    );
    let fuzzy = result(peer.lsp_request("workspace/symbol", json!({"query": "shft"})));
    assert_eq!(names(&fuzzy), owned(&[("shift", 12)]));
    let none = result(peer.lsp_request("workspace/symbol", json!({"query": "nosuchthing"})));
    assert_eq!(none, json!([]));

    // `counter` follows "/* é😀 */ " on its line: é is one UTF-16 unit, 😀 two.
    let counter = result(peer.lsp_request("workspace/symbol", json!({"query": "counter"})));
    assert_eq!(counter[0]["location"]["range"], range(12, 14, 12, 21));
}

#[test]
fn columns_follow_the_negotiated_encoding() {
    let ws = Workspace::new("enc", "build/shapes");
    // In bytes, é is 2 and 😀 is 4; in code points, one each.
    for (encoding, start) in [("utf-8", 17), ("utf-32", 13), ("utf-16", 14)] {
        let (mut peer, init) = ws.serve(&[encoding], Value::Null);
        assert_eq!(init["result"]["capabilities"]["positionEncoding"], encoding);
        let counter = result(peer.lsp_request("workspace/symbol", json!({"query": "counter"})));
        assert_eq!(
            counter[0]["location"]["range"],
            range(12, start, 12, start + 7),
            "{encoding}"
        );
        // The same column in a request: definition of `counter` on its own declaration.
        let def = result(peer.lsp_request("textDocument/definition", at(&ws, 12, start + 2)));
        assert_eq!(def["range"], range(12, start, 12, start + 7), "{encoding}");
    }
}

#[test]
fn open_documents_are_read_instead_of_the_disk() {
    let ws = Workspace::new("open", "build/shapes");
    let (mut peer, _) = ws.serve(&["utf-16"], Value::Null);
    // The editor's copy puts non-ASCII text before `counter` on line 23.
    let text = std::fs::read_to_string(ws.source())
        .unwrap()
        .replace("    counter++;", "    /* ü漢🎉 */ counter++;");
    peer.lsp_notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": ws.uri(), "languageId": "c", "version": 1, "text": text}}),
    );
    // "    /* ü漢🎉 */ " is 4 + 3 + 1 + 1 + 2 + 4 = 15 UTF-16 units.
    let hover = result(peer.lsp_request("textDocument/hover", at(&ws, 23, 16)));
    assert_eq!(hover["range"], range(23, 15, 23, 22));
    let def = result(peer.lsp_request("textDocument/definition", at(&ws, 23, 16)));
    assert_eq!(
        def,
        json!({"uri": ws.uri(), "range": range(12, 14, 12, 21)})
    );
    // Inside the surrogate pair of 🎉 is not a position: no answer rather than a wrong one.
    let inside = result(peer.lsp_request("textDocument/definition", at(&ws, 23, 12)));
    assert_eq!(inside, Value::Null);
}

const DOCUMENT_SYMBOLS: &str = r#"[
 {"name":"point","kind":23,"detail":"struct point","range":{"start":{"line":2,"character":0},"end":{"line":6,"character":1}},"selectionRange":{"start":{"line":2,"character":7},"end":{"line":2,"character":12}},
  "children":[
   {"name":"tag","kind":8,"detail":"char","range":{"start":{"line":3,"character":9},"end":{"line":3,"character":12}},"selectionRange":{"start":{"line":3,"character":9},"end":{"line":3,"character":12}}},
   {"name":"x","kind":8,"detail":"double","range":{"start":{"line":4,"character":11},"end":{"line":4,"character":12}},"selectionRange":{"start":{"line":4,"character":11},"end":{"line":4,"character":12}}},
   {"name":"y","kind":8,"detail":"int","range":{"start":{"line":5,"character":8},"end":{"line":5,"character":9}},"selectionRange":{"start":{"line":5,"character":8},"end":{"line":5,"character":9}}}]},
 {"name":"color","kind":10,"detail":"enum color","range":{"start":{"line":8,"character":0},"end":{"line":8,"character":31}},"selectionRange":{"start":{"line":8,"character":5},"end":{"line":8,"character":10}},
  "children":[
   {"name":"RED","kind":22,"detail":"0","range":{"start":{"line":8,"character":13},"end":{"line":8,"character":16}},"selectionRange":{"start":{"line":8,"character":13},"end":{"line":8,"character":16}}},
   {"name":"GREEN","kind":22,"detail":"1","range":{"start":{"line":8,"character":18},"end":{"line":8,"character":23}},"selectionRange":{"start":{"line":8,"character":18},"end":{"line":8,"character":23}}},
   {"name":"BLUE","kind":22,"detail":"2","range":{"start":{"line":8,"character":25},"end":{"line":8,"character":29}},"selectionRange":{"start":{"line":8,"character":25},"end":{"line":8,"character":29}}}]},
 {"name":"point_t","kind":26,"detail":"point_t","range":{"start":{"line":10,"character":0},"end":{"line":10,"character":29}},"selectionRange":{"start":{"line":10,"character":21},"end":{"line":10,"character":28}}},
 {"name":"counter","kind":13,"range":{"start":{"line":12,"character":0},"end":{"line":12,"character":26}},"selectionRange":{"start":{"line":12,"character":14},"end":{"line":12,"character":21}}},
 {"name":"scale","kind":13,"range":{"start":{"line":14,"character":0},"end":{"line":14,"character":26}},"selectionRange":{"start":{"line":14,"character":14},"end":{"line":14,"character":19}}},
 {"name":"area","kind":12,"range":{"start":{"line":16,"character":0},"end":{"line":19,"character":1}},"selectionRange":{"start":{"line":16,"character":4},"end":{"line":16,"character":8}}},
 {"name":"shift","kind":12,"range":{"start":{"line":21,"character":0},"end":{"line":25,"character":1}},"selectionRange":{"start":{"line":21,"character":7},"end":{"line":21,"character":12}}},
 {"name":"main","kind":12,"range":{"start":{"line":27,"character":0},"end":{"line":34,"character":1}},"selectionRange":{"start":{"line":27,"character":4},"end":{"line":27,"character":8}}},
 {"name":"flags","kind":23,"detail":"struct flags","range":{"start":{"line":36,"character":0},"end":{"line":41,"character":1}},"selectionRange":{"start":{"line":36,"character":7},"end":{"line":36,"character":12}},
  "children":[
   {"name":"ready","kind":8,"detail":"unsigned int","range":{"start":{"line":37,"character":17},"end":{"line":37,"character":22}},"selectionRange":{"start":{"line":37,"character":17},"end":{"line":37,"character":22}}},
   {"name":"mode","kind":8,"detail":"unsigned int","range":{"start":{"line":38,"character":17},"end":{"line":38,"character":21}},"selectionRange":{"start":{"line":38,"character":17},"end":{"line":38,"character":21}}},
   {"name":"level","kind":8,"detail":"short int","range":{"start":{"line":39,"character":10},"end":{"line":39,"character":15}},"selectionRange":{"start":{"line":39,"character":10},"end":{"line":39,"character":15}}},
   {"name":"total","kind":8,"detail":"long int","range":{"start":{"line":40,"character":9},"end":{"line":40,"character":14}},"selectionRange":{"start":{"line":40,"character":9},"end":{"line":40,"character":14}}}]},
 {"name":"settings","kind":13,"range":{"start":{"line":41,"character":0},"end":{"line":41,"character":10}},"selectionRange":{"start":{"line":41,"character":2},"end":{"line":41,"character":10}}}
]"#;

#[test]
fn document_symbols_are_hierarchical() {
    let ws = Workspace::new("dsym", "build/shapes");
    let (mut peer, _) = ws.serve(&["utf-16"], Value::Null);
    let symbols = result(peer.lsp_request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": ws.uri()}}),
    ));
    let expected: Value = serde_json::from_str(DOCUMENT_SYMBOLS).unwrap();
    assert_eq!(
        symbols,
        expected,
        "{}",
        serde_json::to_string_pretty(&symbols).unwrap()
    );
    // A file no binary knows has no symbols.
    let other = result(peer.lsp_request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": format!("{}/none.c", ws.root_uri())}}),
    ));
    assert_eq!(other, json!([]));
}

#[test]
fn definition_resolves_locals_params_globals_functions_and_types() {
    let ws = Workspace::new("def", "build/shapes");
    let (mut peer, _) = ws.serve(&["utf-16"], Value::Null);
    // (cursor line, cursor column) → declaration range; 0-based like the protocol.
    let cases = [
        ((18, 12), range(17, 8, 17, 15)), // local `product` in `return product;`
        ((17, 20), range(16, 13, 16, 18)), // parameter `width`
        ((22, 26), range(21, 37, 21, 39)), // parameter `dx` in shift
        ((23, 5), range(12, 14, 12, 21)), // global `counter`
        ((24, 22), range(14, 14, 14, 19)), // file static `scale`
        ((31, 14), range(16, 4, 16, 8)),  // call of `area`
        ((21, 22), range(2, 7, 2, 12)),   // `struct point` as a type
        ((29, 5), range(10, 21, 10, 28)), // typedef `point_t`
        ((32, 18), range(21, 7, 21, 12)), // call of `shift`
        ((32, 23), range(29, 12, 29, 16)), // local `copy` in `&copy`
        ((29, 22), range(28, 17, 28, 23)), // local `origin`
        ((30, 20), range(8, 18, 8, 23)),  // enumerator `GREEN`
        ((22, 22), range(4, 11, 4, 12)),  // member `x` in `p->x`
    ];
    for ((line, character), expected) in cases {
        let def = result(peer.lsp_request("textDocument/definition", at(&ws, line, character)));
        assert_eq!(
            def["range"], expected,
            "definition at {line}:{character}: {def}"
        );
        assert_eq!(def["uri"], ws.uri());
    }
    // Whitespace and keywords without a declaration have no definition.
    let blank = result(peer.lsp_request("textDocument/definition", at(&ws, 1, 0)));
    assert_eq!(blank, Value::Null);

    // `copy.y` in the editor's copy of the text (same lines as the built source).
    let text = std::fs::read_to_string(ws.source())
        .unwrap()
        .replace("(int)c) == 0;", "(int)c + copy.y) == 0;");
    peer.lsp_notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": ws.uri(), "languageId": "c", "version": 1, "text": text}}),
    );
    let def = result(peer.lsp_request("textDocument/definition", at(&ws, 33, 39)));
    assert_eq!(def["range"], range(5, 8, 5, 9), "{def}");
    let hover = result(peer.lsp_request("textDocument/hover", at(&ws, 33, 39)));
    assert_eq!(
        hover["contents"]["value"],
        "```c\nint y\n```\nfield of `struct point` · offset 16, size 4"
    );
    // A member name that the base's type does not have resolves to nothing.
    let text = text.replace("copy.y", "copy.z");
    peer.lsp_notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": ws.uri(), "version": 2}, "contentChanges": [{"text": text}]}),
    );
    let none = result(peer.lsp_request("textDocument/definition", at(&ws, 33, 39)));
    assert_eq!(none, Value::Null);
}

/// Bitfields share a byte; `level` leaves a one-byte hole and `total` a four-byte one.
const FLAGS_LAYOUT: &str = "```c
struct flags {
    unsigned int ready:1; /*     0:0    1b */
    unsigned int mode:3;  /*     0:1    3b */
    /* XXX 1 byte hole */
    short int level;      /*     2     2 */
    /* XXX 4 bytes hole */
    long int total;       /*     8     8 */
};
/* size: 16, align: 8, members: 4, holes: 2 (5 bytes), padding: 0 */
```";

const POINT_LAYOUT: &str = "```c
struct point {
    char tag; /*     0     1 */
    /* XXX 7 bytes hole */
    double x; /*     8     8 */
    int y;    /*    16     4 */
    /* XXX 4 bytes padding */
};
/* size: 24, align: 8, members: 3, holes: 1 (7 bytes), padding: 4 */
```";

#[test]
fn hover_shows_declarations_sizes_and_layouts() {
    let ws = Workspace::new("hover", "build/shapes");
    let (mut peer, _) = ws.serve(&["utf-16"], Value::Null);
    let cases: Vec<((u32, u32), Value, String)> = vec![
        (
            (18, 12),
            range(18, 11, 18, 18),
            "```c\nint product\n```\nlocal variable · size 4, align 4".into(),
        ),
        (
            (17, 20),
            range(17, 18, 17, 23),
            "```c\nint width\n```\nparameter · size 4, align 4".into(),
        ),
        (
            (24, 22),
            range(24, 19, 24, 24),
            "```c\ndouble scale\n```\nglobal variable · size 8, align 8".into(),
        ),
        (
            (31, 14),
            range(31, 12, 31, 16),
            "```c\nint area(int width, int height)\n```\nfunction".into(),
        ),
        (
            (28, 20),
            range(28, 17, 28, 23),
            format!("```c\nstruct point origin\n```\nlocal variable · size 24, align 8\n\n{POINT_LAYOUT}"),
        ),
        (
            (21, 22),
            range(21, 20, 21, 25),
            format!("```c\nstruct point\n```\ntype · size 24, align 8\n\n{POINT_LAYOUT}"),
        ),
        (
            (29, 5),
            range(29, 4, 29, 11),
            format!("```c\ntypedef struct point point_t\n```\ntype · size 24, align 8\n\n{POINT_LAYOUT}"),
        ),
        (
            (41, 4),
            range(41, 2, 41, 10),
            format!("```c\nstruct flags settings\n```\nglobal variable · size 16, align 8\n\n{FLAGS_LAYOUT}"),
        ),
        (
            (22, 22),
            range(22, 22, 22, 23),
            "```c\ndouble x\n```\nfield of `struct point` · offset 8, size 8".into(),
        ),
        (
            (30, 21),
            range(30, 19, 30, 24),
            "```c\nGREEN = 1\n```\nenumerator of `enum color`".into(),
        ),
        (
            (21, 27),
            range(21, 27, 21, 28),
            "```c\nstruct point *p\n```\nparameter · size 8, align 8".into(),
        ),
    ];
    for ((line, character), expected_range, expected) in cases {
        let hover = result(peer.lsp_request("textDocument/hover", at(&ws, line, character)));
        assert_eq!(
            hover["range"], expected_range,
            "hover at {line}:{character}"
        );
        assert_eq!(hover["contents"]["kind"], "markdown");
        let text = hover["contents"]["value"].as_str().unwrap();
        // The code size depends on the compiler; everything else is exact.
        let text = match text.find(" · ") {
            Some(i) if text[i..].contains("bytes of code") => &text[..i],
            _ => text,
        };
        assert_eq!(text, expected, "hover at {line}:{character}");
    }
}

#[test]
fn configured_binaries_replace_discovery_and_rebuilds_are_reindexed() {
    let ws = Workspace::new("config", "out/bin/shapes");
    // A glob that matches nothing: nothing is discovered behind the user's back.
    let (mut peer, _) = ws.serve(&["utf-16"], json!({"tandem": {"binaries": ["nothing/*"]}}));
    let none = result(peer.lsp_request("workspace/symbol", json!({"query": "area"})));
    assert_eq!(none, json!([]));
    drop(peer);

    let (mut peer, _) = ws.serve(
        &["utf-16"],
        json!({"tandem": {"binaries": ["out/**/sha*"]}}),
    );
    let area = result(peer.lsp_request("workspace/symbol", json!({"query": "area"})));
    assert_eq!(names(&area), owned(&[("area", 12)]));
    let extra = result(peer.lsp_request("workspace/symbol", json!({"query": "extra_fn"})));
    assert_eq!(extra, json!([]));

    // Rebuild with one more function: the next request sees it.
    let mut source = std::fs::read_to_string(ws.source()).unwrap();
    source.push_str("\nint extra_fn(void) { return 7; }\n");
    std::fs::write(ws.source(), source).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    ws.build("out/bin/shapes");
    let extra = result(peer.lsp_request("workspace/symbol", json!({"query": "extra_fn"})));
    assert_eq!(
        extra,
        json!([{"name": "extra_fn", "kind": 12, "location": {"uri": ws.uri(), "range": range(43, 4, 43, 12)}}])
    );
}

#[test]
fn binaries_built_after_startup_are_found() {
    let ws = Workspace::new("late", "build/shapes");
    std::fs::remove_file(ws.root.join("build/shapes")).unwrap();
    let (mut peer, _) = ws.serve(&["utf-16"], Value::Null);
    let none = result(peer.lsp_request("workspace/symbol", json!({"query": "area"})));
    assert_eq!(none, json!([]));
    ws.build("build/shapes");
    // New binaries are looked for at most every 2 s, on a request.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let area = result(peer.lsp_request("workspace/symbol", json!({"query": "area"})));
    assert_eq!(names(&area), owned(&[("area", 12)]));
}

#[test]
fn rust_paths_locals_and_layouts() {
    // samples/rust/lsp_geometry.rs built by rustc -g into target/debug, where discovery looks.
    let ws = Workspace::empty("rust");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/rust/lsp_geometry.rs");
    std::fs::copy(src, ws.root.join("lsp_geometry.rs")).unwrap();
    std::fs::create_dir_all(ws.root.join("target/debug")).unwrap();
    let status = Command::new("rustc")
        .args(["-g", "-C", "opt-level=0", "--edition", "2021", "-o"])
        .arg("target/debug/lsp_geometry")
        .arg("lsp_geometry.rs")
        .current_dir(&ws.root)
        .status()
        .unwrap();
    assert!(status.success(), "rustc failed");
    let uri = format!("{}/lsp_geometry.rs", ws.root_uri());
    let (mut peer, _) = ws.serve(&["utf-16"], Value::Null);

    // Demangled paths without hashes: the last component is the name, the rest its container.
    let found = result(peer.lsp_request("workspace/symbol", json!({"query": "manhattan"})));
    assert_eq!(
        found,
        json!([{"name": "manhattan", "kind": 12, "containerName": "lsp_geometry::geometry::Point",
                "location": {"uri": uri, "range": range(14, 15, 14, 24)}}])
    );
    let found = result(peer.lsp_request("workspace/symbol", json!({"query": "dist"})));
    assert_eq!(found[0]["containerName"], "lsp_geometry::geometry");
    assert_eq!(found[0]["location"]["range"], range(19, 11, 19, 19));

    let symbols = result(peer.lsp_request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": uri}}),
    ));
    // Modules and impl blocks hold their items; methods are told from free functions.
    let sym = |name: &str, kind: u32, r: Value, sel: Value, children: Option<Value>| {
        let mut v = json!({"name": name, "kind": kind, "range": r, "selectionRange": sel});
        if let Some(c) = children {
            v["children"] = c;
        }
        v
    };
    let expected = json!([
        sym(
            "geometry",
            2,
            range(2, 0, 23, 1),
            range(2, 4, 2, 12),
            Some(json!([
                sym(
                    "Point",
                    23,
                    range(9, 4, 17, 5),
                    range(9, 9, 9, 14),
                    Some(json!([
                        sym("new", 6, range(10, 8, 12, 9), range(10, 15, 10, 18), None),
                        sym(
                            "manhattan",
                            6,
                            range(14, 8, 16, 9),
                            range(14, 15, 14, 24),
                            None
                        ),
                    ]))
                ),
                sym(
                    "distance",
                    12,
                    range(19, 4, 22, 5),
                    range(19, 11, 19, 19),
                    None
                ),
            ]))
        ),
        sym("main", 12, range(25, 0, 29, 1), range(25, 3, 25, 7), None),
    ]);
    assert_eq!(symbols, expected, "{symbols}");

    let at = |line: u32, character: u32| json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}});
    for ((line, character), expected) in [
        ((21, 8), range(20, 12, 20, 14)),  // use of `dx`
        ((26, 9), range(26, 8, 26, 9)),    // `let a` itself, whose scope starts after it
        ((26, 31), range(10, 15, 10, 18)), // `Point::new`
        ((19, 21), range(19, 20, 19, 21)), // parameter `a`
    ] {
        let def = result(peer.lsp_request("textDocument/definition", at(line, character)));
        assert_eq!(def["range"], expected, "definition at {line}:{character}");
    }
    for ((line, character), expected) in [
        (
            (21, 8),
            "```rust\nlet dx: i64\n```\nlocal variable · size 8, align 8",
        ),
        (
            (20, 20),
            "```rust\nx: i64\n```\nfield of `struct Point` · offset 0, size 8",
        ),
        (
            (26, 9),
            "```rust\nlet a: Point\n```\nlocal variable · size 16, align 8\n\n```rust
struct Point {
    x: i64,  /*     0     8 */
    y: i32,  /*     8     4 */
    tag: u8, /*    12     1 */
    /* XXX 3 bytes padding */
}
/* size: 16, align: 8, members: 3, holes: 0 (0 bytes), padding: 3 */
```",
        ),
    ] {
        let hover = result(peer.lsp_request("textDocument/hover", at(line, character)));
        assert_eq!(
            hover["contents"]["value"], expected,
            "hover at {line}:{character}"
        );
    }
}

#[test]
fn requests_are_served_and_cancellable_while_indexing() {
    let ws = Workspace::new("busy", "build/shapes");
    // A test hook holds the indexer back for 1.5 s.
    let (mut peer, _) = ws.serve(&["utf-16"], json!({"tandem": {"testIndexDelayMs": 1500}}));
    let started = std::time::Instant::now();
    let symbol = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "workspace/symbol", "params": {"query": "area"}});
    peer.send(&symbol(100));
    peer.send(&symbol(101));
    peer.lsp_notify("$/cancelRequest", json!({"id": 101}));
    let cancelled = peer.recv_response(&json!(101));
    assert_eq!(cancelled["error"]["code"], -32800, "{cancelled}");
    // The reader is not blocked: other requests are answered meanwhile.
    peer.lsp_notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": ws.uri(), "languageId": "c", "version": 1, "text": "int x;"}}),
    );
    let doc = result(peer.lsp_request("tandem/document", json!({"uri": ws.uri()})));
    assert_eq!(doc["version"], 1);
    assert!(
        started.elapsed() < std::time::Duration::from_millis(1000),
        "answered only after {:?}",
        started.elapsed()
    );
    // The waiting request is answered once the index is ready.
    let area = result(peer.recv_response(&json!(100)));
    assert_eq!(names(&area), owned(&[("area", 12)]));
    assert!(started.elapsed() >= std::time::Duration::from_millis(1500));
}
