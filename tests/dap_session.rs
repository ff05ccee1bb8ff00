//! `tandem dap` debugging real programs end to end: launch, configuration order,
//! breakpoints, stepping, stacks, variables, evaluate, memory, threads, exit and the
//! ways a session ends — every message validated against the DAP schema.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::dap::{self, dap_sample, line_of, sample_path, scratch_dir, stop_at, var, DapClient};

fn source() -> std::path::PathBuf {
    sample_path("c/dap_main.c")
}

fn launch_args() -> Value {
    json!({"program": dap_sample()})
}

#[test]
fn breakpoint_stack_variables_and_exit_code() {
    let mut c = DapClient::new();
    let src = source();
    let line = line_of(&src, "LINE_ADD");
    let stop = c.launch_to_stop(launch_args(), &src, &[line]);
    assert_eq!(stop["body"]["reason"], "breakpoint", "{stop}");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    assert_eq!(
        stop["body"]["hitBreakpointIds"].as_array().unwrap().len(),
        1
    );
    let frames = c.frames(tid);
    assert_eq!(frames[0]["name"], "add");
    assert_eq!(frames[0]["line"], line);
    assert_eq!(frames[1]["name"], "main");
    assert_eq!(frames[1]["line"], line_of(&src, "LINE_SHADOW"));
    let args = c.scope_vars(frames[0]["id"].as_i64().unwrap(), "Arguments");
    assert_eq!(var(&args, "a")["value"], "2");
    assert_eq!(var(&args, "b")["value"], "3");
    // The caller's locals: the struct, its nested struct and pointer, the shadowed x.
    let locals = c.scope_vars(frames[1]["id"].as_i64().unwrap(), "Locals");
    let o = var(&locals, "o");
    let members = c.children(&o["variablesReference"]);
    assert_eq!(var(&members, "id")["value"], "7");
    assert_eq!(var(&members, "id")["evaluateName"], "o.id");
    let inner = c.children(&var(&members, "in")["variablesReference"]);
    assert_eq!(var(&inner, "v")["value"], "3");
    assert_eq!(var(&inner, "v")["evaluateName"], "o.in.v");
    assert!(
        locals.iter().any(|v| v["name"] == "x (shadowed)"),
        "{locals:#?}"
    );
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": []}),
    );
    c.ok("continue", json!({"threadId": tid}));
    let exited = c.event("exited");
    assert_eq!(exited["body"]["exitCode"], 3);
    c.event("terminated");
    let stdout: String = c
        .output
        .iter()
        .filter(|(cat, _)| cat == "stdout")
        .map(|(_, t)| t.as_str())
        .collect();
    assert!(stdout.contains("args=0"), "{stdout:?}");
    c.finish();
}

/// How many frames of `depth` a stack has.
fn depth_frames(frames: &[Value]) -> usize {
    frames.iter().filter(|f| f["name"] == "depth").count()
}

fn frame_id(f: &Value) -> i64 {
    f["id"].as_i64().unwrap()
}

#[test]
fn stack_trace_pages_through_a_deep_recursion() {
    let mut c = DapClient::new();
    let (tid, frames) = stop_at(&mut c, "LINE_BOTTOM");
    // depth(20) .. depth(0), main, then libc's start-up frames.
    let total = frames.len() as i64;
    assert!(frames[..21].iter().all(|f| f["name"] == "depth"));
    assert_eq!(frames[21]["name"], "main");
    assert!(total >= 22, "{frames:#?}");
    let page = |c: &mut DapClient, start: i64, levels: i64| {
        let body = c.ok(
            "stackTrace",
            json!({"threadId": tid, "startFrame": start, "levels": levels}),
        );
        assert_eq!(body["totalFrames"], total, "{body}");
        body["stackFrames"].as_array().unwrap().clone()
    };
    // levels 0 means all of them.
    assert_eq!(page(&mut c, 0, 0).len() as i64, total);
    let one = page(&mut c, 0, 1);
    assert_eq!(one.len(), 1);
    assert_eq!(one[0]["line"], frames[0]["line"]);
    let mid = page(&mut c, 5, 16);
    assert_eq!(mid.len(), 16);
    assert_eq!(mid[0]["line"], frames[5]["line"]);
    assert_eq!(page(&mut c, 5, 1000).len() as i64, total - 5);
    assert!(page(&mut c, total + 3, 5).is_empty());
    // Each frame's n is its depth: frame k of the recursion has n == k.
    for k in [0usize, 1, 7, 20] {
        let args = c.scope_vars(frame_id(&frames[k]), "Arguments");
        assert_eq!(var(&args, "n")["value"], k.to_string());
        assert!(frames[k]["instructionPointerReference"]
            .as_str()
            .unwrap()
            .starts_with("0x"));
    }
    c.finish();
}

