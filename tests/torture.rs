//! The debuggee is never harmed: four threads and a 2 kHz SIGALRM handler run small hot
//! functions while the client re-sends `setBreakpoints` for their file every ~15 ms with
//! a random subset of lines and random never-true conditions — what a user clicking in the
//! gutter of a running program does. The program must print exactly what an undebugged
//! run of the same rounds prints, exit with the same code, and never stop. A variant keeps
//! one condition that is sometimes true among the edits: every true hit stops exactly
//! once, on its own thread, with the right values.
//!
//! Each scenario runs `TANDEM_TORTURE_SECS` seconds of live edits (default 10; the suite
//! runs six of them: -O0 and -O2, conditions in the debuggee and on the int3 path, and
//! the true-hit variant at both levels). `TANDEM_TORTURE_SEED` replays one edit sequence.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::dap::{build_sources, line_of, sample_path, DapClient};
use support::{Peer, Protocol, Rng};

/// Calls per round of each worker (samples/c/torture.c's CALLS).
const CALLS: i64 = 64;
/// How often the set of breakpoints is replaced.
const EDIT_EVERY: Duration = Duration::from_millis(15);

fn program(opt: &str) -> PathBuf {
    build_sources(
        &["c/torture.c", "c/torture_lib.c"],
        "gcc",
        &["-g", opt, "-pthread"],
    )
}

fn seconds() -> f64 {
    std::env::var("TANDEM_TORTURE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10.0)
}

/// The generator of the sequence, seeded from `TANDEM_TORTURE_SEED` (else the clock).
fn rng() -> Rng {
    Rng::seeded("TANDEM_TORTURE_SEED", "torture")
}

/// A line of the hot functions and the never-true conditions that make sense on it.
struct Site {
    line: i64,
    conditions: &'static [&'static str],
}

/// Conditions every line can evaluate at any optimisation level: a global of the other
/// compilation unit (g_never is defined in torture.c, tested in torture_lib.c).
const GLOBAL: &[&str] = &[
    "g_never == 1",
    "g_never > 100",
    "(g_never & 16) != 0",
    "g_never == 2 && g_never == 3",
];

fn sites(opt: &str) -> Vec<Site> {
    let lib = sample_path("c/torture_lib.c");
    let at = |m: &str| line_of(&lib, m);
    // At -O2 only a function's first line is sure to have its parameters; at -O0 every
    // variable lives in its slot on every line.
    let o0 = opt == "-O0";
    let add_params: &'static [&'static str] = &["i == -7", "t == 99", "i < 0 && t > 1"];
    let mix_params: &'static [&'static str] = &["i == -7", "h == 1 && i == -1"];
    let mut out = vec![
        Site {
            line: at("T:add1"),
            conditions: add_params,
        },
        Site {
            line: at("T:mix1"),
            conditions: mix_params,
        },
    ];
    for m in ["T:add2", "T:add3", "T:add4", "T:add5"] {
        out.push(Site {
            line: at(m),
            conditions: if o0 {
                &["x == -12345", "t == 99"]
            } else {
                GLOBAL
            },
        });
    }
    for m in [
        "T:mix2", "T:mix3", "T:mix4", "T:mix5", "T:mix6", "T:mix7", "T:mix8",
    ] {
        out.push(Site {
            line: at(m),
            conditions: if o0 {
                &["i == -7", "i < -1000"]
            } else {
                GLOBAL
            },
        });
    }
    out
}

/// A condition that holds now and then: on a worker's every 5000th call (not in the
/// signal handler, whose calls pass t = 9).
const TRUE_CONDITION: &str = "i % 5000 == 4999 && t < 4";

struct Outcome {
    output: String,
    exit_code: i64,
    /// (thread, i, t) of every stop.
    stops: Vec<(i64, i64, i64)>,
    edits: usize,
}

