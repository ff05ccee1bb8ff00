//! Conditions mean what they mean at a stop, as gdb decides them: a two-file C program
//! (samples/c/cond_main.c + cond_lib.c) at -O2, where the conditions on lines of the
//! library read parameters gcc describes by `DW_OP_entry_value` and a global defined in
//! the other unit, and at -O0. gdb (batch mode) and tandem (over DAP, with conditions in
//! the debuggee and with TANDEM_CONDITIONS_IN_DEBUGGEE=0) must stop at the same hits with
//! the same values; a condition that truly cannot be evaluated stops every time with a
//! message, as gdb does. One condition reads a thread-local variable (`__thread`).
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use support::dap::{build_sources, line_of, sample_path, DapClient};
use support::{Peer, Protocol};

fn program(opt: &str) -> PathBuf {
    build_sources(&["c/cond_main.c", "c/cond_lib.c"], "gcc", &["-g", opt])
}

fn lib_source() -> PathBuf {
    sample_path("c/cond_lib.c")
}

/// A conditional breakpoint on the line of `marker` in cond_lib.c, and the expressions
/// printed at each of its stops.
struct Bp {
    marker: &'static str,
    condition: &'static str,
    show: &'static [&'static str],
}

/// The breakpoints of every run. At -O2: `a`, `b` and `k` are entry values on these
/// lines; `a`/`b` are recoverable from `main`'s call site of `work`, `k` is not (main
/// passes `opaque(i)`'s result), so `k == 44` cannot be evaluated there. `g_never` and
/// `g_phase` are defined in cond_main.c only (g_phase declared extern in cond_lib.c).
const BPS: &[Bp] = &[
    Bp {
        marker: "LINE_WORK_CALL",
        condition: "g_never == 1 || a == 77",
        show: &["a", "b"],
    },
    Bp {
        marker: "LINE_WORK_AFTER",
        condition: "a % 50 == 7 || a == 33 || (g_phase == 3 && b == 21) || g_never == 1",
        show: &["a", "b", "g_never", "g_phase"],
    },
    Bp {
        marker: "LINE_WORK_TOTAL",
        condition: "g_never == 1 || g_phase == 4",
        show: &["a"],
    },
    Bp {
        marker: "LINE_WORK_TLS",
        condition: "t_works == 2 || t_works == 5",
        show: &["t_works", "a"],
    },
    Bp {
        marker: "LINE_DRIFT_AFTER",
        condition: "k == 44",
        show: &["k", "g_phase"],
    },
];

/// Each stop as `LINE name=value ...`, with ` !error` when the condition could not be
/// evaluated (and the stop happened because of that).
fn gdb_stops(program: &Path) -> Vec<String> {
    let src = lib_source();
    let mut script =
        String::from("set pagination off\nset confirm off\nset breakpoint pending on\n");
    for bp in BPS {
        let line = line_of(&src, bp.marker);
        script += &format!(
            "break cond_lib.c:{line} if {}\ncommands\nsilent\n",
            bp.condition
        );
        script += &format!("echo STOP {line}");
        for name in bp.show {
            script += &format!("\necho \\ {name}=\noutput {name}");
        }
        script += "\necho \\n\ncontinue\nend\n";
    }
    script += "run\n";
    let name = program.file_name().unwrap().to_string_lossy();
    let path = std::env::temp_dir().join(format!("tandem-{name}.gdb"));
    std::fs::write(&path, script).unwrap();
    // gdb says "Error in testing ..." on stderr: both streams in one pipe keep the order.
    let out = Command::new("sh")
        .args(["-c", "exec gdb -batch -nx -x \"$0\" \"$1\" 2>&1"])
        .arg(&path)
        .arg(program)
        .output()
        .expect("gdb runs");
    let _ = std::fs::remove_file(&path);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("exited normally"), "gdb:\n{text}");
    let mut stops = Vec::new();
    let mut error = false;
    for l in text.lines() {
        if l.starts_with("Error in testing") {
            error = true;
        } else if let Some(stop) = l.strip_prefix("STOP ") {
            stops.push(format!("{stop}{}", if error { " !error" } else { "" }));
            error = false;
        }
    }
    stops
}

