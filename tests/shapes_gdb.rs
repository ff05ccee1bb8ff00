//! Values of C's corners as gdb shows them (issue #29): samples/c/shapes_probe.c, built
//! -O0 and -O2, stopped at each `STOP` line; every argument (`info args`), local (`info
//! locals`) and global of [`GLOBALS`] (`output`) gdb shows is compared with tandem's
//! DAP variables (Arguments and Locals scopes) and `evaluate`, text for text. The
//! probe holds array bounds in one-byte forms (`unsigned char [256]`, `char [200]`,
//! `int [3][150]`), VLAs of one and two dimensions, a flexible array member on the
//! heap, signed enum bitfields, bitfields across bytes, anonymous members, `_Complex`
//! of every width, `const volatile`, odd-sized structs by value, arrays of structs,
//! nested arrays, pointers to arrays and function pointers, and at -O2 pointers that
//! exist only as `DW_OP_implicit_pointer` (`<synthetic pointer>`, read through).
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::collections::HashMap;
use std::path::Path;

use serde_json::json;
use support::dap::{build, line_of, sample_path, stack_free, DapClient};

const SAMPLE: &str = "c/shapes_probe.c";
const STOPS: &[&str] = &[
    "STOP by_value",
    "STOP arrays",
    "STOP records",
    "STOP implicit",
];
/// Globals and expressions printed at every stop, also whole arrays: gdb prints them
/// with `<repeats N times>` runs and at most 200 elements (`g_table`, an `unsigned char
/// [256]`, as a string cut with `...`). `g_row` is read through its elements and type:
/// gdb prints a pointer to an array with its type and symbol (`(int (*)[4]) 0x…
/// <g_matrix+80>`), a form tandem's summaries do not use.
const GLOBALS: &[&str] = &[
    "g_table[1]",
    "g_table[255]",
    "sizeof(g_table)",
    "g_buf",
    "g_grid[2][149]",
    "g_grid[1][0]",
    "sizeof(g_grid)",
    "sizeof(g_grid[1])",
    "g_matrix[1][2]",
    "g_matrix[1][2][3]",
    "sizeof(g_matrix)",
    "*g_row",
    "(*g_row)[3]",
    "g_points",
    "g_points[2].y",
    "g_cv",
    "g_cf",
    "g_cd",
    "g_cld",
    "g_ld",
    "g_flags",
    "g_flags.m",
    "g_flags.across",
    "g_flags.wide",
    "g_anon",
    "g_anon.f",
    "g_anon.y",
    "g_table",
    "g_grid",
    "g_matrix",
    "g_points",
];

/// Expressions of each stop's own locals (in the order of [`STOPS`]): elements and
/// sizes of VLAs, the flexible array member, bitfields and anonymous members. Where gdb
/// refuses one (the error goes to its stderr, the text is empty), tandem must refuse it
/// too.
const STOP_EXPRS: &[&[&str]] = &[
    &["o3.c", "o5.bytes[4]", "o12.z", "o12.z[3]", "pt.y", "r"],
    &[
        "vla[2]",
        "vla[n - 1]",
        "vla2[1][1]",
        "vla2[2][0]",
        "sizeof vla",
        "sizeof(vla2)",
        "sizeof(vla2[0])",
        "*prow",
        "(*prow)[1]",
        "pts[1].y",
        "nest[1][0]",
        "name[2]",
    ],
    &[
        "*fx", "fx->d[3]", "fx->n", "f.m", "f.across", "f.k", "f.s", "a.f", "a.y", "cvs", "cvs + 1",
    ],
    &["*pp", "pp->y", "msg[1]", "*msg", "ap[1]", "ap[-1]"],
];

/// Globals whose type gdb's `whatis` names, compared with the type of tandem's
/// `evaluate` (the array bounds read from DWARF).
const TYPES: &[&str] = &[
    "g_table", "g_buf", "g_grid", "g_matrix", "g_points", "g_row",
];

/// One stop's values by name: arguments and locals, then globals.
type Stop = HashMap<String, String>;

