//! C++ exceptions through the DAP (issue #22): with the `cpp-throw` and `cpp-catch`
//! filters ticked, samples/cpp/vscode_throw.cpp (g++ -O0 -g) stops at the throw with
//! the thrown type and `what()` in `exceptionInfo`, then at the catch, whose caller
//! frame is the handler's `catch` line as gdb's `catch catch` shows it; stepping out
//! lands in the handler, and the program then prints what the handler prints.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::json;
use support::dap::{build, line_of, sample_path, DapClient};

/// The line of `main`'s frame gdb shows at its first `catch catch` stop.
fn gdb_catch_line(program: &Path, arg: &str) -> i64 {
    let out = Command::new("gdb")
        .args(["-batch", "-nx", "-ex", "catch catch", "-ex"])
        .arg(format!("run {arg}"))
        .args(["-ex", "bt"])
        .arg(program)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let frame = stdout
        .lines()
        .find(|l| l.starts_with('#') && l.contains(" in main ("))
        .unwrap_or_else(|| panic!("no main frame in gdb's bt: {stdout}"));
    frame.rsplit(':').next().unwrap().trim().parse().unwrap()
}

#[test]
fn a_throw_then_its_catch_stop_and_the_handler_runs() {
    let program = build("cpp/vscode_throw.cpp", "g++", &["-g", "-O0"]);
    let source = sample_path("cpp/vscode_throw.cpp");
    let catch_line = line_of(&source, "catch (const std::exception &e)");
    assert_eq!(gdb_catch_line(&program, "runtime"), catch_line);

    let mut c = DapClient::new();
    c.initialize();
    c.ok("launch", json!({"program": program, "args": ["runtime"]}));
    c.ok(
        "setExceptionBreakpoints",
        json!({"filters": ["cpp-throw", "cpp-catch"]}),
    );
    c.ok("configurationDone", json!({}));

    // The throw: the type and what() of the object being thrown.
    let stop = c.event("stopped");
    assert_eq!(stop["body"]["reason"], "exception", "{stop}");
    assert_eq!(stop["body"]["text"], "throw", "{stop}");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let info = c.ok("exceptionInfo", json!({"threadId": tid}));
    assert_eq!(info["exceptionId"], "cpp-throw");
    assert_eq!(info["details"]["typeName"], "std::runtime_error", "{info}");
    assert_eq!(
        info["details"]["message"], "a runtime error with a message longer than fifteen",
        "{info}"
    );
    assert!(
        c.frames(tid).iter().any(|f| f["name"] == "parse"),
        "the throwing function is on the stack"
    );

    // The catch: stopped in __cxa_begin_catch, called from the handler's `catch` line.
    c.ok("continue", json!({"threadId": tid}));
    let stop = c.event("stopped");
    assert_eq!(stop["body"]["reason"], "exception", "{stop}");
    assert_eq!(stop["body"]["text"], "catch", "{stop}");
    let info = c.ok("exceptionInfo", json!({"threadId": tid}));
    assert_eq!(info["exceptionId"], "cpp-catch", "{info}");
    let frames = c.frames(tid);
    let main = frames
        .iter()
        .find(|f| f["name"] == "main")
        .unwrap_or_else(|| panic!("no main: {frames:#?}"));
    assert_eq!(main["line"], catch_line, "{main}");
    assert!(
        !frames.iter().any(|f| f["name"] == "parse"),
        "the throwing frames are unwound at the catch: {frames:#?}"
    );

    // Stepping out of the runtime lands in the handler, before its printf ran.
    c.ok("stepOut", json!({"threadId": tid}));
    let stop = c.event("stopped");
    assert_eq!(stop["body"]["reason"], "step", "{stop}");
    let top = &c.frames(tid)[0];
    assert_eq!(top["name"], "main", "{top}");
    let line = top["line"].as_i64().unwrap();
    assert!(
        (catch_line..catch_line + 3).contains(&line),
        "{line} is not in the handler at {catch_line}"
    );

    c.ok("setExceptionBreakpoints", json!({"filters": []}));
    c.ok("continue", json!({"threadId": tid}));
    let exited = c.event("exited");
    let printed: String = c
        .output
        .iter()
        .filter(|(category, _)| category == "stdout")
        .map(|(_, text)| text.as_str())
        .collect();
    assert_eq!(exited["body"]["exitCode"], 1, "{exited}");
    assert!(
        printed.contains("caught: a runtime error with a message longer than fifteen"),
        "{printed:?}"
    );
    c.finish();
}