#[test]
fn stepping_in_over_and_out_of_recursion() {
    let mut c = DapClient::new();
    let src = source();
    let recurse = line_of(&src, "LINE_RECURSE");
    let stop = c.launch_to_stop(launch_args(), &src, &[line_of(&src, "LINE_CALL_DEPTH")]);
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": []}),
    );
    // Into depth(20).
    c.ok("stepIn", json!({"threadId": tid}));
    assert_eq!(c.event("stopped")["body"]["reason"], "step");
    let f = c.frames(tid);
    assert_eq!(f[0]["name"], "depth");
    assert_eq!(depth_frames(&f), 1);
    // Over the lines to the recursive call, then in: one frame deeper.
    let mut guard = 0;
    while c.frames(tid)[0]["line"] != recurse {
        c.ok("next", json!({"threadId": tid}));
        c.event("stopped");
        guard += 1;
        assert!(guard < 10, "never reached the recursive call");
    }
    c.ok("stepIn", json!({"threadId": tid}));
    c.event("stopped");
    let f = c.frames(tid);
    assert_eq!(depth_frames(&f), 2);
    assert_eq!(f[0]["name"], "depth");
    let args = c.scope_vars(frame_id(&f[0]), "Arguments");
    assert_eq!(var(&args, "n")["value"], "19");
    // Over the recursive call of this frame completes the whole recursion below it.
    while c.frames(tid)[0]["line"] != recurse {
        c.ok("next", json!({"threadId": tid}));
        c.event("stopped");
    }
    c.ok("next", json!({"threadId": tid}));
    c.event("stopped");
    let f = c.frames(tid);
    assert_eq!(depth_frames(&f), 2, "next stayed in the same frame: {f:#?}");
    // Out: back in depth(20), on the line of the call; the return value is shown.
    c.ok("stepOut", json!({"threadId": tid}));
    assert_eq!(c.event("stopped")["body"]["reason"], "step");
    let f = c.frames(tid);
    assert_eq!(depth_frames(&f), 1);
    assert_eq!(f[0]["line"], recurse);
    let locals = c.scope_vars(frame_id(&f[0]), "Locals");
    assert!(
        locals.iter().any(|v| v["name"] == "depth returned"),
        "{locals:#?}"
    );
    // Instruction granularity moves by one instruction.
    let pc = f[0]["instructionPointerReference"].clone();
    c.ok(
        "next",
        json!({"threadId": tid, "granularity": "instruction"}),
    );
    c.event("stopped");
    assert_ne!(c.frames(tid)[0]["instructionPointerReference"], pc);
    c.finish();
}

#[test]
fn variables_page_shadow_and_assign() {
    let mut c = DapClient::new();
    let (_tid, frames) = stop_at(&mut c, "LINE_CALL_DEPTH");
    let f0 = frame_id(&frames[0]);
    // numbers[64] is a static of the unit: paged by start/count.
    let globals = c.scope_vars(f0, "Globals");
    let numbers = var(&globals, "numbers").clone();
    assert_eq!(numbers["indexedVariables"], 64, "{numbers}");
    let page = c.ok(
        "variables",
        json!({"variablesReference": numbers["variablesReference"], "start": 10, "count": 5}),
    );
    let page = page["variables"].as_array().unwrap();
    assert_eq!(page.len(), 5);
    assert_eq!(page[0]["name"], "[10]");
    assert_eq!(page[0]["value"], "100");
    assert_eq!(page[4]["value"], "196");
    assert_eq!(page[0]["evaluateName"], "numbers[10]");
    assert!(page[0]["memoryReference"]
        .as_str()
        .unwrap()
        .starts_with("0x"));
    // The inner x is gone at this line: one x.
    let locals = c.scope_vars(f0, "Locals");
    assert_eq!(var(&locals, "x")["value"], "1");
    // setVariable on a local, a member and an array element.
    let scopes = c.ok("scopes", json!({"frameId": f0}));
    let locals_ref = scopes["scopes"][0]["variablesReference"].clone();
    let set = c.ok(
        "setVariable",
        json!({"variablesReference": locals_ref, "name": "x", "value": "41 + 1"}),
    );
    assert_eq!(set["value"], "42");
    assert_eq!(c.evaluate(f0, "x")["result"], "42");
    let o = var(&locals, "o").clone();
    let set = c.ok(
        "setVariable",
        json!({"variablesReference": o["variablesReference"], "name": "id", "value": "-5"}),
    );
    assert_eq!(set["value"], "-5");
    assert_eq!(c.evaluate(f0, "o.id")["result"], "-5");
    let set = c.ok(
        "setVariable",
        json!({"variablesReference": numbers["variablesReference"], "name": "[3]", "value": "1234"}),
    );
    assert_eq!(set["value"], "1234");
    assert_eq!(c.evaluate(f0, "numbers[3]")["result"], "1234");
    // An invalid value fails and changes nothing.
    c.err(
        "setVariable",
        json!({"variablesReference": locals_ref, "name": "x", "value": "no_such_name"}),
    );
    assert_eq!(c.evaluate(f0, "x")["result"], "42");
    // setExpression assigns through an expression.
    let set = c.ok(
        "setExpression",
        json!({"expression": "o.in.v", "value": "77", "frameId": f0}),
    );
    assert_eq!(set["value"], "77");
    c.finish();
}

