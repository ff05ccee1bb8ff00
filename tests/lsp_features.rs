//! `tandem lsp` language features over stdio, on a workspace holding the C sample
//! `samples/c/lsp_shapes.c` built with `gcc -g -O0`: workspace model (discovery, configured
//! globs, re-indexing a rebuilt binary), workspace/symbol, documentSymbol, definition and
//! hover, with exact expected results and positions in the negotiated encoding.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};
use support::lsp_workspace::*;
use support::Peer;

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

/// Semantic tokens of samples/rust/lsp_geometry.rs (types come without declaration lines
/// from rustc: their declarations are found in the text).
const TOKENS_RUST: &str = "\
2:4+8 namespace [declaration] geometry
3:15+5 type [declaration] Point
4:12+1 property [declaration] x
5:12+3 property [declaration] tag
6:12+1 property [declaration] y
9:9+5 type Point
10:15+3 function [declaration] new
10:19+1 parameter [declaration] x
10:27+1 parameter [declaration] y
10:38+5 type Point
11:12+5 type Point
11:20+1 parameter x
11:23+3 property tag
11:31+1 parameter y
14:15+9 function [declaration] manhattan
15:17+1 property x
15:19+3 function abs
15:32+4 function from
15:42+1 property y
15:44+3 function abs
15:58+4 function from
15:68+3 property tag
19:11+8 function [declaration] distance
19:20+1 parameter [declaration] a
19:24+5 type Point
19:31+1 parameter [declaration] b
19:35+5 type Point
20:12+2 variable [declaration] dx
20:17+1 parameter a
20:19+1 property x
20:23+1 parameter b
20:25+1 property x
21:8+2 variable dx
21:13+2 variable dx
25:3+4 function [declaration] main
26:8+1 variable [declaration] a
26:12+8 namespace geometry
26:22+5 type Point
26:29+3 function new
27:8+1 variable [declaration] b
27:12+8 namespace geometry
27:22+5 type Point
27:29+3 function new
28:22+8 namespace geometry
28:32+8 function distance
28:42+1 variable a
28:46+1 variable b
28:50+1 variable a
28:52+9 function manhattan
";

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
    let (mut peer, init) = ws.serve(&["utf-16"], Value::Null);

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

    let tokens = result(peer.lsp_request(
        "textDocument/semanticTokens/full",
        json!({"textDocument": {"uri": uri}}),
    ));
    let text = std::fs::read_to_string(ws.root.join("lsp_geometry.rs")).unwrap();
    let got = render_tokens(&text, &decode_tokens(&init, &tokens));
    assert_eq!(got, TOKENS_RUST, "{got}");

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
    // A test hook holds the indexer back for 1.5 s from initialize on.
    let before_initialize = std::time::Instant::now();
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
    assert!(before_initialize.elapsed() >= std::time::Duration::from_millis(1500));
}

/// Semantic tokens of samples/c/lsp_tokens.c: `line:column+length type [modifiers] text`.
const TOKENS_C: &str = "\
3:5+4 type [declaration] mode
3:12+9 enumMember [declaration] MODE_IDLE
3:23+9 enumMember [declaration] MODE_BUSY
5:7+3 type [declaration] box
6:8+5 property [declaration] width
7:16+5 property [declaration] label
10:17+5 variable [declaration,static,readonly] limit
11:4+5 variable [declaration] total
13:11+5 function [declaration,static] clamp
13:21+5 parameter [declaration] value
13:38+7 parameter [declaration,readonly] ceiling
15:16+4 variable [declaration] note
16:8+5 parameter value
16:16+7 parameter [readonly] ceiling
17:15+7 parameter [readonly] ceiling
18:11+5 parameter value
18:20+4 variable note
21:4+8 function [declaration] box_area
21:20+3 type box
21:25+1 parameter [declaration] b
22:9+4 type mode
22:14+1 variable [declaration] m
22:18+9 enumMember MODE_BUSY
23:4+5 variable total
23:13+1 parameter b
23:16+5 property width
24:11+5 function [static] clamp
24:17+1 parameter b
24:20+5 property width
24:27+5 variable [static,readonly] limit
24:41+1 variable m
27:4+4 function [declaration] main
28:11+3 type box
28:15+1 variable [declaration] b
29:11+8 function box_area
29:21+1 variable b
";

