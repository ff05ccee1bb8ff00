//! Post-mortem debugging: `tandem debug PROGRAM --core CORE` on cores written by the kernel
//! (a crash) and by gdb's `gcore` (at a breakpoint), of a program with two waiting threads
//! and a recursion, at -O0 and -O2. Every thread's frames in the program (function, line,
//! arguments) and the printed values equal gdb's on the same core. Bad cores (corrupt,
//! truncated, another program's) are refused with a clear error.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use support::dap::{build, scratch_dir};

const SOURCE: &str = "c/core_crash.c";
const PRINTS: [&str; 5] = ["*p", "p->y", "global_counter", "mode", "scale"];

/// One frame in the program, as both debuggers are compared on it.
#[derive(Debug, PartialEq, Eq)]
struct Row {
    function: String,
    line: u32,
    args: Vec<(String, String)>,
}

/// Each thread (LWP) with its frames in the program, by LWP.
type Threads = Vec<(i64, Vec<Row>)>;

fn program(opt: &str) -> PathBuf {
    build(SOURCE, "gcc", &["-g", opt, "-pthread"])
}

/// A core of the program crashing (SIGSEGV in `bottom`), written by the kernel when the
/// core pattern writes a plain file into the working directory; otherwise (a pipe to a
/// handler, another directory) by gdb at the crash, so the test never changes the
/// system's settings.
fn kernel_core(program: &Path, dir: &Path) -> PathBuf {
    let pattern = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap_or_default();
    let pattern = pattern.trim();
    if !pattern.starts_with('|') && !pattern.contains('/') && !pattern.is_empty() {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().unwrap().to_string_lossy().starts_with("core") {
                std::fs::remove_file(p).unwrap();
            }
        }
        let status = Command::new("sh")
            .arg("-c")
            .arg("ulimit -c unlimited && exec \"$0\" crash")
            .arg(program)
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(!status.success(), "the program crashes");
        let found = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("core"));
        if let Some(core) = found {
            return core;
        }
        eprintln!(
            "no kernel core in {} (pattern {pattern}): gdb writes it",
            dir.display()
        );
    }
    let core = dir.join("crash.core");
    gdb_gcore(program, &["run crash"], &core);
    core
}

/// A core written by gdb's gcore after `commands` (the program stopped there).
fn gdb_gcore(program: &Path, commands: &[&str], core: &Path) {
    let mut cmd = Command::new("gdb");
    cmd.args(["-batch", "-nx"]);
    for c in commands {
        cmd.args(["-ex", c]);
    }
    cmd.args(["-ex", &format!("gcore {}", core.display()), "-ex", "kill"]);
    let out = cmd.arg(program).output().unwrap();
    assert!(
        core.is_file(),
        "gdb wrote no core: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// An argument value as it is compared: gdb's entry values (`n=n@entry=0`) are the value,
/// and an unreadable one is `<unavailable>` on both sides.
fn norm(value: &str) -> String {
    let v = value.rsplit("@entry=").next().unwrap_or(value).trim();
    if v == "<optimized out>" {
        "<unavailable>".to_owned()
    } else {
        v.to_owned()
    }
}

/// gdb's view of the core: per thread (LWP), its frames in the program; and the values.
fn gdb_view(program: &Path, core: &Path) -> (Threads, Vec<String>) {
    let text = support::gdb_core_text(program, core, &PRINTS);
    let mut threads: Threads = Vec::new();
    let mut values = Vec::new();
    let mut after_bt = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Thread ") {
            let lwp = rest
                .split("(LWP ")
                .nth(1)
                .unwrap()
                .split(')')
                .next()
                .unwrap();
            threads.push((lwp.parse().unwrap(), Vec::new()));
            after_bt = false;
            continue;
        }
        if line.starts_with('#') {
            if threads.is_empty() {
                continue; // the frame gdb shows on loading the core
            }
            after_bt = true;
            let Some((head, place)) = line.rsplit_once(" at ") else {
                continue;
            };
            let Some((file, line_no)) = place.rsplit_once(':') else {
                continue;
            };
            if !file.ends_with("core_crash.c") {
                continue;
            }
            let head = head.split_once("  ").unwrap().1;
            let head = head.split_once(" in ").map_or(head, |(_, f)| f);
            let (function, args) = head.split_once(" (").unwrap();
            let args = args.strip_suffix(')').unwrap();
            let args = args
                .split(", ")
                .filter(|a| !a.is_empty())
                .filter_map(|a| a.split_once('='))
                .filter(|(n, _)| !n.contains('@'))
                .map(|(n, v)| (n.to_owned(), norm(v)))
                .collect();
            threads.last_mut().unwrap().1.push(Row {
                function: function.to_owned(),
                line: line_no.parse().unwrap(),
                args,
            });
            continue;
        }
        if after_bt && !line.is_empty() && !line.starts_with("warning") && !line.starts_with('[') {
            values.push(line.to_owned());
        }
    }
    threads.sort_by_key(|t| t.0);
    (threads, values)
}