#[test]
fn evaluate_sees_only_the_frame_it_is_asked_in() {
    let mut c = DapClient::new();
    let src = source();
    let stop = c.launch_to_stop(
        launch_args(),
        &src,
        &[line_of(&src, "LINE_ADD"), line_of(&src, "LINE_BOTTOM")],
    );
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let f = c.frames(tid);
    let (callee, caller) = (frame_id(&f[0]), frame_id(&f[1]));
    for context in ["watch", "hover", "repl", "clipboard"] {
        let r = c.ok(
            "evaluate",
            json!({"expression": "a * 10 + b", "frameId": callee, "context": context}),
        );
        assert_eq!(r["result"], "23", "{context}: {r}");
        assert_eq!(r["type"], "int");
    }
    // The caller's locals are not visible from the callee, and the reverse.
    let m = c.err(
        "evaluate",
        json!({"expression": "extra", "frameId": callee, "context": "watch"}),
    );
    assert!(m.contains("extra"), "{m}");
    c.err(
        "evaluate",
        json!({"expression": "sum + a", "frameId": caller, "context": "hover"}),
    );
    let extra = c.evaluate(caller, "extra");
    assert!(extra["variablesReference"].as_i64().unwrap() > 0);
    assert!(extra["memoryReference"].as_str().unwrap().starts_with("0x"));
    let fields = c.children(&extra["variablesReference"]);
    assert_eq!(var(&fields, "v")["value"], "9");
    assert_eq!(c.evaluate(caller, "o.next->v")["result"], "9");
    assert_eq!(c.evaluate(caller, "counter")["result"], "0");
    // Without a frame: the stopped thread's innermost frame.
    let r = c.ok("evaluate", json!({"expression": "a", "context": "repl"}));
    assert_eq!(r["result"], "2");
    // Next stop: a different function, a different answer.
    c.ok("continue", json!({"threadId": tid}));
    c.event("stopped");
    let f = c.frames(tid);
    assert_eq!(f[0]["name"], "depth");
    assert_eq!(c.evaluate(frame_id(&f[0]), "n")["result"], "0");
    assert_eq!(c.evaluate(frame_id(&f[3]), "n")["result"], "3");
    // A frame id from before the continue is stale.
    c.err(
        "evaluate",
        json!({"expression": "a", "frameId": callee, "context": "watch"}),
    );
    c.finish();
}

#[test]
fn memory_reads_and_writes() {
    let mut c = DapClient::new();
    let (_tid, frames) = stop_at(&mut c, "LINE_CALL_DEPTH");
    let f0 = frame_id(&frames[0]);
    let numbers = c.evaluate(f0, "numbers");
    let addr = numbers["memoryReference"].as_str().unwrap().to_string();
    let body = c.ok(
        "readMemory",
        json!({"memoryReference": addr, "offset": 8, "count": 8}),
    );
    use base64::Engine as _;
    let data = base64::engine::general_purpose::STANDARD
        .decode(body["data"].as_str().unwrap())
        .unwrap();
    // numbers[2] = 4, numbers[3] = 9.
    assert_eq!(data, [4, 0, 0, 0, 9, 0, 0, 0]);
    let written = c.ok(
        "writeMemory",
        json!({"memoryReference": addr, "offset": 4,
               "data": base64::engine::general_purpose::STANDARD.encode([0x39, 0x05, 0, 0])}),
    );
    assert_eq!(written["bytesWritten"], 4);
    assert_eq!(c.evaluate(f0, "numbers[1]")["result"], "1337");
    // Unmapped memory is reported as unreadable, not as an error.
    let body = c.ok(
        "readMemory",
        json!({"memoryReference": "0x10", "count": 16}),
    );
    assert_eq!(body["unreadableBytes"], 16, "{body}");
    c.err(
        "readMemory",
        json!({"memoryReference": "nowhere", "count": 1}),
    );
    c.finish();
}

#[test]
fn breakpoints_conditions_hits_logpoints_and_stable_ids() {
    let mut c = DapClient::new();
    let src = source();
    let add = line_of(&src, "LINE_ADD");
    let loop_line = line_of(&src, "LINE_LOOP");
    c.initialize();
    c.ok("launch", launch_args());
    let set = |c: &mut DapClient, bps: Value| {
        let body = c.ok(
            "setBreakpoints",
            json!({"source": {"path": src}, "breakpoints": bps}),
        );
        body["breakpoints"].as_array().unwrap().clone()
    };
    let first = set(
        &mut c,
        json!([{"line": add, "condition": "a == 3"}, {"line": loop_line, "logMessage": "i={i} x={x}"}]),
    );
    assert!(first.iter().all(|b| b["verified"] == true), "{first:#?}");
    // Set again (with a hit condition now): same ids.
    let again = set(
        &mut c,
        json!([{"line": add, "condition": "a == 3"}, {"line": loop_line, "logMessage": "i={i} x={x}"}]),
    );
    assert_eq!(first[0]["id"], again[0]["id"]);
    assert_eq!(first[1]["id"], again[1]["id"]);
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    assert_eq!(stop["body"]["hitBreakpointIds"], json!([first[0]["id"]]));
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let f = c.frames(tid);
    assert_eq!(c.evaluate(frame_id(&f[0]), "a")["result"], "3");
    // The logpoint printed for i = 0..3 already; it never stops.
    let logs: Vec<String> = c
        .output
        .iter()
        .filter(|(_, t)| t.starts_with("i="))
        .map(|(_, t)| t.clone())
        .collect();
    assert_eq!(logs, ["i=0 x=1\n", "i=1 x=1\n", "i=2 x=1\n", "i=3 x=1\n"]);
    // Clear: the program runs to its end.
    set(&mut c, json!([]));
    c.ok("continue", json!({"threadId": tid}));
    assert_eq!(c.event("exited")["body"]["exitCode"], 3);
    c.finish();
}

