//! Malformed requests, table-driven: every DAP request tandem serves and every LSP method it
//! supports gets missing arguments, wrong types, stale or out-of-range ids, huge values
//! and unknown fields. Each answer must be a schema-valid response (an error, or a
//! sensible success), the next request must succeed, and the debuggee
//! (`samples/c/rel_faults.c spin`, stopped at a breakpoint in its loop) must go on exactly
//! as before. One debuggee session for all DAP cases, one language server for all LSP ones.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod reliability_util;
mod support;

use std::time::{Duration, Instant};

use reliability_util::{assert_clean, faults_sample};
use serde_json::{json, Value};
use support::dap::{line_of, sample_path, DapClient};
use support::{Peer, Protocol, PATIENCE};

/// 2^53: the largest integer every JSON reader agrees on.
const HUGE: i64 = 1 << 53;

/// What a case's response must be.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    /// An error response.
    Err,
    /// A success.
    Ok,
    /// Either, as long as it is a well-formed response.
    Any,
}

/// The ids of the current stop, and those of the stop before it (stale now).
struct Ids {
    thread: i64,
    frame: i64,
    locals: i64,
    old_frame: i64,
    old_locals: i64,
    /// The address of the global `ticks`.
    data: String,
    /// The pc of the innermost frame.
    code: String,
}

fn big() -> String {
    "x".repeat(1 << 20)
}

