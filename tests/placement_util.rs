//! Shared by the placement suites (jit_placement, real_libs, torture_real): the programs
//! scripts/real-libs builds; a program run under tandem
//! with a never-true condition on every line of some files, what it printed, how often it
//! stopped, where jump patches went and why the other sites kept their int3; and an
//! independent oracle of the branch targets of a binary (objdump, readelf).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::dap::{repo, DapClient};
use crate::support::{Peer, Protocol};

/// What one debugged run gave.
/// The output directory of scripts/real-libs, built once per test binary.
pub fn reallibs() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("../reallibs");
            let status = Command::new(repo().join("scripts/real-libs"))
                .env("TANDEM_REALLIBS", &out)
                .status()
                .expect("cannot run scripts/real-libs");
            assert!(status.success(), "scripts/real-libs failed");
            out.canonicalize().unwrap()
        })
        .clone()
}

#[derive(Debug, Default)]
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub exit_code: Option<i64>,
    pub stops: usize,
    /// (file address, length) of each jump patch placed.
    pub patches: Vec<(u64, u64)>,
    /// How many sites kept their int3, by reason.
    pub refusals: BTreeMap<String, usize>,
    /// Breakpoint sites verified.
    pub verified: usize,
    /// From configurationDone to the exited event.
    pub elapsed: Duration,
    pub log: String,
}

/// The program's own run, without tandem: (stdout, stderr, exit code, duration).
pub fn plain_run(program: &Path, args: &[&str], cwd: &Path) -> (String, String, i32, Duration) {
    let started = Instant::now();
    let out = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
        started.elapsed(),
    )
}

/// Runs `program` under `tandem dap` with `condition` on every line of each of `files`
/// (lines 1..=its line count; those without code move or stay unverified), and
/// `function_breakpoints` (stops are continued), until it exits.
pub fn debugged_run(
    program: &Path,
    args: &[&str],
    cwd: &Path,
    files: &[PathBuf],
    condition: &str,
    envs: &[(&str, &str)],
) -> Run {
    let files: Vec<(PathBuf, std::ops::RangeInclusive<usize>)> = files
        .iter()
        .map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (f.clone(), 1..=n)
        })
        .collect();
    debugged_run_lines(program, args, cwd, &files, condition, envs)
}

/// Like [`debugged_run`], with the condition on a range of lines of each file.
pub fn debugged_run_lines(
    program: &Path,
    args: &[&str],
    cwd: &Path,
    files: &[(PathBuf, std::ops::RangeInclusive<usize>)],
    condition: &str,
    envs: &[(&str, &str)],
) -> Run {
    let mut all_envs = vec![("TANDEM_LOG", "engine=debug")];
    all_envs.extend_from_slice(envs);
    let mut c = DapClient::with_peer(Peer::spawn(Protocol::Dap, &[], &all_envs));
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program, "args": args, "cwd": cwd}),
    );
    let mut run = Run::default();
    for (file, lines) in files {
        // First every line; then only the lines that have code of their own (a line
        // without code moves to the next one, and two breakpoints at one address keep
        // its int3: not what an editor's user sets).
        let bps: Vec<Value> = lines.clone().map(|line| json!({"line": line})).collect();
        let body = c.ok(
            "setBreakpoints",
            json!({"source": {"path": file}, "breakpoints": bps}),
        );
        let mut own: Vec<i64> = body["breakpoints"]
            .as_array()
            .unwrap()
            .iter()
            .zip(lines.clone())
            .filter(|(b, line)| b["verified"] == true && b["line"] == *line as i64)
            .map(|(_, line)| line as i64)
            .collect();
        own.dedup();
        let bps: Vec<Value> = own
            .iter()
            .map(|line| json!({"line": line, "condition": condition}))
            .collect();
        let body = c.ok(
            "setBreakpoints",
            json!({"source": {"path": file}, "breakpoints": bps}),
        );
        run.verified += body["breakpoints"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["verified"] == true)
            .count();
    }
    let started = Instant::now();
    c.ok("configurationDone", json!({}));
    loop {
        let m = c
            .peer
            .try_recv(Duration::from_secs(300))
            .expect("no event within 300 s");
        match m["event"].as_str() {
            Some("stopped") => {
                run.stops += 1;
                assert!(run.stops < 50, "runaway stops: {m}");
                let thread = m["body"]["threadId"].as_i64().unwrap();
                c.ok("continue", json!({"threadId": thread}));
            }
            Some("output") => {
                let text = m["body"]["output"].as_str().unwrap_or_default();
                match m["body"]["category"].as_str() {
                    Some("stdout") => run.stdout.push_str(text),
                    Some("stderr") => run.stderr.push_str(text),
                    _ => {}
                }
            }
            Some("exited") => {
                run.elapsed = started.elapsed();
                run.exit_code = m["body"]["exitCode"].as_i64();
            }
            Some("terminated") => break,
            _ => {}
        }
    }
    run.log = strip_ansi(&c.peer.stderr());
    c.finish();
    (run.patches, run.refusals) = placements(&run.log);
    run
}

