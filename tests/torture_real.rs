//! The differential signal-torture harness (issue 28): any program, a set of sites taken
//! from its line table (every address a row names in chosen functions or lines, statement
//! starts or not, as binutils' readelf reads it), and a signal load from
//! samples/c/sigload.c (an LD_PRELOAD shim, in the plain and the debugged run alike: a
//! fast SIGPROF timer, queued real-time signals to every thread, nested handlers running
//! breakpointed code of the shim). The program runs plain twice (the two must agree, or
//! the comparison means nothing and the test says so) and under tandem with a never-true
//! condition on every site, plus one sometimes-true condition on a function the program
//! counts the hits of itself: output and exit code must equal the plain run's, there must
//! be no stop but exactly one per true hit, and the shim must have seen every queued
//! signal exactly once in both runs. Cases: samples/c/sig_sites.c at -O2, Lua at -O2
//! running bench.lua, SQLite with threads on (a driver of three threads) and zstd's
//! multi-threaded compression, built by scripts/real-libs from the registry packages.
//!
//! CI runs each case once with every site (about three minutes in all on two cores).
//! Every queued signal must be seen exactly once under tandem too (a doubled one was the
//! tracer's bug, fixed: docs/reliability.md).
//! `TANDEM_TORTURE_REAL_SECS=N` goes on with further rounds of each case for N seconds,
//! each with a random subset of the sites and a random load; `TANDEM_TORTURE_REAL_SEED`
//! replays them.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

#[path = "placement_util.rs"]
mod placement_util;
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use placement_util::reallibs;
use serde_json::{json, Value};
use support::dap::{build, sample_path, scratch_dir, DapClient};
use support::{Peer, Protocol, Rng};

/// The signal load the shim starts (its environment variables).
#[derive(Clone, Copy, Debug)]
struct Load {
    /// SIGPROF per CPU second (0: none).
    hz: u32,
    /// Microseconds between rounds of queued real-time signals (0: none).
    rt_us: u32,
    /// Handlers call the shim's `sigload_work`, and nest.
    nest: bool,
}

impl Load {
    /// Every kind of signal, nested handlers running breakpointed code, at a rate the
    /// traced handlers keep up with (each hit of a site that keeps its int3 is a ptrace
    /// round trip: at one round a millisecond the queue never drains).
    const NESTED: Load = Load {
        hz: 1000,
        rt_us: 5000,
        nest: true,
    };
}

/// Which line-table rows give sites.
enum Rows {
    /// Rows inside the symbols whose names start with one of these (with `.cold` parts).
    Functions(&'static [&'static str]),
    /// Rows of a file (by the name readelf prints) within a range of lines.
    Lines(&'static str, std::ops::RangeInclusive<u64>),
}

/// The sometimes-true condition: a function breakpoint whose hits the program counts
/// itself, on its "marks N" line.
struct Marker {
    function: &'static str,
    condition: &'static str,
}

struct Case {
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
    cwd: PathBuf,
    rows: Vec<Rows>,
    /// A never-true condition every site can evaluate.
    never: &'static str,
    marker: Option<Marker>,
    /// The load of the first round (`TANDEM_TORTURE_REAL_LOAD` overrides it).
    load: Load,
}

/// The shim, built once.
fn shim() -> PathBuf {
    build(
        "c/sigload.c",
        "gcc",
        &["-g", "-O2", "-fPIC", "-shared", "-pthread"],
    )
}

/// The lines of the shim's `sigload_work`: breakpoints there run in nested handlers.
fn shim_work_lines() -> (PathBuf, Vec<i64>) {
    let src = sample_path("c/sigload.c");
    let text = std::fs::read_to_string(&src).unwrap();
    let first = text
        .lines()
        .position(|l| l.contains("unsigned sigload_work(unsigned x)"))
        .unwrap();
    let lines = (first + 2..first + 7).map(|l| l as i64 + 1).collect();
    (src, lines)
}