/// Decodes the relative 5-integer encoding into (line, column, length, type, modifiers),
/// naming types and modifiers through the legend.
fn decode_tokens(init: &Value, data: &Value) -> Vec<(u64, u64, u64, String, Vec<String>)> {
    let legend = &init["result"]["capabilities"]["semanticTokensProvider"]["legend"];
    let types = legend["tokenTypes"].as_array().unwrap();
    let mods = legend["tokenModifiers"].as_array().unwrap();
    let data: Vec<u64> = data["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(data.len() % 5, 0);
    let (mut line, mut col) = (0, 0);
    data.chunks(5)
        .map(|t| {
            line += t[0];
            col = if t[0] == 0 { col + t[1] } else { t[1] };
            let names = (0..mods.len())
                .filter(|i| t[4] & (1 << i) != 0)
                .map(|i| mods[i].as_str().unwrap().to_owned())
                .collect();
            (
                line,
                col,
                t[2],
                types[t[3] as usize].as_str().unwrap().to_owned(),
                names,
            )
        })
        .collect()
}

/// One line per token: `line:col+len type [modifiers] text`, for a readable snapshot.
fn render_tokens(text: &str, tokens: &[(u64, u64, u64, String, Vec<String>)]) -> String {
    let lines: Vec<&str> = text.lines().collect();
    tokens
        .iter()
        .map(|(l, c, n, ty, mods)| {
            let word: String = lines[*l as usize]
                .encode_utf16()
                .skip(*c as usize)
                .take(*n as usize)
                .map(|u| char::from_u32(u32::from(u)).unwrap_or('?'))
                .collect();
            let mods = if mods.is_empty() {
                String::new()
            } else {
                format!(" [{}]", mods.join(","))
            };
            format!("{l}:{c}+{n} {ty}{mods} {word}\n")
        })
        .collect()
}

#[test]
fn semantic_tokens_classify_identifiers_from_dwarf() {
    let (ws, c, _) = tokens_workspace("tokens");
    let (mut peer, init) = ws.serve(&["utf-16"], Value::Null);
    let text = std::fs::read_to_string(ws.root.join("lsp_tokens.c")).unwrap();
    let full = result(peer.lsp_request(
        "textDocument/semanticTokens/full",
        json!({"textDocument": {"uri": c}}),
    ));
    let got = render_tokens(&text, &decode_tokens(&init, &full));
    assert_eq!(got, TOKENS_C, "{got}");

    // A range gives the tokens within it, encoded relative to the start of the document.
    let part = result(peer.lsp_request(
        "textDocument/semanticTokens/range",
        json!({"textDocument": {"uri": c}, "range": range(21, 0, 23, 0)}),
    ));
    let got = render_tokens(&text, &decode_tokens(&init, &part));
    let expected: String = TOKENS_C
        .lines()
        .filter(|l| l.starts_with("21:") || l.starts_with("22:"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(got, expected);
    let bad = peer.lsp_request(
        "textDocument/semanticTokens/range",
        json!({"textDocument": {"uri": c}, "range": range(99, 0, 100, 0)}),
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}

#[test]
fn semantic_tokens_count_columns_in_the_negotiated_encoding() {
    let ws = Workspace::new("tokenc", "build/shapes");
    // `counter` follows "/* é😀 */ " on line 12: 17 bytes, 14 UTF-16 units, 13 code points.
    for (encoding, column) in [("utf-8", 17), ("utf-16", 14), ("utf-32", 13)] {
        let (mut peer, init) = ws.serve(&[encoding], Value::Null);
        let full = result(peer.lsp_request(
            "textDocument/semanticTokens/full",
            json!({"textDocument": {"uri": ws.uri()}}),
        ));
        let tokens = decode_tokens(&init, &full);
        let counter: Vec<_> = tokens.iter().filter(|t| t.0 == 12).collect();
        assert_eq!(
            counter,
            [&(
                12,
                column,
                7,
                "variable".to_owned(),
                vec!["declaration".to_owned()]
            )],
            "{encoding}"
        );
    }
}

#[test]
fn code_lenses_run_and_debug_main_and_rust_tests() {
    let (ws, c, _) = tokens_workspace("lens");
    let (mut peer, init) = ws.serve(&["utf-16"], Value::Null);
    let caps = &init["result"]["capabilities"];
    assert_eq!(caps["codeLensProvider"], json!({}));
    // Only the commands the server can execute itself are advertised.
    assert_eq!(
        caps["executeCommandProvider"]["commands"],
        json!(["tandem.run", "tandem.listProcesses", "tandem.focusSession"])
    );
    let lenses =
        result(peer.lsp_request("textDocument/codeLens", json!({"textDocument": {"uri": c}})));
    let program = ws.root.join("build/tokens").display().to_string();
    let launch = |verb: &str| {
        json!({"type": "tandem", "request": "launch", "name": format!("{verb} tokens"),
               "program": program, "args": [], "cwd": ws.root.display().to_string()})
    };
    assert_eq!(
        lenses,
        json!([
            {"range": range(27, 4, 27, 8), "command": {"title": "▶ Run", "command": "tandem.run", "arguments": [launch("Run")]}},
            {"range": range(27, 4, 27, 8), "command": {"title": "Debug", "command": "tandem.debug", "arguments": [launch("Debug")]}},
        ])
    );

    // Running it: output lines as log messages, then the exit status (main returns 0 here
    // only when box_area is 0: it is 4, so the status is 0 == 4 → 0).
    let run = result(peer.lsp_request(
        "workspace/executeCommand",
        json!({"command": "tandem.run", "arguments": [launch("Run")]}),
    ));
    assert_eq!(run, Value::Null);
    let shown = loop {
        let msg = peer.recv();
        if msg["method"] == "window/showMessage" {
            break msg;
        }
    };
    assert_eq!(
        shown["params"],
        json!({"type": 3, "message": format!("{program} exited with status 0")})
    );
    let unknown = peer.lsp_request(
        "workspace/executeCommand",
        json!({"command": "tandem.debug", "arguments": [launch("Debug")]}),
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    // Rust: the binary's `main`, and `#[test]` functions of a test binary.
    let ws = Workspace::empty("lensrs");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/rust/lsp_tested.rs");
    std::fs::copy(src, ws.root.join("lsp_tested.rs")).unwrap();
    std::fs::create_dir_all(ws.root.join("target/debug")).unwrap();
    for (out, extra) in [
        ("target/debug/tested", None),
        ("target/debug/tested-tests", Some("--test")),
    ] {
        let status = Command::new("rustc")
            .args(["-g", "-C", "opt-level=0", "--edition", "2021", "-o", out])
            .args(extra)
            .arg("lsp_tested.rs")
            .current_dir(&ws.root)
            .status()
            .unwrap();
        assert!(status.success(), "rustc failed");
    }
    let uri = format!("{}/lsp_tested.rs", ws.root_uri());
    let (mut peer, _) = ws.serve(&["utf-16"], Value::Null);
    let lenses = result(peer.lsp_request(
        "textDocument/codeLens",
        json!({"textDocument": {"uri": uri}}),
    ));
    let summary: Vec<(u64, String, String, Value)> = lenses
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let launch = &l["command"]["arguments"][0];
            (
                l["range"]["start"]["line"].as_u64().unwrap(),
                l["command"]["command"].as_str().unwrap().to_owned(),
                Path::new(launch["program"].as_str().unwrap())
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                launch["args"].clone(),
            )
        })
        .collect();
    let test_args = json!(["tests::doubles", "--exact", "--nocapture"]);
    assert_eq!(
        summary,
        [
            (6, "tandem.run".to_owned(), "tested".to_owned(), json!([])),
            (6, "tandem.debug".to_owned(), "tested".to_owned(), json!([])),
            (
                15,
                "tandem.run".to_owned(),
                "tested-tests".to_owned(),
                test_args.clone()
            ),
            (
                15,
                "tandem.debug".to_owned(),
                "tested-tests".to_owned(),
                test_args
            ),
        ]
    );
}

#[test]
fn declaration_goes_to_prototypes_and_extern_declarations_in_headers() {
    let (ws, c, h) = tokens_workspace("decl");
    let (mut peer, init) = ws.serve(&["utf-16"], Value::Null);
    assert_eq!(init["result"]["capabilities"]["declarationProvider"], true);
    let at = |line: u32, character: u32| json!({"textDocument": {"uri": c}, "position": {"line": line, "character": character}});
    for ((line, character), uri, expected) in [
        ((29, 13), &h, range(8, 4, 8, 12)), // call of box_area → its prototype in the header
        ((21, 6), &h, range(8, 4, 8, 12)),  // the definition itself → the prototype
        ((23, 6), &h, range(6, 11, 6, 16)), // global `total` → `extern int total;`
        ((24, 13), &c, range(13, 11, 13, 16)), // static `clamp` has no prototype: its definition
        ((23, 13), &c, range(21, 25, 21, 26)), // parameter `b`: where it is declared
    ] {
        let decl = result(peer.lsp_request("textDocument/declaration", at(line, character)));
        assert_eq!(
            decl,
            json!({"uri": uri, "range": expected}),
            "declaration at {line}:{character}"
        );
    }
    // definition still goes to the definition.
    let def = result(peer.lsp_request("textDocument/definition", at(29, 13)));
    assert_eq!(def, json!({"uri": c, "range": range(21, 4, 21, 12)}));
}

#[test]
fn answers_follow_edits_made_since_the_build() {
    let ws = Workspace::new("shift", "build/shapes");
    let (mut peer, init) = ws.serve(&["utf-16"], Value::Null);
    let built = std::fs::read_to_string(ws.source()).unwrap();
    peer.lsp_notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": ws.uri(), "languageId": "c", "version": 1, "text": built}}),
    );
    // Three lines typed above `area` (line 16), one line deleted below it (the blank 20).
    peer.lsp_notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": ws.uri(), "version": 2}, "contentChanges": [
            {"range": range(20, 0, 21, 0), "text": ""},
            {"range": range(15, 0, 15, 0), "text": "/* new */\nint helper(void);\n\n"},
        ]}),
    );
    let doc = result(peer.lsp_request("tandem/document", json!({"uri": ws.uri()})));
    let text = doc["text"].as_str().unwrap();
    assert_eq!(
        text.lines().nth(19),
        Some("int area(int width, int height) {")
    );
    // `product` used on (built) line 18 is now on line 21 and declared on line 20.
    let def = result(peer.lsp_request("textDocument/definition", at(&ws, 21, 12)));
    assert_eq!(def["range"], range(20, 8, 20, 15), "{def}");
    let hover = result(peer.lsp_request("textDocument/hover", at(&ws, 21, 12)));
    assert_eq!(
        hover["contents"]["value"],
        "```c\nint product\n```\nlocal variable · size 4, align 4"
    );
    // A call of `area` in main (built line 31, now 33) goes to the moved declaration.
    let def = result(peer.lsp_request("textDocument/definition", at(&ws, 33, 14)));
    assert_eq!(def["range"], range(19, 4, 19, 8), "{def}");
    // `shift` lost the blank line above it: 21 → 23.
    let symbols = result(peer.lsp_request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": ws.uri()}}),
    ));
    let find = |name: &str| {
        symbols
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()["selectionRange"]
            .clone()
    };
    assert_eq!(find("point"), range(2, 7, 2, 12));
    assert_eq!(find("area"), range(19, 4, 19, 8));
    assert_eq!(find("shift"), range(23, 7, 23, 12));
    assert_eq!(find("main"), range(29, 4, 29, 8));
    // Semantic tokens too: `product` is declared on line 20 and used on 21, `width` is a
    // parameter on both; the typed prototype of `helper` names a function no binary has.
    let tokens = result(peer.lsp_request(
        "textDocument/semanticTokens/full",
        json!({"textDocument": {"uri": ws.uri()}}),
    ));
    let got = render_tokens(text, &decode_tokens(&init, &tokens));
    let lines: Vec<&str> = got
        .lines()
        .filter(|l| {
            ["16:", "17:", "19:", "20:", "21:"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect();
    assert_eq!(
        lines,
        [
            "19:4+4 function [declaration] area",
            "19:13+5 parameter [declaration] width",
            "19:24+6 parameter [declaration] height",
            "20:8+7 variable [declaration] product",
            "20:18+5 parameter width",
            "20:26+6 parameter height",
            "21:11+7 variable product",
        ]
    );
}

#[test]
fn an_edit_makes_pending_requests_about_the_document_content_modified() {
    let ws = Workspace::new("modified", "build/shapes");
    let (mut peer, _) = ws.serve(&["utf-16"], json!({"tandem": {"testIndexDelayMs": 1000}}));
    let text = std::fs::read_to_string(ws.source()).unwrap();
    peer.lsp_notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": ws.uri(), "languageId": "c", "version": 1, "text": text}}),
    );
    // Both wait for the index; the edit comes first.
    peer.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "textDocument/hover", "params": at(&ws, 18, 12)}));
    peer.send(&json!({"jsonrpc": "2.0", "id": 8, "method": "workspace/symbol", "params": {"query": "area"}}));
    peer.lsp_notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": ws.uri(), "version": 2},
               "contentChanges": [{"range": range(0, 0, 0, 0), "text": "\n"}]}),
    );
    let hover = peer.recv_response(&json!(7));
    assert_eq!(hover["error"]["code"], -32801, "{hover}");
    // A request about no document is not stale.
    let symbols = result(peer.recv_response(&json!(8)));
    assert_eq!(names(&symbols), owned(&[("area", 12)]));
    // Asked again, it is answered against the new text.
    let hover = result(peer.lsp_request("textDocument/hover", at(&ws, 19, 12)));
    assert_eq!(hover["range"], range(19, 11, 19, 18));
}