/// What tandem did in one run.
struct Run {
    /// The stops in gdb's form.
    stops: Vec<String>,
    /// The messages of conditions it could not evaluate.
    messages: Vec<String>,
    /// The program's stdout.
    stdout: String,
    /// Where each breakpoint's condition ran, by marker: "debuggee", or the reason it
    /// stays with the debugger.
    placement: Vec<(&'static str, String)>,
}

fn tandem_stops(program: &Path, jit: bool) -> Run {
    let envs: &[(&str, &str)] = if jit {
        &[("TANDEM_LOG", "engine=debug")]
    } else {
        &[
            ("TANDEM_CONDITIONS_IN_DEBUGGEE", "0"),
            ("TANDEM_LOG", "engine=debug"),
        ]
    };
    let mut c = DapClient::with_peer(Peer::spawn(Protocol::Dap, &[], envs));
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program, "cwd": std::env::temp_dir()}),
    );
    let src = lib_source();
    let bps: Vec<Value> = BPS
        .iter()
        .map(|b| json!({"line": line_of(&src, b.marker), "condition": b.condition}))
        .collect();
    let body = c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": bps}),
    );
    // In a shared library the breakpoints are pending until it is loaded.
    let mut addresses = Vec::new();
    for (bp, b) in body["breakpoints"].as_array().unwrap().iter().zip(BPS) {
        if let Some(a) = bp["instructionReference"].as_str() {
            assert_eq!(bp["verified"], true, "{bp}");
            addresses.push((b.marker, u64::from_str_radix(&a[2..], 16).unwrap()));
        }
    }
    c.ok("configurationDone", json!({}));
    let mut stops = Vec::new();
    let mut seen_errors = 0;
    while let Some(stop) = next_stop(&mut c) {
        let thread = stop["body"]["threadId"].as_i64().unwrap();
        let top = c.frames(thread)[0].clone();
        let line = top["line"].as_i64().unwrap();
        let frame = top["id"].as_i64().unwrap();
        let bp = BPS
            .iter()
            .find(|b| line_of(&src, b.marker) == line)
            .unwrap_or_else(|| panic!("stop at line {line}: {stop}"));
        let mut text = format!("{line}");
        for name in bp.show {
            text += &format!(" {name}={}", value(&mut c, frame, name));
        }
        let errors = errors(&c).len();
        if errors > seen_errors {
            text += " !error";
        }
        seen_errors = errors;
        stops.push(text);
        assert!(stops.len() < 200, "runaway stops: {stops:?}");
        c.ok("continue", json!({"threadId": thread}));
    }
    let messages = errors(&c);
    let stdout = c
        .output
        .iter()
        .filter(|(cat, _)| cat == "stdout")
        .map(|(_, t)| t.as_str())
        .collect();
    let log = strip_ansi(&c.peer.stderr());
    c.finish();
    let placement = addresses
        .iter()
        .map(|(marker, addr)| {
            let field = format!("addr={addr}");
            let line = log
                .lines()
                .find(|l| l.contains("condition") && l.split_whitespace().any(|w| w == field))
                .unwrap_or("");
            let how = if line.contains("condition runs in the debuggee") {
                "debuggee".to_string()
            } else {
                line.split("stays with the debugger: ")
                    .nth(1)
                    .unwrap_or("(no decision logged)")
                    .to_string()
            };
            (*marker, how)
        })
        .collect();
    Run {
        stops,
        messages,
        stdout,
        placement,
    }
}

/// `text` without terminal colour sequences (`ESC [ ... m`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(ch) = chars.next() {
        if ch == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(ch);
        }
    }
    out
}

/// An expression's value in a frame as gdb's `output` prints it.
fn value(c: &mut DapClient, frame: i64, expression: &str) -> String {
    let r = c.request(
        "evaluate",
        json!({"expression": expression, "frameId": frame, "context": "watch"}),
    );
    if r["success"] == true {
        return r["body"]["result"].as_str().unwrap().to_string();
    }
    let msg = r["message"].as_str().unwrap_or_default();
    assert!(msg.contains("optimized out"), "evaluate {expression}: {r}");
    "<optimized out>".to_string()
}

