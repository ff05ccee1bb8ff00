//! Benchmark: cold time and peak RSS to open a binary and resolve one line, to open it
//! and resolve one function, and to build the full symbol index, side by side with gdb.
//!
//! Usage:
//!
//! ```text
//! cargo run --release -p symbols --example bench -- BINARY FILE:LINE FUNCTION
//! # e.g. BINARY=ripgrep debug build, FILE:LINE=crates/core/main.rs:107, FUNCTION=rg::search
//! ```
//!
//! `bench BINARY FILE:LINE FUNCTION` runs each measurement in a fresh child process (so
//! caches and peak RSS start cold), best of 3 runs per side, and prints a table. The gdb
//! side runs `gdb -batch -nx -ex 'info line FILE:LINE' BINARY` and
//! `gdb -batch -nx -ex 'info functions ^FUNCTION' BINARY`; the full index has no gdb
//! counterpart. When gdb is not installed only tandem's figures are printed.
//! Time is wall clock from spawn to exit, measured by this process for both sides; peak
//! RSS is the child's `ru_maxrss` as reported by `/usr/bin/time -f %M`, or, without
//! `/usr/bin/time`, the last `VmHWM` seen while polling `/proc/PID/status`.
//! `bench --one MODE BINARY ARG` runs a single measurement in this process.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use symbols::{Binary, Line, SourceMap};

/// Runs per side and case; the best (lowest) figure of these is reported.
const RUNS: usize = 3;
/// Where GNU time lives; without it peak RSS comes from polling `/proc`.
const GNU_TIME: &str = "/usr/bin/time";
/// Marks GNU time's line in the child's stderr.
const RSS_MARK: &str = "@@bench-maxrss-kib ";

/// Targets for tandem's figures.
const LINE_TARGET_S: f64 = 0.25;
const INDEX_TARGET_S: f64 = 0.5;
const RSS_TARGET_MB: f64 = 100.0;

fn peak_rss_kib() -> u64 {
    vm_hwm_kib("/proc/self/status").unwrap_or(0)
}

fn vm_hwm_kib(status: &str) -> Option<u64> {
    std::fs::read_to_string(status).ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("VmHWM:"))
            .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
    })
}

fn one(mode: &str, binary: &str, arg: &str) -> Result<String, String> {
    let start = Instant::now();
    // The modes that write a cache keep compressed sections decompressed there too, as
    // the debugger's faces do (a first run inflates them, later runs map them).
    let options = symbols::OpenOptions {
        section_cache: matches!(mode, "cache" | "table")
            .then(|| symbols::IndexCache::new(arg, u64::MAX)),
        ..Default::default()
    };
    let bin = Binary::open_with(binary, &options).map_err(|e| e.to_string())?;
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
        // The full index, then the index cache file written into the directory `arg`
        // (what a cold DAP session's background index did before issue 27's name table).
        "cache" => {
            let index = bin.symbol_index();
            let cache = symbols::IndexCache::new(arg, u64::MAX);
            bin.store_index_cache(&cache).map_err(|e| e.to_string())?;
            format!("{} entries, cache written", index.len())
        }
        // The name table built one unit at a time, written into the directory `arg` and
        // mapped (what a cold DAP session's background index does since issue 27).
        "table" => {
            let cache = symbols::IndexCache::new(arg, u64::MAX);
            bin.build_index_cache(Some(&cache), &|_, _| {})
                .map_err(|e| e.to_string())?;
            "name table written".to_string()
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

/// One cold run of a child process.
struct Run {
    wall: Duration,
    rss_kib: u64,
    stdout: String,
}

/// Runs `program args` once in a fresh process; fails if it cannot start or exits
/// unsuccessfully.
fn measure(program: &Path, args: &[&str]) -> Result<Run, String> {
    let name = program.display();
    if Path::new(GNU_TIME).exists() {
        let start = Instant::now();
        let out = Command::new(GNU_TIME)
            .arg("-f")
            .arg(format!("{RSS_MARK}%M"))
            .arg(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{GNU_TIME}: {e}"))?;
        let wall = start.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            return Err(format!("{name} failed ({}): {}", out.status, stderr.trim()));
        }
        let rss_kib = stderr
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix(RSS_MARK))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| format!("no peak RSS from {GNU_TIME} for {name}"))?;
        Ok(Run {
            wall,
            rss_kib,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        })
    } else {
        // Poll VmHWM (a high-water mark) until the child exits; stdout goes to a file so
        // a full pipe cannot stall it.
        let out_path = std::env::temp_dir().join(format!("bench-{}.out", std::process::id()));
        let out_file = std::fs::File::create(&out_path).map_err(|e| e.to_string())?;
        let start = Instant::now();
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out_file)
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("{name}: {e}"))?;
        let status_path = format!("/proc/{}/status", child.id());
        let mut rss_kib = 0;
        let status = loop {
            if let Some(kib) = vm_hwm_kib(&status_path) {
                rss_kib = rss_kib.max(kib);
            }
            match child.try_wait().map_err(|e| e.to_string())? {
                Some(status) => break status,
                None => std::thread::sleep(Duration::from_millis(2)),
            }
        };
        let wall = start.elapsed();
        let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
        let _ = std::fs::remove_file(&out_path);
        if !status.success() {
            return Err(format!("{name} failed ({status})"));
        }
        Ok(Run {
            wall,
            rss_kib,
            stdout,
        })
    }
}

