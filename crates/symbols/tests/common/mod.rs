//! Shared helpers for the symbols tests: compiling samples and running the oracles.
#![allow(dead_code, unused_imports, clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

pub use testsupport::build as build_c;
pub use testsupport::build as build_rust;
pub use testsupport::samples;

/// The C build matrix: (fixture name, flags).
pub fn c_matrix() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        (
            "gcc-O0-dwarf5-pie",
            vec!["-O0", "-gdwarf-5", "-fPIE", "-pie"],
        ),
        ("gcc-O0-dwarf4-nopie", vec!["-O0", "-gdwarf-4", "-no-pie"]),
        ("gcc-O2-dwarf5-nopie", vec!["-O2", "-gdwarf-5", "-no-pie"]),
        (
            "gcc-O2-dwarf4-pie",
            vec!["-O2", "-gdwarf-4", "-fPIE", "-pie"],
        ),
        ("gcc-O0-dwarf5-gz", vec!["-O0", "-gdwarf-5", "-gz"]),
        (
            "gcc-O2-dwarf4-gz-zlib-gnu",
            vec!["-O2", "-gdwarf-4", "-gz=zlib-gnu"],
        ),
    ]
}

/// Runs `addr2line -e bin` on many addresses at once; returns (file, line) per address.
pub fn addr2line(bin: &Path, addrs: &[u64]) -> Vec<(String, u32)> {
    let args: Vec<String> = addrs.iter().map(|a| format!("{a:#x}")).collect();
    let out = Command::new("addr2line")
        .arg("-e")
        .arg(bin)
        .args(&args)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .map(|l| {
            let l = l.split(" (discriminator").next().unwrap();
            let (file, line) = l.rsplit_once(':').unwrap();
            (file.to_string(), line.trim().parse().unwrap_or(0))
        })
        .collect()
}

/// Runs gdb in batch mode with the given commands and returns stdout.
pub fn gdb(bin: &Path, commands: &[String]) -> String {
    let mut cmd = Command::new("gdb");
    cmd.args([
        "-batch",
        "-nx",
        "-ex",
        "set width 0",
        "-ex",
        "set pagination off",
    ]);
    for c in commands {
        cmd.arg("-ex").arg(c);
    }
    let out = cmd.arg(bin).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Parses a hex number that starts at the beginning of `s` (`0x...`).
pub fn hex(s: &str) -> u64 {
    let s = s.trim_start_matches("0x");
    let end = s.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(s.len());
    u64::from_str_radix(&s[..end], 16).unwrap()
}