/// Runs the scenario and returns what the debugged program printed and how it ended.
fn debugged_run(opt: &str, jit: bool, with_true: bool) -> Outcome {
    let exe = program(opt);
    let lib = sample_path("c/torture_lib.c");
    let sites = sites(opt);
    let true_line = line_of(&lib, "T:add1");
    let secs = seconds();
    let mut rng = rng();
    let log = std::env::var("TANDEM_TORTURE_LOG").unwrap_or_else(|_| "warn".into());
    let mut envs = vec![("TANDEM_LOG", log.as_str())];
    if !jit {
        envs.push(("TANDEM_CONDITIONS_IN_DEBUGGEE", "0"));
    }
    let log_file = std::env::var("TANDEM_TORTURE_LOG_FILE").ok();
    let args: Vec<&str> = match &log_file {
        Some(f) => vec!["--log", f.as_str()],
        None => vec![],
    };
    let mut c = DapClient::with_peer(Peer::spawn(Protocol::Dap, &args, &envs));
    c.initialize();
    c.ok(
        "launch",
        json!({"program": exe, "args": [format!("{secs}")], "console": "internalConsole"}),
    );
    let set = |rng: &mut Rng| -> Vec<Value> {
        let mut bps = Vec::new();
        for s in &sites {
            if with_true && s.line == true_line {
                continue;
            }
            if rng.below(3) != 0 {
                let cond = s.conditions[rng.below(s.conditions.len())];
                bps.push(json!({"line": s.line, "condition": cond}));
            }
        }
        if with_true {
            bps.push(json!({"line": true_line, "condition": TRUE_CONDITION}));
        }
        bps
    };
    let first = set(&mut rng);
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": lib}, "breakpoints": first}),
    );
    c.ok("configurationDone", json!({}));
    let start = Instant::now();
    let mut edits = 0;
    let mut stops = Vec::new();
    let mut next_edit = Instant::now();
    let exit_code = 'run: loop {
        if start.elapsed().as_secs_f64() < secs && Instant::now() >= next_edit {
            let bps = set(&mut rng);
            let r = c.request(
                "setBreakpoints",
                json!({"source": {"path": lib}, "breakpoints": bps}),
            );
            // The program may end between the check and the request.
            if r["success"] == true {
                edits += 1;
                for bp in r["body"]["breakpoints"].as_array().unwrap() {
                    assert!(
                        bp["message"].as_str().is_none_or(|m| !m.contains("error")),
                        "{bp}"
                    );
                }
            }
            next_edit = Instant::now() + EDIT_EVERY;
        }
        for e in c.drain_events(Duration::from_millis(1)) {
            match e["event"].as_str().unwrap_or_default() {
                "stopped" => {
                    let thread = e["body"]["threadId"].as_i64().unwrap();
                    let frames = c.frames(thread);
                    let top = frames[0].clone();
                    let where_ =
                        format!("{}:{} {}", top["source"]["path"], top["line"], top["name"]);
                    assert!(
                        with_true && e["body"]["reason"] == "breakpoint",
                        "a spurious stop ({}) at {where_}; output so far: {:?}",
                        e["body"],
                        c.output
                    );
                    assert_eq!(top["line"], true_line, "stopped at {where_}");
                    let frame = top["id"].as_i64().unwrap();
                    let value = |c: &mut DapClient, name: &str| -> i64 {
                        c.evaluate(frame, name)["result"]
                            .as_str()
                            .unwrap()
                            .parse()
                            .unwrap()
                    };
                    let (i, t) = (value(&mut c, "i"), value(&mut c, "t"));
                    stops.push((thread, i, t));
                    c.ok("continue", json!({"threadId": thread}));
                }
                "exited" => break 'run e["body"]["exitCode"].as_i64().unwrap(),
                "terminated" => panic!("terminated without an exit code: {:?}", c.output),
                _ => {}
            }
        }
        if start.elapsed().as_secs_f64() > secs + 60.0 {
            let stacks = pause_and_describe(&mut c);
            panic!(
                "the program did not end; output so far: {:?}\n{stacks}\ntandem's log ends:\n{}",
                c.output,
                tail(&c.peer.stderr(), 4000)
            );
        }
    };
    let output: String = c
        .output
        .iter()
        .filter(|(cat, _)| cat == "stdout")
        .map(|(_, text)| text.as_str())
        .collect();
    let errors: Vec<&String> = c
        .output
        .iter()
        .map(|(_, t)| t)
        .filter(|t| t.contains("error in condition"))
        .collect();
    assert!(errors.is_empty(), "conditions failed: {errors:?}");
    c.finish();
    Outcome {
        output,
        exit_code,
        stops,
        edits,
    }
}

