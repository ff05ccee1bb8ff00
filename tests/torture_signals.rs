//! The debuggee is never harmed by a breakpoint that a signal meets: samples/c/sig_sites.c
//! runs four threads through two small noinline hot functions while a 2 kHz SIGALRM
//! handler (on a sigaltstack, without SA_RESTART) runs them too, the workers block every
//! signal across some calls (sigprocmask), and queued real-time
//! signals arrive; breakpoints with never-true conditions sit on the lines of those
//! functions, including `return v;` — at -O2 the `ret` itself, a row that is not a
//! statement start. The debugged run must print exactly what a plain run of the same
//! rounds prints, exit the same way, never stop, and see every queued signal exactly
//! once (the program counts them with an atomic counter). A step over a breakpoint that meets a pending signal used to stop with a fake
//! "exception SIGTRAP" at the handler's first instruction.
//!
//! Each scenario runs `TANDEM_TORTURE_SECS` seconds (default 3); `TANDEM_TORTURE_SEED`
//! replays a live-edit sequence.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::dap::{build, DapClient};
use support::{Peer, Protocol, Rng};

const EDIT_EVERY: Duration = Duration::from_millis(15);
/// How often the pause scenario pauses the program.
const PAUSE_EVERY: Duration = Duration::from_millis(40);
/// Calls per round of each worker (samples/c/sig_sites.c's CALLS).
const CALLS: u64 = 64;

/// Built without PIE, so the addresses its line table names are its runtime addresses.
fn program(opt: &str) -> PathBuf {
    build("c/sig_sites.c", "gcc", &["-g", opt, "-pthread", "-no-pie"])
}

/// The hot functions' code: `[start, end)` of every symbol `hot_*` (with `.cold` parts).
fn hot_ranges(exe: &Path) -> Vec<(u64, u64)> {
    let out = Command::new("nm")
        .args(["-S", "--defined-only"])
        .arg(exe)
        .output()
        .unwrap();
    let mut ranges = Vec::new();
    for l in String::from_utf8(out.stdout).unwrap().lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() == 4 && f[3].starts_with("hot_") {
            let start = u64::from_str_radix(f[0], 16).unwrap();
            let size = u64::from_str_radix(f[1], 16).unwrap();
            ranges.push((start, start + size));
        }
    }
    assert!(ranges.len() >= 2, "no hot functions in {}", exe.display());
    ranges
}

/// Every address a row of the line table names inside the hot functions (statement
/// starts or not), read with binutils' readelf, not with tandem.
fn row_sites(exe: &Path) -> Vec<u64> {
    let ranges = hot_ranges(exe);
    let out = Command::new("readelf")
        .arg("--debug-dump=decodedline")
        .arg(exe)
        .output()
        .unwrap();
    let mut sites = std::collections::BTreeSet::new();
    for l in String::from_utf8(out.stdout).unwrap().lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 3 || f[1].parse::<u32>().is_err() {
            continue;
        }
        let Some(a) = f[2].strip_prefix("0x") else {
            continue;
        };
        let a = u64::from_str_radix(a, 16).unwrap();
        if ranges.iter().any(|(s, e)| (*s..*e).contains(&a)) {
            sites.insert(a);
        }
    }
    sites.into_iter().collect()
}

