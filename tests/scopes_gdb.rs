//! Qualified names and scopes as gdb resolves them. samples/cpp/expr_scopes.cpp (g++
//! -O0, DWARF 5 and 4) is stopped in `main`, in the method `geo::Shape::area` and in
//! `geo::inner::scale` (a function of a namespace defined outside it); at each stop
//! tandem's `evaluate` of every expression must equal gdb's `output` there: names
//! qualified by namespaces, classes and enums, a leading `::`, static members, template
//! arguments, plain names found in the namespaces and the class around the function
//! first, casts to and `sizeof` of qualified types. Names that exist nowhere must fail
//! for both, tandem's message naming what gdb's names. Conditions of breakpoints that
//! read qualified names stop where gdb's stop. samples/rust/expr_paths.rs does the same
//! for Rust statics by path.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::json;
use support::dap::{build, gdb_locals_at, line_of, sample_path, DapClient};
use support::{Peer, Protocol};

const CPP: &str = "cpp/expr_scopes.cpp";
const RUST: &str = "rust/expr_paths.rs";

/// A marked line of a sample and what is evaluated there (gdb's answer is the expected
/// one; none is written here).
struct Stop {
    marker: &'static str,
    exprs: &'static [&'static str],
}

const CPP_STOPS: &[Stop] = &[
    Stop {
        marker: "SCOPES MAIN",
        exprs: &[
            "counter",
            "::counter",
            "geo::counter",
            "::geo::counter",
            "geo::inner::counter",
            "geo :: inner :: depth",
            "geo::defined_outside",
            "geo::Shape::made",
            "geo::Shape::sides",
            "S::total",
            "S::ratio",
            "Box<int>::count",
            "Box< int >::count + S::total",
            "hidden",
            "::hidden",
            "geo::Blue",
            "geo::Green + 1",
            "(int)geo::Blue",
            "geo::Mode::Slow",
            "geo::inner::Level::Low",
            "c == geo::Blue",
            "m == geo::Mode::Slow",
            "l",
            "(geo::Color)5",
            "(geo::Mode)4",
            "sizeof(geo::Pt)",
            "sizeof(geo::inner::Pt)",
            "sizeof(geo::Shape)",
            "sizeof(::S)",
            "sizeof(Box<int>)",
            "((geo::Pt *)&p)->y",
            "*(geo::Pt *)&p",
            "shape.made",
            "shape.sides + s.total",
            "geo::Mode::Fast == shape.mode",
            "geo::counter + ::counter",
            "-geo::counter",
            "*&S::total",
            "sizeof geo::counter",
        ],
    },
    Stop {
        marker: "SCOPES METHOD",
        exprs: &[
            "made",
            "sides",
            "id",
            "mode",
            "this->id",
            "this->made",
            "counter",
            "::counter",
            "Shape::made",
            "Shape::sides",
            "Shape::id",
            "geo::Shape::id",
            "Blue",
            "Mode::Slow",
            "mode == Mode::Fast",
            "sizeof(Pt)",
            "sizeof(Shape)",
            "sizeof(inner::Pt)",
            "inner::depth",
            "inner::counter",
            "id * sides + made",
            "a",
            "hidden",
            "(Color)6",
            "S::total",
        ],
    },
    Stop {
        marker: "SCOPES NAMESPACE",
        exprs: &[
            "counter",
            "::counter",
            "geo::counter",
            "inner::counter",
            "depth",
            "inner::depth",
            "defined_outside",
            "Blue",
            "Red",
            "Mode::Slow",
            "Level::Low",
            "inner::Level::High",
            "geo::inner::Level::Low == Level::Low",
            "sizeof(Pt)",
            "sizeof(inner::Pt)",
            "sizeof(geo::Pt)",
            "sizeof(::geo::Pt)",
            "((Pt *)&big)->c",
            "big.c",
            "hidden",
            "k + counter",
            "r",
            "S::total",
            "Shape::made",
            "Shape::sides * depth",
            "(Level)1",
            "(Mode)3",
            "(Color)0",
            "Box<int>::count",
            "sizeof ::counter",
            "k ? ::counter : counter",
        ],
    },
];