#[test]
fn hit_conditions_and_function_breakpoints() {
    let mut c = DapClient::new();
    c.initialize();
    c.ok("launch", launch_args());
    let body = c.ok(
        "setFunctionBreakpoints",
        json!({"breakpoints": [{"name": "depth", "hitCondition": "5"}, {"name": "no_such_function"}]}),
    );
    let bps = body["breakpoints"].as_array().unwrap();
    assert_eq!(bps[0]["verified"], true, "{body}");
    assert_eq!(bps[1]["verified"], false);
    assert!(bps[1]["message"]
        .as_str()
        .unwrap()
        .contains("no_such_function"));
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    assert_eq!(stop["body"]["reason"], "function breakpoint", "{stop}");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let f = c.frames(tid);
    assert_eq!(f[0]["name"], "depth");
    // The fifth call: depth(16).
    assert_eq!(c.evaluate(frame_id(&f[0]), "n")["result"], "16");
    c.finish();
}

/// A frame without CFI in a function that keeps no frame pointer (assembly, as glibc's
/// `__clone3` after its syscall, where a thread creating another is often caught): its
/// caller is found through the return address at [rsp] — the frame-pointer rule would skip
/// the caller. gdb's `bt` is the oracle.
#[test]
fn a_frame_without_unwind_rows_reaches_its_caller() {
    let program = dap::build("c/nocfi.c", "gcc", &["-g", "-O0"]);
    let out = std::process::Command::new("gdb")
        .args([
            "-batch",
            "-nx",
            "-ex",
            "break nocfi_leaf",
            "-ex",
            "run",
            "-ex",
            "bt",
        ])
        .arg(&program)
        .output()
        .unwrap();
    let gdb: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with('#'))
        .filter_map(|l| {
            let name = l
                .split(" in ")
                .nth(1)
                .or_else(|| l.split_whitespace().nth(1))?;
            Some(name.split([' ', '(']).next()?.to_string())
        })
        .collect();
    assert_eq!(gdb, ["nocfi_leaf", "caller_c", "main"], "gdb's bt changed");
    let mut c = DapClient::new();
    c.initialize();
    c.ok("launch", json!({"program": program}));
    c.ok(
        "setFunctionBreakpoints",
        json!({"breakpoints": [{"name": "nocfi_leaf"}]}),
    );
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    // gdb's bt ends at main; tandem also lists libc's start-up frames beyond it.
    let names: Vec<String> = c
        .frames(tid)
        .iter()
        .map(|f| f["name"].as_str().unwrap().to_string())
        .take(gdb.len())
        .collect();
    assert_eq!(names, gdb);
    c.finish();
}

