//! Companion mode end to end: `tandem lsp` started with
//! `initializationOptions.tandem.features = "companion"` (as beside clangd) serves a workspace
//! holding `samples/c/companion.c` (built `gcc -g -O0`); a `tandem dap` started in the
//! workspace bridges to it, so its debuggees are the language server's. Checked, with gdb as
//! the oracle: the server advertises and serves only debug-derived features; a hover answers
//! only with the paused program's live value (`null` before and after); the breakpoint line
//! carries a code lens with the session's hit count; after a `stepOut` the call site carries
//! the returned value (lens and inline value); with two sessions paused the lenses follow the
//! newest stop, and `tandem.focusSession` picks another. A source saved with an error after
//! the build gets the stale-binary warning and no compiler diagnostic (the same test fails in
//! full mode). An unknown mode is refused at `initialize`.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use support::bridged::{at, Lsp, Workspace};
use support::dap::{line_of, DapClient};
use support::{Protocol, PATIENCE};

const SAMPLE: &str = "companion.c";

fn workspace(tag: &str) -> Workspace {
    Workspace::new(tag, SAMPLE, "companion", &[])
}

fn lens_refreshes(lsp: &Lsp) -> usize {
    lsp.count("workspace/codeLens/refresh")
}

/// Reads messages until at least `n` code lens refreshes arrived.
fn wait_lens_refreshes(lsp: &mut Lsp, n: usize) {
    lsp.wait_until(&format!("{n} codeLens refreshes"), |l| {
        lens_refreshes(l) >= n
    });
}