/// The DAP cases: (command, arguments; `Value::Null` sends none, expectation).
fn dap_cases(ids: &Ids, src: &str, line: i64) -> Vec<(&'static str, Value, Expect)> {
    use Expect::*;
    let big = big();
    let nested = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
    let (t, f, r) = (ids.thread, ids.frame, ids.locals);
    let (of, or) = (ids.old_frame, ids.old_locals);
    let (data, code) = (ids.data.as_str(), ids.code.as_str());
    let mut cases = vec![
        // Nothing at all, and arrays where objects belong.
        ("launch", Value::Null, Err),
        ("launch", json!({}), Err),
        ("launch", json!({"program": 5}), Err),
        ("launch", json!({"program": big}), Err),
        ("attach", json!({"pid": "not a pid"}), Err),
        ("attach", json!({"pid": HUGE}), Err),
        ("attach", json!({"pid": -1}), Err),
        (
            "initialize",
            json!({"adapterID": "again", "unknownField": [1]}),
            Any,
        ),
        ("configurationDone", json!([1, 2]), Any),
        // Breakpoints.
        ("setBreakpoints", Value::Null, Err),
        ("setBreakpoints", json!({"source": {"path": 5}}), Err),
        (
            "setBreakpoints",
            json!({"source": {"path": src}, "breakpoints": "x"}),
            Err,
        ),
        (
            "setBreakpoints",
            json!({"source": {"path": "/no/such.c"}, "breakpoints": [{"line": HUGE}]}),
            Any,
        ),
        (
            "setBreakpoints",
            json!({"source": {"path": src}, "breakpoints": [{"line": HUGE}, {"line": -HUGE}, {"line": 0}]}),
            Any,
        ),
        (
            "setBreakpoints",
            json!({"source": {"path": src}, "breakpoints": [{"line": line, "condition": big, "hitCondition": big, "logMessage": big}]}),
            Any,
        ),
        (
            "setBreakpoints",
            json!({"source": {"path": src}, "breakpoints": [{"line": line, "condition": nested}]}),
            Any,
        ),
        // Put the loop's breakpoint back (with fields no one knows).
        (
            "setBreakpoints",
            json!({"source": {"path": src, "zz": 1}, "breakpoints": [{"line": line, "zz": true}], "zz": {}}),
            Ok,
        ),
        ("setFunctionBreakpoints", json!({"breakpoints": 5}), Err),
        (
            "setFunctionBreakpoints",
            json!({"breakpoints": [{"name": big}, {"name": ""}, {"name": "::"}]}),
            Any,
        ),
        ("setFunctionBreakpoints", json!({"breakpoints": []}), Ok),
        (
            "setInstructionBreakpoints",
            json!({"breakpoints": [{"instructionReference": 5}]}),
            Err,
        ),
        (
            "setInstructionBreakpoints",
            json!({"breakpoints": [{"instructionReference": "0xffffffffffffffff", "offset": HUGE}, {"instructionReference": "garbage"}, {"instructionReference": "0x0", "offset": -HUGE}]}),
            Any,
        ),
        ("setInstructionBreakpoints", json!({"breakpoints": []}), Ok),
        (
            "setExceptionBreakpoints",
            json!({"filters": "SIGSEGV"}),
            Err,
        ),
        (
            "setExceptionBreakpoints",
            json!({"filters": ["NOPE", big]}),
            Any,
        ),
        (
            "setExceptionBreakpoints",
            json!({"filters": ["SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT"]}),
            Ok,
        ),
        ("dataBreakpointInfo", json!({"name": 5}), Err),
        (
            "dataBreakpointInfo",
            json!({"name": "ticks", "frameId": of}),
            Any,
        ),
        (
            "dataBreakpointInfo",
            json!({"name": big, "variablesReference": HUGE}),
            Any,
        ),
        (
            "dataBreakpointInfo",
            json!({"name": "0x10", "asAddress": true, "bytes": HUGE}),
            Any,
        ),
        (
            "setDataBreakpoints",
            json!({"breakpoints": [{"dataId": 5}]}),
            Err,
        ),
        (
            "setDataBreakpoints",
            json!({"breakpoints": [{"dataId": "garbage"}, {"dataId": big}]}),
            Any,
        ),
        ("setDataBreakpoints", json!({"breakpoints": []}), Ok),
        ("breakpointLocations", json!({"line": "x"}), Err),
        (
            "breakpointLocations",
            json!({"source": {"path": src}, "line": HUGE, "endLine": -HUGE}),
            Any,
        ),
        ("breakpointLocations", json!({"source": {}, "line": 1}), Any),
        // Execution control with ids that name nothing.
        ("continue", Value::Null, Err),
        ("continue", json!({"threadId": "x"}), Err),
        ("next", json!({"threadId": "1"}), Err),
        ("next", json!({"threadId": HUGE}), Any),
        ("stepIn", json!({"threadId": -1}), Any),
        ("stepOut", json!({"threadId": 0}), Any),
        ("next", json!({"threadId": t, "granularity": 5}), Err),
        ("pause", json!({"threadId": "x"}), Err),
        ("pause", json!({"threadId": HUGE}), Any),
        // State.
        ("threads", json!({"zz": 1}), Ok),
        ("threads", json!([1]), Any),
        ("stackTrace", Value::Null, Err),
        ("stackTrace", json!({"threadId": 1.5}), Err),
        ("stackTrace", json!({"threadId": HUGE}), Err),
        (
            "stackTrace",
            json!({"threadId": t, "startFrame": HUGE}),
            Any,
        ),
        ("stackTrace", json!({"threadId": t, "levels": HUGE}), Ok),
        (
            "stackTrace",
            json!({"threadId": t, "startFrame": -5, "levels": -1, "format": {"parameters": true}}),
            Any,
        ),
        ("scopes", json!({"frameId": of}), Err),
        ("scopes", json!({"frameId": -1}), Err),
        ("scopes", json!({"frameId": HUGE}), Err),
        ("scopes", json!({"frameId": "x"}), Err),
        ("variables", json!({"variablesReference": or}), Err),
        ("variables", json!({"variablesReference": 0}), Any),
        ("variables", json!({"variablesReference": -HUGE}), Err),
        (
            "variables",
            json!({"variablesReference": r, "start": HUGE, "count": HUGE}),
            Any,
        ),
        (
            "variables",
            json!({"variablesReference": r, "start": -1, "count": -1}),
            Any,
        ),
        (
            "variables",
            json!({"variablesReference": r, "count": HUGE}),
            Ok,
        ),
        (
            "variables",
            json!({"variablesReference": r, "filter": 5}),
            Err,
        ),
        (
            "setVariable",
            json!({"variablesReference": or, "name": "step", "value": "1"}),
            Err,
        ),
        (
            "setVariable",
            json!({"variablesReference": r, "name": "nosuch", "value": "1"}),
            Err,
        ),
        (
            "setVariable",
            json!({"variablesReference": r, "name": "step", "value": big}),
            Err,
        ),
        (
            "setVariable",
            json!({"variablesReference": r, "name": "step"}),
            Err,
        ),
        ("setExpression", json!({"expression": 5, "value": "1"}), Err),
        (
            "setExpression",
            json!({"expression": "ticks", "value": big, "frameId": f}),
            Err,
        ),
        (
            "setExpression",
            json!({"expression": "ticks", "value": "1", "frameId": of}),
            Err,
        ),
        ("evaluate", Value::Null, Err),
        ("evaluate", json!({"expression": big, "frameId": f}), Err),
        (
            "evaluate",
            json!({"expression": nested, "frameId": f, "context": "watch"}),
            Any,
        ),
        (
            "evaluate",
            json!({"expression": "-".repeat(200_000) + "1", "frameId": f}),
            Any,
        ),
        (
            "evaluate",
            json!({"expression": "*".repeat(200_000) + "ticks", "frameId": f}),
            Any,
        ),
        ("evaluate", json!({"expression": "((((", "frameId": f}), Err),
        (
            "evaluate",
            json!({"expression": "ticks", "frameId": of}),
            Err,
        ),
        (
            "evaluate",
            json!({"expression": "*(int*)0", "frameId": f}),
            Err,
        ),
        (
            "evaluate",
            json!({"expression": "ticks", "frameId": f, "context": "bogus", "format": {"hex": true}, "zz": 1}),
            Any,
        ),
        ("source", json!({"sourceReference": "x"}), Err),
        ("source", json!({"sourceReference": HUGE}), Err),
        ("loadedSources", json!({"zz": 1}), Ok),
        (
            "modules",
            json!({"startModule": HUGE, "moduleCount": HUGE}),
            Any,
        ),
        (
            "modules",
            json!({"startModule": -1, "moduleCount": -1}),
            Any,
        ),
        // Memory.
        (
            "readMemory",
            json!({"memoryReference": "garbage", "count": 4}),
            Err,
        ),
        (
            "readMemory",
            json!({"memoryReference": data, "count": "4"}),
            Err,
        ),
        (
            "readMemory",
            json!({"memoryReference": data, "count": HUGE}),
            Any,
        ),
        (
            "readMemory",
            json!({"memoryReference": data, "count": 1 << 30}),
            Any,
        ),
        (
            "readMemory",
            json!({"memoryReference": data, "count": -1}),
            Any,
        ),
        (
            "readMemory",
            json!({"memoryReference": data, "offset": -HUGE, "count": 16}),
            Any,
        ),
        (
            "readMemory",
            json!({"memoryReference": "0xffffffffffffffff", "offset": HUGE, "count": 16}),
            Any,
        ),
        (
            "writeMemory",
            json!({"memoryReference": "garbage", "data": "AAAA"}),
            Err,
        ),
        (
            "writeMemory",
            json!({"memoryReference": "0x0", "data": "AAAA"}),
            Err,
        ),
        (
            "writeMemory",
            json!({"memoryReference": data, "data": "!!! not base64"}),
            Err,
        ),
        (
            "writeMemory",
            json!({"memoryReference": "0xffffffffffffffff", "offset": HUGE, "data": "AA=="}),
            Any,
        ),
        (
            "disassemble",
            json!({"memoryReference": "garbage", "instructionCount": 1}),
            Err,
        ),
        (
            "disassemble",
            json!({"memoryReference": code, "instructionCount": 1_000_000_000}),
            Any,
        ),
        (
            "disassemble",
            json!({"memoryReference": code, "instructionOffset": -1_000_000_000, "instructionCount": 10}),
            Any,
        ),
        (
            "disassemble",
            json!({"memoryReference": code, "offset": HUGE, "instructionCount": 4}),
            Any,
        ),
        (
            "disassemble",
            json!({"memoryReference": code, "instructionCount": -5}),
            Any,
        ),
        // The rest.
        ("cancel", json!({"requestId": HUGE}), Any),
        ("cancel", json!({"requestId": "x"}), Err),
        ("exceptionInfo", json!({"threadId": HUGE}), Err),
        ("exceptionInfo", json!({"threadId": t}), Any),
        ("completions", json!({"column": 1}), Err),
        (
            "completions",
            json!({"text": big, "column": HUGE, "frameId": f}),
            Any,
        ),
        (
            "completions",
            json!({"text": "ti", "column": -5, "frameId": of}),
            Any,
        ),
        (
            "completions",
            json!({"text": "é€😀", "column": 3, "line": HUGE}),
            Any,
        ),
        ("flyToTheMoon", json!({"speed": HUGE}), Err),
        // Ending requests, with arguments that do not parse: nothing ends.
        ("restart", json!("now"), Err),
        ("terminate", json!({"restart": "no"}), Err),
        ("disconnect", json!({"terminateDebuggee": "yes"}), Err),
        ("disconnect", json!([true]), Err),
    ];
    // Every request with its arguments replaced by a number.
    for command in [
        "setBreakpoints",
        "setFunctionBreakpoints",
        "setInstructionBreakpoints",
        "setExceptionBreakpoints",
        "setDataBreakpoints",
        "dataBreakpointInfo",
        "breakpointLocations",
        "continue",
        "next",
        "stepIn",
        "stepOut",
        "pause",
        "stackTrace",
        "scopes",
        "variables",
        "setVariable",
        "setExpression",
        "evaluate",
        "source",
        "readMemory",
        "writeMemory",
        "exceptionInfo",
        "completions",
        "disassemble",
        "launch",
        "attach",
    ] {
        cases.push((command, json!(42), Err));
    }
    cases
}

