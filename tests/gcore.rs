//! tandem writes core files: the DAP custom request `tandem/writeCore` at a breakpoint of a
//! program with three threads (gdb on the written core shows every thread's frames as
//! tandem's live stack traces and the values tandem showed live; `tandem debug --core`
//! agrees with gdb; the text in the core is the program's, not tandem's int3s and jump
//! patches; at a crash the signal is recorded), and `tandem gcore PID` on a running
//! process (which then runs to its normal end, as without; gdb and lldb 19 read the core). Bad input: a running program, an unwritable or relative path, a pid
//! that is no process, a process another debugger traces.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::dap::{build, line_of, sample_path, scratch_dir, DapClient};

const SOURCE: &str = "c/core_crash.c";
const PRINTS: [&str; 5] = ["*p", "p->y", "global_counter", "mode", "scale"];

/// Each thread (LWP) with its frames in the sample: (function, line), and the arguments
/// where they are compared.
type Threads = Vec<(i64, Vec<(String, u32)>)>;

fn crash_program(opt: &str) -> PathBuf {
    build(SOURCE, "gcc", &["-g", opt, "-pthread"])
}

/// gdb's view of a core: per thread (LWP), its frames in `file`; the values of `prints` in
/// the core's first thread.
fn gdb_view(program: &Path, core: &Path, file: &str, prints: &[&str]) -> (Threads, Vec<String>) {
    let text = support::gdb_core_text(program, core, prints);
    let mut threads: Threads = Vec::new();
    let mut values = Vec::new();
    let mut after_bt = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Thread ") {
            let lwp = rest.split("(LWP ").nth(1).unwrap().split(')').next();
            threads.push((lwp.unwrap().parse().unwrap(), Vec::new()));
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
            let Some((f, line_no)) = place.rsplit_once(':') else {
                continue;
            };
            if !f.ends_with(file) {
                continue;
            }
            let head = head.split_once("  ").unwrap().1;
            let head = head.split_once(" in ").map_or(head, |(_, f)| f);
            let function = head.split_once(" (").unwrap().0;
            threads
                .last_mut()
                .unwrap()
                .1
                .push((function.to_owned(), line_no.parse().unwrap()));
            continue;
        }
        if after_bt && !line.is_empty() && !line.starts_with("warning") && !line.starts_with('[') {
            values.push(line.to_owned());
        }
    }
    threads.sort_by_key(|t| t.0);
    (threads, values)
}

/// The frames of every thread of the live DAP session, in `file`.
fn live_view(c: &mut DapClient, file: &str) -> Threads {
    let threads = c.ok("threads", Value::Null);
    let mut out: Threads = Vec::new();
    for t in threads["threads"].as_array().unwrap() {
        let tid = t["id"].as_i64().unwrap();
        let rows = c
            .frames(tid)
            .iter()
            .filter(|f| {
                f["source"]["path"]
                    .as_str()
                    .is_some_and(|p| p.ends_with(file))
            })
            .map(|f| {
                (
                    f["name"].as_str().unwrap().to_owned(),
                    f["line"].as_u64().unwrap() as u32,
                )
            })
            .collect();
        out.push((tid, rows));
    }
    out.sort_by_key(|t| t.0);
    out
}

