//! Call-site tests: every `DW_TAG_call_site` (DWARF 5) and `DW_TAG_GNU_call_site`
//! (DWARF 4) that `readelf --debug-dump=info` shows in the -O2 sample is found by its
//! return address, with the same parameter registers and value expressions.

// Helpers outside #[test] functions panic on purpose: a broken oracle fails the test.
#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;

use symbols::{Binary, FileAddr};

/// (return pc, [(register, value expression bytes)]) of each call site readelf shows.
type Sites = Vec<(u64, Vec<(u16, Vec<u8>)>)>;

fn block_bytes(line: &str) -> Vec<u8> {
    let rest = line.split("byte block:").nth(1).unwrap();
    let hex = rest.split('\t').next().unwrap();
    hex.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}

fn readelf_sites(bin: &std::path::Path) -> Sites {
    let out = Command::new("readelf")
        .arg("--debug-dump=info")
        .arg(bin)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut sites: Sites = Vec::new();
    let mut in_site = false;
    let mut in_param = false;
    let mut reg: Option<u16> = None;
    for line in text.lines() {
        if line.contains("Abbrev Number") {
            in_site = line.contains("call_site)");
            in_param = line.contains("call_site_parameter)");
            reg = None;
            continue;
        }
        if in_site && (line.contains("DW_AT_call_return_pc") || line.contains("DW_AT_low_pc")) {
            let v = line.rsplit(':').next().unwrap().trim();
            sites.push((common::hex(v), Vec::new()));
        }
        if in_param && line.contains("DW_AT_location") {
            let b = block_bytes(line);
            assert_eq!(b.len(), 1, "{line}");
            reg = Some(u16::from(b[0] - 0x50));
        }
        if in_param
            && (line.contains("DW_AT_call_value") || line.contains("DW_AT_GNU_call_site_value"))
        {
            sites
                .last_mut()
                .unwrap()
                .1
                .push((reg.unwrap(), block_bytes(line)));
        }
    }
    sites
}

fn check(flags: &[&str], dwarf: u16) {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_c(dir.path(), "c/sym_callsite.c", flags, "callsite");
    let expected = readelf_sites(&bin);
    // main → middle (with an entry value of main's own argc) and middle → leaf.
    assert!(
        expected.iter().filter(|s| !s.1.is_empty()).count() >= 2,
        "{expected:?}"
    );
    let binary = Binary::open(&bin).unwrap();
    for (pc, params) in &expected {
        let site = binary.call_site(FileAddr(*pc)).unwrap().unwrap();
        assert_eq!(site.return_pc, FileAddr(*pc));
        let got: Vec<(u16, Vec<u8>)> = binary
            .call_site_values(FileAddr(*pc))
            .unwrap()
            .into_iter()
            .map(|(r, e)| (r, e.bytes().to_vec()))
            .collect();
        assert_eq!(&got, params, "call site returning to {pc:#x}");
        // gcc's functions use the CFA as frame base.
        assert_eq!(
            site.frame_base.map(|f| f.bytes().to_vec()),
            Some(vec![0x9c])
        );
    }
    // middle → leaf: rsi is the constant 5.
    assert!(expected
        .iter()
        .any(|s| s.1.iter().any(|(r, b)| *r == 4 && b == &[0x35])));
    // main → middle: rdi is main's entry rdi + 1, the entry-value op of this version.
    let entry_op = if dwarf == 4 { 0xf3 } else { 0xa3 };
    assert!(expected.iter().any(|s| s
        .1
        .iter()
        .any(|(r, b)| *r == 5 && b.first() == Some(&entry_op))));
    // Addresses that are no return address have no call site.
    assert_eq!(binary.call_site(FileAddr(1)).unwrap(), None);
    let (first, _) = expected[0];
    assert!(binary
        .call_site_values(FileAddr(first + 1))
        .unwrap()
        .is_empty());
}

#[test]
fn gnu_call_sites_of_dwarf4_match_readelf() {
    check(&["-O2", "-gdwarf-4", "-no-pie"], 4);
}

