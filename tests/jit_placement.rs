//! Where jump patches may go (engine/src/jit.rs, jit/targets.rs), checked against an
//! independent oracle: with a never-true condition on every line of a gcc -O2 function
//! split into `work` and `work.cold` and holding a switch jump table, no patch covers a
//! branch target objdump finds anywhere in the binary (the cold part's jump back into
//! the body included) nor an entry of the jump table (read from the file with readelf's
//! help), sites of the function with the table are placed, and the program prints and
//! exits as it does without tandem, with no stop.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

#[path = "placement_util.rs"]
mod placement_util;
mod support;

use std::path::Path;
use std::process::Command;

use placement_util::{covering, debugged_run, objdump_targets, plain_run, summary, symbol_range};
use support::dap::{build, sample_path};

/// The entries of `program`'s position-independent jump tables: for each
/// `lea T(%rip),%reg` followed by `movslq (%reg,%idx,4)`, the 32-bit offsets at T (as
/// many as land in `work`'s code), added to T.
fn jump_table_targets(program: &Path, code: (u64, u64)) -> Vec<u64> {
    let dis = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(program)
        .output()
        .unwrap();
    let dis = String::from_utf8_lossy(&dis.stdout).into_owned();
    let lines: Vec<&str> = dis.lines().collect();
    let bytes = std::fs::read(program).unwrap();
    // Section file offsets: "[16] .rodata PROGBITS 0000000000002000 002000 ..."
    let sections = Command::new("readelf")
        .arg("-SW")
        .arg(program)
        .output()
        .unwrap();
    let sections = String::from_utf8_lossy(&sections.stdout).into_owned();
    let to_offset = |addr: u64| -> Option<usize> {
        for l in sections.lines() {
            let l = l.replace("[ ", "[");
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() > 5 && f[0].starts_with('[') && f[2] != "NOBITS" {
                let (Ok(a), Ok(o), Ok(s)) = (
                    u64::from_str_radix(f[3], 16),
                    u64::from_str_radix(f[4], 16),
                    u64::from_str_radix(f[5], 16),
                ) else {
                    continue;
                };
                if a != 0 && a <= addr && addr < a + s {
                    return Some((addr - a + o) as usize);
                }
            }
        }
        None
    };
    let mut out = Vec::new();
    for w in lines.windows(2) {
        if !(w[0].contains("lea ") && w[0].contains("(%rip)") && w[1].contains("movslq (%")) {
            continue;
        }
        let table = u64::from_str_radix(
            w[0].split("# ")
                .nth(1)
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap(),
            16,
        )
        .unwrap();
        let at = to_offset(table).unwrap();
        for e in bytes[at..].chunks_exact(4) {
            let t =
                table.wrapping_add_signed(i64::from(i32::from_le_bytes([e[0], e[1], e[2], e[3]])));
            if !(code.0..code.1).contains(&t) {
                break;
            }
            out.push(t);
        }
    }
    out
}

#[test]
fn jump_patches_cover_no_branch_target_of_the_whole_binary() {
    let program = build("c/jit_cold.c", "gcc", &["-g", "-O2"]);
    let source = sample_path("c/jit_cold.c");
    let work = symbol_range(&program, "work");
    let cold = symbol_range(&program, "work.cold");
    let cwd = std::env::temp_dir();
    let (stdout, stderr, code, _) = plain_run(&program, &["3000"], &cwd);
    let run = debugged_run(&program, &["3000"], &cwd, &[source], "g_never == 1", &[]);
    let report = summary(&run);
    eprintln!("{report}");
    assert_eq!(run.stops, 0, "{report}");
    assert_eq!(run.exit_code, Some(i64::from(code)), "{report}");
    assert_eq!(run.stdout, stdout, "{report}");
    assert_eq!(run.stderr, stderr, "{report}");
    let mut targets = objdump_targets(&program);
    // The cold part jumps back into the body: the oracle sees it.
    assert!(
        targets.iter().any(|t| (work.0..work.1).contains(t)),
        "no branch into work"
    );
    let _ = cold;
    let table = jump_table_targets(&program, work);
    assert!(table.len() >= 8, "no jump table found in work: {table:?}");
    targets.extend(&table);
    targets.sort_unstable();
    targets.dedup();
    let bad = covering(&run.patches, &targets);
    assert!(
        bad.is_empty(),
        "patches covering targets {bad:x?}\n{report}"
    );
    // `work` has an indirect jump whose table is found: its sites are placed.
    let in_work = run
        .patches
        .iter()
        .filter(|(a, _)| (work.0..work.1).contains(a))
        .count();
    assert!(in_work >= 3, "{in_work} patches in work\n{report}");
}