/// Resuming requests: after their success the program runs until its next stop.
const RESUMING: &[&str] = &["continue", "next", "stepIn", "stepOut"];

/// Reads the ids of the current stop.
fn stop_ids(c: &mut DapClient, thread: i64, before: Option<&Ids>) -> Ids {
    let frames = c.frames(thread);
    let frame = frames[0]["id"].as_i64().unwrap();
    let scopes = c.ok("scopes", json!({"frameId": frame}));
    let locals = scopes["scopes"][0]["variablesReference"].as_i64().unwrap();
    // The program's global is evaluated in the innermost frame of the program: a step may
    // stop in libc, and from a libc frame tandem does not find the program's globals.
    let with_source = frames
        .iter()
        .find(|f| f["source"]["name"] == "rel_faults.c")
        .map_or(frame, |f| f["id"].as_i64().unwrap());
    let data = c.request(
        "evaluate",
        json!({"expression": "&ticks", "frameId": with_source, "context": "watch"}),
    );
    assert_eq!(data["success"], true, "{data}\nframes: {frames:#?}");
    let data = data["body"].clone();
    Ids {
        thread,
        frame,
        locals,
        old_frame: before.map_or(-7, |b| b.frame),
        old_locals: before.map_or(-7, |b| b.locals),
        data: data["memoryReference"]
            .as_str()
            .or_else(|| data["result"].as_str())
            .unwrap()
            .to_owned(),
        code: frames[0]["instructionPointerReference"]
            .as_str()
            .unwrap()
            .to_owned(),
    }
}

