//! Values whose location is out of the ordinary — thread-local storage of the executable
//! and of a shared library, vectors in %xmm registers, long doubles on the x87 stack —
//! compared value by value with gdb at -O0 and -O2: every argument and local gdb lists at
//! each stop, and expressions through `evaluate`.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use support::dap::{line_of, sample_path, value, DapClient};

/// One stop as a debugger shows it: each argument's and local's text by name, then each
/// expression's text (empty when it cannot be evaluated).
#[derive(Debug, Default, PartialEq)]
struct StopValues {
    vars: BTreeMap<String, String>,
    exprs: Vec<String>,
}

/// gdb's `info args`, `info locals` and `output EXPR` at every stop at the marked lines,
/// in the order the stops come.
fn gdb_stops(
    program: &Path,
    markers: &[(&Path, &str)],
    exprs: &dyn Fn(usize) -> Vec<&'static str>,
    stops: usize,
) -> Vec<StopValues> {
    let mut commands = vec![
        "set pagination off".to_string(),
        "set breakpoint pending on".to_string(),
    ];
    for (source, m) in markers {
        let file = source.file_name().unwrap().to_string_lossy().into_owned();
        commands.push(format!("break {file}:{}", line_of(source, m)));
    }
    commands.push("run".into());
    for n in 0..stops {
        commands.extend([
            "echo @STOP\\n".into(),
            "info args".into(),
            "info locals".into(),
        ]);
        for e in exprs(n) {
            commands.extend([
                "echo @EXPR\\n".to_string(),
                format!("output {e}"),
                "echo \\n".into(),
            ]);
        }
        commands.push("continue".into());
    }
    let mut cmd = Command::new("gdb");
    cmd.args(["-batch", "-nx"]);
    for c in &commands {
        cmd.args(["-ex", c]);
    }
    let out = cmd.arg(program).output().expect("gdb runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let parsed: Vec<StopValues> = stdout
        .split("@STOP\n")
        .skip(1)
        .map(|stop| {
            let mut parts = stop.split("@EXPR\n");
            let vars = parts
                .next()
                .unwrap()
                .lines()
                .filter_map(|l| l.split_once(" = "))
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect();
            let exprs = parts
                .map(|p| p.lines().next().unwrap_or("").trim_end().to_string())
                .collect();
            StopValues { vars, exprs }
        })
        .collect();
    assert_eq!(
        parsed.len(),
        stops,
        "gdb made {} stops: {stdout}",
        parsed.len()
    );
    parsed
}

/// tandem's Arguments and Locals and `evaluate` of each expression at the same stops.
fn tandem_stops(
    program: &Path,
    markers: &[(&Path, &str)],
    exprs: &dyn Fn(usize) -> Vec<&'static str>,
    stops: usize,
) -> Vec<StopValues> {
    let mut dap = DapClient::new();
    dap.initialize();
    dap.ok("launch", json!({"program": program}));
    let mut sources: Vec<&Path> = markers.iter().map(|(s, _)| *s).collect();
    sources.dedup();
    for source in sources {
        let bps: Vec<_> = markers
            .iter()
            .filter(|(s, _)| *s == source)
            .map(|(s, m)| json!({"line": line_of(s, m)}))
            .collect();
        // A library's breakpoints stay pending until it is loaded.
        dap.ok(
            "setBreakpoints",
            json!({"source": {"path": source}, "breakpoints": bps}),
        );
    }
    dap.ok("configurationDone", json!({}));
    let mut stopped = dap.event("stopped");
    let mut out = Vec::new();
    for n in 0..stops {
        let thread = stopped["body"]["threadId"].as_i64().unwrap();
        let frame = dap.frames(thread)[0]["id"].as_i64().unwrap();
        let mut vars = BTreeMap::new();
        for scope in ["Arguments", "Locals"] {
            for v in dap.scope_vars(frame, scope) {
                vars.insert(v["name"].as_str().unwrap().to_string(), value(&v));
            }
        }
        let exprs = exprs(n)
            .iter()
            .map(|e| {
                let r = dap.request(
                    "evaluate",
                    json!({"expression": e, "frameId": frame, "context": "watch"}),
                );
                let message = r["message"].as_str().unwrap_or("");
                if r["success"] == true {
                    r["body"]["result"].as_str().unwrap_or("").to_string()
                } else {
                    format!("<error: {message}>")
                }
            })
            .collect();
        out.push(StopValues { vars, exprs });
        if n + 1 < stops {
            dap.ok("continue", json!({"threadId": thread}));
            stopped = dap.event("stopped");
        }
    }
    dap.finish();
    out
}

/// Compares tandem's stops with gdb's value by value; returns (equal, compared) and the
/// differences, each named by stop, variable or expression.
fn compare(
    gdb: &[StopValues],
    ours: &[StopValues],
    exprs: &dyn Fn(usize) -> Vec<&'static str>,
) -> (usize, usize, Vec<String>) {
    let (mut equal, mut total, mut diffs) = (0, 0, Vec::new());
    for (i, (g, t)) in gdb.iter().zip(ours).enumerate() {
        for (name, want) in &g.vars {
            total += 1;
            match t.vars.get(name) {
                Some(got) if got == want => equal += 1,
                got => diffs.push(format!("stop {i}: {name}: gdb {want:?}, tandem {got:?}")),
            }
        }
        for (k, want) in g.exprs.iter().enumerate() {
            total += 1;
            let got = t.exprs.get(k).cloned().unwrap_or_default();
            // gdb's `output` prints nothing on stdout for an expression it refuses, and
            // `<optimized out>` for a variable whose value is gone, which tandem's
            // evaluate refuses saying so.
            let refused = got.starts_with("<error: ");
            if &got == want
                || (want.is_empty() && refused)
                || (want == "<optimized out>" && refused && got.contains("optimized out"))
            {
                equal += 1;
            } else {
                diffs.push(format!(
                    "stop {i}: evaluate {}: gdb {want:?}, tandem {got:?}",
                    exprs(i)[k]
                ));
            }
        }
    }
    (equal, total, diffs)
}

fn scratch(tag: &str) -> PathBuf {
    support::dap::scratch_dir(&format!("loc-{tag}"))
}

fn gcc(args: &[&std::ffi::OsStr]) {
    let status = Command::new("gcc").args(args).status().unwrap();
    assert!(status.success(), "gcc {args:?}");
}

/// Runs one probe at each of `opts` and requires every value gdb shows to be equal.
fn probe_at(
    tag: &str,
    opts: &[&str],
    program_for: impl Fn(&str, &Path) -> PathBuf,
    markers: &[(&Path, &str)],
    exprs: &dyn Fn(usize) -> Vec<&'static str>,
    stops: usize,
    check: impl Fn(&str, &[StopValues]),
) {
    for opt in opts {
        let dir = scratch(&format!("{tag}{opt}"));
        let program = program_for(opt, &dir);
        let gdb = gdb_stops(&program, markers, exprs, stops);
        check(opt, &gdb);
        let ours = tandem_stops(&program, markers, exprs, stops);
        let (equal, total, diffs) = compare(&gdb, &ours, exprs);
        eprintln!("{tag} {opt}: {equal}/{total} values equal to gdb");
        assert!(
            diffs.is_empty(),
            "{tag} {opt}: {equal}/{total} equal; differences:\n{}",
            diffs.join("\n")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn probe(
    tag: &str,
    program_for: impl Fn(&str, &Path) -> PathBuf,
    markers: &[(&Path, &str)],
    exprs: &dyn Fn(usize) -> Vec<&'static str>,
    stops: usize,
    check: impl Fn(&str, &[StopValues]),
) {
    probe_at(
        tag,
        &["-O0", "-O2"],
        program_for,
        markers,
        exprs,
        stops,
        check,
    );
}

/// An `int4` kept in %xmm0 is read at the register's full 16 bytes, and `register long
/// double`s on the x87 stack are read from st0 and st1 (FXSAVE keeps them in stack
/// order). Before, the vector read 8 bytes (`{1, -2, 0, 0}`) and st1 was "register 34 is
/// not available". A double argument whose entry value (`DW_OP_entry_value(xmm0)`) the
/// call site does not describe is `<optimized out>`, as gdb has it (was: "register 17 is
/// not available"); one whose call site gives it as a typed constant
/// (`DW_OP_const_type`) is that constant.
#[test]
fn vector_and_x87_registers_read_as_gdb_reads_them() {
    let source = sample_path("c/loc_regs.c");
    probe(
        "regs",
        |opt, dir| {
            let exe = dir.join("loc_regs");
            gcc(&[
                "-g".as_ref(),
                opt.as_ref(),
                "-o".as_ref(),
                exe.as_os_str(),
                source.as_os_str(),
            ]);
            exe
        },
        &[
            (&source, "vec stop"),
            (&source, "x87 stop"),
            (&source, "xmm entry stop"),
        ],
        &|n| match n {
            0 => vec!["s", "s[2] + s[3]", "s[1] * 2"],
            1 => vec!["p", "q"],
            _ => vec!["n", "x", "r", "x * 2"],
        },
        4,
        |opt, gdb| {
            // The probe is only worth something where gdb sees the values in registers.
            assert_eq!(
                gdb[0].vars.get("s").map(String::as_str),
                Some("{1, -2, 300, 40000}"),
                "{opt}: {gdb:?}"
            );
            if opt == "-O2" {
                assert_eq!(
                    gdb[1].vars.get("p").map(String::as_str),
                    Some("1.25"),
                    "{gdb:?}"
                );
                assert_eq!(
                    gdb[1].vars.get("q").map(String::as_str),
                    Some("2"),
                    "{gdb:?}"
                );
                assert_eq!(
                    gdb[2].vars.get("x").map(String::as_str),
                    Some("<optimized out>"),
                    "{gdb:?}"
                );
                assert_eq!(
                    gdb[3].vars.get("x").map(String::as_str),
                    Some("1.25"),
                    "{gdb:?}"
                );
            }
        },
    );
}

/// `__thread` variables of the executable and of a shared library, in the main thread and
/// in three more, as variables and through `evaluate`: the TLS block is the thread's dtv
/// entry for the module's id (1 for the executable, the link map's `l_tls_modid` for a
/// library). Before, each was "thread pointer unknown".
#[test]
fn thread_local_variables_read_as_gdb_reads_them_in_every_thread() {
    let source = sample_path("c/loc_tls.c");
    let lib_source = sample_path("c/loc_tls_lib.c");
    probe(
        "tls",
        |opt, dir| {
            let lib = dir.join("libloctls.so");
            let exe = dir.join("loc_tls");
            gcc(&[
                "-g".as_ref(),
                opt.as_ref(),
                "-shared".as_ref(),
                "-fPIC".as_ref(),
                "-o".as_ref(),
                lib.as_os_str(),
                lib_source.as_os_str(),
            ]);
            let rpath = format!("-Wl,-rpath,{}", dir.display());
            gcc(&[
                "-g".as_ref(),
                opt.as_ref(),
                "-pthread".as_ref(),
                "-o".as_ref(),
                exe.as_os_str(),
                source.as_os_str(),
                lib.as_os_str(),
                rpath.as_ref(),
            ]);
            exe
        },
        &[(&lib_source, "lib stop"), (&source, "tls stop")],
        // In a frame of one module, the other module's `__thread` integers (tandem reads
        // another module's globals only as integers and doubles).
        &|n| {
            if n % 2 == 0 {
                vec![
                    "lib_counter",
                    "lib_tag",
                    "lib_tag[3]",
                    "tls_count",
                    "lib_counter * 2",
                ]
            } else {
                vec![
                    "tls_count",
                    "tls_big",
                    "tls_self",
                    "tls_self.name",
                    "lib_counter",
                    "tls_big[1] + lib_counter",
                ]
            }
        },
        8,
        |opt, gdb| {
            // Each thread has its own copies: gdb sees the main thread's and the last
            // thread's differ, in the executable and in the library.
            assert_eq!(gdb[1].exprs[0], "100", "{opt}: {gdb:?}");
            assert_eq!(gdb[7].exprs[0], "130", "{opt}: {gdb:?}");
            assert_eq!(gdb[7].exprs[4], "10", "{opt}: {gdb:?}");
            assert_eq!(gdb[6].exprs[1], "\"lib3\\000\\000\\000\"", "{opt}: {gdb:?}");
        },
    );
}

/// gdb's `gcore` of `program` stopped at the first stop at `marker` in `source`.
fn gdb_gcore(program: &Path, source: &Path, marker: &str, core: &Path) {
    let file = source.file_name().unwrap().to_string_lossy().into_owned();
    let out = Command::new("gdb")
        .args(["-batch", "-nx", "-ex", "set breakpoint pending on"])
        .args(["-ex", &format!("break {file}:{}", line_of(source, marker))])
        .args([
            "-ex",
            "run",
            "-ex",
            &format!("gcore {}", core.display()),
            "-ex",
            "kill",
        ])
        .arg(program)
        .output()
        .expect("gdb runs");
    assert!(
        core.exists(),
        "gdb wrote no core: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The same values from a core file (`tandem debug --core --print`, the first thread's
/// innermost frame): the executable's and the library's `__thread` variables through the
/// dtv in the core's memory, the xmm and x87 registers from NT_FPREGSET.
#[test]
fn thread_locals_and_fp_registers_read_from_a_core_as_gdb_reads_them() {
    let tls_source = sample_path("c/loc_tls.c");
    let lib_source = sample_path("c/loc_tls_lib.c");
    let regs_source = sample_path("c/loc_regs.c");
    for opt in ["-O0", "-O2"] {
        let dir = scratch(&format!("core{opt}"));
        let lib = dir.join("libloctls.so");
        let tls = dir.join("loc_tls");
        let regs = dir.join("loc_regs");
        let rpath = format!("-Wl,-rpath,{}", dir.display());
        gcc(&[
            "-g".as_ref(),
            opt.as_ref(),
            "-shared".as_ref(),
            "-fPIC".as_ref(),
            "-o".as_ref(),
            lib.as_os_str(),
            lib_source.as_os_str(),
        ]);
        gcc(&[
            "-g".as_ref(),
            opt.as_ref(),
            "-pthread".as_ref(),
            "-o".as_ref(),
            tls.as_os_str(),
            tls_source.as_os_str(),
            lib.as_os_str(),
            rpath.as_ref(),
        ]);
        gcc(&[
            "-g".as_ref(),
            opt.as_ref(),
            "-o".as_ref(),
            regs.as_os_str(),
            regs_source.as_os_str(),
        ]);
        let cases: [(&Path, &Path, &str, &[&str]); 3] = [
            (
                &tls,
                &tls_source,
                "tls stop",
                &["tls_count", "tls_big", "tls_self.name", "lib_counter"],
            ),
            (
                &tls,
                &lib_source,
                "lib stop",
                &["lib_counter", "lib_tag", "tls_count"],
            ),
            (&regs, &regs_source, "x87 stop", &["p", "q", "x"]),
        ];
        for (n, (program, source, marker, prints)) in cases.into_iter().enumerate() {
            let core = dir.join(format!("core{n}"));
            gdb_gcore(program, source, marker, &core);
            let gdb = support::gdb_core_text(program, &core, prints);
            let report = support::tandem_debug_core(program, &core, prints);
            let ours: Vec<String> = report["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["value"].as_str().unwrap().to_owned())
                .collect();
            // gdb's lines after the backtrace: one per print.
            let gdb_lines: Vec<&str> = gdb
                .lines()
                .rev()
                .take(prints.len())
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            eprintln!("core {opt} {marker}: gdb {gdb_lines:?}, tandem {ours:?}");
            for (k, p) in prints.iter().enumerate() {
                if opt == "-O0" && marker == "x87 stop" && k < 2 {
                    // p and q live on the x87 stack only at -O2; gdb: <optimized out>.
                    assert_eq!(gdb_lines[k], "<optimized out>", "{gdb}");
                    continue;
                }
                assert_eq!(
                    ours.get(k).map(String::as_str),
                    Some(gdb_lines[k]),
                    "{opt} {marker}: {p}: gdb {gdb}\ntandem {report}"
                );
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A struct whose location has empty `DW_OP_piece`s (gcc -O2, at the function's entry):
/// gdb shows the struct with only the missing members `<optimized out>`
/// (`{a = 3, b = <optimized out>, c = <optimized out>}`); before, tandem showed the whole
/// struct `<optimized out>`. At -O0 the struct is in memory; the later stop has it whole.
#[test]
fn a_struct_with_empty_pieces_shows_only_the_missing_members_optimized_out() {
    let source = sample_path("c/loc_pieces.c");
    let build = |opt: &str, dir: &Path| {
        let exe = dir.join("loc_pieces");
        gcc(&[
            "-g".as_ref(),
            opt.as_ref(),
            "-o".as_ref(),
            exe.as_os_str(),
            source.as_os_str(),
        ]);
        exe
    };
    probe_at(
        "pieces",
        &["-O2"],
        build,
        &[(&source, "piece entry"), (&source, "piece stop")],
        &|_| vec!["x"],
        2,
        |_, gdb| {
            assert_eq!(
                gdb[0].vars.get("p").map(String::as_str),
                Some("{a = 3, b = <optimized out>, c = <optimized out>}"),
                "{gdb:?}"
            );
        },
    );
    probe_at(
        "pieces",
        &["-O0"],
        build,
        &[(&source, "piece stop")],
        &|_| vec!["p", "p.b"],
        1,
        |_, _| {},
    );
}