/// `[start, end)` of every function symbol whose name starts with one of `prefixes`.
fn symbol_ranges(exe: &Path, prefixes: &[&str]) -> Vec<(u64, u64)> {
    let out = Command::new("nm")
        .args(["-S", "--defined-only"])
        .arg(exe)
        .output()
        .unwrap();
    let mut ranges = Vec::new();
    for l in String::from_utf8(out.stdout).unwrap().lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() == 4 && matches!(f[2], "T" | "t") && prefixes.iter().any(|p| f[3].starts_with(p))
        {
            let start = u64::from_str_radix(f[0], 16).unwrap();
            let size = u64::from_str_radix(f[1], 16).unwrap();
            ranges.push((start, start + size));
        }
    }
    ranges
}

/// Every address a row of `exe`'s line table names among `rows`, read with readelf.
fn row_sites(exe: &Path, rows: &[Rows]) -> Vec<u64> {
    let out = Command::new("readelf")
        .arg("--debug-dump=decodedline")
        .arg(exe)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut sites = std::collections::BTreeSet::new();
    for r in rows {
        let ranges = match r {
            Rows::Functions(p) => {
                let v = symbol_ranges(exe, p);
                assert!(!v.is_empty(), "no function {p:?} in {}", exe.display());
                v
            }
            Rows::Lines(..) => Vec::new(),
        };
        for l in text.lines() {
            // "lstring.c     42     0x4012a0      x" (the last column: a statement start)
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 3 {
                continue;
            }
            let (Ok(line), Some(a)) = (f[1].parse::<u64>(), f[2].strip_prefix("0x")) else {
                continue;
            };
            let Ok(a) = u64::from_str_radix(a, 16) else {
                continue;
            };
            let wanted = match r {
                Rows::Functions(_) => ranges.iter().any(|(s, e)| (*s..*e).contains(&a)),
                Rows::Lines(file, lines) => f[0] == *file && lines.contains(&line),
            };
            // A row at the end of a sequence names the address after the code.
            if wanted && a != 0 && is_code(exe, a) {
                sites.insert(a);
            }
        }
    }
    sites.into_iter().collect()
}

/// The `[start, end)` address ranges of each binary's executable sections.
type CodeRanges = std::sync::Mutex<BTreeMap<PathBuf, Vec<(u64, u64)>>>;

/// Whether `a` is in an executable section of `exe` (the end row of a sequence is not).
fn is_code(exe: &Path, a: u64) -> bool {
    static TEXT: OnceLock<CodeRanges> = OnceLock::new();
    let mut map = TEXT.get_or_init(Default::default).lock().unwrap();
    let ranges = map.entry(exe.to_path_buf()).or_insert_with(|| {
        let out = Command::new("readelf")
            .args(["-SW"])
            .arg(exe)
            .output()
            .unwrap();
        let mut v = Vec::new();
        for l in String::from_utf8(out.stdout).unwrap().lines() {
            // "  [16] .text  PROGBITS  0000000000401040 001040 0a6ed2 00  AX  0   0 16"
            let Some(rest) = l.split(']').nth(1) else {
                continue;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            if f.len() >= 7 && f[6].contains('X') {
                let start = u64::from_str_radix(f[2], 16).unwrap_or(0);
                let size = u64::from_str_radix(f[4], 16).unwrap_or(0);
                v.push((start, start + size));
            }
        }
        v
    });
    ranges.iter().any(|(s, e)| (*s..*e).contains(&a))
}

/// The shim's summary: `key=value` pairs.
fn read_summary(path: &Path) -> BTreeMap<String, i64> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no shim summary at {}: {e}", path.display()));
    text.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
        .collect()
}

fn shim_env(load: Load, out: &Path) -> Vec<(String, String)> {
    vec![
        ("LD_PRELOAD".into(), shim().display().to_string()),
        ("TANDEM_SIGLOAD_OUT".into(), out.display().to_string()),
        ("TANDEM_SIGLOAD_HZ".into(), load.hz.to_string()),
        ("TANDEM_SIGLOAD_RT_US".into(), load.rt_us.to_string()),
        (
            "TANDEM_SIGLOAD_NEST".into(),
            u8::from(load.nest).to_string(),
        ),
    ]
}