/// Pauses the program and describes every thread's stack with the locals of each frame.
fn pause_and_describe(c: &mut DapClient) -> String {
    let threads = c.ok("threads", json!({}));
    let first = threads["threads"][0]["id"].clone();
    c.ok("pause", json!({"threadId": first}));
    c.event("stopped");
    let mut out = String::new();
    for t in threads["threads"].as_array().unwrap() {
        let id = t["id"].as_i64().unwrap();
        out += &format!("thread {id} {}\n", t["name"]);
        for f in c.frames(id).iter().take(6) {
            out += &format!(
                "  {} {}:{} pc {}\n",
                f["name"], f["source"]["path"], f["line"], f["instructionPointerReference"]
            );
            let scopes = c.ok("scopes", json!({"frameId": f["id"]}));
            for sc in scopes["scopes"].as_array().unwrap().iter().take(2) {
                let r = sc["variablesReference"].clone();
                let vars = c.request("variables", json!({"variablesReference": r}));
                for v in vars["body"]["variables"].as_array().into_iter().flatten() {
                    out += &format!("    {} = {}\n", v["name"], v["value"]);
                }
            }
        }
    }
    out
}

/// The last `n` bytes of `text` (at a character boundary).
fn tail(text: &str, n: usize) -> &str {
    let mut at = text.len().saturating_sub(n);
    while !text.is_char_boundary(at) {
        at += 1;
    }
    &text[at..]
}

/// The undebugged program's output and exit code for the same rounds.
fn plain_run(exe: &Path, rounds: &str) -> (String, i64) {
    let out = Command::new(exe).args(["-r", rounds]).output().unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        out.status.code().unwrap_or(-1) as i64,
    )
}

fn rounds_of(output: &str) -> Vec<i64> {
    let line = output
        .lines()
        .find_map(|l| l.strip_prefix("rounds "))
        .unwrap_or_else(|| panic!("no rounds line in the output: {output:?}"));
    line.split(',').map(|r| r.trim().parse().unwrap()).collect()
}

fn torture(opt: &str, jit: bool, with_true: bool) {
    let run = debugged_run(opt, jit, with_true);
    let rounds = rounds_of(&run.output);
    let joined: Vec<String> = rounds.iter().map(|r| r.to_string()).collect();
    let (expected, code) = plain_run(&program(opt), &joined.join(","));
    eprintln!(
        "torture {opt} jit={jit} true={with_true}: {} edits, rounds {rounds:?}, {} stops",
        run.edits,
        run.stops.len()
    );
    assert!(
        run.edits as f64 >= seconds() * 10.0,
        "too few edits ({}) to mean anything",
        run.edits
    );
    assert!(
        rounds.iter().all(|r| *r > 0),
        "a worker never ran: {rounds:?}"
    );
    assert_eq!(
        run.output, expected,
        "the debugged program computed otherwise"
    );
    assert_eq!(run.exit_code, code, "the debugged program exited otherwise");
    if !with_true {
        assert!(run.stops.is_empty());
        return;
    }
    // Every true hit stopped once: per worker t, its i ran over 0..rounds*CALLS.
    let mut by_t: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
    let mut thread_of_t: BTreeMap<i64, i64> = BTreeMap::new();
    for &(thread, i, t) in &run.stops {
        assert_eq!(i % 5000, 4999, "stopped with i = {i}");
        assert!((0..4).contains(&t), "stopped with t = {t}");
        assert!(
            by_t.entry(t).or_default().insert(i),
            "i = {i} of t = {t} stopped twice"
        );
        let first = *thread_of_t.entry(t).or_insert(thread);
        assert_eq!(first, thread, "worker {t} stopped on two threads");
    }
    for (t, r) in rounds.iter().enumerate() {
        let expected: BTreeSet<i64> = (0..r * CALLS).filter(|i| i % 5000 == 4999).collect();
        let seen = by_t.remove(&(t as i64)).unwrap_or_default();
        assert_eq!(seen, expected, "the true hits of worker {t}");
    }
}

#[test]
fn live_edits_o0_in_debuggee() {
    torture("-O0", true, false);
}

#[test]
fn live_edits_o0_int3_path() {
    torture("-O0", false, false);
}

#[test]
fn live_edits_o2_in_debuggee() {
    torture("-O2", true, false);
}

#[test]
fn live_edits_o2_int3_path() {
    torture("-O2", false, false);
}

#[test]
fn true_hits_stop_once_o0() {
    torture("-O0", true, true);
}

#[test]
fn true_hits_stop_once_o2() {
    torture("-O2", true, true);
}