/// Bytes of anonymous executable mappings of a process (where placed code lives).
fn placed_bytes(pid: i64) -> u64 {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    maps.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() != 5 || !f[1].contains('x') {
                return None;
            }
            let (a, b) = f[0].split_once('-')?;
            Some(u64::from_str_radix(b, 16).ok()? - u64::from_str_radix(a, 16).ok()?)
        })
        .sum()
}

/// How often the same breakpoints are sent again.
const ROUNDS: usize = 60;

#[test]
fn breakpoints_sent_again_reuse_the_placed_code() {
    let program = build("c/jit_cold.c", "gcc", &["-g", "-O2"]);
    let source = sample_path("c/jit_cold.c");
    let cwd = std::env::temp_dir();
    let (stdout, _, _, _) = plain_run(&program, &["3000"], &cwd);
    let lines = std::fs::read_to_string(&source).unwrap().lines().count() as i64;
    let stop_line = support::dap::line_of(&source, "LINE_LOOP");
    let mut c = support::dap::DapClient::with_peer(support::Peer::spawn(
        support::Protocol::Dap,
        &[],
        &[("TANDEM_LOG", "engine=debug")],
    ));
    let stopped = c.launch_to_stop(
        serde_json::json!({"program": program, "args": ["3000"], "cwd": cwd}),
        &source,
        &[stop_line],
    );
    // One thread: its id is the process's.
    let pid = stopped["body"]["threadId"].as_i64().unwrap();
    let before = placed_bytes(pid);
    let mut after_first = 0;
    for round in 0..ROUNDS {
        // Every line conditional (never true) but the one stopped at, as an editor sends
        // them again after each edit.
        let bps: Vec<serde_json::Value> = (1..=lines)
            .filter(|&l| l != stop_line)
            .map(|l| serde_json::json!({"line": l, "condition": "g_never == 1"}))
            .collect();
        c.ok(
            "setBreakpoints",
            serde_json::json!({"source": {"path": source}, "breakpoints": bps}),
        );
        if round == 0 {
            after_first = placed_bytes(pid);
        }
    }
    let after = placed_bytes(pid);
    let placements = c
        .peer
        .stderr()
        .matches("a jump patch covers the site")
        .count();
    eprintln!(
        "placed code: {before} bytes, {after_first} after one round, {after} after {ROUNDS} \
         ({placements} placements)"
    );
    // Each conditional placement takes at least 64 bytes: without reuse, the rounds
    // would need more than the first 64 KiB region.
    assert!(
        placements as u64 * 64 > 2 * 65536,
        "too few placements: {placements}"
    );
    // Measured from the first round: the stop's own breakpoint (no condition) gets its
    // copy at the first resume, so the first region may be mapped by round 0.
    assert_eq!(
        after, after_first,
        "re-placing the same conditions took new memory (before the rounds: {before})"
    );
    // The program still runs as it does alone.
    c.ok("continue", serde_json::json!({"threadId": pid}));
    let mut out = String::new();
    loop {
        let m = c.peer.try_recv(std::time::Duration::from_secs(60)).unwrap();
        match m["event"].as_str() {
            Some("stopped") => panic!("unexpected stop: {m}"),
            Some("output") if m["body"]["category"] == "stdout" => {
                out.push_str(m["body"]["output"].as_str().unwrap());
            }
            Some("terminated") => break,
            _ => {}
        }
    }
    assert_eq!(out, stdout);
    c.finish();
}