#[test]
fn the_thread_that_hit_is_the_one_reported() {
    let mut c = DapClient::new();
    let (tid, frames) = stop_at(&mut c, "LINE_WORKER");
    assert_eq!(frames[0]["name"], "worker");
    let threads = c.ok("threads", json!({}));
    let threads = threads["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 2, "{threads:#?}");
    assert!(threads.iter().any(|t| t["id"] == tid));
    let main = threads.iter().find(|t| t["id"] != tid).unwrap()["id"]
        .as_i64()
        .unwrap();
    // The main thread waits in pthread_join; its stack reaches main.
    let mf = c.frames(main);
    assert!(mf.iter().any(|f| f["name"] == "main"), "{mf:#?}");
    c.finish();
}

fn fault_sample() -> std::path::PathBuf {
    dap::build("c/eng_fault.c", "gcc", &["-g", "-O0"])
}

#[test]
fn a_crash_stops_with_the_signal_and_its_fault_address() {
    let mut c = DapClient::new();
    c.initialize();
    c.ok("launch", json!({"program": fault_sample()}));
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    assert_eq!(stop["body"]["reason"], "exception", "{stop}");
    assert_eq!(stop["body"]["text"], "SIGSEGV");
    let description = stop["body"]["description"].as_str().unwrap();
    assert!(description.contains("0x0"), "{description}");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let f = c.frames(tid);
    assert_eq!(f[0]["name"], "deref");
    let info = c.ok("exceptionInfo", json!({"threadId": tid}));
    assert_eq!(info["exceptionId"], "SIGSEGV");
    assert!(info["description"].as_str().unwrap().contains("0x0"));
    // Continuing delivers the signal: the program dies of it.
    c.ok("continue", json!({"threadId": tid}));
    assert_eq!(c.event("exited")["body"]["exitCode"], 128 + 11);
    c.event("terminated");
    c.finish();
}

#[test]
fn signal_filters_choose_what_stops() {
    // abort() with the SIGABRT filter off: no stop, the program dies of it.
    let mut c = DapClient::new();
    c.initialize();
    c.ok(
        "launch",
        json!({"program": fault_sample(), "args": ["abort"]}),
    );
    c.ok("setExceptionBreakpoints", json!({"filters": ["SIGSEGV"]}));
    c.ok("configurationDone", json!({}));
    assert_eq!(c.event("exited")["body"]["exitCode"], 128 + 6);
    c.finish();
    // With the default filters it stops, reason exception.
    let mut c = DapClient::new();
    c.initialize();
    c.ok(
        "launch",
        json!({"program": fault_sample(), "args": ["abort"]}),
    );
    c.ok(
        "setExceptionBreakpoints",
        json!({"filters": ["SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT"]}),
    );
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    assert_eq!(stop["body"]["text"], "SIGABRT", "{stop}");
    c.finish();
}

#[test]
fn a_data_breakpoint_stops_where_the_value_changes() {
    let mut c = DapClient::new();
    let (tid, frames) = stop_at(&mut c, "LINE_CALL_DEPTH");
    let info = c.ok(
        "dataBreakpointInfo",
        json!({"name": "counter", "frameId": frame_id(&frames[0])}),
    );
    let data_id = info["dataId"].as_str().unwrap().to_string();
    assert!(
        info["description"].as_str().unwrap().contains("counter"),
        "{info}"
    );
    assert!(info["accessTypes"]
        .as_array()
        .unwrap()
        .contains(&json!("write")));
    let before = c.evaluate(frame_id(&frames[0]), "counter")["result"]
        .as_str()
        .unwrap()
        .parse::<i64>()
        .unwrap();
    let body = c.ok(
        "setDataBreakpoints",
        json!({"breakpoints": [{"dataId": data_id, "accessType": "write"}]}),
    );
    let id = body["breakpoints"][0]["id"].clone();
    assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
    // Something that is not an lvalue cannot be watched.
    let none = c.ok(
        "dataBreakpointInfo",
        json!({"name": "counter + 1", "frameId": frame_id(&frames[0])}),
    );
    assert!(none["dataId"].is_null(), "{none}");
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": source()}, "breakpoints": []}),
    );
    c.ok("continue", json!({"threadId": tid}));
    let stop = c.event("stopped");
    assert_eq!(stop["body"]["reason"], "data breakpoint", "{stop}");
    assert_eq!(stop["body"]["hitBreakpointIds"], json!([id]));
    let description = stop["body"]["description"].as_str().unwrap();
    assert!(
        description.contains(&format!("{before}"))
            && description.contains(&format!("{}", before + 1)),
        "{description}"
    );
    let f = c.frames(tid);
    assert_eq!(f[0]["name"], "depth");
    c.ok("setDataBreakpoints", json!({"breakpoints": []}));
    c.ok("continue", json!({"threadId": tid}));
    assert_eq!(c.event("exited")["body"]["exitCode"], 3);
    c.finish();
}

#[test]
fn disassembly_at_each_frame_lines_up_with_the_pc() {
    let mut c = DapClient::new();
    let (_tid, frames) = stop_at(&mut c, "LINE_ADD");
    let src = source();
    for f in frames.iter().take(2) {
        let pc = f["instructionPointerReference"].as_str().unwrap();
        let body = c.ok(
            "disassemble",
            json!({"memoryReference": pc, "instructionOffset": -4, "instructionCount": 10, "resolveSymbols": true}),
        );
        let ins = body["instructions"].as_array().unwrap();
        assert_eq!(ins.len(), 10, "{body}");
        let pc_num = u64::from_str_radix(pc.trim_start_matches("0x"), 16).unwrap();
        let at = ins
            .iter()
            .position(|i| {
                u64::from_str_radix(i["address"].as_str().unwrap().trim_start_matches("0x"), 16)
                    .unwrap()
                    == pc_num
            })
            .unwrap_or_else(|| panic!("pc {pc} not among {ins:#?}"));
        assert_eq!(at, 4, "{ins:#?}");
        let name = f["name"].as_str().unwrap();
        assert!(
            ins[at]["symbol"].as_str().unwrap().starts_with(name),
            "{:#?}",
            ins[at]
        );
        // Addresses increase by each instruction's length, and every instruction has
        // bytes and text.
        let addr = |i: &Value| {
            u64::from_str_radix(i["address"].as_str().unwrap().trim_start_matches("0x"), 16)
                .unwrap()
        };
        for w in ins.windows(2) {
            let len = w[0]["instructionBytes"]
                .as_str()
                .unwrap()
                .split(' ')
                .count() as u64;
            assert_eq!(addr(&w[0]) + len, addr(&w[1]), "{w:#?}");
        }
        assert!(ins
            .iter()
            .all(|i| !i["instruction"].as_str().unwrap().is_empty()));
        // The source location is given on the first instruction.
        assert_eq!(ins[0]["location"]["path"], json!(src));
    }
    c.finish();
}

#[test]
fn completions_sources_modules_and_breakpoint_locations() {
    let mut c = DapClient::new();
    let (_tid, frames) = stop_at(&mut c, "LINE_CALL_DEPTH");
    let f0 = frame_id(&frames[0]);
    let body = c.ok(
        "completions",
        json!({"frameId": f0, "text": "o.i", "column": 4}),
    );
    let labels: Vec<&str> = body["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["label"].as_str().unwrap())
        .collect();
    assert!(
        labels.contains(&"id") && labels.contains(&"in"),
        "{labels:?}"
    );
    let body = c.ok(
        "completions",
        json!({"frameId": f0, "text": "dep", "column": 4}),
    );
    assert!(body["targets"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["label"] == "depth"));
    let sources = c.ok("loadedSources", json!({}));
    assert!(sources["sources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["path"] == json!(source())));
    let modules = c.ok("modules", json!({}));
    let list = modules["modules"].as_array().unwrap();
    assert!(
        list.iter().any(|m| m["path"] == json!(dap_sample())),
        "{modules}"
    );
    assert!(list
        .iter()
        .any(|m| m["name"].as_str().unwrap().starts_with("libc")));
    let add = line_of(&source(), "LINE_ADD");
    let body = c.ok(
        "breakpointLocations",
        json!({"source": {"path": source()}, "line": add - 2, "endLine": add + 2}),
    );
    let lines: Vec<i64> = body["breakpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["line"].as_i64().unwrap())
        .collect();
    assert!(lines.contains(&add), "{lines:?}");
    assert!(
        !lines.contains(&(add - 2)),
        "a blank line has no code: {lines:?}"
    );
    c.finish();
}

#[test]
fn a_queued_request_can_be_cancelled() {
    let mut c = DapClient::new();
    let (_tid, frames) = stop_at(&mut c, "LINE_CALL_DEPTH");
    let pc = frames[0]["instructionPointerReference"].clone();
    let scopes = c.ok("scopes", json!({"frameId": frame_id(&frames[0])}));
    let locals = scopes["scopes"][0]["variablesReference"].clone();
    // A slow request first, so the next two are queued behind it when it ends.
    let slow = c.send_request(
        "disassemble",
        json!({"memoryReference": pc, "instructionCount": 20000}),
    );
    let victim = c.send_request("variables", json!({"variablesReference": locals}));
    let cancel = c.send_request("cancel", json!({"requestId": victim}));
    assert_eq!(c.response_to(slow)["success"], true);
    let r = c.response_to(victim);
    assert_eq!(r["success"], false, "{r}");
    assert_eq!(r["message"], "cancelled");
    assert_eq!(c.response_to(cancel)["success"], true);
    // The session goes on.
    assert!(!c.scope_vars(frame_id(&frames[0]), "Locals").is_empty());
    c.finish();
}

#[test]
fn breakpoints_set_before_launch_are_pending_then_resolved() {
    let mut c = DapClient::new();
    let src = source();
    let add = line_of(&src, "LINE_ADD");
    c.initialize();
    // VS Code's order: configuration may reach the adapter before the launch request.
    let body = c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [{"line": add}]}),
    );
    let bp = body["breakpoints"][0].clone();
    assert_eq!(bp["verified"], false);
    c.ok("launch", launch_args());
    let changed = c.event("breakpoint");
    assert_eq!(changed["body"]["reason"], "changed");
    assert_eq!(changed["body"]["breakpoint"]["id"], bp["id"]);
    assert_eq!(changed["body"]["breakpoint"]["verified"], true);
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    assert_eq!(stop["body"]["hitBreakpointIds"], json!([bp["id"]]));
    c.finish();
}

#[test]
fn restart_runs_the_program_again_with_its_breakpoints() {
    let mut c = DapClient::new();
    let src = source();
    let stop = c.launch_to_stop(launch_args(), &src, &[line_of(&src, "LINE_ADD")]);
    let first_pid = c.debuggee_pid.unwrap();
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let _ = tid;
    c.ok("restart", json!({}));
    let stop = c.event("stopped");
    assert_eq!(stop["body"]["reason"], "breakpoint");
    let second_pid = c.debuggee_pid.unwrap();
    assert_ne!(first_pid, second_pid);
    assert!(dap::wait_until(Duration::from_secs(5), || !dap::alive(
        first_pid
    )));
    c.finish();
}

#[test]
fn errors_for_bad_ids_and_requests_without_a_program() {
    let mut c = DapClient::new();
    c.initialize();
    // Nothing launched yet.
    for (cmd, args) in [
        ("stackTrace", json!({"threadId": 1})),
        ("evaluate", json!({"expression": "1"})),
        ("continue", json!({"threadId": 1})),
        (
            "readMemory",
            json!({"memoryReference": "0x1000", "count": 4}),
        ),
    ] {
        c.err(cmd, args);
    }
    assert_eq!(c.ok("threads", json!({}))["threads"], json!([]));
    let src = source();
    let stop = c.launch_to_stop_after_init(launch_args(), &src, &[line_of(&src, "LINE_ADD")]);
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let frames = c.frames(tid);
    let scopes = c.ok("scopes", json!({"frameId": frame_id(&frames[0])}));
    let locals = scopes["scopes"][0]["variablesReference"].clone();
    // Wrong types, missing arguments, unknown ids.
    c.err("stackTrace", json!({"threadId": "one"}));
    c.err("stackTrace", json!({}));
    c.err("stackTrace", json!({"threadId": 999999}));
    c.err("scopes", json!({"frameId": 123456789}));
    c.err("variables", json!({"variablesReference": 987654}));
    c.err("next", json!({"threadId": -4}));
    c.err(
        "evaluate",
        json!({"expression": "1 +", "frameId": frame_id(&frames[0])}),
    );
    // A reference from before the last continue is stale.
    c.ok("next", json!({"threadId": tid}));
    c.event("stopped");
    c.err("variables", json!({"variablesReference": locals}));
    // And the session still works.
    assert_eq!(c.frames(tid)[0]["name"], "add");
    c.finish();
}

#[test]
fn requests_while_running_are_answered_at_once() {
    let program = dap::build("c/dap_attach.c", "gcc", &["-g", "-O0"]);
    let src = sample_path("c/dap_attach.c");
    let mut c = DapClient::new();
    c.initialize_with(json!({"supportsProgressReporting": true}));
    c.ok("launch", json!({"program": program}));
    c.ok("configurationDone", json!({}));
    // Running: threads and breakpoints are served without a stop.
    let threads = c.ok("threads", json!({}));
    let tid = threads["threads"][0]["id"].as_i64().unwrap();
    c.err("stackTrace", json!({"threadId": tid}));
    let body = c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [{"line": line_of(&src, "LINE_TICK")}]}),
    );
    assert_eq!(body["breakpoints"][0]["verified"], true);
    let stop = c.event("stopped");
    assert_eq!(stop["body"]["reason"], "breakpoint");
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": []}),
    );
    c.ok("continue", json!({"threadId": tid}));
    // Let the hit's own tick land (a pause at once may stop it just before the add).
    std::thread::sleep(std::time::Duration::from_millis(30));
    c.ok("pause", json!({"threadId": tid}));
    let stop = c.event("stopped");
    assert_eq!(stop["body"]["reason"], "pause");
    // Paused, most likely in libc's sleep: the program's globals are visible from any
    // frame, as in gdb, and the locals of other frames are not.
    let f = c.frames(tid);
    let ticks = c.evaluate(frame_id(&f[0]), "ticks");
    assert!(
        ticks["result"].as_str().unwrap().parse::<u64>().unwrap() > 0,
        "{ticks}"
    );
    if f[0]["name"] != "tick" {
        c.err(
            "evaluate",
            json!({"expression": "step", "frameId": frame_id(&f[0]), "context": "watch"}),
        );
    }
    // Pausing a stopped program is not an error.
    c.ok("pause", json!({"threadId": tid}));
    c.finish();
}

