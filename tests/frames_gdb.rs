//! Frames rebuilt from tail calls as gdb shows them (issue #29, item 6):
//! samples/c/tail_calls.c, built -O0 and -O2 (where gcc turns `return f(…)` into a
//! jump), DWARF 4 and 5, stopped at a function breakpoint in each callee; the whole
//! stack (function names and lines, frame by frame) and every frame's arguments (gdb's
//! `frame apply all info args`) are compared with tandem's DAP `stackTrace` and
//! Arguments scopes. At -O2 tandem must also mark each frame it rebuilt as subtle, and
//! exactly the frames gdb rebuilt (those whose pc follows a jump, not a call). One
//! callee reassigns its parameters: at its first instruction they show the values passed
//! (the location list's empty range there, a location view), as gdb shows them.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::Path;

use serde_json::json;
use support::dap::{build, DapClient};

const SAMPLE: &str = "c/tail_calls.c";
/// The callees, in the order the program reaches them.
const STOPS: &[&str] = &[
    "add",
    "cc",
    "ev_leaf",
    "first",
    "second",
    "fin",
    "reassigned",
];

/// One frame: function, line, its arguments as `name = value`.
#[derive(Debug, PartialEq, Eq)]
struct Frame {
    function: String,
    line: i64,
    args: Vec<String>,
}

/// gdb's stacks at each stop.
fn gdb_stacks(program: &Path) -> Vec<Vec<Frame>> {
    let mut cmds = vec!["set pagination off".to_string()];
    for s in STOPS {
        cmds.push(format!("break {s}"));
    }
    cmds.push("run".into());
    for _ in STOPS {
        cmds.extend([
            "echo STOP\\n".into(),
            "frame apply all info args".into(),
            "continue".into(),
        ]);
    }
    let (text, _) = support::gdb::batch(program, &cmds);
    let stacks: Vec<Vec<Frame>> = text
        .split("STOP\n")
        .skip(1)
        .map(|part| {
            let mut frames: Vec<Frame> = Vec::new();
            for l in part.lines() {
                if let Some(head) = l.strip_prefix('#') {
                    // `#1  0x… in wack (x=…) at /path/tail_calls.c:18`
                    let rest = head.split_once(' ').map_or("", |(_, r)| r).trim_start();
                    let rest = rest.split_once(" in ").map_or(rest, |(a, r)| {
                        if a.starts_with("0x") {
                            r
                        } else {
                            rest
                        }
                    });
                    let function = rest.split([' ', '(']).next().unwrap_or("").to_string();
                    let line = rest
                        .rsplit_once(':')
                        .and_then(|(_, n)| n.trim().parse().ok())
                        .unwrap_or(0);
                    frames.push(Frame {
                        function,
                        line,
                        args: Vec::new(),
                    });
                } else if let Some(f) = frames.last_mut() {
                    // `name = value` (not a source line `52\t    sink = v;`).
                    let is_arg = l.split_once(" = ").is_some_and(|(n, _)| {
                        !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    });
                    if is_arg {
                        f.args.push(l.to_string());
                    }
                }
            }
            frames
        })
        .collect();
    assert_eq!(stacks.len(), STOPS.len(), "gdb stopped otherwise:\n{text}");
    stacks
}