/// What one run gave.
#[derive(Debug, Default)]
struct Outcome {
    stdout: String,
    stderr: String,
    exit_code: i64,
    shim: BTreeMap<String, i64>,
    /// Debugged runs: stops at the marker, the other stops (described), sites verified,
    /// jump patches placed and sites that kept their int3.
    marked: u64,
    harm: Vec<String>,
    verified: usize,
    patches: usize,
    int3: usize,
    elapsed: Duration,
}

fn plain(case: &Case, load: Load, tag: &str) -> Outcome {
    let out = scratch_dir("torture_real").join(format!("{}-{tag}.sum", case.name));
    let started = Instant::now();
    let o = Command::new(&case.program)
        .args(&case.args)
        .current_dir(&case.cwd)
        .envs(shim_env(load, &out))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", case.program.display()));
    Outcome {
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        exit_code: o.status.code().unwrap_or(-1).into(),
        shim: read_summary(&out),
        elapsed: started.elapsed(),
        ..Outcome::default()
    }
}

fn debugged(case: &Case, sites: &[u64], load: Load, tag: &str) -> Outcome {
    let out = scratch_dir("torture_real").join(format!("{}-{tag}.sum", case.name));
    let mut c = DapClient::with_peer(Peer::spawn(
        Protocol::Dap,
        &[],
        &[("TANDEM_LOG", "engine=debug")],
    ));
    c.initialize();
    let env: serde_json::Map<String, Value> = shim_env(load, &out)
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    c.ok(
        "launch",
        json!({"program": case.program, "args": case.args, "cwd": case.cwd, "env": env}),
    );
    let mut o = Outcome::default();
    let bps: Vec<Value> = sites
        .iter()
        .map(|a| json!({"instructionReference": format!("{a:#x}"), "condition": case.never}))
        .collect();
    let r = c.ok("setInstructionBreakpoints", json!({"breakpoints": bps}));
    o.verified += r["breakpoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["verified"] == true)
        .count();
    // The shim's code, run by nested handlers: pending until ld.so maps the shim.
    if load.nest {
        let (src, lines) = shim_work_lines();
        let bps: Vec<Value> = lines
            .iter()
            .map(|l| json!({"line": l, "condition": "sigload_never == 1"}))
            .collect();
        c.ok(
            "setBreakpoints",
            json!({"source": {"path": src}, "breakpoints": bps}),
        );
    }
    if let Some(m) = &case.marker {
        let r = c.ok(
            "setFunctionBreakpoints",
            json!({"breakpoints": [{"name": m.function, "condition": m.condition}]}),
        );
        assert_eq!(r["breakpoints"][0]["verified"], true, "{r}");
    }
    let started = Instant::now();
    c.ok("configurationDone", json!({}));
    let mut pid = None;
    loop {
        let Some(m) = c.peer.try_recv(Duration::from_secs(event_wait())) else {
            let log = placement_util::strip_ansi(&c.peer.stderr());
            let tail: Vec<&str> = log.lines().rev().take(30).collect();
            panic!(
                "{}: no event within {} s; output so far {:?}; threads {:#?}; the log's end: {tail:#?}",
                case.name,
                event_wait(),
                o.stdout,
                pid.or_else(|| child_of(c.peer.pid())).map(task_states).unwrap_or_default()
            );
        };
        match m["event"].as_str() {
            Some("stopped") => {
                let thread = m["body"]["threadId"].as_i64().unwrap();
                let frames = c.frames(thread);
                let top = frames[0]["name"].as_str().unwrap_or("").to_string();
                let marker = case.marker.as_ref().map(|k| k.function);
                if m["body"]["reason"] == "function breakpoint"
                    && marker.is_some_and(|f| top.starts_with(f))
                {
                    o.marked += 1;
                } else {
                    let names: Vec<String> = frames
                        .iter()
                        .take(4)
                        .map(|f| format!("{} line {}", f["name"], f["line"]))
                        .collect();
                    o.harm.push(format!("{} in {names:?}", m["body"]));
                    assert!(o.harm.len() < 50, "runaway stops: {:?}", o.harm);
                }
                c.ok("continue", json!({"threadId": thread}));
            }
            Some("output") => {
                let text = m["body"]["output"].as_str().unwrap_or_default();
                match m["body"]["category"].as_str() {
                    Some("stdout") => o.stdout.push_str(text),
                    Some("stderr") => o.stderr.push_str(text),
                    _ => {}
                }
            }
            Some("process") => pid = m["body"]["systemProcessId"].as_i64(),
            Some("exited") => {
                o.elapsed = started.elapsed();
                o.exit_code = m["body"]["exitCode"].as_i64().unwrap_or(-1000);
            }
            Some("terminated") => break,
            _ => {}
        }
    }
    let log = placement_util::strip_ansi(&c.peer.stderr());
    c.finish();
    let (patches, refusals) = placement_util::placements(&log);
    o.patches = patches.len();
    o.int3 = refusals.values().sum();
    o.shim = read_summary(&out);
    o
}

/// How long a debugged run may go without an event (`TANDEM_TORTURE_REAL_WAIT`, s).
fn event_wait() -> u64 {
    std::env::var("TANDEM_TORTURE_REAL_WAIT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300)
}

/// A child process of `parent`.
fn child_of(parent: u32) -> Option<i64> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i64 = e.file_name().to_str()?.parse().ok()?;
        let status = std::fs::read_to_string(e.path().join("status")).ok()?;
        let ppid = status.lines().find_map(|l| l.strip_prefix("PPid:"))?.trim();
        (ppid == parent.to_string()).then_some(pid)
    })
}