/// Names that exist nowhere, by stop: both must refuse them.
const CPP_UNKNOWN: &[(&str, &[&str])] = &[
    (
        "SCOPES MAIN",
        &[
            "geo::nope",
            "nope::x",
            "S::nope",
            "Box<int>::nope",
            "geo::Mode::Nope",
            "geo::Shape::id",
        ],
    ),
    (
        "SCOPES NAMESPACE",
        &["inner::nope", "nope", "::nope", "geo::inner::nope::x"],
    ),
];

const RUST_STOPS: &[Stop] = &[
    Stop {
        marker: "PATHS AREA",
        exprs: &[
            "COUNTER",
            "self::COUNTER",
            "::COUNTER",
            "::geometry::COUNTER",
            "self::inner::COUNTER",
            "SCALE",
            "expr_paths::COUNTER",
            "expr_paths::geometry::inner::COUNTER",
            "a",
            "p.x + COUNTER",
        ],
    },
    Stop {
        marker: "PATHS MAIN",
        exprs: &[
            "COUNTER",
            "expr_paths::COUNTER",
            "::COUNTER",
            "self::COUNTER",
            "expr_paths::geometry::COUNTER",
            "expr_paths::geometry::inner::COUNTER",
            "expr_paths::geometry::SCALE",
            "expr_paths::geometry::SCALE * 2.0",
            "expr_paths::geometry::ORIGIN.x",
            "expr_paths::geometry::ORIGIN.y",
            "expr_paths::geometry::inner::NAME",
            "expr_paths::HITS",
            "expr_paths::geometry::COUNTER + expr_paths::COUNTER",
            "-expr_paths::geometry::COUNTER",
            "::geometry::COUNTER",
            "self::geometry::inner::COUNTER",
        ],
    },
];

/// tandem's text for each expression at each stop (`<error: …>` when it refused one),
/// in the order of `stops`, from one session with a breakpoint on every marked line.
fn tandem_values(program: &Path, rel: &str, stops: &[Stop]) -> Vec<Vec<String>> {
    let source = sample_path(rel);
    let lines: Vec<i64> = stops.iter().map(|s| line_of(&source, s.marker)).collect();
    let mut dap = DapClient::new();
    let mut stopped = dap.launch_to_stop(json!({"program": program}), &source, &lines);
    let mut values: Vec<Option<Vec<String>>> = vec![None; stops.len()];
    while values.iter().any(Option::is_none) {
        let thread = stopped["body"]["threadId"].as_i64().unwrap();
        let frame = &dap.frames(thread)[0];
        let line = frame["line"].as_i64().unwrap();
        let at = lines.iter().position(|l| *l == line);
        let at = at.unwrap_or_else(|| panic!("stopped at line {line}, not a marked one"));
        if values[at].is_none() {
            let frame = frame["id"].as_i64().unwrap();
            values[at] = Some(
                stops[at]
                    .exprs
                    .iter()
                    .map(|e| evaluate(&mut dap, frame, e))
                    .collect(),
            );
        }
        if values.iter().any(Option::is_none) {
            dap.ok("continue", json!({"threadId": thread}));
            stopped = dap.event("stopped");
        }
    }
    dap.finish();
    values.into_iter().map(Option::unwrap).collect()
}

fn evaluate(dap: &mut DapClient, frame: i64, e: &str) -> String {
    let r = dap.request(
        "evaluate",
        json!({"expression": e, "frameId": frame, "context": "watch"}),
    );
    if r["success"] == true {
        r["body"]["result"].as_str().unwrap().to_string()
    } else {
        format!("<error: {}>", r["message"].as_str().unwrap_or(""))
    }
}

/// Every expression of `stops` evaluated by gdb and tandem on `program`: the texts must
/// be equal.
fn equal_gdb(program: &Path, rel: &str, stops: &[Stop], tag: &str) {
    let ours = tandem_values(program, rel, stops);
    let mut differ = Vec::new();
    let mut total = 0;
    for (stop, ours) in stops.iter().zip(&ours) {
        let (_, gdb) = gdb_locals_at(program, rel, stop.marker, stop.exprs);
        assert_eq!(gdb.len(), stop.exprs.len(), "gdb answered {gdb:?}");
        for ((e, g), t) in stop.exprs.iter().zip(&gdb).zip(ours) {
            assert!(
                !g.is_empty(),
                "gdb cannot evaluate {e} at {} ({tag})",
                stop.marker
            );
            total += 1;
            if g != t {
                differ.push(format!("{}: {e}: gdb {g:?}, tandem {t:?}", stop.marker));
            }
        }
    }
    eprintln!(
        "{tag}: {} of {total} expressions equal to gdb's output",
        total - differ.len()
    );
    assert!(differ.is_empty(), "{tag}:\n{}", differ.join("\n"));
}