/// tandem's stacks at each stop over DAP (up to `main`, as gdb shows them), with each
/// frame's presentation hint.
fn tandem_stacks(program: &Path) -> Vec<Vec<(Frame, bool)>> {
    let mut dap = DapClient::new();
    dap.initialize();
    dap.ok("launch", json!({"program": program}));
    let bps: Vec<_> = STOPS.iter().map(|s| json!({"name": s})).collect();
    let body = dap.ok("setFunctionBreakpoints", json!({"breakpoints": bps}));
    for bp in body["breakpoints"].as_array().unwrap() {
        assert_eq!(bp["verified"], true, "{bp}");
    }
    dap.ok("configurationDone", json!({}));
    let mut stacks = Vec::new();
    for i in 0..STOPS.len() {
        let stopped = dap.event("stopped");
        let thread = stopped["body"]["threadId"].as_i64().unwrap();
        let mut stack = Vec::new();
        for f in dap.frames(thread) {
            let function = f["name"].as_str().unwrap().to_string();
            let id = f["id"].as_i64().unwrap();
            let args = dap
                .scope_vars(id, "Arguments")
                .iter()
                .map(|v| {
                    format!(
                        "{} = {}",
                        v["name"].as_str().unwrap(),
                        v["value"].as_str().unwrap()
                    )
                })
                .collect();
            let subtle = f["presentationHint"] == "subtle";
            let main = function == "main";
            stack.push((
                Frame {
                    function,
                    line: f["line"].as_i64().unwrap_or(0),
                    args,
                },
                subtle,
            ));
            if main {
                break;
            }
        }
        stacks.push(stack);
        if i + 1 < STOPS.len() {
            dap.ok("continue", json!({"threadId": thread}));
        }
    }
    dap.finish();
    stacks
}

/// Compares every stop's stack; returns (comparisons, differences).
fn compare(flags: &[&str]) -> (usize, Vec<String>) {
    let mut all = vec!["-g"];
    all.extend_from_slice(flags);
    let program = build(SAMPLE, "gcc", &all);
    let gdb = gdb_stacks(&program);
    let ours = tandem_stacks(&program);
    let tag = flags.join(" ");
    let (mut total, mut differ) = (0, Vec::new());
    let mut rebuilt = 0;
    for ((stop, g), t) in STOPS.iter().zip(&gdb).zip(&ours) {
        total += 1;
        if g.len() != t.len() {
            differ.push(format!(
                "{tag} {stop}: gdb shows {} frames {:?}, tandem {} {:?}",
                g.len(),
                g.iter().map(|f| &f.function).collect::<Vec<_>>(),
                t.len(),
                t.iter().map(|f| &f.0.function).collect::<Vec<_>>()
            ));
            continue;
        }
        for (k, (gf, (tf, subtle))) in g.iter().zip(t).enumerate() {
            total += 3 + gf.args.len();
            if gf.function != tf.function {
                differ.push(format!("{tag} {stop} #{k}: gdb {gf:?}, tandem {tf:?}"));
            }
            if gf.line != tf.line {
                differ.push(format!(
                    "{tag} {stop} #{k} {}: line gdb {}, tandem {}",
                    gf.function, gf.line, tf.line
                ));
            }
            if gf.args != tf.args {
                differ.push(format!(
                    "{tag} {stop} #{k} {}: args gdb {:?}, tandem {:?}",
                    gf.function, gf.args, tf.args
                ));
            }
            // A frame is rebuilt where its caller's call site calls another function:
            // in this sample, exactly the frames between a callee and `main` that are
            // not the callee's real caller (`mixed` calls `first`).
            let expect_rebuilt = k > 0 && k + 1 < g.len() && !(*stop == "first" && k == 1);
            let expect_rebuilt = expect_rebuilt && flags.contains(&"-O2");
            rebuilt += usize::from(*subtle);
            if *subtle != expect_rebuilt {
                differ.push(format!(
                    "{tag} {stop} #{k} {}: tandem marks it rebuilt: {subtle}",
                    gf.function
                ));
            }
        }
    }
    eprintln!(
        "{tag}: {} of {total} comparisons equal to gdb ({rebuilt} frames rebuilt)",
        total - differ.len()
    );
    for d in &differ {
        eprintln!("  {d}");
    }
    (total, differ)
}