fn ticks(c: &mut DapClient, frame: i64) -> u64 {
    let v = c.evaluate(frame, "ticks");
    v["result"].as_str().unwrap().parse().unwrap()
}

#[test]
fn every_dap_request_survives_malformed_arguments() {
    let src = sample_path("c/rel_faults.c");
    let line = line_of(&src, "LINE_TICK");
    let mut c = DapClient::new();
    let stop = c.launch_to_stop(
        json!({"program": faults_sample(), "args": ["spin"]}),
        &src,
        &[line],
    );
    let thread = stop["body"]["threadId"].as_i64().unwrap();
    let pid = c.debuggee_pid.unwrap();
    let first = stop_ids(&mut c, thread, None);
    // One continue so that the first stop's ids are stale.
    c.ok("continue", json!({"threadId": thread}));
    assert_eq!(c.event("stopped")["body"]["reason"], "breakpoint");
    let mut ids = stop_ids(&mut c, thread, Some(&first));

    let cases = dap_cases(&ids, src.to_str().unwrap(), line);
    let mut failures = Vec::new();
    let total = cases.len();
    for (command, args, expect) in cases {
        let shown = {
            let s = args.to_string();
            if s.len() > 120 {
                format!("{}… ({} bytes)", &s[..120], s.len())
            } else {
                s
            }
        };
        let started = Instant::now();
        let seq = c.send_request(command, args);
        let r = c.response_to(seq);
        let took = started.elapsed();
        assert_eq!(r["command"], command, "{r}");
        let success = r["success"].as_bool().unwrap();
        // The outcome of each case, shown with --nocapture.
        let outcome: String = r
            .get("message")
            .map_or_else(|| r["body"].to_string(), Value::to_string)
            .chars()
            .take(160)
            .collect();
        eprintln!("{command} {shown} → {success} in {took:?}: {outcome}");
        if !success {
            let message = r["message"].as_str().unwrap_or_default();
            assert!(
                !message.is_empty(),
                "{command} {shown}: error without message"
            );
        }
        match (expect, success) {
            (Expect::Err, true) => failures.push(format!("{command} {shown}: succeeded: {r}")),
            (Expect::Ok, false) => failures.push(format!("{command} {shown}: failed: {r}")),
            _ => {}
        }
        if took > Duration::from_secs(5) {
            failures.push(format!("{command} {shown}: took {took:?}"));
        }
        if success && RESUMING.contains(&command) {
            // The program ran: it comes back to the loop's breakpoint.
            let again = c.event("stopped");
            let thread = again["body"]["threadId"].as_i64().unwrap();
            let before = std::mem::replace(&mut ids, stop_ids(&mut c, thread, None));
            ids.old_frame = before.frame;
            ids.old_locals = before.locals;
        }
        // The session goes on.
        c.ok("threads", json!({}));
    }
    assert!(
        failures.is_empty(),
        "{} of {total} cases misbehaved:\n{}",
        failures.len(),
        failures.join("\n")
    );

    // The debuggee is unaffected: the next continue brings it to the next tick.
    let before = ticks(&mut c, ids.frame);
    c.ok("continue", json!({"threadId": ids.thread}));
    let stop = c.event("stopped");
    assert_eq!(stop["body"]["reason"], "breakpoint", "{stop}");
    let frames = c.frames(stop["body"]["threadId"].as_i64().unwrap());
    assert_eq!(frames[0]["line"], line);
    assert_eq!(ticks(&mut c, frames[0]["id"].as_i64().unwrap()), before + 1);
    let tandem = i64::from(c.peer.pid());
    c.finish();
    assert_clean(tandem, &[pid], &[]);
}