fn seconds() -> f64 {
    std::env::var("TANDEM_TORTURE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0)
}

/// The generator of the sequence, seeded from `TANDEM_TORTURE_SEED` (else the clock).
fn rng() -> Rng {
    Rng::seeded("TANDEM_TORTURE_SEED", "torture_signals")
}

/// Never-true conditions every line can evaluate at every optimisation level.
const NEVER: &[&str] = &[
    "g_never == 1",
    "g_never > 100",
    "g_never == 2 && g_never == 3",
];

/// Which row addresses of the hot functions get a breakpoint.
#[derive(Clone, Copy)]
enum Sites {
    /// Every one.
    All,
    /// The `ret` instructions only (the issue's first report).
    Returns,
}

fn chosen_sites(exe: &Path, which: Sites) -> Vec<u64> {
    let all = row_sites(exe);
    match which {
        Sites::All => all,
        Sites::Returns => {
            let rets: Vec<u64> = all.into_iter().filter(|a| is_ret(exe, *a)).collect();
            assert!(!rets.is_empty(), "no row names a ret");
            rets
        }
    }
}

/// The `ret` of hot_add.
fn hot_add_ret(exe: &Path) -> u64 {
    let out = Command::new("nm").arg(exe).output().unwrap();
    let start = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_suffix(" T hot_add")
                .map(|a| u64::from_str_radix(a, 16).unwrap())
        })
        .unwrap();
    let (_, end) = *hot_ranges(exe).iter().find(|r| r.0 == start).unwrap();
    row_sites(exe)
        .into_iter()
        .filter(|a| (start..end).contains(a))
        .find(|a| is_ret(exe, *a))
        .expect("a row names hot_add's ret")
}

/// Which instruction the hit-count site is on.
#[derive(Clone, Copy)]
enum Counted {
    /// hot_add's `ret`, run by the workers and by the handler.
    AddRet,
    /// The first instruction of hot_edge whose disassembly holds this text, run by the
    /// workers only: CALLS / 4 times a round.
    Edge(&'static str),
}

/// The address of the counted instruction.
fn counted_site(exe: &Path, which: Counted) -> u64 {
    let needle = match which {
        Counted::AddRet => return hot_add_ret(exe),
        Counted::Edge(needle) => needle,
    };
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", "--disassemble=hot_edge"])
        .arg(exe)
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.contains(needle))
        .find_map(|l| u64::from_str_radix(l.trim().split(':').next()?, 16).ok())
        .unwrap_or_else(|| panic!("no `{needle}` in hot_edge"))
}

/// Whether the instruction at `addr` is a `ret` (objdump says).
fn is_ret(exe: &Path, addr: u64) -> bool {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(format!("--start-address={addr:#x}"))
        .arg(format!("--stop-address={:#x}", addr + 1))
        .arg(exe)
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .any(|l| l.trim_start().starts_with(&format!("{addr:x}:")) && l.contains("ret"))
}

struct Scenario {
    opt: &'static str,
    /// Conditions compiled into the debuggee (else evaluated on the int3 path).
    jit: bool,
    sites: Sites,
    /// Re-send random subsets every EDIT_EVERY.
    live: bool,
    /// A hit condition `% N` on hot_add's `ret` besides: it must stop exactly once per
    /// N executions of that instruction, however signals cut its step-overs.
    every: Option<(u64, Counted)>,
    /// SIGSTOP then SIGCONT sent to the process from outside every 100 ms.
    job_control: bool,
    /// A DAP `pause` every ~40 ms, continued as soon as it stops.
    pauses: bool,
}

struct Run {
    output: String,
    /// Stops at the hit-count site.
    counted: u64,
    exit_code: i64,
    stops: Vec<String>,
    edits: usize,
}