/// tandem's view of the same core (`tandem debug --core --json`).
fn tandem_view(program: &Path, core: &Path) -> (Value, Threads, Vec<String>) {
    let report = support::tandem_debug_core(program, core, &PRINTS);
    let mut threads: Threads = report["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let rows = t["frames"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| {
                    f["file"]
                        .as_str()
                        .is_some_and(|f| f.ends_with("core_crash.c"))
                })
                .map(|f| Row {
                    function: f["function"].as_str().unwrap().to_owned(),
                    line: f["line"].as_u64().unwrap() as u32,
                    args: f["args"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|a| {
                            (
                                a["name"].as_str().unwrap().to_owned(),
                                norm(a["value"].as_str().unwrap()),
                            )
                        })
                        .collect(),
                })
                .collect();
            (t["thread"].as_i64().unwrap(), rows)
        })
        .collect();
    threads.sort_by_key(|t| t.0);
    let values = report["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["value"].as_str().unwrap().to_owned())
        .collect();
    (report, threads, values)
}

fn agree(program: &Path, core: &Path, what: &str) -> Value {
    let (gdb_threads, gdb_values) = gdb_view(program, core);
    let (report, threads, values) = tandem_view(program, core);
    assert_eq!(threads.len(), 3, "{what}: three threads: {report}");
    assert_eq!(threads, gdb_threads, "{what}: frames differ from gdb's");
    assert_eq!(values, gdb_values, "{what}: values differ from gdb's");
    assert_eq!(values.len(), PRINTS.len(), "{what}: {values:?}");
    assert_eq!(values[0], "{x = 3, y = 4}", "{what}");
    let args = threads
        .iter()
        .map(|t| t.1.iter().map(|r| r.args.len()).sum::<usize>());
    assert!(args.sum::<usize>() >= 15, "{what}: arguments were compared");
    // The main thread is inside the recursion, the workers wait.
    let main = threads
        .iter()
        .find(|t| t.1.first().is_some_and(|r| r.function == "bottom"))
        .expect("a thread stopped in bottom");
    let depth = main.1.iter().filter(|r| r.function == "recurse").count();
    assert_eq!(depth, 5, "{what}: recurse(4..0) are all frames");
    let waiting = threads
        .iter()
        .filter(|t| t.1.first().is_some_and(|r| r.function == "worker_wait"))
        .count();
    assert_eq!(waiting, 2, "{what}: both workers in worker_wait");
    report
}

#[test]
fn kernel_cores_of_a_crash_agree_with_gdb() {
    for opt in ["-O0", "-O2"] {
        let program = program(opt);
        let dir = scratch_dir(&format!("kcore{opt}"));
        let core = kernel_core(&program, &dir);
        let report = agree(&program, &core, &format!("kernel core {opt}"));
        assert_eq!(report["reason"], "signal 11", "{report}");
        let description = report["description"].as_str().unwrap();
        assert!(
            description.starts_with("SIGSEGV") && description.ends_with("at 0x0"),
            "{description}"
        );
    }
}