/// The LSP cases: (method, params; `Value::Null` sends none).
fn lsp_cases(uri: &str) -> Vec<(&'static str, Value)> {
    let big = big();
    let position =
        json!({"textDocument": {"uri": uri}, "position": {"line": HUGE, "character": -1}});
    let range = json!({"textDocument": {"uri": uri},
        "range": {"start": {"line": HUGE, "character": HUGE}, "end": {"line": 0, "character": 0}},
        "context": {"stoppedLocation": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "frameId": HUGE}});
    let methods = [
        "workspace/symbol",
        "textDocument/documentSymbol",
        "textDocument/definition",
        "textDocument/declaration",
        "textDocument/hover",
        "textDocument/semanticTokens/full",
        "textDocument/semanticTokens/range",
        "textDocument/inlineValue",
        "textDocument/codeLens",
        "tandem/breakpointLocations",
        "tandem/document",
        "workspace/executeCommand",
    ];
    let mut cases = Vec::new();
    for method in methods {
        cases.push((method, Value::Null));
        cases.push((method, json!([1, 2])));
        cases.push((method, json!({"textDocument": 5, "query": 5, "command": 5})));
        cases.push((method, json!({"textDocument": {"uri": "not a uri"}})));
        cases.push((method, json!({"textDocument": {"uri": big}})));
        cases.push((method, position.clone()));
        cases.push((method, range.clone()));
        let mut unknown = position.clone();
        unknown["position"] = json!({"line": 0, "character": 0});
        unknown["zz"] = json!({"unknown": true});
        cases.push((method, unknown));
    }
    cases.push(("workspace/symbol", json!({"query": big})));
    cases.push((
        "workspace/executeCommand",
        json!({"command": "tandem.run", "arguments": [5]}),
    ));
    cases.push((
        "workspace/executeCommand",
        json!({"command": "no.such.command"}),
    ));
    cases.push(("initialize", json!({"processId": "x"})));
    cases.push(("no/such/method", json!({})));
    cases
}