/// Answers the server's requests (by method) and collects its `$/progress` values, until a
/// request for `until` has been answered... or the progress ended.
fn answer_server_requests(
    peer: &mut Peer,
    answers: &Value,
    want: usize,
) -> (Vec<Value>, Vec<Value>) {
    let (mut requests, mut progress) = (Vec::new(), Vec::new());
    while requests.len() < want
        || progress
            .last()
            .is_none_or(|p: &Value| p["value"]["kind"] != "end")
    {
        let msg = peer.recv();
        match (msg.get("id"), msg["method"].as_str()) {
            (Some(id), Some(method)) => {
                let answer = answers.get(method).cloned().unwrap_or(Value::Null);
                peer.send(&json!({"jsonrpc": "2.0", "id": id, "result": answer}));
                requests.push(msg.clone());
            }
            (None, Some("$/progress")) => progress.push(msg["params"].clone()),
            _ => {}
        }
    }
    (requests, progress)
}

#[test]
fn progress_watchers_and_configuration_with_capable_clients() {
    let ws = Workspace::new("capable", "out/bin/shapes");
    let mut peer = Peer::lsp();
    peer.lsp_request(
        "initialize",
        json!({
            "processId": null,
            "rootUri": ws.root_uri(),
            "capabilities": {
                "window": {"workDoneProgress": true},
                "workspace": {"configuration": true, "didChangeWatchedFiles": {"dynamicRegistration": true}},
            },
            // Pulled configuration replaces this glob, which matches nothing.
            "initializationOptions": {"tandem": {"binaries": ["nothing/*"], "testIndexDelayMs": 300}},
        }),
    );
    peer.lsp_notify("initialized", json!({}));
    let answers = json!({"workspace/configuration": [["out/**/sha*"]]});
    let (requests, progress) = answer_server_requests(&mut peer, &answers, 3);
    let methods: Vec<&str> = requests
        .iter()
        .map(|r| r["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        [
            "window/workDoneProgress/create",
            "client/registerCapability",
            "workspace/configuration"
        ]
    );
    assert_eq!(requests[0]["params"], json!({"token": "tandem-indexing"}));
    assert_eq!(
        requests[1]["params"]["registrations"][0]["registerOptions"],
        json!({"watchers": [{"globPattern": format!("{}/nothing/*", ws.root.display()), "kind": 3}]})
    );
    assert_eq!(
        requests[2]["params"],
        json!({"items": [{"section": "tandem.binaries", "scopeUri": ws.root_uri()}]})
    );
    // begin, one report per candidate, end; all on the token the client accepted.
    let kinds: Vec<&str> = progress
        .iter()
        .map(|p| p["value"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"begin"));
    assert_eq!(kinds.last(), Some(&"end"));
    assert!(progress.iter().all(|p| p["token"] == "tandem-indexing"));

    // The pulled setting is in force.
    let area = result(peer.lsp_request("workspace/symbol", json!({"query": "area"})));
    assert_eq!(names(&area), owned(&[("area", 12)]));
    // A new binary, announced by the watcher, is found at once (polling looks every 2 s).
    let mut source = std::fs::read_to_string(ws.source()).unwrap();
    source.push_str("\nint extra_fn(void) { return 7; }\n");
    std::fs::write(ws.source(), source).unwrap();
    ws.build("out/bin/shapes-extra");
    peer.lsp_notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": format!("{}/out/bin/shapes-extra", ws.root_uri()), "type": 1}]}),
    );
    let extra = result(peer.lsp_request("workspace/symbol", json!({"query": "extra_fn"})));
    assert_eq!(names(&extra), owned(&[("extra_fn", 12)]));
}

#[test]
fn without_those_capabilities_the_server_asks_nothing() {
    let ws = Workspace::new("plain", "build/shapes");
    let (mut peer, _) = ws.serve(&["utf-16"], Value::Null);
    // The first message after `initialized` is the answer: no request, no progress before it.
    peer.send(&json!({"jsonrpc": "2.0", "id": 99, "method": "workspace/symbol", "params": {"query": "area"}}));
    let first = peer.recv();
    assert_eq!(first["id"], 99, "{first}");
}
