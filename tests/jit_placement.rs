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
