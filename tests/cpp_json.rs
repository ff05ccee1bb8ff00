//! A real C++ code base (issue #22): samples/cpp/json_use.cpp over nlohmann-json
//! (Debian's header-only nlohmann-json3-dev), built -O0 and -O2 here; at function
//! breakpoints tandem's frames, arguments and locals (over DAP) are compared with
//! gdb's (`bt`, `info args`, `info locals`, its libstdc++ printers on). Frames and the
//! arguments must agree; the agreement of all values is printed as figures.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use support::dap::{build, DapClient};

fn program(opt: &str) -> PathBuf {
    assert!(
        Path::new("/usr/include/nlohmann/json.hpp").exists(),
        "nlohmann-json3-dev is not installed (scripts/install-test-deps installs it)"
    );
    build("cpp/json_use.cpp", "g++", &["-g", opt, "-std=c++17"])
}

type Vals = BTreeMap<String, String>;

/// gdb's `@0x7ffd…: {…}` for a reference, as the value alone.
fn unref(v: &str) -> String {
    match v.strip_prefix('@').and_then(|r| r.split_once(": ")) {
        Some((_, v)) => v.to_string(),
        None => v.to_string(),
    }
}

fn gdb_at(program: &Path, function: &str) -> (Vec<String>, Vals, Vals) {
    let mut args: Vec<String> = vec!["-batch".into(), "-nx".into()];
    for c in [
        "set pagination off".to_string(),
        format!("break {function}"),
        "run".into(),
        "echo BT\\n".into(),
        "bt 2".into(),
        "echo ARGS\\n".into(),
        "info args".into(),
        "echo LOCALS\\n".into(),
        "info locals".into(),
    ] {
        args.push("-ex".into());
        args.push(c);
    }
    let out = Command::new("gdb")
        .args(&args)
        .arg(program)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let (_, rest) = stdout.split_once("BT\n").unwrap();
    let (bt, rest) = rest.split_once("ARGS\n").unwrap();
    let (a, l) = rest.split_once("LOCALS\n").unwrap();
    let frames = bt
        .lines()
        .filter_map(|l| {
            let l = l.split_once(" in ").map_or(l, |(_, r)| r);
            let l = l.trim_start_matches(|c: char| c == '#' || c.is_ascii_digit() || c == ' ');
            l.split(" (").next().map(str::to_string)
        })
        .collect();
    let vals = |t: &str| -> Vals {
        t.lines()
            .filter_map(|l| l.split_once(" = "))
            .map(|(n, v)| (n.to_string(), unref(v)))
            .collect()
    };
    (frames, vals(a), vals(l))
}