#[test]
fn gcore_cores_at_a_breakpoint_agree_with_gdb() {
    for opt in ["-O0", "-O2"] {
        let program = program(opt);
        let dir = scratch_dir(&format!("gcore{opt}"));
        let core = dir.join("bp.core");
        gdb_gcore(&program, &["break bottom", "run"], &core);
        let report = agree(&program, &core, &format!("gcore {opt}"));
        // gdb records its breakpoint's SIGTRAP: a pause, not a crash.
        assert_eq!(report["reason"], "pause", "{report}");
    }
}

fn refused(program: &Path, core: &Path) -> String {
    let out = Command::new(support::tandem_bin())
        .args(["debug", "--core"])
        .arg(core)
        .arg(program)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    // An error exit (the CLI's code for errors), not a panic (101) nor a signal.
    assert_eq!(out.status.code(), Some(2), "refused, not crashed: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn bad_cores_are_refused_with_a_reason() {
    let program = program("-O0");
    let dir = scratch_dir("badcore");
    let core = dir.join("good.core");
    gdb_gcore(&program, &["break bottom", "run"], &core);
    let bytes = std::fs::read(&core).unwrap();

    // Not a core at all: the program itself.
    let err = refused(&program, &program);
    assert!(err.contains("not a core file"), "{err}");

    // Truncated inside the program headers / notes.
    for keep in [10usize, 100, 2000] {
        let cut = dir.join(format!("cut{keep}.core"));
        std::fs::write(&cut, &bytes[..keep]).unwrap();
        let err = refused(&program, &cut);
        assert!(err.contains("core file:"), "{keep}: {err}");
    }

    // Garbage after a valid ELF header: every length checked.
    let mut corrupt = bytes.clone();
    for (i, b) in corrupt.iter_mut().enumerate().skip(64).take(4096) {
        *b = (i * 131 % 251) as u8;
    }
    let bad = dir.join("corrupt.core");
    std::fs::write(&bad, &corrupt).unwrap();
    let _ = refused(&program, &bad);

    // Another program's core: a rebuild with a different build-id at the same path.
    let other = dir.join("other");
    std::fs::copy(&program, &other).unwrap();
    let core_other = dir.join("other.core");
    gdb_gcore(&other, &["break bottom", "run"], &core_other);
    testsupport::compile_into(
        "gcc",
        &[testsupport::sample_path(SOURCE)],
        &["-g", "-O1", "-pthread", "-Wl,--build-id=sha1"],
        &other,
    );
    let err = refused(&other, &core_other);
    assert!(err.contains("does not match the program"), "{err}");
    assert!(err.contains("build-id"), "{err}");
}

/// The same kernel core over DAP: `attach` with `coreFile` (and `launch` with it, the
/// synonym) gives one stop, three threads, gdb's frames and values, memory and modules;
/// requests that would run the program are refused.
#[test]
fn dap_attach_with_core_file_shows_the_crash() {
    use support::dap::DapClient;
    let program = program("-O2");
    let dir = scratch_dir("dapcore");
    let core = kernel_core(&program, &dir);
    let (gdb_threads, gdb_values) = gdb_view(&program, &core);
    for how in ["attach", "launch"] {
        let mut c = DapClient::new();
        c.ok("initialize", json!({"adapterID": "tandem"}));
        c.ok(
            how,
            json!({"program": program.display().to_string(), "coreFile": core.display().to_string()}),
        );
        let caps = c.event("capabilities");
        assert_eq!(caps["body"]["capabilities"]["supportsSetVariable"], false);
        let stopped = c.event("stopped");
        assert_eq!(stopped["body"]["reason"], "exception", "{stopped}");
        let description = stopped["body"]["description"].as_str().unwrap();
        assert!(description.starts_with("SIGSEGV"), "{description}");
        let tid = stopped["body"]["threadId"].as_i64().unwrap();
        c.ok("configurationDone", Value::Null);

        let threads = c.ok("threads", Value::Null);
        let mut ids: Vec<i64> = threads["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_i64().unwrap())
            .collect();
        ids.sort();
        let gdb_ids: Vec<i64> = gdb_threads.iter().map(|t| t.0).collect();
        assert_eq!(ids, gdb_ids, "{how}: the core's threads");

        let stack = c.ok("stackTrace", json!({"threadId": tid}));
        let frames = stack["stackFrames"].as_array().unwrap();
        let got: Vec<(String, u32)> = frames
            .iter()
            .filter(|f| {
                f["source"]["path"]
                    .as_str()
                    .is_some_and(|p| p.ends_with("core_crash.c"))
            })
            .map(|f| {
                (
                    f["name"].as_str().unwrap().to_owned(),
                    f["line"].as_u64().unwrap() as u32,
                )
            })
            .collect();
        let want: Vec<(String, u32)> = gdb_threads
            .iter()
            .find(|t| t.0 == tid)
            .unwrap()
            .1
            .iter()
            .map(|r| (r.function.clone(), r.line))
            .collect();
        assert_eq!(got, want, "{how}: the crashed thread's frames");

        let top = frames[0]["id"].as_i64().unwrap();
        let scopes = c.ok("scopes", json!({"frameId": top}));
        // The same scopes as at a live stop (Locals, Arguments, Globals and statics,
        // Registers): the core is read by the live handlers.
        let args_ref = scopes["scopes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "Arguments")
            .and_then(|s| s["variablesReference"].as_i64())
            .unwrap();
        let vars = c.ok("variables", json!({"variablesReference": args_ref}));
        let names: Vec<&str> = vars["variables"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["p", "mode", "scale"], "{how}: {vars}");

        let value = c.ok("evaluate", json!({"expression": "*p", "frameId": top}));
        assert_eq!(value["result"], gdb_values[0].as_str(), "{how}");
        let p = c.ok("evaluate", json!({"expression": "p", "frameId": top}));
        let addr = p["result"].as_str().unwrap().to_owned();
        let mem = c.ok("readMemory", json!({"memoryReference": addr, "count": 8}));
        assert_eq!(mem["data"], "AwAAAAQAAAA=", "{how}: x = 3, y = 4 in memory");

        // The faulting instruction, two before it and two after, as gdb's x/i shows it.
        let pc = frames[0]["instructionPointerReference"].as_str().unwrap();
        let dis = c.ok(
            "disassemble",
            json!({"memoryReference": pc, "instructionOffset": -2, "instructionCount": 5}),
        );
        let insns = dis["instructions"].as_array().unwrap();
        assert_eq!(insns.len(), 5, "{dis}");
        assert_eq!(insns[2]["address"], pc, "{dis}");
        let gdb = Command::new("gdb")
            .args(["-batch", "-nx", "-ex", "x/i $pc"])
            .arg(&program)
            .arg(&core)
            .output()
            .unwrap();
        let gdb = String::from_utf8_lossy(&gdb.stdout);
        let gdb_line = gdb.lines().find(|l| l.starts_with("=> ")).unwrap();
        let (head, text) = gdb_line.split_once(":\t").unwrap();
        let squeeze = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(
            squeeze(insns[2]["instruction"].as_str().unwrap()),
            squeeze(text),
            "{how}: {gdb_line}"
        );
        let symbol = head.split('<').nth(1).unwrap().trim_end_matches('>');
        assert_eq!(insns[2]["symbol"], symbol, "{how}: {gdb_line}");

        let modules = c.ok("modules", Value::Null);
        assert!(
            modules["modules"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["path"] == program.display().to_string()),
            "{modules}"
        );
        for (command, arguments) in [
            ("continue", json!({"threadId": tid})),
            ("next", json!({"threadId": tid})),
            (
                "setVariable",
                json!({"variablesReference": args_ref, "name": "mode", "value": "0"}),
            ),
            (
                "writeMemory",
                json!({"memoryReference": addr, "data": "AA=="}),
            ),
        ] {
            let e = c.err(command, arguments);
            assert!(e.contains("core file"), "{how} {command}: {e}");
        }
        c.ok("disconnect", json!({}));
    }
}

/// A shared library replaced after the core was written (another build-id) is not used
/// for symbols, and the user is told; the program's own frames and values still show.
#[test]
fn a_replaced_library_is_reported_not_trusted() {
    let dir = scratch_dir("libcore");
    let lib = dir.join("libcorelib.so");
    let lib_src = testsupport::sample_path("c/core_lib.c");
    testsupport::compile_into(
        "gcc",
        std::slice::from_ref(&lib_src),
        &["-g", "-O0", "-shared", "-fPIC"],
        &lib,
    );
    let program = dir.join("libmain");
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let ldir = format!("-L{}", dir.display());
    let out = Command::new("gcc")
        .args(["-g", "-O0", "-o"])
        .arg(&program)
        .arg(testsupport::sample_path("c/core_libmain.c"))
        .args([ldir.as_str(), "-lcorelib", rpath.as_str()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let core = dir.join("lib.core");
    gdb_gcore(&program, &["break lib_scale", "run"], &core);

    let run_in = |core: &Path, sysroot: Option<&Path>| {
        let mut cmd = Command::new(support::tandem_bin());
        cmd.args(["debug", "--core"])
            .arg(core)
            .arg(&program)
            .args(["--print", "v"]);
        if let Some(root) = sysroot {
            cmd.arg("--sysroot").arg(root);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let run = |core: &Path| run_in(core, None);
    // The same library: its frame and argument, no warning.
    let (text, err) = run(&core);
    assert!(text.contains("in lib_scale (v=20)"), "{text}");
    assert!(text.contains("  v = 20"), "{text}");
    assert!(text.contains("in main ()"), "{text}");
    assert!(!err.contains("warning"), "{err}");

    // Rebuilt with other code: a warning naming it and the build-ids; no symbols from it.
    testsupport::compile_into(
        "gcc",
        &[lib_src],
        &["-g", "-O0", "-shared", "-fPIC", "-DLIB_SCALE=3"],
        &lib,
    );
    let replaced = std::fs::read(&lib).unwrap();
    let (text, err) = run(&core);
    assert!(
        err.contains("libcorelib.so") && err.contains("build-id"),
        "{err}"
    );
    assert!(!text.contains("lib_scale (v="), "{text}");
    assert!(text.contains("in main ()"), "{text}");

    // The original library under a sysroot (as copied from the machine that crashed):
    // found there with --sysroot, the replaced one on its own path ignored.
    let root = dir.join("sysroot");
    let inside = root.join(lib.strip_prefix("/").unwrap());
    std::fs::create_dir_all(inside.parent().unwrap()).unwrap();
    testsupport::compile_into(
        "gcc",
        &[testsupport::sample_path("c/core_lib.c")],
        &["-g", "-O0", "-shared", "-fPIC"],
        &inside,
    );
    assert_eq!(std::fs::read(&lib).unwrap(), replaced);
    let (text, err) = run_in(&core, Some(&root));
    assert!(text.contains("in lib_scale (v=20)"), "{text}\n{err}");
    assert!(!err.contains("warning"), "{err}");
}

/// The parser on damaged cores: cut at many lengths and with bytes changed in the
/// headers and notes, a core parses or is refused — never a panic — and reading its
/// memory anywhere answers.
#[test]
fn damaged_cores_never_panic_the_parser() {
    let program = program("-O0");
    let dir = scratch_dir("fuzzcore");
    // A kernel core is small (the notes follow the program headers); gdb's fallback puts
    // them at the end: both places are damaged.
    let core = kernel_core(&program, &dir);
    let bytes = std::fs::read(&core).unwrap();
    let head = 16384.min(bytes.len());
    let good = engine::corefile::CoreFile::parse(bytes.clone()).unwrap();
    assert_eq!(good.threads.len(), 3);
    assert!(good.signal.is_some(), "the crash's signal");
    assert!(!good.mappings.is_empty());
    let probe = |c: &engine::corefile::CoreFile| {
        let mut buf = [0u8; 64];
        for m in &c.mappings {
            let _ = c.read_at(m.start, &mut buf);
            let _ = c.read_at(m.end.wrapping_sub(8), &mut buf);
        }
        let _ = c.read_at(u64::MAX - 4, &mut buf);
    };
    // Where the notes are: the last PT_NOTE's offset (gcore writes them at the end).
    let notes_at = bytes.len() - 0x6000.min(bytes.len());
    let mut refused = 0;
    let cuts = (0..head)
        .step_by(37)
        .chain((notes_at..bytes.len()).step_by(61));
    for cut in cuts {
        match engine::corefile::CoreFile::parse(bytes[..cut].to_vec()) {
            Ok(c) => probe(&c),
            Err(e) => {
                assert!(!e.to_string().is_empty());
                refused += 1;
            }
        }
    }
    assert!(refused > 100, "most cut cores are refused ({refused})");
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    for _ in 0..1000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut damaged = bytes.clone();
        for k in 0..4 {
            let region = if (seed >> (k * 8)) & 1 == 0 {
                0..head
            } else {
                notes_at..bytes.len()
            };
            let span = (region.end - region.start) as u64;
            let at = region.start + ((seed >> (k * 16)) % span) as usize;
            damaged[at] = (seed >> (k * 5)) as u8;
        }
        if let Ok(c) = engine::corefile::CoreFile::parse(damaged) {
            probe(&c);
        }
    }
}

/// A core from another machine's build tree (a container's): `sourceMap` maps the
/// build-time paths of the core's frames to where the sources are here, as for a launch.
#[test]
fn a_core_session_maps_sources_with_source_map() {
    use support::dap::DapClient;
    let dir = scratch_dir("coremap");
    let built = dir.join("build-tree");
    let here = dir.join("checkout");
    std::fs::create_dir_all(&built).unwrap();
    std::fs::create_dir_all(&here).unwrap();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../samples")
        .join(SOURCE);
    std::fs::copy(&sample, built.join("core_crash.c")).unwrap();
    let program = dir.join("crash");
    let status = Command::new("gcc")
        .args(["-g", "-O0", "-pthread", "-o"])
        .arg(&program)
        .arg("core_crash.c")
        .current_dir(&built)
        .status()
        .unwrap();
    assert!(status.success());
    let core = dir.join("crash.core");
    gdb_gcore(&program, &["run crash"], &core);
    // The build tree is gone; the sources live in a checkout.
    std::fs::rename(built.join("core_crash.c"), here.join("core_crash.c")).unwrap();
    std::fs::remove_dir_all(&built).unwrap();

    let mut c = DapClient::new();
    c.initialize();
    c.ok(
        "attach",
        json!({"program": program, "coreFile": core,
            "sourceMap": {built.display().to_string(): here.display().to_string()}}),
    );
    let stopped = c.event("stopped");
    let tid = stopped["body"]["threadId"].as_i64().unwrap();
    let stack = c.ok("stackTrace", json!({"threadId": tid}));
    let paths: Vec<&str> = stack["stackFrames"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["source"]["path"].as_str())
        .filter(|p| p.ends_with("core_crash.c"))
        .collect();
    assert!(!paths.is_empty(), "{stack:#}");
    let want = here.join("core_crash.c");
    for p in &paths {
        assert_eq!(Path::new(p), want, "{stack:#}");
    }
    // A malformed map is refused, saying what it must be.
    let mut c2 = DapClient::new();
    c2.initialize();
    let err = c2.err(
        "attach",
        json!({"program": program, "coreFile": core, "sourceMap": 3}),
    );
    assert!(err.contains("sourceMap"), "{err}");
    c2.finish();
    c.finish();
}