/// Each thread of process `pid`: its state, where it waits, and its signal masks.
fn task_states(pid: i64) -> Vec<String> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
    {
        let dir = e.unwrap().path();
        let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
        let keep: Vec<&str> = status
            .lines()
            .filter(|l| {
                ["Name", "State", "SigPnd", "ShdPnd", "SigBlk", "TracerPid"]
                    .iter()
                    .any(|k| l.starts_with(k))
            })
            .collect();
        let wchan = std::fs::read_to_string(dir.join("wchan")).unwrap_or_default();
        let syscall = std::fs::read_to_string(dir.join("syscall")).unwrap_or_default();
        v.push(format!(
            "{}: {keep:?} wchan {wchan} syscall {}",
            dir.display(),
            syscall.trim()
        ));
    }
    v
}

/// The load of the first round: the case's, or `TANDEM_TORTURE_REAL_LOAD=HZ,RT_US,NEST`.
fn first_load(case: &Case) -> Load {
    let Ok(spec) = std::env::var("TANDEM_TORTURE_REAL_LOAD") else {
        return case.load;
    };
    let f: Vec<u32> = spec.split(',').map(|x| x.trim().parse().unwrap()).collect();
    Load {
        hz: f[0],
        rt_us: f[1],
        nest: f[2] != 0,
    }
}

/// The "marks N" line of a run's output.
fn marks(stdout: &str) -> Option<u64> {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("marks ").and_then(|n| n.trim().parse().ok()))
}

/// Checks the queued signals of a shim summary: every one seen exactly once.
fn signals_ok(what: &str, s: &BTreeMap<String, i64>, load: Load) -> Result<(), String> {
    let (sent, seen) = (s["sent"], s["seen"]);
    if s["doubled"] != 0 || s["lost"] != 0 || sent != seen + s["exited"] {
        return Err(format!(
            "{what}: queued signals not seen exactly once: {s:?}"
        ));
    }
    // A plain run may end before the shim's helper thread sends its first round.
    if load.rt_us > 0 && sent == 0 && what == "debugged" {
        return Err(format!("{what}: no queued signal was sent: {s:?}"));
    }
    Ok(())
}