fn cpp_program(dwarf: &str) -> std::path::PathBuf {
    build(CPP, "g++", &["-g", "-O0", dwarf])
}

#[test]
fn cpp_qualified_names_equal_gdb_dwarf5() {
    equal_gdb(&cpp_program("-gdwarf-5"), CPP, CPP_STOPS, "g++ DWARF 5");
}

#[test]
fn cpp_qualified_names_equal_gdb_dwarf4() {
    equal_gdb(&cpp_program("-gdwarf-4"), CPP, CPP_STOPS, "g++ DWARF 4");
}

#[test]
fn rust_statics_by_path_equal_gdb() {
    let program = build(RUST, "rustc", &[]);
    equal_gdb(&program, RUST, RUST_STOPS, "rustc");
}

/// gdb's error for `expr` at `marker` (its stderr, where `output` reports errors).
fn gdb_errors(program: &Path, marker: &str, exprs: &[&str]) -> Vec<String> {
    let source = sample_path(CPP);
    let line = line_of(&source, marker);
    let mut cmd = Command::new("gdb");
    cmd.args([
        "-batch",
        "-nx",
        "-ex",
        &format!("break expr_scopes.cpp:{line}"),
    ]);
    cmd.args(["-ex", "run"]);
    for e in exprs {
        // Each error on a line of its own, in order: both streams in one pipe.
        cmd.args(["-ex", "echo @@\\n", "-ex", &format!("output {e}")]);
    }
    let out = Command::new("sh")
        .args(["-c", "exec \"$@\" 2>&1", "sh"])
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .arg(program)
        .output()
        .expect("gdb runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split("@@\n")
        .skip(1)
        .map(|p| p.lines().next().unwrap_or("").to_string())
        .collect()
}

/// The words gdb's message puts in quotes (`No symbol "nope" in namespace "geo".`), or
/// its last word when it quotes none (`There is no field named nope`).
fn named_in(gdb: &str) -> Vec<String> {
    let quoted: Vec<String> = gdb
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    if quoted.is_empty() {
        gdb.split_whitespace()
            .last()
            .into_iter()
            .map(str::to_string)
            .collect()
    } else {
        quoted
    }
}

#[test]
fn unknown_qualified_names_are_refused_as_gdb_refuses_them() {
    let program = cpp_program("-gdwarf-5");
    let source = sample_path(CPP);
    let mut dap = DapClient::new();
    let lines: Vec<i64> = CPP_UNKNOWN
        .iter()
        .map(|(m, _)| line_of(&source, m))
        .collect();
    let mut stopped = dap.launch_to_stop(json!({"program": program}), &source, &lines);
    for ((marker, exprs), line) in CPP_UNKNOWN.iter().zip(&lines) {
        let thread = stopped["body"]["threadId"].as_i64().unwrap();
        let frame = &dap.frames(thread)[0];
        assert_eq!(frame["line"].as_i64(), Some(*line), "{marker}");
        let frame = frame["id"].as_i64().unwrap();
        let gdb = gdb_errors(&program, marker, exprs);
        assert_eq!(gdb.len(), exprs.len(), "gdb answered {gdb:?}");
        for (e, g) in exprs.iter().zip(&gdb) {
            let ours = evaluate(&mut dap, frame, e);
            let message = ours
                .strip_prefix("<error: ")
                .unwrap_or_else(|| panic!("{marker}: {e} is {ours}, gdb says {g:?}"));
            assert!(
                message.starts_with(|c: char| c.is_lowercase()) && !message.ends_with('.'),
                "{e}: {message}"
            );
            for word in named_in(g) {
                assert!(
                    message.contains(&format!("'{word}'")),
                    "{marker}: {e}: gdb says {g:?}, tandem {message:?}"
                );
            }
        }
        dap.ok("continue", json!({"threadId": thread}));
        stopped = dap.event("stopped");
    }
    dap.finish();
}

/// The values of `k` at each stop of the conditional breakpoints of `CONDITIONS`.
const CONDITIONS: &[(&str, &str)] = &[
    (
        "SCOPES NAMESPACE",
        "k + counter == 73 || geo::counter * k == 14 || ::counter + k == -1",
    ),
    (
        "SCOPES METHOD",
        "made == 3 && Shape::sides == 4 && geo::Shape::made + id == 9 && mode == Mode::Fast",
    ),
];

/// gdb's stops at the breakpoints of [`CONDITIONS`]: `LINE k=K` (`LINE` alone in the
/// method, which has no `k`).
fn gdb_condition_stops(program: &Path) -> Vec<String> {
    let source = sample_path(CPP);
    let mut script = String::from("set pagination off\nset confirm off\n");
    for (marker, condition) in CONDITIONS {
        let line = line_of(&source, marker);
        script += &format!("break expr_scopes.cpp:{line} if {condition}\ncommands\nsilent\n");
        script += &format!("echo STOP {line}");
        if marker.contains("NAMESPACE") {
            script += "\necho \\ k=\noutput k";
        }
        script += "\necho \\n\ncontinue\nend\n";
    }
    script += "run\n";
    let path = std::env::temp_dir().join(format!("tandem-scopes-{}.gdb", std::process::id()));
    std::fs::write(&path, script).unwrap();
    let out = Command::new("gdb")
        .args(["-batch", "-nx", "-x"])
        .arg(&path)
        .arg(program)
        .output()
        .expect("gdb runs");
    let _ = std::fs::remove_file(&path);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("exited normally"), "gdb:\n{text}");
    text.lines()
        .filter_map(|l| l.strip_prefix("STOP "))
        .map(str::to_string)
        .collect()
}