fn check(flags: &[&str]) {
    let (total, differ) = compare(flags);
    assert!(total >= 30, "only {total} comparisons");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

#[test]
fn tail_call_frames_equal_gdb_at_o0_dwarf5() {
    check(&["-O0", "-gdwarf-5"]);
}

#[test]
fn tail_call_frames_equal_gdb_at_o0_dwarf4() {
    check(&["-O0", "-gdwarf-4"]);
}

#[test]
fn tail_call_frames_equal_gdb_at_o2_dwarf4() {
    check(&["-O2", "-gdwarf-4", "-foptimize-sibling-calls"]);
}

#[test]
fn tail_call_frames_equal_gdb_at_o2_dwarf5() {
    check(&["-O2", "-gdwarf-5", "-foptimize-sibling-calls"]);
}

/// The line gdb's `finish` out of `add` stops at, and what it prints for `x` in the
/// rebuilt frame of `wack`.
fn gdb_finish_from_add(program: &Path) -> (i64, String) {
    let out = std::process::Command::new("gdb")
        .args(["-batch", "-nx", "-ex", "break add", "-ex", "run"])
        .args([
            "-ex",
            "frame 1",
            "-ex",
            "echo X\\040",
            "-ex",
            "output x",
            "-ex",
            "echo \\n",
        ])
        .args([
            "-ex",
            "frame 0",
            "-ex",
            "finish",
            "-ex",
            "echo AT\\040",
            "-ex",
            "frame",
        ])
        .arg(program)
        .output()
        .expect("gdb runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let x = text
        .lines()
        .find_map(|l| l.strip_prefix("X "))
        .map(|l| l.trim().to_string());
    let at = text.split("AT ").nth(1).unwrap_or("");
    let line = at
        .lines()
        .next()
        .and_then(|l| l.rsplit_once(':'))
        .and_then(|(_, n)| n.trim().parse().ok())
        .unwrap_or(0);
    (line, x.unwrap_or_default())
}

/// `stepOut` from a function entered by a tail call returns to the physical caller
/// (the rebuilt frame never resumes), as gdb's `finish` does; a rebuilt frame's
/// arguments read as gdb shows them, and evaluating one says it is optimized out (as
/// a value or as the reason it has none).
#[test]
fn step_out_skips_rebuilt_frames() {
    let program = build(
        SAMPLE,
        "gcc",
        &["-g", "-O2", "-gdwarf-5", "-foptimize-sibling-calls"],
    );
    let (gdb_line, gdb_x) = gdb_finish_from_add(&program);
    let mut dap = DapClient::new();
    dap.initialize();
    dap.ok("launch", json!({"program": program}));
    dap.ok(
        "setFunctionBreakpoints",
        json!({"breakpoints": [{"name": "add"}]}),
    );
    dap.ok("configurationDone", json!({}));
    let stopped = dap.event("stopped");
    let thread = stopped["body"]["threadId"].as_i64().unwrap();
    let frames = dap.frames(thread);
    assert_eq!(frames[1]["name"], "wack", "{frames:?}");
    let wack = frames[1]["id"].as_i64().unwrap();
    let r = dap.request(
        "evaluate",
        json!({"expression": "x", "frameId": wack, "context": "watch"}),
    );
    let ours = if r["success"] == true {
        r["body"]["result"].as_str().unwrap_or("").to_string()
    } else {
        r["message"].as_str().unwrap_or("").to_string()
    };
    eprintln!("x in the rebuilt wack: gdb {gdb_x:?}, tandem {ours:?}");
    assert_eq!(gdb_x, "<optimized out>");
    assert!(ours.contains("optimized out"), "{r}");
    dap.ok("stepOut", json!({"threadId": thread}));
    let stopped = dap.event("stopped");
    let frames = dap.frames(stopped["body"]["threadId"].as_i64().unwrap());
    eprintln!(
        "finish from add: gdb at main:{gdb_line}, tandem at {}:{}",
        frames[0]["name"], frames[0]["line"]
    );
    assert_eq!(frames[0]["name"], "main");
    assert!(gdb_line > 0);
    assert_eq!(frames[0]["line"].as_i64().unwrap(), gdb_line);
    dap.finish();
}