/// (0-based line, title) of every code lens of the document.
fn code_lenses(lsp: &mut Lsp, uri: &str) -> Vec<(u64, String)> {
    let r = lsp.request(
        "textDocument/codeLens",
        json!({"textDocument": {"uri": uri}}),
    );
    assert!(r.get("error").is_none(), "{r}");
    r["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["range"]["start"]["line"].as_u64().unwrap(),
                l["command"]["title"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// What gdb says after a breakpoint on `line` is hit `stops` times: the hit count it
/// reports, and the value `finish` prints then.
fn gdb_hits_and_finish(program: &Path, source: &Path, line: i64, stops: usize) -> (u64, String) {
    let mut args = vec![
        "-batch".to_owned(),
        "-ex".to_owned(),
        format!("break {}:{line}", source.display()),
        "-ex".to_owned(),
        "run".to_owned(),
    ];
    for _ in 1..stops {
        args.extend(["-ex".to_owned(), "continue".to_owned()]);
    }
    args.extend(
        ["info breakpoints", "finish"]
            .iter()
            .flat_map(|c| ["-ex".to_owned(), (*c).to_owned()]),
    );
    let out = Command::new("gdb")
        .args(&args)
        .arg(program)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let hits = text
        .lines()
        .find_map(|l| {
            let rest = l.trim().strip_prefix("breakpoint already hit ")?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .unwrap_or_else(|| panic!("no hit count from gdb:\n{text}"));
    let value = text
        .lines()
        .find_map(|l| l.strip_prefix("Value returned is "))
        .and_then(|v| v.split_once(" = "))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_else(|| panic!("no returned value from gdb:\n{text}"));
    (hits, value)
}

fn hit_title(hits: u64) -> String {
    match hits {
        1 => "● breakpoint hit once".to_owned(),
        n => format!("● breakpoint hit {n} times"),
    }
}

/// Launches the sample in a bridged adapter with a breakpoint on `line`, stopped after
/// `stops` hits; returns the client and the stopped thread.
fn debug_to_hit(fx: &Workspace, line: i64, stops: usize) -> (DapClient, i64) {
    let mut dap = DapClient::with_peer(fx.spawn(Protocol::Dap, &[], &fx.root));
    dap.initialize();
    dap.ok("launch", json!({"program": "companion"}));
    dap.ok(
        "setBreakpoints",
        json!({"source": {"path": fx.source()}, "breakpoints": [{"line": line}]}),
    );
    dap.ok("configurationDone", json!({}));
    let mut stop = dap.event("stopped");
    for _ in 1..stops {
        let tid = stop["body"]["threadId"].as_i64().unwrap();
        dap.ok("continue", json!({"threadId": tid}));
        stop = dap.event("stopped");
    }
    (dap, stop["body"]["threadId"].as_i64().unwrap())
}

#[test]
fn companion_mode_serves_only_what_the_debugger_knows() {
    let fx = workspace("e2e");
    let src = fx.source();
    let uri = fx.uri();
    let program = fx.root.join("companion");
    let (mut lsp, init) = Lsp::initialize(
        &fx,
        Value::Null,
        json!({"tandem": {"features": "companion"}}),
    );
    let caps = &init["result"]["capabilities"];
    for absent in [
        "documentSymbolProvider",
        "definitionProvider",
        "declarationProvider",
        "workspaceSymbolProvider",
        "semanticTokensProvider",
    ] {
        assert!(caps.get(absent).is_none(), "{absent} advertised: {caps}");
    }
    for present in [
        "hoverProvider",
        "inlineValueProvider",
        "codeLensProvider",
        "executeCommandProvider",
    ] {
        assert!(caps.get(present).is_some(), "{present} missing: {caps}");
    }
    lsp.open(&fx);
    // What is not advertised is not served either.
    let r = lsp.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": uri}}),
    );
    assert_eq!(r["error"]["code"], -32601, "{r}");

    // Nothing paused: a hover has nothing to say (the declaration is clangd's).
    let sq_line = line_of(&src, "LINE_SQ");
    let call_line = line_of(&src, "LINE_CALL");
    let v_at = at(&src, "LINE_SQ", "v *");
    assert_eq!(lsp.hover(&uri, v_at), Value::Null);
    // C keeps its Run/Debug lenses (clangd has none).
    let lenses = code_lenses(&mut lsp, &uri);
    assert!(lenses.iter().any(|(_, t)| t == "▶ Run"), "{lenses:?}");

    // Session A: stopped at the third hit of LINE_SQ.
    let (hits_a, returned_a) = gdb_hits_and_finish(&program, &src, sq_line, 3);
    let (mut a, tid_a) = debug_to_hit(&fx, sq_line, 3);
    wait_lens_refreshes(&mut lsp, 1);
    let lenses = code_lenses(&mut lsp, &uri);
    let want = (sq_line as u64 - 1, hit_title(hits_a));
    assert!(lenses.contains(&want), "want {want:?} in {lenses:?}");
    println!(
        "hit-count lens after {hits_a} hits (gdb: {hits_a}): {:?}",
        want.1
    );

    // While paused, the hover is the live value only: DAP's value of `v`, no declaration.
    let frame = a.frames(tid_a)[0]["id"].as_i64().unwrap();
    let v = a.evaluate(frame, "v");
    let hover = lsp.hover(&uri, v_at);
    let text = hover["contents"]["value"].as_str().unwrap_or_default();
    assert!(
        text.contains(&format!("v = {}", v["result"].as_str().unwrap())),
        "{hover}"
    );
    assert!(
        !text.contains("parameter"),
        "a declaration in companion mode: {text}"
    );

    // Step out: the call site shows what `square` returned, as gdb's `finish` says.
    let before = lens_refreshes(&lsp);
    a.ok("stepOut", json!({"threadId": tid_a}));
    a.event("stopped");
    let frames = a.frames(tid_a);
    assert_eq!(frames[0]["line"], call_line, "{frames:#?}");
    wait_lens_refreshes(&mut lsp, before + 2);
    let returned = format!("↩ square returned {returned_a}");
    let lenses = code_lenses(&mut lsp, &uri);
    assert!(
        lenses.contains(&(call_line as u64 - 1, returned.clone())),
        "want {returned:?} on line {call_line} in {lenses:?}"
    );
    let (call0, square_col) = at(&src, "LINE_CALL", "square");
    let r = lsp.request(
        "textDocument/inlineValue",
        json!({"textDocument": {"uri": uri},
               "range": {"start": {"line": 0, "character": 0}, "end": {"line": call0 + 1, "character": 0}},
               "context": {"frameId": 1}}),
    );
    let inline = r["result"].as_array().unwrap();
    let at_call = inline
        .iter()
        .find(|v| v["text"] == format!("square returned {returned_a}"))
        .unwrap_or_else(|| panic!("no returned value inline: {r}"));
    assert_eq!(at_call["range"]["start"]["line"], call0, "{at_call}");
    assert_eq!(
        at_call["range"]["start"]["character"], square_col,
        "{at_call}"
    );
    println!(
        "after stepOut: lens {returned:?} and inline value at the call (gdb finish: {returned_a})"
    );

    // Session B stops later, at its first hit: the lenses follow the newest stop…
    let (hits_b, _) = gdb_hits_and_finish(&program, &src, sq_line, 1);
    let before = lens_refreshes(&lsp);
    let (b, _) = debug_to_hit(&fx, sq_line, 1);
    wait_lens_refreshes(&mut lsp, before + 1);
    let lenses = code_lenses(&mut lsp, &uri);
    assert!(
        lenses.contains(&(sq_line as u64 - 1, hit_title(hits_b))),
        "{lenses:?}"
    );
    assert!(!lenses.iter().any(|(_, t)| t == &returned), "{lenses:?}");
    // …until the editor focuses session A by its debuggee's pid, and back.
    let pid_a = a.debuggee_pid.unwrap();
    let r = lsp.request(
        "workspace/executeCommand",
        json!({"command": "tandem.focusSession", "arguments": [{"pid": pid_a}]}),
    );
    assert_eq!(r["result"]["pid"], pid_a, "{r}");
    let lenses = code_lenses(&mut lsp, &uri);
    assert!(
        lenses.contains(&(sq_line as u64 - 1, hit_title(hits_a))),
        "{lenses:?}"
    );
    assert!(lenses.iter().any(|(_, t)| t == &returned), "{lenses:?}");
    let r = lsp.request(
        "workspace/executeCommand",
        json!({"command": "tandem.focusSession", "arguments": [{"pid": null}]}),
    );
    assert_eq!(r["result"]["pid"], Value::Null, "{r}");
    let lenses = code_lenses(&mut lsp, &uri);
    assert!(
        lenses.contains(&(sq_line as u64 - 1, hit_title(hits_b))),
        "{lenses:?}"
    );
    let r = lsp.request(
        "workspace/executeCommand",
        json!({"command": "tandem.focusSession", "arguments": ["A"]}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
    println!("two sessions: lenses follow the newest stop, tandem.focusSession picks pid {pid_a}");

    // Both sessions end: no lens of theirs and no hover is left.
    b.finish();
    a.finish();
    let lenses = code_lenses(&mut lsp, &uri);
    assert!(
        !lenses
            .iter()
            .any(|(_, t)| t.starts_with('●') || t.starts_with('↩')),
        "{lenses:?}"
    );
    assert_eq!(lsp.hover(&uri, v_at), Value::Null);
    lsp.finish();
}

#[test]
fn an_unknown_mode_is_refused_at_initialize_naming_the_accepted_values() {
    let fx = workspace("bad");
    let (mut lsp, init) =
        Lsp::initialize(&fx, Value::Null, json!({"tandem": {"features": "lite"}}));
    assert_eq!(init["error"]["code"], -32602, "{init}");
    let message = init["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("\"full\"")
            && message.contains("\"companion\"")
            && message.contains("lite"),
        "{message}"
    );
    // Refused means not initialized: the client may try again with a valid mode.
    let root_uri = format!("file://{}", fx.root.display());
    let again = lsp.request(
        "initialize",
        json!({"processId": null, "rootUri": root_uri, "capabilities": {},
               "initializationOptions": {"tandem": {"features": "full"}}}),
    );
    assert_eq!(
        again["result"]["capabilities"]["documentSymbolProvider"], true,
        "{again}"
    );
    lsp.finish();
}

#[test]
fn companion_mode_keeps_the_stale_binary_warning_and_publishes_no_compiler_errors() {
    let fx = workspace("stale");
    let uri = fx.uri();
    let (mut lsp, init) = Lsp::initialize(
        &fx,
        Value::Null,
        json!({"tandem": {"features": "companion"}}),
    );
    assert!(init.get("error").is_none(), "{init}");
    lsp.open(&fx);
    // Saved with an error: the binary is now older than its source.
    std::thread::sleep(Duration::from_millis(20));
    let good = std::fs::read_to_string(fx.source()).unwrap();
    std::fs::write(
        fx.source(),
        good.replace("int sq = v * v;", "int sq = v * ;"),
    )
    .unwrap();
    lsp.peer.lsp_notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri}}),
    );
    let stale = format!(
        "this file is newer than {}, which was built from it: rebuild for accurate debugging",
        fx.root.join("companion").display()
    );
    let warned = lsp.read_until(PATIENCE, |l| {
        l.diagnostics.iter().any(|d| {
            d["uri"] == uri.as_str()
                && d["diagnostics"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|x| x["message"] == stale.as_str())
        })
    });
    assert!(warned, "no stale-binary warning: {:#?}", lsp.diagnostics);
    // Full mode publishes the compiler's error within a fraction of a second (tests/
    // lsp_diagnostics.rs); companion mode must publish none within seconds.
    lsp.read_until(Duration::from_secs(3), |_| false);
    let from_compiler: Vec<&Value> = lsp
        .diagnostics
        .iter()
        .flat_map(|d| d["diagnostics"].as_array().unwrap())
        .filter(|x| x["source"] != "tandem")
        .collect();
    assert!(from_compiler.is_empty(), "{from_compiler:#?}");
    println!("companion mode on save: the stale-binary warning, no compiler diagnostic in 3 s");
    lsp.finish();
}