/// Best time and best peak RSS over `RUNS` cold runs, plus the fastest run's stdout.
struct Best {
    secs: f64,
    rss_mb: f64,
    stdout: String,
}

fn best_of(program: &Path, args: &[&str]) -> Result<Best, String> {
    let mut best: Option<Best> = None;
    for _ in 0..RUNS {
        let run = measure(program, args)?;
        let secs = run.wall.as_secs_f64();
        let rss_mb = run.rss_kib as f64 * 1024.0 / 1e6;
        best = Some(match best {
            None => Best {
                secs,
                rss_mb,
                stdout: run.stdout,
            },
            Some(b) => Best {
                secs: b.secs.min(secs),
                rss_mb: b.rss_mb.min(rss_mb),
                stdout: if secs < b.secs { run.stdout } else { b.stdout },
            },
        });
    }
    best.ok_or_else(|| "no runs".to_string())
}

fn gdb_installed() -> bool {
    Command::new("gdb")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Short summary of gdb's answer: its first line and how many lines it printed.
fn gdb_summary(stdout: &str) -> String {
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    match lines.first() {
        None => "no output".to_string(),
        Some(first) => format!("{} line(s), first: {}", lines.len(), first.trim()),
    }
}

fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "NOT met"
    }
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
    let (binary, file_line, function) = (&args[1], &args[2], &args[3]);
    let gdb = gdb_installed();
    let rss_source = if Path::new(GNU_TIME).exists() {
        "ru_maxrss via /usr/bin/time"
    } else {
        "VmHWM polled from /proc"
    };
    println!("binary: {binary}");
    println!(
        "best of {RUNS} cold runs per side; time = wall clock spawn to exit; RSS = {rss_source}"
    );
    if !gdb {
        println!("gdb is not installed: printing tandem's figures only");
    }

    let gdb_line = format!("info line {file_line}");
    let gdb_function = format!("info functions ^{function}");
    let cases: [(&str, &str, &str, Option<&str>); 3] = [
        ("one line", "line", file_line, Some(&gdb_line)),
        ("one function", "function", function, Some(&gdb_function)),
        ("full index", "index", function, None),
    ];

    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut failed = false;
    for (what, mode, arg, gdb_cmd) in cases {
        let tandem = match best_of(&me, &["--one", mode, binary, arg]) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("bench: tandem {what}: {e}");
                return ExitCode::FAILURE;
            }
        };
        notes.push(format!("tandem {what}: {}", tandem.stdout.trim()));
        let gdb_best = match gdb_cmd {
            Some(cmd) if gdb => {
                match best_of(
                    Path::new("gdb"),
                    &["-batch", "-nx", "-ex", cmd, binary.as_str()],
                ) {
                    Ok(b) => {
                        notes.push(format!("gdb    {what}: {}", gdb_summary(&b.stdout)));
                        Some(b)
                    }
                    Err(e) => {
                        notes.push(format!("gdb    {what}: error: {e}"));
                        failed = true;
                        None
                    }
                }
            }
            _ => None,
        };
        rows.push((what, tandem, gdb_best));
    }

    println!();
    println!(
        "{:<14} {:>12} {:>12} {:>12} {:>12} {:>16}",
        "what", "tandem time", "tandem RSS", "gdb time", "gdb RSS", "ratio (gdb/tan)"
    );
    for (what, t, g) in &rows {
        let (gt, gr, ratio) = match g {
            Some(g) => (
                format!("{:.3} s", g.secs),
                format!("{:.1} MB", g.rss_mb),
                format!("{:.1}x", g.secs / t.secs.max(1e-9)),
            ),
            None => ("-".to_string(), "-".to_string(), "-".to_string()),
        };
        println!(
            "{:<14} {:>12} {:>12} {:>12} {:>12} {:>16}",
            what,
            format!("{:.3} s", t.secs),
            format!("{:.1} MB", t.rss_mb),
            gt,
            gr,
            ratio
        );
    }

    println!();
    for note in &notes {
        println!("{note}");
    }

    let line_s = rows[0].1.secs;
    let index_s = rows[2].1.secs;
    let peak_mb = rows.iter().map(|(_, t, _)| t.rss_mb).fold(0.0, f64::max);
    println!();
    println!("targets (tandem):");
    println!(
        "  one line   <= {LINE_TARGET_S} s : {line_s:.3} s  {}",
        met(line_s <= LINE_TARGET_S)
    );
    println!(
        "  full index <= {INDEX_TARGET_S} s  : {index_s:.3} s  {}",
        met(index_s <= INDEX_TARGET_S)
    );
    println!(
        "  peak RSS   <= {RSS_TARGET_MB} MB: {peak_mb:.1} MB  {}",
        met(peak_mb <= RSS_TARGET_MB)
    );

    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