/// `tandem debug PROGRAM --core CORE --json`: frames per thread and the printed values.
fn tandem_core_view(program: &Path, core: &Path, file: &str) -> (Threads, Vec<String>) {
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
                .filter(|f| f["file"].as_str().is_some_and(|f| f.ends_with(file)))
                .map(|f| {
                    (
                        f["function"].as_str().unwrap().to_owned(),
                        f["line"].as_u64().unwrap() as u32,
                    )
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
    (threads, values)
}

/// The PT_LOAD program headers of an ELF core: (flags, offset, vaddr, filesz).
fn loads(core: &[u8]) -> Vec<(u32, u64, u64, u64)> {
    let u16_at = |at: usize| u16::from_le_bytes(core[at..at + 2].try_into().unwrap());
    let u32_at = |at: usize| u32::from_le_bytes(core[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_le_bytes(core[at..at + 8].try_into().unwrap());
    let (phoff, phnum) = (u64_at(32) as usize, u16_at(56) as usize);
    (0..phnum)
        .map(|i| phoff + i * 56)
        .filter(|h| u32_at(*h) == 1)
        .map(|h| (u32_at(h + 4), u64_at(h + 8), u64_at(h + 16), u64_at(h + 32)))
        .collect()
}

/// Every executable segment of a mapped file in the core holds the file's own bytes: no
/// int3 (0xCC) or jump of tandem's. Returns the files compared.
fn text_is_the_files(core_path: &Path) -> Vec<PathBuf> {
    let bytes = std::fs::read(core_path).unwrap();
    let core = engine::corefile::CoreFile::parse(bytes.clone()).unwrap();
    let mut compared = Vec::new();
    for (flags, offset, vaddr, filesz) in loads(&bytes) {
        if flags & 1 == 0 || filesz == 0 {
            continue;
        }
        let Some(m) = core.mappings.iter().find(|m| m.start == vaddr) else {
            continue; // the vDSO
        };
        let file = std::fs::read(&m.path).unwrap();
        let from = m.offset as usize;
        let len = (filesz as usize).min(file.len().saturating_sub(from));
        let in_core = &bytes[offset as usize..offset as usize + len];
        let in_file = &file[from..from + len];
        if in_core != in_file {
            let at = in_core
                .iter()
                .zip(in_file)
                .position(|(a, b)| a != b)
                .unwrap();
            panic!(
                "{} differs at {:#x}: core {:#04x}, file {:#04x}",
                m.path.display(),
                vaddr + at as u64,
                in_core[at],
                in_file[at]
            );
        }
        compared.push(m.path.clone());
    }
    compared
}

/// The anonymous executable mappings of a process: the code tandem placed in it.
fn placed_code(pid: i64) -> Vec<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .unwrap()
        .lines()
        .filter(|l| l.split_whitespace().nth(1).is_some_and(|p| p.contains('x')))
        .filter(|l| l.split_whitespace().nth(5).is_none())
        .map(|l| u64::from_str_radix(l.split('-').next().unwrap(), 16).unwrap())
        .collect()
}

fn disk_usage(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).unwrap().blocks() * 512
}

/// At a breakpoint in `bottom` (the main thread five calls deep in a recursion, two
/// workers waiting; a conditional breakpoint in `recurse` whose condition runs in the
/// debuggee): the written core shows gdb what tandem shows live.
#[test]
fn write_core_at_a_breakpoint_agrees_with_gdb_and_tandem() {
    for opt in ["-O0", "-O2"] {
        let program = crash_program(opt);
        let src = sample_path(SOURCE);
        let dir = scratch_dir(&format!("writecore{opt}"));
        let core = dir.join("bp.core");
        let mut c = DapClient::new();
        c.initialize();
        c.ok("launch", json!({"program": program}));
        let bps = c.ok(
            "setBreakpoints",
            json!({"source": {"path": src}, "breakpoints": [
                {"line": line_of(&src, "global_counter += p->x")},
                {"line": line_of(&src, "if (n == 0)"), "condition": "n == 100"},
            ]}),
        );
        for bp in bps["breakpoints"].as_array().unwrap() {
            assert_eq!(bp["verified"], true, "{opt}: {bp}");
        }
        c.ok("configurationDone", json!({}));
        let stopped = c.event("stopped");
        let tid = stopped["body"]["threadId"].as_i64().unwrap();
        let live = live_view(&mut c, "core_crash.c");
        let top = c.frames(tid)[0]["id"].as_i64().unwrap();
        let live_values: Vec<String> = PRINTS
            .iter()
            .map(|p| {
                let v = c.ok("evaluate", json!({"expression": p, "frameId": top}));
                v["result"].as_str().unwrap().to_owned()
            })
            .collect();

        // The condition `n == 100` runs in the debuggee: code placed beside the program.
        let placed = placed_code(c.debuggee_pid.unwrap());
        assert!(!placed.is_empty(), "{opt}: the condition's code was placed");

        let started = Instant::now();
        let body = c.ok("tandem/writeCore", json!({"path": core}));
        let took = started.elapsed();
        assert_eq!(body["path"], core.display().to_string(), "{body}");
        let len = std::fs::metadata(&core).unwrap().len();
        assert_eq!(body["bytes"], len, "{body}");
        assert_eq!(body["threads"], 3, "{body}");
        eprintln!(
            "{opt}: core {len} bytes ({} on disk, {} segments) written in {took:?}",
            disk_usage(&core),
            body["segments"]
        );

        // (a) gdb on the core: the same frames for every thread, the same values.
        let (gdb_threads, gdb_values) = gdb_view(&program, &core, "core_crash.c", &PRINTS);
        assert_eq!(live.len(), 3, "{opt}: {live:?}");
        assert_eq!(gdb_threads, live, "{opt}: gdb's frames on the core vs live");
        assert_eq!(
            gdb_values, live_values,
            "{opt}: gdb's values on the core vs live"
        );
        assert_eq!(live_values[0], "{x = 3, y = 4}", "{opt}");
        let main = live.iter().find(|t| t.0 == tid).unwrap();
        assert_eq!(main.1[0].0, "bottom", "{opt}: {main:?}");
        assert_eq!(
            main.1.iter().filter(|r| r.0 == "recurse").count(),
            5,
            "{opt}"
        );

        // (b) tandem on the core agrees too.
        let (threads, values) = tandem_core_view(&program, &core, "core_crash.c");
        assert_eq!(threads, gdb_threads, "{opt}: tandem debug --core vs gdb");
        assert_eq!(values, gdb_values, "{opt}: tandem debug --core vs gdb");

        // The text is the program's: no int3 at either breakpoint, no jump patch, and
        // none of tandem's placed code.
        let files = text_is_the_files(&core);
        let segments = loads(&std::fs::read(&core).unwrap());
        for at in &placed {
            assert!(
                segments.iter().all(|s| s.2 != *at),
                "{opt}: placed code at {at:#x} is not in the core"
            );
        }
        assert!(
            files.contains(&program),
            "{opt}: the program's text compared: {files:?}"
        );
        assert!(
            files.iter().any(|f| f.to_string_lossy().contains("libc")),
            "{opt}: {files:?}"
        );

        // The program runs on unchanged after the core: to its normal end.
        c.ok(
            "setBreakpoints",
            json!({"source": {"path": src}, "breakpoints": []}),
        );
        c.ok("continue", json!({"threadId": tid}));
        drop(c);
    }
}

/// At a crash (SIGSEGV in `bottom`): the core records the signal as the kernel would
/// (`pr_cursig`, NT_SIGINFO with the fault address), so gdb and tandem open it as a crash,
/// with the frames tandem showed live.
#[test]
fn write_core_at_a_crash_records_the_signal() {
    let program = crash_program("-O0");
    let dir = scratch_dir("writecore-crash");
    let core = dir.join("crash.core");
    let mut c = DapClient::new();
    c.initialize();
    c.ok("launch", json!({"program": program, "args": ["crash"]}));
    c.ok("configurationDone", json!({}));
    let stopped = c.event("stopped");
    assert_eq!(stopped["body"]["reason"], "exception", "{stopped}");
    let live = live_view(&mut c, "core_crash.c");
    c.ok("tandem/writeCore", json!({"path": core}));
    c.ok("disconnect", json!({"terminateDebuggee": true}));

    let parsed = engine::corefile::CoreFile::open(&core).unwrap();
    let signal = parsed.signal.unwrap();
    assert_eq!((signal.signo, signal.addr), (11, Some(0)), "{signal:?}");
    assert_eq!(
        parsed.threads[0].signal, 11,
        "the crashed thread first, pr_cursig set"
    );
    let (gdb_threads, _) = gdb_view(&program, &core, "core_crash.c", &[]);
    assert_eq!(gdb_threads, live, "gdb's frames on the core vs live");
    let gdb = Command::new("gdb")
        .args(["-batch", "-nx"])
        .arg(&program)
        .arg(&core)
        .output()
        .unwrap();
    let gdb = String::from_utf8_lossy(&gdb.stdout);
    assert!(gdb.contains("signal SIGSEGV"), "{gdb}");
    let out = Command::new(support::tandem_bin())
        .args(["debug", "--json", "--core"])
        .arg(&core)
        .arg(&program)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["reason"], "signal 11", "{report}");
    let description = report["description"].as_str().unwrap();
    assert!(
        description.starts_with("SIGSEGV") && description.ends_with("at 0x0"),
        "{description}"
    );
}

/// The program runs: `tandem/writeCore` is refused until it is paused; a relative or
/// unwritable path is refused; after a pause the core is written (no signal recorded: a
/// pause is not a crash; a file's shared mapping left to the file) and the program runs on
/// to its normal end.
#[test]
fn write_core_refuses_bad_requests_and_works_after_a_pause() {
    let program = build("c/gcore_run.c", "gcc", &["-g", "-O0", "-pthread"]);
    let dir = scratch_dir("writecore-pause");
    let core = dir.join("paused.core");
    let mut c = DapClient::new();
    c.initialize();
    c.ok("launch", json!({"program": program}));
    c.ok("configurationDone", json!({}));
    let e = c.err("tandem/writeCore", json!({"path": core}));
    assert!(e.contains("pause the program first"), "{e}");
    assert!(!core.exists());
    // Paused once the workers run (they print nothing; main says so after creating them).
    while !c.output.iter().any(|(_, t)| t.contains("ready")) {
        c.event("output");
    }
    let threads = c.ok("threads", Value::Null);
    let tid = threads["threads"][0]["id"].as_i64().unwrap();
    c.ok("pause", json!({"threadId": tid}));
    let stopped = c.event("stopped");
    assert_eq!(stopped["body"]["reason"], "pause", "{stopped}");
    for (path, want) in [
        (json!("relative.core"), "absolute path"),
        (json!("/nonexistent-dir/x.core"), "cannot write"),
        (json!(dir.display().to_string()), "cannot write"),
        (Value::Null, "needs a 'path'"),
    ] {
        let e = c.err("tandem/writeCore", json!({ "path": path }));
        assert!(e.contains(want), "{path}: {e}");
    }
    // The executable's shared mapping (r--s).
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", c.debuggee_pid.unwrap())).unwrap();
    let shared = maps
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("r--s"))
        .map(|l| u64::from_str_radix(l.split('-').next().unwrap(), 16).unwrap())
        .unwrap_or_else(|| panic!("no shared mapping: {maps}"));
    let body = c.ok("tandem/writeCore", json!({"path": core}));
    assert_eq!(body["threads"], 3, "{body}");
    let segments = loads(&std::fs::read(&core).unwrap());
    let seg = segments.iter().find(|s| s.2 == shared).unwrap();
    assert_eq!(seg.3, 0, "a file's shared mapping is left to the file");
    let parsed = engine::corefile::CoreFile::open(&core).unwrap();
    let mut magic = [0u8; 4];
    assert_eq!(parsed.read_at(shared, &mut magic), 4);
    assert_eq!(&magic, b"\x7fELF", "read from the mapped file");
    assert_eq!(parsed.threads.len(), 3);
    assert_eq!(parsed.signal, None, "a pause records no signal");
    assert!(
        parsed.aux(libc_at_entry()).is_some(),
        "the auxv is recorded"
    );
    text_is_the_files(&core);
    c.ok("continue", json!({"threadId": tid}));
    let exited = c.event("exited");
    assert_eq!(exited["body"]["exitCode"], 3, "{exited}");
    let out: String = c
        .output
        .iter()
        .filter(|(cat, _)| cat == "stdout")
        .map(|(_, t)| t.as_str())
        .collect();
    assert!(out.contains("sums 124750 249500 libm yes"), "{out}");
}