#[test]
fn call_sites_of_dwarf5_match_readelf() {
    check(&["-O2", "-gdwarf-5", "-fPIE", "-pie"], 5);
}

/// Function entries by ELF symbol, as `nm` lists them.
fn nm_entries(bin: &std::path::Path) -> std::collections::HashMap<String, u64> {
    let out = Command::new("nm").arg(bin).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let (a, kind, name) = (it.next()?, it.next()?, it.next()?);
            (kind == "T" || kind == "t")
                .then(|| (name.to_string(), u64::from_str_radix(a, 16).unwrap()))
        })
        .collect()
}

/// (return address, target) of each direct call in `main`, as objdump shows them.
fn objdump_calls_of_main(bin: &std::path::Path) -> Vec<(u64, u64)> {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(bin)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let body: Vec<&str> = text
        .split("\n\n")
        .find(|b| {
            b.trim_start()
                .lines()
                .next()
                .is_some_and(|h| h.ends_with("<main>:"))
        })
        .unwrap()
        .lines()
        .collect();
    let addr = |l: &str| u64::from_str_radix(l.trim().split(':').next().unwrap(), 16).ok();
    let mut calls = Vec::new();
    for (i, l) in body.iter().enumerate() {
        if let Some(rest) = l.split("\tcall").nth(1) {
            let target = rest
                .split_whitespace()
                .next()
                .and_then(|t| u64::from_str_radix(t, 16).ok());
            if let (Some(t), Some(ret)) = (target, body.get(i + 1).and_then(|n| addr(n))) {
                if !rest.contains('@') {
                    calls.push((ret, t));
                }
            }
        }
    }
    calls
}

/// Call targets and tail-call chains of samples/c/tail_calls.c at -O2: every direct
/// call of `main` names the function objdump shows it calling; `ca` reaches `cc`
/// through `cb`, `wack` reaches `add` directly, `amb` reaches `fin` two ways (no chain).
fn check_tail_chains(flags: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_c(dir.path(), "c/tail_calls.c", flags, "tail_calls");
    let entries = nm_entries(&bin);
    let e = |n: &str| FileAddr(entries[n]);
    let binary = Binary::open(&bin).unwrap();
    let calls = objdump_calls_of_main(&bin);
    assert!(calls.len() >= 5, "{calls:?}");
    for (ret, target) in &calls {
        assert_eq!(
            binary.call_target(FileAddr(*ret)).unwrap(),
            Some(FileAddr(*target)),
            "call returning to {ret:#x}"
        );
    }
    let chain = |from: &str, to: &str| {
        binary
            .tail_chain(e(from), e(to))
            .unwrap()
            .map(|c| c.iter().map(|l| l.entry).collect::<Vec<_>>())
    };
    assert_eq!(chain("ca", "cc"), Some(vec![e("ca"), e("cb")]));
    assert_eq!(chain("wack", "add"), Some(vec![e("wack")]));
    assert_eq!(chain("mixed", "second"), Some(vec![e("mixed")]));
    assert_eq!(chain("add", "add"), Some(vec![]));
    assert_eq!(chain("amb", "fin"), None);
    assert_eq!(chain("mixed", "first"), None);
    let amb: Vec<_> = binary
        .tail_calls_of(e("amb"))
        .unwrap()
        .iter()
        .filter_map(|s| s.target.as_ref().and_then(|t| binary.target_entry(t)))
        .collect();
    let mut want = vec![e("p1"), e("p2")];
    want.sort();
    let mut amb = amb;
    amb.sort();
    assert_eq!(amb, want);
}

#[test]
fn tail_chains_of_dwarf4() {
    check_tail_chains(&["-O2", "-gdwarf-4", "-foptimize-sibling-calls"]);
}

#[test]
fn tail_chains_of_dwarf5() {
    check_tail_chains(&["-O2", "-gdwarf-5", "-foptimize-sibling-calls"]);
}