fn debugged_run(s: &Scenario) -> Run {
    let exe = program(s.opt);
    let counted_site = s.every.map(|(_, which)| counted_site(&exe, which));
    let sites: Vec<u64> = chosen_sites(&exe, s.sites)
        .into_iter()
        .filter(|a| Some(*a) != counted_site)
        .collect();
    let secs = seconds();
    let mut rng = rng();
    let mut envs = vec![("TANDEM_LOG", "warn")];
    if !s.jit {
        envs.push(("TANDEM_CONDITIONS_IN_DEBUGGEE", "0"));
    }
    // TANDEM_TORTURE_LOG=FILE keeps the adapter's debug log of the run there.
    let log = std::env::var("TANDEM_TORTURE_LOG").ok();
    let mut args = Vec::new();
    if let Some(file) = &log {
        envs[0].1 = "tracer=trace,engine=debug,warn";
        args = vec!["--log", file.as_str()];
    }
    let mut c = DapClient::with_peer(Peer::spawn(Protocol::Dap, &args, &envs));
    c.initialize();
    c.ok(
        "launch",
        json!({"program": exe, "args": [format!("{secs}")], "console": "internalConsole"}),
    );
    let set = |rng: &mut Rng, all: bool| -> Vec<Value> {
        let mut bps = Vec::new();
        for a in &sites {
            if all || rng.below(3) != 0 {
                let cond = NEVER[rng.below(NEVER.len())];
                bps.push(json!({"instructionReference": format!("{a:#x}"), "condition": cond}));
            }
        }
        if let (Some(a), Some((n, _))) = (counted_site, s.every) {
            bps.push(json!({"instructionReference": format!("{a:#x}"), "hitCondition": format!("% {n}")}));
        }
        bps
    };
    let r = c.ok(
        "setInstructionBreakpoints",
        json!({"breakpoints": set(&mut rng, true)}),
    );
    for bp in r["breakpoints"].as_array().unwrap() {
        assert_eq!(bp["verified"], true, "{bp}");
    }
    c.ok("configurationDone", json!({}));
    let start = Instant::now();
    let (mut edits, mut stops, mut counted) = (0, Vec::new(), 0);
    let mut pid: Option<i64> = None;
    let mut job_signals = 0;
    let (mut pauses, mut paused, mut pause_pending) = (0, 0, false);
    let mut pause_sent = Instant::now();
    let mut next_pause = Instant::now() + PAUSE_EVERY;
    let mut a_thread: Option<i64> = None;
    let mut next_stop = Instant::now() + Duration::from_millis(100);
    let mut next_edit = Instant::now() + EDIT_EVERY;
    let exit_code = 'run: loop {
        if s.live && start.elapsed().as_secs_f64() < secs && Instant::now() >= next_edit {
            let bps = set(&mut rng, false);
            let r = c.request("setInstructionBreakpoints", json!({"breakpoints": bps}));
            if r["success"] == true {
                edits += 1;
            }
            next_edit = Instant::now() + EDIT_EVERY;
        }
        if let (true, Some(p)) = (s.job_control, pid) {
            if start.elapsed().as_secs_f64() < secs && Instant::now() >= next_stop {
                // SAFETY: kill(2) on the debuggee's own pid, alive until its exited event.
                unsafe { libc::kill(p as i32, libc::SIGSTOP) };
                std::thread::sleep(Duration::from_millis(5));
                unsafe { libc::kill(p as i32, libc::SIGCONT) };
                job_signals += 1;
                next_stop = Instant::now() + Duration::from_millis(100);
            }
        }
        if s.pauses
            && !pause_pending
            && start.elapsed().as_secs_f64() < secs
            && Instant::now() >= next_pause
        {
            if let Some(t) = a_thread {
                if c.request("pause", json!({"threadId": t}))["success"] == true {
                    pauses += 1;
                    pause_pending = true;
                    pause_sent = Instant::now();
                }
            }
            next_pause = Instant::now() + PAUSE_EVERY;
        }
        for e in c.drain_events(Duration::from_millis(1)) {
            match e["event"].as_str().unwrap_or_default() {
                "process" => pid = e["body"]["systemProcessId"].as_i64(),
                "thread" if e["body"]["reason"] == "started" => {
                    a_thread = a_thread.or(e["body"]["threadId"].as_i64())
                }
                "stopped" if e["body"]["reason"] == "pause" && pause_pending => {
                    pause_pending = false;
                    paused += 1;
                    let thread = e["body"]["threadId"].as_i64().unwrap();
                    c.frames(thread);
                    c.ok("continue", json!({"threadId": thread}));
                }
                "stopped" => {
                    let thread = e["body"]["threadId"].as_i64().unwrap();
                    let frames = c.frames(thread);
                    let pc = frames[0]["instructionPointerReference"]
                        .as_str()
                        .unwrap_or("");
                    let pc = u64::from_str_radix(pc.trim_start_matches("0x"), 16).ok();
                    if e["body"]["reason"] == "instruction breakpoint"
                        && pc.is_some()
                        && pc == counted_site
                    {
                        counted += 1;
                        c.ok("continue", json!({"threadId": thread}));
                        continue;
                    }
                    let names: Vec<String> = frames
                        .iter()
                        .take(4)
                        .map(|f| format!("{} line {}", f["name"], f["line"]))
                        .collect();
                    stops.push(format!("{} in {names:?}", e["body"]));
                    c.ok("continue", json!({"threadId": thread}));
                }
                "exited" => {
                    // A pause sent as the program was ending may find it gone; one
                    // pending longer was lost.
                    if pause_pending && pause_sent.elapsed() < Duration::from_millis(500) {
                        pauses -= 1;
                    }
                    break 'run e["body"]["exitCode"].as_i64().unwrap();
                }
                "terminated" => panic!("terminated without an exit code: {:?}", c.output),
                _ => {}
            }
        }
        assert!(
            start.elapsed().as_secs_f64() < secs + 60.0,
            "the program did not end; output so far: {:?}",
            c.output
        );
    };
    let output: String = c
        .output
        .iter()
        .filter(|(cat, _)| cat == "stdout")
        .map(|(_, text)| text.as_str())
        .collect();
    c.finish();
    if s.pauses {
        eprintln!("{pauses} pauses sent, {paused} stopped");
        assert!(
            paused >= 10 && paused == pauses,
            "{pauses} pauses sent, {paused} stopped: too few or some never stopped"
        );
    }
    if s.job_control {
        assert!(
            job_signals >= 10,
            "only {job_signals} SIGSTOP/SIGCONT pairs sent"
        );
    }
    Run {
        output,
        counted,
        exit_code,
        stops,
        edits,
    }
}