/// From an `engine=debug` log without colours: (file address, length) of each jump patch
/// placed, and how many sites kept their int3, by reason.
pub fn placements(log: &str) -> (Vec<(u64, u64)>, BTreeMap<String, usize>) {
    let mut patches = Vec::new();
    let mut refusals = BTreeMap::new();
    for line in log.lines() {
        if line.contains("a jump patch covers the site") {
            let field = |name: &str| -> u64 {
                let v = line
                    .split(&format!("{name}="))
                    .nth(1)
                    .unwrap()
                    .split(|c: char| !c.is_ascii_alphanumeric())
                    .next()
                    .unwrap();
                v.parse().unwrap()
            };
            patches.push((field("file_addr"), field("len")));
        } else if let Some(why) = line.split("condition stays with the debugger: ").nth(1) {
            // Addresses vary between runs: group by the words.
            let why: String = why
                .split(" addr=")
                .next()
                .unwrap()
                .split(" at 0x")
                .next()
                .unwrap()
                .split(" (0x")
                .next()
                .unwrap()
                .trim()
                .to_string();
            *refusals.entry(why).or_default() += 1;
        }
    }
    (patches, refusals)
}

/// The text without terminal colour sequences (`ESC [ … m`).
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Every direct branch and call target in `program`'s code, by objdump.
pub fn objdump_targets(program: &Path) -> Vec<u64> {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(program)
        .output()
        .expect("objdump");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut targets = Vec::new();
    for line in text.lines() {
        // "    1208:\tjbe    1087 <work.cold>"
        let mut parts = line.split('\t');
        let (Some(_), Some(ins)) = (parts.next(), parts.next()) else {
            continue;
        };
        let mut words = ins.split_whitespace();
        let Some(mnemonic) = words.next() else {
            continue;
        };
        if !(mnemonic.starts_with('j') || mnemonic.starts_with("call") || mnemonic == "loop") {
            continue;
        }
        if let Some(t) = words.next().and_then(|t| u64::from_str_radix(t, 16).ok()) {
            if ins.contains('<') {
                targets.push(t);
            }
        }
    }
    targets.sort_unstable();
    targets.dedup();
    targets
}

/// Jump patches (file address, length) covering a target strictly inside.
pub fn covering(patches: &[(u64, u64)], targets: &[u64]) -> Vec<(u64, u64, u64)> {
    let mut bad = Vec::new();
    for &(at, len) in patches {
        let i = targets.partition_point(|&t| t <= at);
        if let Some(&t) = targets.get(i).filter(|&&t| t < at + len) {
            bad.push((at, len, t));
        }
    }
    bad
}

/// The (start, end) file addresses of function symbol `name`, by nm.
pub fn symbol_range(program: &Path, name: &str) -> (u64, u64) {
    let out = Command::new("nm")
        .arg("-S")
        .arg(program)
        .output()
        .expect("nm");
    let text = String::from_utf8_lossy(&out.stdout);
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 4 && f[3] == name {
            let start = u64::from_str_radix(f[0], 16).unwrap();
            let size = u64::from_str_radix(f[1], 16).unwrap();
            return (start, start + size);
        }
    }
    panic!("no symbol {name} in {}", program.display())
}

/// A summary of the refusals for messages and reports.
pub fn summary(run: &Run) -> String {
    let kept: usize = run.refusals.values().sum();
    let mut s = format!(
        "{} sites verified, {} jump patches, {} kept their int3, {} stops, {:?}\n",
        run.verified,
        run.patches.len(),
        kept,
        run.stops,
        run.elapsed
    );
    for (why, n) in &run.refusals {
        s.push_str(&format!("  {n:6}  {why}\n"));
    }
    s
}
