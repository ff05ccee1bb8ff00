//! Dynamic types (issue #22): samples/cpp/dynamic.cpp passes `Base *`, `Other *` (a
//! secondary base) and `Base &` pointing at a `Derived`; over DAP the pointee shows the
//! most-derived object with its members, and `b->derived_only` evaluates, as gdb does
//! with `set print object on` (gdb is the oracle for every value).
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};
use support::dap::{build, line_of, sample_path, var, DapClient};

const SAMPLE: &str = "cpp/dynamic.cpp";

fn program() -> PathBuf {
    build(SAMPLE, "g++", &["-g", "-O0"])
}

/// gdb's `output` of each expression with `set print object on`.
fn gdb(exprs: &[&str]) -> Vec<String> {
    let line = line_of(&sample_path(SAMPLE), "break in look");
    let mut args: Vec<String> = vec!["-batch".into(), "-nx".into()];
    let mut cmds = vec![
        "set pagination off".to_string(),
        format!("break dynamic.cpp:{line}"),
        "run".into(),
        "set print object on".into(),
    ];
    for e in exprs {
        cmds.push("echo EXPR\\n".into());
        cmds.push(format!("output {e}"));
        cmds.push("echo \\n".into());
    }
    for c in cmds {
        args.push("-ex".into());
        args.push(c);
    }
    let out = Command::new("gdb")
        .args(&args)
        .arg(program())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut parts = stdout.split("EXPR\n");
    parts.next();
    parts.map(|p| p.trim_end().to_string()).collect()
}

fn names_values(dap: &mut DapClient, v: &Value) -> Vec<(String, String)> {
    dap.children(&v["variablesReference"])
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["value"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_base_pointer_shows_the_derived_object() {
    let exprs = [
        "*b",
        "*o",
        "b->derived_only",
        "b->weight",
        "o->derived_only",
        "o->base_tag",
        "*plain",
        "r.derived_only",
    ];
    let answers = gdb(&exprs);
    assert_eq!(answers.len(), exprs.len(), "{answers:?}");
    assert!(answers[0].starts_with("(Derived) {"), "{answers:?}");
    assert!(answers[0].contains("derived_only = 7"), "{answers:?}");
    assert!(answers[6].starts_with("(Base) {"), "{answers:?}");

    let source = sample_path(SAMPLE);
    let mut dap = DapClient::new();
    let stopped = dap.launch_to_stop(
        json!({"program": program()}),
        &source,
        &[line_of(&source, "break in look")],
    );
    let thread = stopped["body"]["threadId"].as_i64().unwrap();
    let frame = dap.frames(thread)[0]["id"].as_i64().unwrap();
    let args = dap.scope_vars(frame, "Arguments");

    // `*b` and `*o` (a secondary base: the offset to the top applies) are the whole
    // Derived object: its members next to its bases.
    for name in ["b", "o"] {
        let pointee = &dap.children(&var(&args, name)["variablesReference"])[0];
        assert_eq!(pointee["name"], format!("*{name}"));
        let kids = names_values(&mut dap, pointee);
        let names: Vec<&str> = kids.iter().map(|k| k.0.as_str()).collect();
        assert_eq!(
            names,
            ["<Base>", "<Other>", "derived_only", "weight"],
            "{name}: {kids:?}"
        );
        assert!(answers[0].contains(&format!("derived_only = {}", kids[2].1)));
        assert!(answers[0].contains(&format!("weight = {}", kids[3].1)));
    }
    // A Base that is a Base stays one.
    let pointee = &dap.children(&var(&args, "plain")["variablesReference"])[0];
    let kids = names_values(&mut dap, pointee);
    assert!(kids.iter().all(|k| k.0 != "derived_only"), "{kids:?}");

    // Members of the derived class through the base pointer, as gdb answers them.
    for (e, want) in exprs.iter().zip(&answers).skip(2).take(4) {
        let r = dap.evaluate(frame, e);
        assert_eq!(&r["result"], want.as_str(), "{e}");
    }
    // gdb refuses the member through a reference even with print object on (it prints
    // nothing); tandem reads it as through the pointer: the value gdb shows in `*b`.
    assert_eq!(answers[7], "", "{answers:?}");
    let r = dap.evaluate(frame, "r.derived_only");
    assert_eq!(r["result"], "7", "through a reference");
    let msg = dap.err(
        "evaluate",
        json!({"expression": "plain->derived_only", "frameId": frame, "context": "watch"}),
    );
    assert!(msg.contains("no member named 'derived_only'"), "{msg}");
    dap.finish();
}