#[test]
fn launch_reports_progress_process_modules_and_threads() {
    let mut c = DapClient::new();
    c.initialize_with(json!({"supportsProgressReporting": true}));
    let src = source();
    c.ok("launch", launch_args());
    let events = c.drain_events(Duration::from_millis(200));
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap_or(""))
        .collect();
    for want in [
        "progressStart",
        "progressEnd",
        "process",
        "module",
        "thread",
    ] {
        assert!(names.contains(&want), "no {want} event in {names:?}");
    }
    let process = events.iter().find(|e| e["event"] == "process").unwrap();
    assert_eq!(process["body"]["startMethod"], "launch");
    assert!(events
        .iter()
        .any(|e| e["event"] == "module" && e["body"]["module"]["path"] == json!(dap_sample())));
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [{"line": line_of(&src, "LINE_WORKER")}]}),
    );
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    // The worker thread's start was announced before it stopped.
    let _ = stop;
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": []}),
    );
    c.ok("continue", json!({"threadId": stop["body"]["threadId"]}));
    c.event("exited");
    let _ = c.drain_events(Duration::from_millis(50));
    c.finish();
}

#[test]
fn thread_events_announce_the_worker() {
    let mut c = DapClient::new();
    c.initialize();
    c.ok("launch", launch_args());
    c.ok("configurationDone", json!({}));
    let started = c.event("thread");
    let mut seen = vec![started];
    while let Some(e) = c.event_within("thread", Duration::from_secs(10)) {
        seen.push(e);
        if seen.iter().any(|e| e["body"]["reason"] == "exited") {
            break;
        }
    }
    assert!(
        seen.iter().any(|e| e["body"]["reason"] == "started"),
        "{seen:#?}"
    );
    assert!(
        seen.iter().any(|e| e["body"]["reason"] == "exited"),
        "{seen:#?}"
    );
    c.finish();
}