fn libc_at_entry() -> u64 {
    9 // AT_ENTRY
}

/// Runs gcore_run to its end; with `gcore`, `tandem gcore PID -o CORE` once it is ready.
/// Its output, exit code and how long the gcore took.
fn run_gcore_run(program: &Path, gcore: Option<&Path>) -> (String, Option<i32>, Duration) {
    let mut child = Command::new(program)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert_eq!(first, "ready\n");
    let mut took = Duration::ZERO;
    if let Some(core) = gcore {
        let started = Instant::now();
        let out = Command::new(support::tandem_bin())
            .arg("gcore")
            .arg(child.id().to_string())
            .arg("-o")
            .arg(core)
            .output()
            .unwrap();
        took = started.elapsed();
        assert!(
            out.status.success(),
            "tandem gcore failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            core.display().to_string()
        );
    }
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    (first + &rest, status.code(), took)
}

/// `tandem gcore PID` on a running process with three threads: it runs to its normal
/// end with the same output and exit code as without (the dlopen at its end would trap
/// on an int3 left at the dynamic linker's hook), and gdb reads the core.
#[test]
fn tandem_gcore_of_a_running_process() {
    let program = build("c/gcore_run.c", "gcc", &["-g", "-O0", "-pthread"]);
    let dir = scratch_dir("gcore-cli");
    let core = dir.join("run.core");
    let (plain_out, plain_code, _) = run_gcore_run(&program, None);
    assert_eq!(plain_code, Some(3), "{plain_out}");
    let (out, code, took) = run_gcore_run(&program, Some(&core));
    assert_eq!((out.as_str(), code), (plain_out.as_str(), plain_code));
    let len = std::fs::metadata(&core).unwrap().len();
    eprintln!(
        "tandem gcore: {len} bytes ({} on disk) in {took:?}",
        disk_usage(&core)
    );
    let (threads, _) = gdb_view(&program, &core, "gcore_run.c", &[]);
    assert_eq!(threads.len(), 3, "{threads:?}");
    // The main thread (the lowest LWP) waits in pthread_join, called from main.
    let main = &threads[0];
    assert_eq!(
        main.1.first().map(|r| r.0.as_str()),
        Some("main"),
        "{threads:?}"
    );
    let join = line_of(&sample_path("c/gcore_run.c"), "main joins") as u32;
    assert_eq!(main.1[0].1, join, "{threads:?}");
    for worker in &threads[1..] {
        assert_eq!(
            worker.1.last().map(|r| r.0.as_str()),
            Some("worker"),
            "{threads:?}"
        );
    }
    text_is_the_files(&core);

    // lldb reads the core too: the same three threads, main in pthread_join's caller.
    let out = Command::new("lldb-19")
        .args(["-b", "-o", "thread backtrace all", "-c"])
        .arg(&core)
        .arg(&program)
        .output()
        .expect("lldb-19 (scripts/install-test-deps installs it)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("was loaded"), "lldb: {text}");
    let name = program.file_name().unwrap().to_string_lossy();
    assert!(
        text.contains(&format!("{name}`main at gcore_run.c:{join}")),
        "lldb: {text}"
    );
    assert_eq!(
        text.matches(&format!("{name}`worker(")).count(),
        2,
        "lldb: {text}"
    );
}

#[test]
fn tandem_gcore_of_no_process_fails_clearly() {
    for (pid, want) in [
        ("999999999", "no process"),
        ("0", "no process"),
        ("2", "cannot attach"),
    ] {
        let out = Command::new(support::tandem_bin())
            .args(["gcore", pid])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{pid}: {err}");
        assert!(err.contains(want), "{pid}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // A process another debugger traces (here a DAP session of tandem's): ptrace refuses.
    let program = build("c/dap_attach.c", "gcc", &["-g", "-O0"]);
    let mut c = DapClient::new();
    c.initialize();
    c.ok("launch", json!({"program": program}));
    c.ok("configurationDone", json!({}));
    let pid = c.debuggee_pid.unwrap();
    let out = Command::new(support::tandem_bin())
        .args(["gcore", &pid.to_string()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("operation not permitted"), "{err}");
    assert!(!Path::new(&format!("core.{pid}")).exists());
    // The session that traces it is untouched.
    let threads = c.ok("threads", Value::Null);
    let tid = threads["threads"][0]["id"].as_i64().unwrap();
    c.ok("pause", json!({"threadId": tid}));
    c.event("stopped");
    c.ok("disconnect", json!({"terminateDebuggee": true}));
}
