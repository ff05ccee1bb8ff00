//! Shared helpers for the symbols tests: compiling samples and running the oracles.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's `samples/` directory.
pub fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../samples")
        .canonicalize()
        .unwrap()
}

/// Compiles a C or C++ sample with the given flags into `dir/out`.
pub fn build_c(dir: &Path, source: &str, flags: &[&str], out: &str) -> PathBuf {
    let src = samples().join(source);
    let compiler = if source.ends_with(".cpp") {
        "g++"
    } else {
        "gcc"
    };
    let bin = dir.join(out);
    let status = Command::new(compiler)
        .args(flags)
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .status()
        .unwrap();
    assert!(status.success(), "{compiler} {flags:?} failed");
    bin
}

/// Compiles the Rust sample with `rustc -g`.
pub fn build_rust(dir: &Path, source: &str, flags: &[&str], out: &str) -> PathBuf {
    let bin = dir.join(out);
    let status = Command::new("rustc")
        .args(["-g", "--edition", "2021"])
        .args(flags)
        .arg("-o")
        .arg(&bin)
        .arg(samples().join(source))
        .status()
        .unwrap();
    assert!(status.success(), "rustc failed");
    bin
}

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