/// One round of a case: plain twice, debugged once; the failures found.
fn round(case: &Case, sites: &[u64], load: Load, tag: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let p1 = plain(case, load, &format!("{tag}-plain1"));
    let p2 = plain(case, load, &format!("{tag}-plain2"));
    if (&p1.stdout, &p1.stderr, p1.exit_code) != (&p2.stdout, &p2.stderr, p2.exit_code) {
        bad.push(format!(
            "{}: the plain run is not deterministic under the load {load:?}: \
             nothing to compare with\n{:?}\n{:?}",
            case.name, p1.stdout, p2.stdout
        ));
        return bad;
    }
    for (what, p) in [("plain 1", &p1), ("plain 2", &p2)] {
        if let Err(e) = signals_ok(what, &p.shim, load) {
            bad.push(format!("{}: {e}", case.name));
        }
    }
    let d = debugged(case, sites, load, &format!("{tag}-debugged"));
    let want_marks = case.marker.as_ref().map(|_| marks(&p1.stdout).unwrap());
    eprintln!(
        "torture_real {} [{tag}] load {load:?}: {} sites ({} verified: {} jump patches, {} int3), \
         stops {} (true hits {} of {:?}); plain {:?} shim {:?}; debugged {:?} shim {:?}",
        case.name,
        sites.len(),
        d.verified,
        d.patches,
        d.int3,
        d.harm.len() as u64 + d.marked,
        d.marked,
        want_marks,
        p1.elapsed,
        p1.shim,
        d.elapsed,
        d.shim
    );
    if d.verified != sites.len() {
        bad.push(format!(
            "{}: {} of {} sites verified",
            case.name,
            d.verified,
            sites.len()
        ));
    }
    if !d.harm.is_empty() {
        bad.push(format!(
            "{}: {} stops for never-true conditions: {:#?}",
            case.name,
            d.harm.len(),
            d.harm
        ));
    }
    if let Some(n) = want_marks {
        if n == 0 || d.marked != n {
            bad.push(format!(
                "{}: {} stops at the marker, {n} true hits",
                case.name, d.marked
            ));
        }
    }
    if (&d.stdout, &d.stderr, d.exit_code) != (&p1.stdout, &p1.stderr, p1.exit_code) {
        bad.push(format!(
            "{}: the debugged run differs from the plain one: exit {} vs {}\n\
             debugged stdout {:?}\nplain stdout {:?}\ndebugged stderr {:?}\nplain stderr {:?}",
            case.name, d.exit_code, p1.exit_code, d.stdout, p1.stdout, d.stderr, p1.stderr
        ));
    }
    if let Err(e) = signals_ok("debugged", &d.shim, load) {
        bad.push(format!("{}: {e}", case.name));
    }
    bad
}