/// tandem's frames at the stop, and the arguments and locals of the frame named `top`
/// (the first one when none is).
fn tandem_at(program: &Path, function: &str, top: &str) -> (Vec<String>, Vals, Vals) {
    let mut c = DapClient::new();
    c.initialize();
    c.ok("launch", json!({ "program": program }));
    c.ok(
        "setFunctionBreakpoints",
        json!({"breakpoints": [{"name": function}]}),
    );
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    let thread = stop["body"]["threadId"].as_i64().unwrap();
    let frames = c.frames(thread);
    let names: Vec<String> = frames
        .iter()
        .take(8)
        .map(|f| {
            let n = f["name"].as_str().unwrap();
            n.split('(').next().unwrap().trim().to_string()
        })
        .collect();
    let at = names.iter().position(|n: &String| n == top).unwrap_or(0);
    let top = frames[at]["id"].as_i64().unwrap();
    let mut scope = |s: &str| -> Vals {
        c.scope_vars(top, s)
            .iter()
            .map(|v| {
                (
                    v["name"].as_str().unwrap().to_string(),
                    v["value"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let (a, l) = (scope("Arguments"), scope("Locals"));
    c.finish();
    (names, a, l)
}

#[test]
fn nlohmann_json_frames_and_values_equal_gdbs() {
    let mut equal = 0;
    let mut differ = Vec::new();
    for opt in ["-O0", "-O2"] {
        let program = program(opt);
        for function in ["greet", "total", "count_numbers"] {
            let (gf, ga, gl) = gdb_at(&program, function);
            let (tf, ta, tl) = tandem_at(&program, function, &gf[0]);
            // At -O2 `total`'s breakpoint is also the first instruction of an inlined
            // `vector::begin`: gdb shows `total` (its caller), and so must tandem.
            assert_eq!(tf[..gf.len()], gf[..], "{opt} {function}: frames");
            assert_eq!(
                ta.keys().collect::<Vec<_>>(),
                ga.keys().collect::<Vec<_>>(),
                "{opt} {function}: arguments"
            );
            for (kind, g, t) in [("arg", &ga, &ta), ("local", &gl, &tl)] {
                for (name, gv) in g {
                    let Some(tv) = t.get(name) else {
                        differ.push(format!(
                            "{opt} {function} {kind} {name}: missing (gdb {gv})"
                        ));
                        continue;
                    };
                    if tv == gv {
                        equal += 1;
                    } else {
                        differ.push(format!(
                            "{opt} {function} {kind} {name}: ours {tv} gdb {gv}"
                        ));
                    }
                }
            }
            // Scalar arguments agree exactly, at -O2 too: a clone's argument located by
            // DW_OP_GNU_parameter_ref is read from the caller's call site.
            for name in ["times", "bias", "depth", "name"] {
                if let Some(gv) = ga.get(name) {
                    assert_eq!(ta.get(name), Some(gv), "{opt} {function} {name}");
                }
            }
        }
    }
    eprintln!(
        "values equal to gdb's: {equal}; differing: {}",
        differ.len()
    );
    for d in &differ {
        eprintln!("  {d}");
    }
    // 21 of 22 on 2026-12-02; the one left is an uninitialized local (stack garbage,
    // which differs between the two runs), and another such local may differ as well.
    assert!(equal >= 20, "{equal} equal");
}

/// gdb's value of `condition` where it stops at `break FUNCTION` (the frame it shows). gdb
/// itself refuses `break total if bias < 1` at -O2 ("No symbol \"bias\" in current
/// context": it parses a condition in the innermost inlined scope at the address), so the
/// decision is compared with the condition's value in the frame both debuggers show.
fn gdb_holds(program: &Path, function: &str, condition: &str) -> bool {
    let out = Command::new("gdb")
        .args(["-batch", "-nx", "-ex"])
        .arg(format!("break {function}"))
        .args(["-ex", "run", "-ex"])
        .arg(format!("print {condition}"))
        .arg(program)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let value = text
        .lines()
        .find_map(|l| l.strip_prefix("$1 = "))
        .unwrap_or_else(|| panic!("gdb printed no value: {text}"));
    value == "true" || value == "1"
}

/// At -O2 `total`'s function breakpoint is also the first instruction of inlined calls,
/// and the stop is shown in `total`: its condition reads `total`'s arguments, in the frame
/// the stop shows (not the inlined callee's, where `bias` is not visible and the
/// condition would be an error that stops).
#[test]
fn a_function_breakpoint_condition_at_an_inlined_call_reads_the_function() {
    for opt in ["-O0", "-O2"] {
        let program = program(opt);
        for condition in ["bias > 1", "bias < 1"] {
            let want = gdb_holds(&program, "total", condition);
            let mut c = DapClient::new();
            c.initialize();
            c.ok("launch", json!({ "program": program }));
            let bps = c.ok(
                "setFunctionBreakpoints",
                json!({"breakpoints": [{"name": "total", "condition": condition}]}),
            );
            assert_eq!(bps["breakpoints"][0]["verified"], true, "{bps}");
            c.ok("configurationDone", json!({}));
            let deadline = Instant::now() + support::PATIENCE;
            let stopped = loop {
                if let Some(s) = c.event_within("stopped", Duration::from_millis(100)) {
                    break Some(s);
                }
                if c.event_within("exited", Duration::from_millis(100))
                    .is_some()
                {
                    break None;
                }
                assert!(
                    Instant::now() < deadline,
                    "{opt}: neither stopped nor exited"
                );
            };
            if let Some(stop) = &stopped {
                let tid = stop["body"]["threadId"].as_i64().unwrap();
                let top = c.frames(tid)[0]["name"].as_str().unwrap().to_owned();
                assert!(top.contains("total"), "{opt} {condition}: {top}");
            }
            assert_eq!(
                stopped.is_some(),
                want,
                "{opt} `{condition}`: tandem vs gdb"
            );
            c.finish();
        }
    }
}
