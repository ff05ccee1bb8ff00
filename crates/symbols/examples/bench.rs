//! Benchmark: cold time and peak RSS to open a binary and resolve one line, to open it
//! and resolve one function, and to build the full symbol index.
//!
//! Usage: `bench BINARY FILE:LINE FUNCTION` runs each measurement in a fresh child
//! process (so caches and peak RSS start cold) and prints one line per measurement.
//! `bench --one MODE BINARY ARG` runs a single measurement in this process.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Instant;

use symbols::{Binary, Line, SourceMap};

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn one(mode: &str, binary: &str, arg: &str) -> Result<String, String> {
    let start = Instant::now();
    let bin = Binary::open(binary).map_err(|e| e.to_string())?;
    let opened = start.elapsed();
    let detail = match mode {
        "line" => {
            let (file, line) = arg.rsplit_once(':').ok_or("expected FILE:LINE")?;
            let line = line
                .parse::<u32>()
                .ok()
                .and_then(Line::new)
                .ok_or("bad line")?;
            let res = bin
                .resolve_line(Path::new(file), line, &SourceMap::new())
                .map_err(|e| e.to_string())?;
            match res {
                Some(r) => format!(
                    "{} location(s), first {:?}",
                    r.locations.len(),
                    r.locations.first().map(|l| l.addr)
                ),
                None => "no code".to_string(),
            }
        }
        "function" => {
            let found = bin.functions_by_name(arg).map_err(|e| e.to_string())?;
            format!("{} function(s)", found.len())
        }
        "index" => {
            let index = bin.symbol_index();
            format!("{} entries", index.len())
        }
        other => return Err(format!("unknown mode {other}")),
    };
    let total = start.elapsed();
    Ok(format!(
        "{mode:<8} open {:>7.3} s  total {:>7.3} s  peak RSS {:>6} MiB  units {}  ({detail})",
        opened.as_secs_f64(),
        total.as_secs_f64(),
        peak_rss_kib() / 1024,
        bin.unit_count(),
    ))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 5 && args[1] == "--one" {
        return match one(&args[2], &args[3], &args[4]) {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("bench: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if args.len() != 4 {
        eprintln!("usage: bench BINARY FILE:LINE FUNCTION");
        return ExitCode::FAILURE;
    }
    let Ok(me) = std::env::current_exe() else {
        return ExitCode::FAILURE;
    };
    for (mode, arg) in [
        ("line", &args[2]),
        ("function", &args[3]),
        ("index", &args[3]),
    ] {
        match Command::new(&me)
            .args(["--one", mode, &args[1], arg])
            .status()
        {
            Ok(s) if s.success() => {}
            _ => return ExitCode::FAILURE,
        }
    }
    ExitCode::SUCCESS
}