/// The undebugged program's output and exit code for the same rounds.
fn plain_run(exe: &Path, rounds: &str) -> (String, i64) {
    let out = Command::new(exe).args(["-r", rounds]).output().unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        out.status.code().unwrap_or(-1) as i64,
    )
}

fn check(s: Scenario) {
    let run = debugged_run(&s);
    eprintln!(
        "torture_signals {} jit={} live={}: {} edits, {} stops",
        s.opt,
        s.jit,
        s.live,
        run.edits,
        run.stops.len()
    );
    assert!(
        run.stops.is_empty(),
        "never-true conditions stopped {} times, first: {}",
        run.stops.len(),
        run.stops[0]
    );
    // Every queued real-time signal the program sent reached its handler exactly once.
    assert!(
        run.output.contains("rt all delivered\n"),
        "queued real-time signals were lost or doubled: {:?}",
        run.output
    );
    let rounds = run
        .output
        .lines()
        .find_map(|l| l.strip_prefix("rounds "))
        .unwrap_or_else(|| panic!("no rounds line: {:?}", run.output))
        .to_string();
    assert!(
        // Every hit on the int3 path costs a trip through the tracer, so on a loaded
        // machine one worker may finish no round in the time given; the comparison with
        // the plain run below holds for whatever rounds each did.
        rounds.split(',').any(|r| r.trim() != "0"),
        "no worker ran: {rounds}"
    );
    let (expected, code) = plain_run(&program(s.opt), &rounds);
    // The plain run with fixed rounds sends no signals and says so the same way; how often
    // the handler ran the hot code depends on timing.
    let handler_calls: u64 = run
        .output
        .lines()
        .find_map(|l| l.strip_prefix("handler calls "))
        .unwrap()
        .parse()
        .unwrap();
    let timeless = |o: &str| -> String {
        o.lines()
            .filter(|l| !l.starts_with("handler calls "))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    assert_eq!(
        timeless(&run.output),
        timeless(&expected),
        "the debugged program computed otherwise"
    );
    if let Some((n, which)) = s.every {
        let rounds: u64 = rounds
            .split(',')
            .map(|r| r.trim().parse::<u64>().unwrap())
            .sum();
        let (calls, what) = match which {
            Counted::AddRet => (rounds * CALLS + handler_calls, "hot_add's ret".to_string()),
            Counted::Edge(insn) => (rounds * (CALLS / 4), format!("hot_edge's `{insn}`")),
        };
        eprintln!("{what} ran {calls} times, {} stops every {n}", run.counted);
        assert!(calls / n >= 3, "too few calls ({calls}) to mean anything");
        assert_eq!(
            run.counted,
            calls / n,
            "{what} ran {calls} times: one stop per {n}"
        );
    }
    assert_eq!(run.exit_code, code, "the debugged program exited otherwise");
    if s.live {
        assert!(
            run.edits as f64 >= seconds() * 10.0,
            "too few edits ({}) to mean anything",
            run.edits
        );
    }
}

#[test]
fn return_sites_o2_in_debuggee() {
    check(Scenario {
        opt: "-O2",
        jit: true,
        sites: Sites::Returns,
        live: false,
        every: None,
        job_control: false,
        pauses: false,
    });
}

#[test]
fn return_sites_o2_int3_path() {
    check(Scenario {
        opt: "-O2",
        jit: false,
        sites: Sites::Returns,
        live: false,
        every: None,
        job_control: false,
        pauses: false,
    });
}

#[test]
fn every_line_o0_in_debuggee() {
    check(Scenario {
        opt: "-O0",
        jit: true,
        sites: Sites::All,
        live: false,
        every: None,
        job_control: false,
        pauses: false,
    });
}

#[test]
fn every_line_o3_int3_path() {
    check(Scenario {
        opt: "-O3",
        jit: false,
        sites: Sites::All,
        live: false,
        every: None,
        job_control: false,
        pauses: false,
    });
}

#[test]
fn live_edits_o2_in_debuggee() {
    check(Scenario {
        opt: "-O2",
        jit: true,
        sites: Sites::All,
        live: true,
        every: None,
        job_control: false,
        pauses: false,
    });
}

#[test]
fn live_edits_o2_int3_path() {
    check(Scenario {
        opt: "-O2",
        jit: false,
        sites: Sites::All,
        live: true,
        every: None,
        job_control: false,
        pauses: false,
    });
}

#[test]
fn hit_counts_once_per_hit_o2_int3_path() {
    check(Scenario {
        opt: "-O2",
        jit: false,
        sites: Sites::Returns,
        live: false,
        every: Some((300, Counted::AddRet)),
        job_control: false,
        pauses: false,
    });
}

#[test]
fn hit_counts_once_per_hit_o2_in_debuggee() {
    check(Scenario {
        opt: "-O2",
        jit: true,
        sites: Sites::All,
        live: false,
        every: Some((300, Counted::AddRet)),
        job_control: false,
        pauses: false,
    });
}

/// The hit count survives live edits that re-send its breakpoint: a hit whose step-over a
/// signal cut short must not count again when the handler returns onto the int3 that
/// the edit took out and put back.
#[test]
fn hit_counts_under_live_edits_o2_int3_path() {
    check(Scenario {
        opt: "-O2",
        jit: false,
        sites: Sites::Returns,
        live: true,
        every: Some((300, Counted::AddRet)),
        job_control: false,
        pauses: false,
    });
}

/// One stop per N executions of a `rep movsb`: a step over it runs one iteration per
/// single-step, so the step must end past the instruction, not back on its int3.
#[test]
fn hit_counts_on_rep_movsb_o2_int3_path() {
    check(Scenario {
        opt: "-O2",
        jit: false,
        sites: Sites::All,
        live: false,
        every: Some((10, Counted::Edge("rep movsb"))),
        job_control: false,
        pauses: false,
    });
}

/// The same on a raw `syscall` (the step over it, or its copy, must not restart it or
/// lose its result) with conditions in the debuggee on every other row.
#[test]
fn hit_counts_on_syscall_o2_in_debuggee() {
    check(Scenario {
        opt: "-O2",
        jit: true,
        sites: Sites::All,
        live: true,
        every: Some((10, Counted::Edge("syscall"))),
        job_control: false,
        pauses: false,
    });
}

/// The same on a lock-prefixed, RIP-relative add at -O3 (displaced, its displacement
/// must be fixed up in the copy).
#[test]
fn hit_counts_on_lock_add_o3_in_debuggee() {
    check(Scenario {
        opt: "-O3",
        jit: true,
        sites: Sites::All,
        live: false,
        every: Some((10, Counted::Edge("lock add"))),
        job_control: false,
        pauses: false,
    });
}

/// A DAP `pause` at random moments (every ~40 ms, continued at once) while breakpoints
/// are edited live at -O2 with conditions compiled into the debuggee: a pause can land
/// while a thread runs placed code, steps over a site or is between a trap and its resume.
#[test]
fn pauses_under_live_edits_o2_in_debuggee() {
    check(Scenario {
        opt: "-O2",
        jit: true,
        sites: Sites::All,
        live: true,
        every: None,
        job_control: false,
        pauses: true,
    });
}

#[test]
fn stop_and_continue_from_outside_o2() {
    check(Scenario {
        opt: "-O2",
        jit: true,
        sites: Sites::All,
        live: true,
        every: None,
        job_control: true,
        pauses: false,
    });
}

/// `next` through hot_add while the 2 kHz SIGALRM lands on the stepping thread: each step
/// ends on a line of hot_add (or back in its caller) with reason step — never in the
/// handler, never a fake exception — and the program still computes what a plain run does.
#[test]
fn next_under_signals_o0() {
    let exe = program("-O0");
    let src = support::dap::sample_path("c/sig_sites.c");
    let first = support::dap::line_of(&src, "S:add1");
    let mut c = DapClient::new();
    c.launch_to_stop(
        json!({"program": exe, "args": ["2"], "console": "internalConsole"}),
        &src,
        &[first],
    );
    let (mut steps, mut last) = (0, 0);
    for round in 0..20 {
        let stop = if round == 0 {
            None
        } else {
            c.ok(
                "setBreakpoints",
                json!({"source": {"path": src}, "breakpoints": [{"line": first}]}),
            );
            c.ok("continue", json!({"threadId": last}));
            Some(c.event("stopped"))
        };
        let _ = stop;
        // The thread at the breakpoint is the one to step; take it from the threads' stacks.
        // (A hit inside the handler's call is passed over: the next round continues.)
        let threads = c.ok("threads", json!({}));
        let tid = threads["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_i64().unwrap())
            .find(|t| {
                let f = c.frames(*t);
                // Called by a worker, not by the handler (which hot_add returns to).
                f[0]["name"] == "hot_add" && f[0]["line"] == first && f[1]["name"] == "work"
            });
        let Some(tid) = tid else {
            continue;
        };
        last = tid;
        c.ok(
            "setBreakpoints",
            json!({"source": {"path": src}, "breakpoints": []}),
        );
        loop {
            c.ok("next", json!({"threadId": tid}));
            let e = c.event("stopped");
            steps += 1;
            let top = c.frames(tid)[0].clone();
            assert_eq!(
                e["body"]["reason"], "step",
                "a step ended otherwise: {} at {top}",
                e["body"]
            );
            let name = top["name"].as_str().unwrap().to_string();
            assert!(
                name == "hot_add" || name == "work",
                "a step under signals ended in {name} line {}",
                top["line"]
            );
            if name == "work" {
                break;
            }
        }
    }
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": []}),
    );
    c.ok("continue", json!({"threadId": last}));
    let exited = c.event("exited");
    let output: String = c
        .output
        .iter()
        .filter(|(cat, _)| cat == "stdout")
        .map(|(_, text)| text.as_str())
        .collect();
    c.finish();
    eprintln!("next_under_signals_o0: {steps} steps");
    let rounds = output
        .lines()
        .find_map(|l| l.strip_prefix("rounds "))
        .unwrap()
        .to_string();
    let (expected, code) = plain_run(&exe, &rounds);
    // The `rt` line is compared too: every queued real-time signal delivered once while
    // the program was stepped through.
    let timeless = |o: &str| -> Vec<String> {
        o.lines()
            .filter(|l| !l.starts_with("handler calls "))
            .map(String::from)
            .collect()
    };
    assert_eq!(timeless(&output), timeless(&expected));
    assert_eq!(exited["body"]["exitCode"], code);
}