#[test]
fn every_lsp_method_survives_malformed_params() {
    let tmp = reliability_util::TempDir::new("lsp");
    let dir = tmp.0.clone();
    let src = sample_path("c/rel_faults.c");
    std::fs::copy(faults_sample(), dir.join("rel_faults")).unwrap();
    let mut lsp = Peer::spawn_in(Protocol::Lsp, &[], &[], Some(&dir));
    let root = format!("file://{}", dir.display());
    let init = lsp.lsp_request(
        "initialize",
        json!({"processId": null, "rootUri": root, "capabilities": {},
               "initializationOptions": {"tandem": {"binaries": [dir.join("rel_faults")]}}}),
    );
    assert!(init.get("result").is_some(), "{init}");
    lsp.lsp_notify("initialized", json!({}));
    let uri = format!("file://{}", src.display());
    let text = std::fs::read_to_string(&src).unwrap();
    lsp.lsp_notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "c", "version": 1, "text": text}}),
    );
    // Notifications with bad params: no answer, and nothing changes.
    let big = big();
    for (method, params) in [
        ("textDocument/didOpen", json!({"textDocument": 5})),
        (
            "textDocument/didOpen",
            json!({"textDocument": {"uri": "file:///tmp/rel-big.c", "languageId": "c", "version": 1, "text": big}}),
        ),
        (
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": "x"}, "contentChanges": 5}),
        ),
        (
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 9}, "contentChanges": [{"range": {"start": {"line": HUGE, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "x"}]}),
        ),
        ("textDocument/didSave", json!([1])),
        (
            "textDocument/didClose",
            json!({"textDocument": {"uri": "file:///no/such.c"}}),
        ),
        ("workspace/didChangeWatchedFiles", json!({"changes": 5})),
        (
            "workspace/didChangeConfiguration",
            json!({"settings": {"tandem": {"binaries": 5}}}),
        ),
        ("$/cancelRequest", json!({"id": {"x": 1}})),
        ("$/setTrace", json!({"value": 5})),
    ] {
        lsp.lsp_notify(method, params);
    }
    let document = lsp.lsp_request("tandem/document", json!({"uri": uri}));
    assert!(document.get("error").is_none(), "{document}");

    let mut failures = Vec::new();
    let cases = lsp_cases(&uri);
    let total = cases.len();
    for (method, params) in cases {
        let started = Instant::now();
        let r = lsp.lsp_request(method, params.clone());
        let shown: String = params.to_string().chars().take(120).collect();
        if let Some(error) = r.get("error") {
            let code = error["code"].as_i64().unwrap_or(0);
            if !(-32803..=-32000).contains(&code) && !(-32700..=-32600).contains(&code) {
                failures.push(format!("{method} {shown}: unexpected error code: {r}"));
            }
        } else if r.get("result").is_none() {
            failures.push(format!("{method} {shown}: neither result nor error: {r}"));
        }
        if started.elapsed() > Duration::from_secs(5) {
            failures.push(format!("{method} {shown}: took {:?}", started.elapsed()));
        }
        // A well-formed follow-up succeeds.
        let follow = lsp.lsp_request("workspace/symbol", json!({"query": "tick"}));
        if follow.get("error").is_some() {
            failures.push(format!("after {method} {shown}: {follow}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} cases misbehaved:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The document survived every bad notification, and the server still finds symbols.
    let document = lsp.lsp_request("tandem/document", json!({"uri": uri}));
    assert!(
        document["result"]["text"] == text.as_str(),
        "the document changed: {}",
        document.to_string().chars().take(300).collect::<String>()
    );
    let symbols = lsp.lsp_request("workspace/symbol", json!({"query": "crash"}));
    assert!(
        symbols["result"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["name"] == "crash")),
        "{symbols}"
    );
    let r = lsp.lsp_request("shutdown", Value::Null);
    assert!(r.get("error").is_none(), "{r}");
    lsp.lsp_notify("exit", Value::Null);
    assert_eq!(lsp.wait_exit(PATIENCE).code(), Some(0));
}

/// A random sequence of requests against one real session: valid, stale and random ids,
/// random numbers and types, resuming requests among them. `TANDEM_SEQ_SEED` and
/// `TANDEM_SEQ_STEPS` replay or lengthen a run.
#[test]
fn a_random_request_sequence_keeps_the_session_and_the_debuggee_sound() {
    let seed: u64 = std::env::var("TANDEM_SEQ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_0012);
    let steps: usize = std::env::var("TANDEM_SEQ_STEPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut rng = support::Rng(seed.max(1));
    let src = sample_path("c/rel_faults.c");
    let line = line_of(&src, "LINE_TICK");
    let mut c = DapClient::new();
    let stop = c.launch_to_stop(
        json!({"program": faults_sample(), "args": ["spin"]}),
        &src,
        &[line],
    );
    let pid = c.debuggee_pid.unwrap();
    let mut thread = stop["body"]["threadId"].as_i64().unwrap();
    let mut ids = stop_ids(&mut c, thread, None);
    let mut seen_frames = vec![ids.frame];
    let mut seen_refs = vec![ids.locals];
    let names = [
        "ticks", "step", "bodies", "lock", "nosuch", "", "&ticks", "*&ticks", "(", "1/0",
    ];
    let commands = [
        "threads",
        "stackTrace",
        "scopes",
        "variables",
        "evaluate",
        "completions",
        "source",
        "modules",
        "loadedSources",
        "readMemory",
        "disassemble",
        "breakpointLocations",
        "exceptionInfo",
        "dataBreakpointInfo",
        "setVariable",
        "continue",
        "next",
        "stepIn",
        "stepOut",
        "pause",
        "setFunctionBreakpoints",
        "cancel",
    ];
    for step in 0..steps {
        let command = rng.pick(&commands);
        // An id: the current one, a stale one, or a random number.
        let id = |current: i64, seen: &[i64], rng: &mut support::Rng| match rng.below(4) {
            0 | 1 => current,
            2 => rng.pick(seen),
            _ => rng.pick(&[0, -1, 1, 2, 1000, HUGE, -HUGE, i64::from(i32::MAX)]),
        };
        let number = |rng: &mut support::Rng| -> Value {
            match rng.below(6) {
                0 => json!(rng.below(20)),
                1 => json!(-(rng.below(20) as i64)),
                2 => json!(HUGE),
                3 => json!("7"),
                4 => Value::Null,
                _ => json!(1.5),
            }
        };
        let args = match command {
            "stackTrace" => {
                json!({"threadId": id(thread, &[thread], &mut rng), "startFrame": number(&mut rng), "levels": number(&mut rng)})
            }
            "scopes" => json!({"frameId": id(ids.frame, &seen_frames, &mut rng)}),
            "variables" => {
                json!({"variablesReference": id(ids.locals, &seen_refs, &mut rng), "start": number(&mut rng), "count": number(&mut rng)})
            }
            "evaluate" => {
                json!({"expression": rng.pick(&names), "frameId": id(ids.frame, &seen_frames, &mut rng), "context": rng.pick(&["watch", "hover", "repl", "clipboard", "bogus"])})
            }
            "completions" => {
                json!({"text": rng.pick(&names), "column": number(&mut rng), "frameId": id(ids.frame, &seen_frames, &mut rng)})
            }
            "source" => json!({"sourceReference": number(&mut rng)}),
            "modules" => json!({"startModule": number(&mut rng), "moduleCount": number(&mut rng)}),
            "readMemory" => {
                json!({"memoryReference": rng.pick(&[ids.data.as_str(), ids.code.as_str(), "0x0", "zz"]), "offset": number(&mut rng), "count": number(&mut rng)})
            }
            "disassemble" => {
                json!({"memoryReference": rng.pick(&[ids.code.as_str(), ids.data.as_str(), "0x0"]), "instructionOffset": number(&mut rng), "instructionCount": number(&mut rng)})
            }
            "breakpointLocations" => {
                json!({"source": {"path": src}, "line": number(&mut rng), "endLine": number(&mut rng)})
            }
            "dataBreakpointInfo" => {
                json!({"name": rng.pick(&names), "frameId": id(ids.frame, &seen_frames, &mut rng)})
            }
            // Only values that cannot be assigned: the loop's own state must not change.
            "setVariable" => {
                json!({"variablesReference": id(ids.locals, &seen_refs, &mut rng), "name": rng.pick(&names), "value": rng.pick(&["(", "nosuch", "\"text\""])})
            }
            "setFunctionBreakpoints" => {
                json!({"breakpoints": [{"name": rng.pick(&["nosuch", "", "crash", "::"])}]})
            }
            "cancel" => json!({"requestId": number(&mut rng)}),
            "exceptionInfo" | "continue" | "next" | "stepIn" | "stepOut" | "pause" => {
                json!({"threadId": id(thread, &[thread], &mut rng)})
            }
            _ => json!({}),
        };
        let shown = args.to_string();
        let seq = c.send_request(command, args);
        let r = c.response_to(seq);
        assert_eq!(r["command"], command, "step {step} (seed {seed}): {r}");
        if r["success"] == false {
            let m = r["message"].as_str().unwrap_or_default();
            assert!(
                !m.is_empty(),
                "step {step} (seed {seed}) {command} {shown}: {r}"
            );
        } else if RESUMING.contains(&command) {
            let stop = c.event("stopped");
            thread = stop["body"]["threadId"].as_i64().unwrap();
            let fresh = stop_ids(&mut c, thread, Some(&ids));
            ids = fresh;
            seen_frames.push(ids.frame);
            seen_refs.push(ids.locals);
        }
    }
    c.ok("setFunctionBreakpoints", json!({"breakpoints": []}));
    // The loop goes on exactly as before: two consecutive hits count one tick.
    c.ok("continue", json!({"threadId": thread}));
    let stop = c.event("stopped");
    let frames = c.frames(stop["body"]["threadId"].as_i64().unwrap());
    assert_eq!(frames[0]["line"], line, "{stop}");
    let before = ticks(&mut c, frames[0]["id"].as_i64().unwrap());
    c.ok("continue", json!({"threadId": thread}));
    let stop = c.event("stopped");
    let frames = c.frames(stop["body"]["threadId"].as_i64().unwrap());
    assert_eq!(ticks(&mut c, frames[0]["id"].as_i64().unwrap()), before + 1);
    let tandem = i64::from(c.peer.pid());
    c.finish();
    assert_clean(tandem, &[pid], &[]);
}