fn errors(c: &DapClient) -> Vec<String> {
    c.output
        .iter()
        .filter(|(_, text)| text.contains("error in condition"))
        .map(|(_, text)| text.clone())
        .collect()
}

/// The next `stopped` event, or `None` once the program has terminated.
fn next_stop(c: &mut DapClient) -> Option<Value> {
    loop {
        let m = c
            .peer
            .try_recv(Duration::from_secs(60))
            .expect("no event within 60 s");
        match m["event"].as_str() {
            Some("stopped") => return Some(m),
            Some("terminated") => return None,
            Some("output") => {
                let category = m["body"]["category"].as_str().unwrap_or("console");
                let text = m["body"]["output"].as_str().unwrap_or_default();
                c.output.push((category.to_string(), text.to_string()));
            }
            _ => {}
        }
    }
}

/// The program's own output, run without a debugger.
fn plain_output(program: &Path) -> String {
    let out = Command::new(program).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// The location lists of a binary, as objdump prints them.
fn location_lists(program: &Path) -> String {
    let out = Command::new("objdump")
        .arg("--dwarf=loc")
        .arg(program)
        .output()
        .expect("objdump runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs the comparison; returns where each condition ran in the run with conditions in
/// the debuggee.
fn same_as_gdb(opt: &str) -> Vec<(&'static str, String)> {
    same_as_gdb_for(&program(opt), opt)
}

fn same_as_gdb_for(program: &Path, opt: &str) -> Vec<(&'static str, String)> {
    let program = program.to_path_buf();
    let want = gdb_stops(&program);
    let plain = plain_output(&program);
    let mut placements = Vec::new();
    for jit in [true, false] {
        let Run {
            stops: got,
            messages,
            stdout,
            placement,
        } = tandem_stops(&program, jit);
        if jit {
            placements = placement;
        }
        let how = if jit {
            "conditions in the debuggee"
        } else {
            "TANDEM_CONDITIONS_IN_DEBUGGEE=0"
        };
        assert_eq!(got, want, "{opt}, {how}: tandem's stops differ from gdb's");
        assert_eq!(stdout, plain, "{opt}, {how}: the program's output changed");
        // Every message is about a condition gdb could not evaluate either, and says why.
        let gdb_errors = want.iter().filter(|s| s.ends_with("!error")).count();
        assert_eq!(messages.len(), gdb_errors, "{opt}, {how}: {messages:?}");
        for m in &messages {
            assert!(m.contains("'k' is optimized out"), "{opt}, {how}: {m}");
        }
    }
    placements
}

#[test]
fn conditions_on_entry_values_and_other_units_globals_agree_with_gdb_at_o2() {
    let program = program("-O2");
    // The premise: at -O2 gcc describes parameters by their entry values here.
    let loc = location_lists(&program);
    assert!(
        loc.contains("DW_OP_entry_value: (DW_OP_reg5 (rdi))")
            && loc.contains("DW_OP_entry_value: (DW_OP_reg4 (rsi))"),
        "no entry values in the -O2 build:\n{loc}"
    );
    let want = gdb_stops(&program);
    // gdb recovers `a` and `b`, finds g_never and g_phase in the other unit, and
    // cannot evaluate `k` (three calls of drift): the test covers all three cases.
    assert!(want.iter().any(|s| s.contains("a=33")), "{want:?}");
    assert!(want.iter().any(|s| s.contains("b=21")), "{want:?}");
    assert_eq!(
        want.iter().filter(|s| s.ends_with("!error")).count(),
        3,
        "{want:?}"
    );
    let placement = same_as_gdb("-O2");
    // A condition on globals alone runs in the debuggee (the other unit's global is a
    // constant address); one reading an entry value stays on the int3 path.
    let how = |marker: &str| {
        placement
            .iter()
            .find(|(m, _)| *m == marker)
            .unwrap()
            .1
            .clone()
    };
    assert_eq!(how("LINE_WORK_TOTAL"), "debuggee", "{placement:?}");
    for marker in ["LINE_WORK_AFTER", "LINE_DRIFT_AFTER"] {
        assert!(
            how(marker).starts_with("the condition needs the debugger"),
            "{placement:?}"
        );
    }
}

#[test]
fn conditions_on_other_units_globals_agree_with_gdb_at_o0() {
    let program = program("-O0");
    let want = gdb_stops(&program);
    assert!(want.iter().any(|s| s.contains("k=44")), "{want:?}");
    assert!(!want.iter().any(|s| s.ends_with("!error")), "{want:?}");
    // At -O0 every condition here reads frame slots and static addresses only — but
    // the thread-local one, which is evaluated by the debugger (for the hitting thread).
    let placement = same_as_gdb("-O0");
    assert!(
        placement
            .iter()
            .all(|(line, how)| how == "debuggee" || *line == "LINE_WORK_TLS"),
        "{placement:?}"
    );
}

/// `evaluate` (watch, hover, repl) and logpoints in a frame of cond_lib.c see the globals
/// of cond_main.c and the recovered entry values.
#[test]
fn evaluate_and_logpoints_see_other_units_globals() {
    for opt in ["-O0", "-O2"] {
        let program = program(opt);
        let src = lib_source();
        let mut c = DapClient::new();
        c.initialize();
        c.ok(
            "launch",
            json!({"program": program, "cwd": std::env::temp_dir()}),
        );
        c.ok(
            "setBreakpoints",
            json!({"source": {"path": src}, "breakpoints": [
                {"line": line_of(&src, "LINE_WORK_AFTER"), "condition": "a % 40 == 0",
                 "logMessage": "a={a} b={b} g={g_never} p={g_phase}"},
                {"line": line_of(&src, "LINE_WORK_TOTAL"), "condition": "a == 100"},
            ]}),
        );
        c.ok("configurationDone", json!({}));
        let stop = next_stop(&mut c).expect("a stop at a == 100");
        let thread = stop["body"]["threadId"].as_i64().unwrap();
        let frame = c.frames(thread)[0]["id"].as_i64().unwrap();
        for (context, expression, want) in [
            ("watch", "g_never", "0"),
            ("hover", "g_phase", "3"),
            ("repl", "g_phase * 10 + g_never + a", "130"),
            ("watch", "b", "20"),
        ] {
            let r = c.ok(
                "evaluate",
                json!({"expression": expression, "frameId": frame, "context": context}),
            );
            assert_eq!(r["result"], want, "{opt}: {context} {expression}");
        }
        let logs: Vec<String> = c
            .output
            .iter()
            .filter(|(_, t)| t.starts_with("a="))
            .map(|(_, t)| t.trim_end().to_string())
            .collect();
        assert_eq!(
            logs,
            [
                "a=0 b=120 g=0 p=3",
                "a=40 b=80 g=0 p=3",
                "a=80 b=40 g=0 p=3"
            ],
            "{opt}"
        );
        assert!(errors(&c).is_empty(), "{opt}: {:?}", errors(&c));
        c.finish();
    }
}

/// cond_lib.c as a shared library of cond_main.c: the conditions in the library name
/// globals of the main executable, another module.
#[test]
fn conditions_in_a_shared_library_see_the_executables_globals_as_gdb_does() {
    let dir = support::dap::scratch_dir("cond-shared");
    let lib = dir.join("libcondlib.so");
    let exe = dir.join("cond_shared");
    let gcc = |args: &[&std::ffi::OsStr]| {
        let status = Command::new("gcc").args(args).status().unwrap();
        assert!(status.success(), "gcc {args:?}");
    };
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    gcc(&[
        "-g".as_ref(),
        "-O2".as_ref(),
        "-shared".as_ref(),
        "-fPIC".as_ref(),
        "-o".as_ref(),
        lib.as_os_str(),
        lib_source().as_os_str(),
    ]);
    gcc(&[
        "-g".as_ref(),
        "-O2".as_ref(),
        "-o".as_ref(),
        exe.as_os_str(),
        sample_path("c/cond_main.c").as_os_str(),
        lib.as_os_str(),
        rpath.as_ref(),
    ]);
    let want = gdb_stops(&exe);
    assert!(want.iter().any(|s| s.contains("b=21")), "{want:?}");
    same_as_gdb_for(&exe, "-O2, shared library");
    let _ = std::fs::remove_dir_all(&dir);
}
