//! Unwind table tests: every row of `readelf --debug-dump=frames-interp` (from
//! .eh_frame and .debug_frame) must match what `unwind_row` returns at that address.

// Helpers outside #[test] functions panic on purpose: a broken oracle fails the test.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use symbols::{Binary, CfaRule, FileAddr, RegisterRule};

fn regno(name: &str) -> u16 {
    const NAMES: [&str; 16] = [
        "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12",
        "r13", "r14", "r15",
    ];
    if name == "ra" {
        return 16;
    }
    NAMES.iter().position(|n| *n == name).unwrap() as u16
}

/// (address, CFA column, [(register, rule column)]) for every row readelf prints.
type Row = (u64, String, Vec<(u16, String)>);

fn readelf_rows(bin: &Path) -> Vec<Row> {
    let out = Command::new("readelf")
        .arg("--debug-dump=frames-interp")
        .arg(bin)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut rows = Vec::new();
    let mut header: Vec<String> = Vec::new();
    let mut cie_rows: HashMap<String, Row> = HashMap::new();
    let mut current_cie: Option<String> = None;
    let mut pending_fde: Option<(u64, String)> = None;
    let mut section = String::new();
    let flush = |pending: &mut Option<(u64, String)>,
                 cie_rows: &HashMap<String, Row>,
                 rows: &mut Vec<Row>| {
        if let Some((pc, cie)) = pending.take() {
            // An FDE without its own rows inherits the CIE's initial rules.
            if let Some((_, cfa, regs)) = cie_rows.get(&cie) {
                rows.push((pc, cfa.clone(), regs.clone()));
            }
        }
    };
    for line in text.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if line.starts_with("Contents of the") {
            flush(&mut pending_fde, &cie_rows, &mut rows);
            section = line.to_string();
            cie_rows.clear();
            continue;
        }
        if cols.len() >= 4 && cols[3] == "CIE" {
            flush(&mut pending_fde, &cie_rows, &mut rows);
            current_cie = Some(format!("{section}{}", cols[0]));
            continue;
        }
        if cols.len() >= 4 && cols[3] == "FDE" {
            flush(&mut pending_fde, &cie_rows, &mut rows);
            current_cie = None;
            let cie = cols[4].trim_start_matches("cie=");
            let pc = cols[5]
                .trim_start_matches("pc=")
                .split("..")
                .next()
                .unwrap();
            pending_fde = Some((
                u64::from_str_radix(pc, 16).unwrap(),
                format!("{section}{cie}"),
            ));
            continue;
        }
        if cols.first() == Some(&"LOC") {
            header = cols[2..].iter().map(|s| s.to_string()).collect();
            continue;
        }
        if cols.len() >= 2 && cols[0].len() == 16 && cols[0].chars().all(|c| c.is_ascii_hexdigit())
        {
            let addr = u64::from_str_radix(cols[0], 16).unwrap();
            let regs: Vec<(u16, String)> = header
                .iter()
                .zip(&cols[2..])
                .map(|(name, rule)| (regno(name), rule.to_string()))
                .collect();
            let row = (addr, cols[1].to_string(), regs);
            if let Some(cie) = &current_cie {
                cie_rows.insert(cie.clone(), row);
            } else {
                pending_fde = None;
                rows.push(row);
            }
        }
    }
    flush(&mut pending_fde, &cie_rows, &mut rows);
    rows
}

fn cfa_text(rule: &CfaRule) -> String {
    match rule {
        CfaRule::RegisterOffset { register, offset } => {
            const NAMES: [&str; 17] = [
                "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11",
                "r12", "r13", "r14", "r15", "rip",
            ];
            format!("{}{offset:+}", NAMES[*register as usize])
        }
        CfaRule::Expression(_) => "exp".into(),
    }
}

fn rule_text(rule: Option<&RegisterRule>) -> String {
    match rule {
        None | Some(RegisterRule::Undefined) => "u".into(),
        Some(RegisterRule::SameValue) => "s".into(),
        Some(RegisterRule::Offset(o)) => format!("c{o:+}"),
        Some(RegisterRule::ValOffset(o)) => format!("v{o:+}"),
        Some(RegisterRule::Expression(_)) => "exp".into(),
        Some(RegisterRule::ValExpression(_)) => "vexp".into(),
        Some(other) => format!("{other:?}"),
    }
}

fn check(bin: &Path, fixture: &str) -> usize {
    let binary = Binary::open(bin).unwrap();
    let rows = readelf_rows(bin);
    assert!(rows.len() > 5, "{fixture}: readelf gave {rows:?}");
    for (addr, cfa, regs) in &rows {
        let ours = binary
            .unwind_row(FileAddr(*addr))
            .unwrap()
            .unwrap_or_else(|| panic!("{fixture}: no row at {addr:#x}"));
        assert_eq!(cfa_text(&ours.cfa), *cfa, "{fixture}: CFA at {addr:#x}");
        for (reg, rule) in regs {
            let mine = ours.registers.iter().find(|r| r.0 == *reg).map(|r| &r.1);
            assert_eq!(
                rule_text(mine),
                *rule,
                "{fixture}: register {reg} at {addr:#x}"
            );
        }
    }
    rows.len()
}

#[test]
fn eh_frame_rows_agree_with_readelf() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_c(dir.path(), "c/sym_lines.c", &["-g", "-O2"], "gcc-O2");
    check(&bin, "gcc-O2");
    let bin = common::build_c(
        dir.path(),
        "c/sym_lines.c",
        &["-g", "-O0", "-no-pie"],
        "gcc-O0",
    );
    check(&bin, "gcc-O0");
}

#[test]
fn debug_frame_rows_agree_with_readelf() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_c(
        dir.path(),
        "c/sym_lines.c",
        &["-g", "-O2", "-fno-asynchronous-unwind-tables"],
        "gcc-O2-debug-frame",
    );
    check(&bin, "gcc-O2-debug-frame");
    let binary = Binary::open(&bin).unwrap();
    let compute = binary.functions_by_name("compute").unwrap()[0]
        .entry()
        .unwrap();
    assert!(
        binary.unwind_row(compute).unwrap().is_some(),
        "compute is only in .debug_frame"
    );
}