fn extra_secs() -> f64 {
    std::env::var("TANDEM_TORTURE_REAL_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0)
}

/// The generator of the sequence, seeded from `TANDEM_TORTURE_REAL_SEED` (else the clock).
fn rng() -> Rng {
    Rng::seeded("TANDEM_TORTURE_REAL_SEED", "torture_real")
}

/// The harness: `case` with every site and the CI load, then, for
/// `TANDEM_TORTURE_REAL_SECS`, rounds with random subsets and loads. Fails on any harm,
/// and when nothing was validated.
fn torture(case: Case) {
    let mut all = row_sites(&case.program, &case.rows);
    // `TANDEM_TORTURE_REAL_SITES=LO..HI`: only those of the sorted sites (to narrow a
    // failure down).
    if let Ok(r) = std::env::var("TANDEM_TORTURE_REAL_SITES") {
        let (lo, hi) = r.split_once("..").unwrap();
        let (lo, hi): (usize, usize) = (lo.parse().unwrap(), hi.parse().unwrap());
        all = all[lo.min(all.len())..hi.min(all.len())].to_vec();
        eprintln!(
            "torture_real {}: sites {lo}..{hi} only: {all:x?}",
            case.name
        );
    }
    assert!(
        all.len() >= 10,
        "{}: only {} sites from the line table",
        case.name,
        all.len()
    );
    let mut bad = round(&case, &all, first_load(&case), "all");
    let deadline = Instant::now() + Duration::from_secs_f64(extra_secs());
    let mut rng = rng();
    let mut n = 0;
    while bad.is_empty() && Instant::now() < deadline {
        n += 1;
        let sites: Vec<u64> = all.iter().copied().filter(|_| rng.below(3) != 0).collect();
        // Nested handlers run a site that keeps its int3: faster than a round each 5 ms,
        // the queue outgrows what the traced handlers drain (docs/reliability.md).
        let nest = rng.below(2) == 0;
        let load = if nest {
            Load {
                hz: [0, 500, 1000][rng.below(3)],
                rt_us: [0, 5000, 10000][rng.below(3)],
                nest,
            }
        } else {
            Load {
                hz: [0, 500, 2000, 5000][rng.below(4)],
                rt_us: [0, 200, 1000, 5000][rng.below(4)],
                nest,
            }
        };
        bad = round(&case, &sites, load, &format!("round{n}"));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn sig_sites_at_o2_under_the_signal_load() {
    let exe = build(
        "c/sig_sites.c",
        "gcc",
        &["-g", "-O2", "-pthread", "-no-pie"],
    );
    torture(Case {
        name: "sig_sites-O2",
        program: exe,
        args: vec!["-r".into(), "20,20,20,20".into()],
        cwd: std::env::temp_dir(),
        rows: vec![Rows::Functions(&["hot_", "work"])],
        never: "g_never == 1",
        marker: None,
        load: Load::NESTED,
    });
}

#[test]
fn lua_at_o2_under_the_signal_load() {
    let dir = reallibs();
    torture(Case {
        name: "lua-O2",
        program: dir.join("lua-np-O2"),
        args: vec!["bench.lua".into()],
        cwd: dir,
        rows: vec![Rows::Functions(&["luaS_"])],
        never: "tandem_never == 1",
        marker: None,
        load: Load::NESTED,
    });
}

/// The lines of sqlite3.c between its `Begin file NAME` and `End of NAME` markers.
fn amalgamation_part(name: &str) -> std::ops::RangeInclusive<u64> {
    let text = std::fs::read_to_string(reallibs().join("sqlite-src/sqlite3.c")).unwrap();
    let (mut begin, mut end) = (None, None);
    for (i, line) in text.lines().enumerate() {
        if line.starts_with(&format!("/************** Begin file {name} ")) {
            begin = Some(i as u64 + 1);
        } else if line.starts_with(&format!("/************** End of {name} ")) {
            end = Some(i as u64 + 1);
        }
    }
    begin.unwrap()..=end.unwrap()
}

#[test]
fn sqlite_with_threads_under_the_signal_load() {
    let dir = reallibs();
    let mutex: &'static _ = Box::leak(Box::new(amalgamation_part("mutex_unix.c")));
    let pcache: &'static _ = Box::leak(Box::new(amalgamation_part("pcache1.c")));
    torture(Case {
        name: "sqlite-mt-O2",
        program: dir.join("sqlite-mt-O2"),
        args: vec!["300".into(), "3".into()],
        cwd: dir,
        rows: vec![
            Rows::Lines("sqlite3.c", mutex.clone()),
            Rows::Lines("sqlite3.c", pcache.clone()),
        ],
        never: "tandem_never == 1",
        marker: Some(Marker {
            function: "torture_mark",
            condition: "row % 50 == 0",
        }),
        load: Load::NESTED,
    });
}

#[test]
fn zstd_multithreaded_compression_under_the_signal_load() {
    let dir = reallibs();
    torture(Case {
        name: "zstd-mt-O2",
        program: dir.join("zstd-mt-O2"),
        args: vec!["4096".into()],
        cwd: dir,
        rows: vec![Rows::Functions(&["ZSTDMT_", "POOL_"])],
        never: "tandem_never == 1",
        marker: Some(Marker {
            function: "torture_mark",
            condition: "block % 16 == 0",
        }),
        load: Load::NESTED,
    });
}