#[test]
fn an_instruction_breakpoint_stops_with_its_reason() {
    let mut c = DapClient::new();
    let (tid, frames) = stop_at(&mut c, "LINE_CALL_DEPTH");
    let _ = frames;
    // Step into depth(20): its pc after the prologue is where depth(19) will come too.
    c.ok("stepIn", json!({"threadId": tid}));
    c.event("stopped");
    let addr = c.frames(tid)[0]["instructionPointerReference"]
        .as_str()
        .unwrap()
        .to_string();
    let body = c.ok(
        "setInstructionBreakpoints",
        json!({"breakpoints": [{"instructionReference": addr}]}),
    );
    assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": source()}, "breakpoints": []}),
    );
    c.ok("continue", json!({"threadId": tid}));
    let stop = c.event("stopped");
    assert_eq!(stop["body"]["reason"], "instruction breakpoint", "{stop}");
    let f = c.frames(tid);
    assert_eq!(f[0]["name"], "depth");
    assert_eq!(f[0]["instructionPointerReference"], json!(addr));
    assert_eq!(c.evaluate(frame_id(&f[0]), "n")["result"], "19");
    c.finish();
}

#[test]
fn rust_values_and_panics_through_dap() {
    let program = dap::build("rust/val_rust.rs", "rustc", &["-g", "-Copt-level=0"]);
    let src = sample_path("rust/val_rust.rs");
    let mut c = DapClient::new();
    let stop = c.launch_to_stop(
        json!({"program": program}),
        &src,
        &[line_of(&src, "// break here")],
    );
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let f = c.frames(tid);
    assert_eq!(f[0]["name"], "val_rust::inspect");
    let locals = c.scope_vars(frame_id(&f[0]), "Locals");
    assert_eq!(var(&locals, "some")["value"], "Some(5)");
    assert_eq!(var(&locals, "ch")["value"], "'a'");
    let words = var(&locals, "words").clone();
    assert_eq!(words["indexedVariables"], 2, "{words}");
    let page = c.ok(
        "variables",
        json!({"variablesReference": words["variablesReference"], "start": 1, "count": 1}),
    );
    assert_eq!(page["variables"][0]["name"], "[1]");
    assert_eq!(page["variables"][0]["value"], "\"two\"");
    assert_eq!(c.evaluate(frame_id(&f[0]), "words[1].len()")["result"], "3");
    c.finish();

    // A panic stops with the "Rust panic" filter (on by default) and says what it was.
    let program = dap::build("rust/val_panic.rs", "rustc", &["-g", "-Copt-level=0"]);
    let mut c = DapClient::new();
    c.initialize();
    c.ok("launch", json!({"program": program}));
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    assert_eq!(stop["body"]["reason"], "exception", "{stop}");
    assert_eq!(stop["body"]["text"], "panic");
    assert!(
        stop["body"]["description"]
            .as_str()
            .unwrap()
            .contains("boom"),
        "{stop}"
    );
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let info = c.ok("exceptionInfo", json!({"threadId": tid}));
    assert_eq!(info["exceptionId"], "rust-panic");
    assert!(info["description"].as_str().unwrap().contains("boom"));
    // Without the filter the program runs to its end (the second panic is fatal: 101).
    c.ok("setExceptionBreakpoints", json!({"filters": []}));
    c.ok("continue", json!({"threadId": tid}));
    assert_eq!(c.event("exited")["body"]["exitCode"], 101);
    c.finish();
}