/// What gdb shows at each stop, in the order of [`STOPS`] (the order the program
/// reaches them).
fn gdb_stops(program: &Path) -> Vec<Stop> {
    let source = sample_path(SAMPLE);
    let file = source.file_name().unwrap().to_string_lossy().into_owned();
    // Without gdb's own LINES and COLUMNS the program's stack is where it is under
    // tandem, so addresses on it compare too.
    let mut cmds = vec![
        "set pagination off".to_string(),
        "unset environment LINES".into(),
        "unset environment COLUMNS".into(),
    ];
    for s in STOPS {
        cmds.push(format!("break {file}:{}", line_of(&source, s)));
    }
    cmds.push("run".into());
    for exprs in STOP_EXPRS {
        cmds.extend([
            "echo STOP\\n".into(),
            "info args".into(),
            "info locals".into(),
        ]);
        for g in GLOBALS.iter().chain(exprs.iter()) {
            cmds.extend([
                format!("echo GLOBAL {g} =\\040"),
                format!("output {g}"),
                "echo \\n".into(),
            ]);
        }
        for t in TYPES {
            cmds.extend([format!("echo TYPE {t}\\040"), format!("whatis {t}")]);
        }
        cmds.push("continue".into());
    }
    let mut args: Vec<String> = vec!["-batch".into(), "-nx".into()];
    for c in cmds {
        args.extend(["-ex".into(), c]);
    }
    let out = std::process::Command::new("gdb")
        .args(&args)
        .arg(program)
        .output()
        .expect("gdb runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let stops: Vec<Stop> = text
        .split("STOP\n")
        .skip(1)
        .map(|part| {
            part.lines()
                .map(|l| l.strip_prefix("GLOBAL ").unwrap_or(l))
                .map(|l| {
                    l.strip_prefix("TYPE ")
                        .and_then(|t| t.split_once(" type = "))
                        .map_or(l.to_string(), |(n, t)| format!("whatis {n} = {t}"))
                })
                .filter_map(|l| {
                    let (n, v) = l.split_once(" = ")?;
                    let known = GLOBALS.contains(&n)
                        || STOP_EXPRS.iter().any(|x| x.contains(&n))
                        || n.strip_prefix("whatis ")
                            .is_some_and(|t| TYPES.contains(&t))
                        || n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                    known.then(|| (n.to_string(), stack_free(v)))
                })
                .collect()
        })
        .collect();
    assert_eq!(stops.len(), STOPS.len(), "gdb stopped otherwise:\n{text}");
    stops
}

/// What tandem shows at each stop over DAP.
fn tandem_stops(program: &Path) -> Vec<Stop> {
    let source = sample_path(SAMPLE);
    let lines: Vec<i64> = STOPS.iter().map(|s| line_of(&source, s)).collect();
    let mut dap = DapClient::new();
    let mut stopped = dap.launch_to_stop(json!({"program": program}), &source, &lines);
    let mut stops = Vec::new();
    for (i, exprs) in STOP_EXPRS.iter().enumerate() {
        let thread = stopped["body"]["threadId"].as_i64().unwrap();
        let frame = dap.frames(thread)[0]["id"].as_i64().unwrap();
        let mut stop = Stop::new();
        for scope in ["Arguments", "Locals"] {
            for v in dap.scope_vars(frame, scope) {
                let name = v["name"].as_str().unwrap().to_string();
                stop.insert(name, v["value"].as_str().unwrap().to_string());
            }
        }
        for e in exprs.iter() {
            let r = dap.request(
                "evaluate",
                json!({"expression": e, "frameId": frame, "context": "watch"}),
            );
            // A refused expression compares as gdb's empty text.
            let text = r["body"]["result"].as_str().unwrap_or("").to_string();
            let text = if r["success"] == true {
                text
            } else {
                String::new()
            };
            stop.insert(e.to_string(), text);
        }
        for g in GLOBALS {
            let r = dap.request(
                "evaluate",
                json!({"expression": g, "frameId": frame, "context": "watch"}),
            );
            let text = if r["success"] == true {
                r["body"]["result"].as_str().unwrap().to_string()
            } else {
                format!("<error: {}>", r["message"].as_str().unwrap_or(""))
            };
            stop.insert(g.to_string(), text);
        }
        for t in TYPES {
            let r = dap.evaluate(frame, t);
            let ty = r["type"].as_str().unwrap_or("").to_string();
            stop.insert(format!("whatis {t}"), ty);
        }
        for v in stop.values_mut() {
            *v = stack_free(v);
        }
        stops.push(stop);
        if i + 1 < STOPS.len() {
            dap.ok("continue", json!({"threadId": thread}));
            stopped = dap.event("stopped");
        }
    }
    dap.finish();
    stops
}

/// Compares every value gdb shows with tandem's; returns (equal, compared, the
/// differences).
fn compare(opt: &str) -> (usize, usize, Vec<String>) {
    let program = build(SAMPLE, "gcc", &["-g", opt]);
    let gdb = gdb_stops(&program);
    let ours = tandem_stops(&program);
    let (mut equal, mut total, mut differ) = (0, 0, Vec::new());
    for ((stop, g), t) in STOPS.iter().zip(&gdb).zip(&ours) {
        let mut names: Vec<&String> = g.keys().collect();
        names.sort();
        for name in names {
            total += 1;
            let theirs = &g[name];
            match t.get(name) {
                Some(v) if v == theirs => equal += 1,
                v => differ.push(format!(
                    "{opt} {stop}: {name}: gdb {theirs:?}, tandem {v:?}"
                )),
            }
        }
    }
    eprintln!(
        "{opt}: {equal} of {total} values equal to gdb's ({:.1}%)",
        100.0 * equal as f64 / total.max(1) as f64
    );
    for d in &differ {
        eprintln!("  {d}");
    }
    (equal, total, differ)
}

#[test]
fn corner_values_equal_gdb_at_o0() {
    let (_, total, differ) = compare("-O0");
    assert!(total >= 60, "gdb showed only {total} values");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

#[test]
fn corner_values_equal_gdb_at_o2() {
    let (_, total, differ) = compare("-O2");
    assert!(total >= 60, "gdb showed only {total} values");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