/// tandem's stops at the same breakpoints, in gdb's form; `in_debuggee` lets conditions
/// run in the debuggee (tandem's default), else every hit is decided at the int3.
fn tandem_condition_stops(program: &Path, in_debuggee: bool) -> Vec<String> {
    let source = sample_path(CPP);
    let env: &[(&str, &str)] = if in_debuggee {
        &[]
    } else {
        &[("TANDEM_CONDITIONS_IN_DEBUGGEE", "0")]
    };
    let mut dap = DapClient::with_peer(Peer::spawn(Protocol::Dap, &[], env));
    dap.initialize();
    dap.ok("launch", json!({"program": program}));
    let bps: Vec<_> = CONDITIONS
        .iter()
        .map(|(m, c)| json!({"line": line_of(&source, m), "condition": c}))
        .collect();
    let body = dap.ok(
        "setBreakpoints",
        json!({"source": {"path": source}, "breakpoints": bps}),
    );
    for bp in body["breakpoints"].as_array().unwrap() {
        assert_eq!(bp["verified"], true, "{bp}");
    }
    dap.ok("configurationDone", json!({}));
    let mut stops = Vec::new();
    loop {
        let event = dap
            .first_event_of(&["stopped", "exited"], support::PATIENCE)
            .expect("a stop or the end");
        if event["event"] == "exited" {
            break;
        }
        let thread = event["body"]["threadId"].as_i64().unwrap();
        let frame = dap.frames(thread)[0].clone();
        let mut stop = frame["line"].as_i64().unwrap().to_string();
        if let Some(k) = dap
            .request(
                "evaluate",
                json!({"expression": "k", "frameId": frame["id"], "context": "watch"}),
            )
            .get("body")
            .and_then(|b| b["result"].as_str().map(str::to_string))
        {
            stop += &format!(" k={k}");
        }
        stops.push(stop);
        dap.ok("continue", json!({"threadId": thread}));
    }
    dap.finish();
    stops
}

#[test]
fn conditions_on_qualified_names_stop_where_gdb_stops() {
    let program = cpp_program("-gdwarf-5");
    let gdb = gdb_condition_stops(&program);
    assert!(gdb.len() > 1, "gdb stopped at {gdb:?}");
    for in_debuggee in [true, false] {
        let ours = tandem_condition_stops(&program, in_debuggee);
        assert_eq!(ours, gdb, "conditions in the debuggee: {in_debuggee}");
    }
}