#[test]
fn a_breakpoint_in_a_library_loaded_later_resolves_when_it_loads() {
    let main = dap::build("c/eng_dlopen.c", "gcc", &["-g", "-O0"]);
    let plugin_src = sample_path("c/eng_plugin.c");
    let dir = scratch_dir("dap-session");
    let plugin = dir.join("libplugin-dap.so");
    let status = std::process::Command::new("gcc")
        .args(["-g", "-O0", "-shared", "-fPIC", "-o"])
        .arg(&plugin)
        .arg(&plugin_src)
        .status()
        .unwrap();
    assert!(status.success());
    let line = line_of(&plugin_src, "int sum = a + b;");
    let mut c = DapClient::new();
    c.initialize();
    c.ok("launch", json!({"program": main, "args": [plugin]}));
    let body = c.ok(
        "setBreakpoints",
        json!({"source": {"path": plugin_src}, "breakpoints": [{"line": line}]}),
    );
    let bp = body["breakpoints"][0].clone();
    assert_eq!(bp["verified"], false, "not loaded yet: {bp}");
    c.ok("configurationDone", json!({}));
    assert_eq!(c.event("continued")["body"]["allThreadsContinued"], true);
    let changed = c.event("breakpoint");
    assert_eq!(changed["body"]["breakpoint"]["id"], bp["id"]);
    assert_eq!(changed["body"]["breakpoint"]["verified"], true);
    let stop = c.event("stopped");
    assert_eq!(stop["body"]["hitBreakpointIds"], json!([bp["id"]]));
    // The library loaded while the program ran is told right after the stop (not before
    // it: reading the modules then would hold `stopped` back for the engine's unwind).
    let module = c.event("module");
    assert_eq!(module["body"]["reason"], "new", "{module}");
    assert_eq!(
        module["body"]["module"]["name"], "libplugin-dap.so",
        "{module}"
    );
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let f = c.frames(tid);
    assert_eq!(f[0]["name"], "plugin_add");
    assert_eq!(f[0]["line"], line);
    let args = c.scope_vars(frame_id(&f[0]), "Arguments");
    assert_eq!(var(&args, "a")["value"], "4");
    // The library shows up among the modules.
    let modules = c.ok("modules", json!({}));
    assert!(modules["modules"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["name"] == "libplugin-dap.so"));
    c.ok("continue", json!({"threadId": tid}));
    assert_eq!(c.event("exited")["body"]["exitCode"], 27);
    c.finish();
}

#[test]
fn a_line_without_code_moves_to_the_next_line_with_code() {
    let mut c = DapClient::new();
    let src = source();
    // The line of a lone `{` has no code: the breakpoint binds further down.
    let brace = line_of(&src, "LINE_SHADOW") - 2;
    assert_eq!(
        std::fs::read_to_string(&src)
            .unwrap()
            .lines()
            .nth(brace as usize - 1)
            .unwrap()
            .trim(),
        "{"
    );
    c.initialize();
    c.ok("launch", launch_args());
    let body = c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [{"line": brace}, {"line": 100000}]}),
    );
    let moved = &body["breakpoints"][0];
    assert_eq!(moved["verified"], true, "{body}");
    assert!(moved["line"].as_i64().unwrap() > brace, "{body}");
    let nowhere = &body["breakpoints"][1];
    assert_eq!(nowhere["verified"], false);
    assert!(!nowhere["message"].as_str().unwrap().is_empty());
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    assert_eq!(c.frames(tid)[0]["line"], moved["line"]);
    c.finish();
}

#[test]
fn source_text_and_frames_without_source() {
    let mut c = DapClient::new();
    let (tid, frames) = stop_at(&mut c, "LINE_ADD");
    let body = c.ok(
        "source",
        json!({"source": {"path": source()}, "sourceReference": 0}),
    );
    assert_eq!(
        body["content"],
        json!(std::fs::read_to_string(source()).unwrap())
    );
    c.err("source", json!({"sourceReference": 12345}));
    // libc's start-up frames below main have no source here: they are de-emphasized.
    let below_main: Vec<&Value> = frames
        .iter()
        .skip_while(|f| f["name"] != "main")
        .skip(1)
        .collect();
    assert!(!below_main.is_empty(), "{frames:#?}");
    for f in &below_main {
        assert_eq!(f["presentationHint"], "subtle", "{f}");
        assert!(f["moduleId"].is_string(), "{f}");
    }
    assert!(below_main
        .iter()
        .any(|f| f["moduleId"].as_str().unwrap().contains("libc")));
    let _ = tid;
    c.finish();
}
