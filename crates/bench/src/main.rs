//! `tandem-bench`: speed of tandem side by side with gdb and lldb-dap (issue 11), and the
//! cost of recording and going back beside gdb's `record full` (issue 30).
//!
//! Every scenario runs each debugger in turn, repetition after repetition (the order rotates
//! each time), so load from other work on the machine falls on all of them alike. The table
//! (Markdown) goes to stdout; progress to stderr; docs/benchmarks.json and
//! docs/benchmarks.svg (P scenarios), docs/benchmarks-reverse.json and .svg (R scenarios)
//! are rewritten unless `--no-write` is given.
//!
//! ```sh
//! cargo run --release -p tandem-bench -- [p1 p2 p3 p5 r1 r2] [--reps 5]
//! ```

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use serde_json::json;

mod dap;
mod procfs;
mod report;
mod reverse;
mod scenarios;
mod setup;
mod stats;

use reverse::{Iterations, Reverse};
use scenarios::{Bench, Scenario, Tool};

#[derive(Parser, Debug)]
#[command(
    name = "tandem-bench",
    about = "Speed of tandem side by side with gdb and lldb-dap"
)]
struct Cli {
    /// Scenarios to run: p1 (false conditional breakpoint), p2 (launch to the first
    /// breakpoint in ripgrep), p3 (next + stackTrace), p5 (a page of a large array), r1
    /// (recording's overhead), r2 (going back in a recording). All by default.
    scenarios: Vec<String>,
    /// Repetitions of each scenario per debugger; medians are reported.
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// P1: hits of the conditional breakpoint for gdb and for tandem on the int3 path
    /// (the last one is true).
    #[arg(long, default_value_t = 20_000)]
    hits: u32,
    /// P1: hits for tandem with the condition evaluated in the debuggee, where a false hit
    /// costs nanoseconds: fewer would be lost in the start-up's noise.
    #[arg(long, default_value_t = 20_000_000)]
    jit_hits: u32,
    /// P1: hits for lldb-dap, which takes about 2 ms per false hit.
    #[arg(long, default_value_t = 2_000)]
    lldb_hits: u32,
    /// P3: steps per run.
    #[arg(long, default_value_t = 200)]
    steps: u32,
    /// Only these debuggers (tandem, gdb, lldb-dap).
    #[arg(long, value_delimiter = ',')]
    tools: Vec<String>,
    /// The tandem binary; by default `cargo build -p tandem` in this harness's target dir.
    #[arg(long)]
    tandem: Option<PathBuf>,
    /// ripgrep's debug build, for P2.
    #[arg(long, default_value = "/work/symbench/rg/bin/rg")]
    rg: PathBuf,
    /// R1: iterations of `rev_bench compute` (plain and recorded, both ways).
    #[arg(long, default_value_t = 300_000_000)]
    r1_compute: u64,
    /// R1: rounds of `rev_bench syscalls` (two calls each), plain and recorded.
    #[arg(long, default_value_t = 2_000_000)]
    r1_syscalls: u64,
    /// R1: lines of `syscall_io`, plain and recorded.
    #[arg(long, default_value_t = 1_000_000)]
    r1_io: u64,
    /// R1: rounds of `rev_bench syscalls` with every call traced (100-200× slower).
    #[arg(long, default_value_t = 50_000)]
    r1_traced_syscalls: u64,
    /// R1: lines of `syscall_io` with every call traced.
    #[arg(long, default_value_t = 20_000)]
    r1_traced_io: u64,
    /// R1: iterations under gdb's `record full` (about 10,000 instructions a second):
    /// `compute`, `syscalls`, `syscall_io`.
    #[arg(long, value_delimiter = ',', default_value = "10000,1000,50")]
    r1_gdb: Vec<u64>,
    /// R2: rounds of `rev_bench syscalls` tandem records (a multiple of 1,000; 6,000,000
    /// record in 2-4 s here, and take about 400 MB in tandem).
    #[arg(long, default_value_t = 6_000_000)]
    r2_rounds: u64,
    /// R2: how many rounds back tandem's reverse-continues go, from the last tick.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
    r2_back: Vec<u64>,
    /// R2: and how many seconds of recorded execution back (those past the recording's
    /// start are left out).
    #[arg(long, value_delimiter = ',', default_value = "0.5,1,2")]
    r2_back_seconds: Vec<f64>,
    /// R2: rounds gdb records with `record full`.
    #[arg(long, default_value_t = 3_000)]
    r2_gdb_rounds: u64,
    /// R2: how many rounds back gdb's reverse-continues go.
    #[arg(long, value_delimiter = ',', default_value = "1000,2000")]
    r2_gdb_back: Vec<u64>,
    /// Do not install lldb-19 when lldb-dap-19 is missing (lldb-dap is skipped instead).
    #[arg(long)]
    no_install: bool,
    /// Print the table only; leave docs/benchmarks.json and docs/benchmarks.svg alone.
    #[arg(long)]
    no_write: bool,
    /// Seconds any single wait may take before a run is abandoned.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
}

fn main() {
    if let Err(err) = run(Cli::parse()) {
        eprintln!("tandem-bench: {err:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    let scenarios: Vec<Scenario> = if cli.scenarios.is_empty() {
        Scenario::ALL.to_vec()
    } else {
        cli.scenarios
            .iter()
            .map(|s| Scenario::parse(s))
            .collect::<Result<_>>()?
    };
    let wanted = |tool: Tool| cli.tools.is_empty() || cli.tools.iter().any(|t| t == tool.name());
    // cond_loop.c counts its iterations in an `int`.
    let hit_range = 2..=i32::MAX as u32;
    anyhow::ensure!(
        [cli.hits, cli.jit_hits, cli.lldb_hits]
            .iter()
            .all(|n| hit_range.contains(n)),
        "--hits, --jit-hits and --lldb-hits must be between 2 and {}",
        i32::MAX
    );

    let tandem = setup::tandem(cli.tandem.clone())?;
    let gdb = if wanted(Tool::Gdb) {
        let found = setup::which("gdb");
        if found.is_none() {
            eprintln!("tandem-bench: gdb not found; skipping it");
        }
        found
    } else {
        None
    };
    let lldb_dap = if wanted(Tool::LldbDap) && scenarios.iter().any(|s| s.supports(Tool::LldbDap)) {
        setup::lldb_dap(!cli.no_install)
    } else {
        None
    };
    let tools = setup::Tools {
        tandem,
        gdb,
        lldb_dap,
    };

    // Workloads are compiled into the target directory, next to this binary.
    let work = std::env::current_exe()?
        .parent()
        .context("tandem-bench has no directory")?
        .join("tandem-bench-work");
    fs::create_dir_all(&work)?;
    let rg = if scenarios.contains(&Scenario::P2) {
        let rg = setup::ripgrep(&cli.rg)?;
        // Read the 46 MB binary once so that the first debugger does not pay for the disk.
        fs::read(&rg.bin)?;
        Some(rg)
    } else {
        None
    };
    let reverse = if scenarios
        .iter()
        .any(|s| matches!(s, Scenario::R1 | Scenario::R2))
    {
        let [compute, syscalls, io] = cli.r1_gdb[..] else {
            anyhow::bail!("--r1-gdb takes three counts: compute, syscalls, syscall_io");
        };
        let gdb_launcher = if tools.gdb.is_some() {
            setup::gdb_launcher(&work)
        } else {
            None
        };
        Some(Reverse {
            rev_bench: setup::compile_source(
                &work,
                "samples/c/rev_bench.c",
                "-O1",
                Some("g_acc = acc"),
            )?,
            syscall_io: setup::compile_source(&work, "samples/bench/syscall_io.c", "-O1", None)?
                .bin,
            gdb_launcher,
            compute: Iterations {
                recorded: cli.r1_compute,
                traced: cli.r1_compute,
                gdb: compute,
            },
            syscalls: Iterations {
                recorded: cli.r1_syscalls,
                traced: cli.r1_traced_syscalls,
                gdb: syscalls,
            },
            io: Iterations {
                recorded: cli.r1_io,
                traced: cli.r1_traced_io,
                gdb: io,
            },
            rounds: cli.r2_rounds,
            back: cli.r2_back.clone(),
            back_seconds: cli.r2_back_seconds.clone(),
            gdb_rounds: cli.r2_gdb_rounds,
            gdb_back: cli.r2_gdb_back.clone(),
            details: Default::default(),
        })
    } else {
        None
    };
    let bench = Bench {
        cond: setup::compile(&work, "cond_loop", "BENCH_COND_LINE")?,
        step: setup::compile(&work, "step_loop", "BENCH_STEP_LINE")?,
        array: setup::compile(&work, "big_array", "BENCH_ARRAY_LINE")?,
        rg,
        work: work.clone(),
        timeout: Duration::from_secs(cli.timeout),
        hits: cli.hits,
        jit_hits: cli.jit_hits,
        lldb_hits: cli.lldb_hits,
        steps: cli.steps,
        reverse,
        run_no: Default::default(),
        tools,
    };
    let machine = setup::machine(&bench.tools);
    let load_before = setup::load_average();
    eprintln!("tandem-bench: logs in {}", work.display());

    let tools: Vec<Tool> = Tool::ALL
        .into_iter()
        .filter(|&t| wanted(t) && bench.available(t))
        .collect();
    let mut results = report::Results::default();
    for rep in 0..cli.reps {
        for &scenario in &scenarios {
            // Rotate who goes first, so that no debugger always follows the same one.
            let mut order: Vec<Tool> = tools
                .iter()
                .copied()
                .filter(|&t| scenario.supports(t))
                .collect();
            let len = order.len().max(1);
            order.rotate_left(rep % len);
            for tool in order {
                eprint!(
                    "tandem-bench: [{}/{}] {} {:<8} ",
                    rep + 1,
                    cli.reps,
                    scenario.id(),
                    tool.name()
                );
                match bench.run(scenario, tool) {
                    Ok(figures) => {
                        let shown: Vec<String> = figures
                            .iter()
                            .map(|(id, v)| format!("{id}={v:.4}"))
                            .collect();
                        eprintln!("{}", shown.join(" "));
                        results.record(tool, &figures);
                    }
                    Err(err) => {
                        eprintln!("failed: {err:#}");
                        results.failures.push((scenario, tool, format!("{err:#}")));
                    }
                }
            }
        }
    }
    let load_after = setup::load_average();

    let table = report::table(&results, cli.reps);
    println!("{table}");
    let details = bench
        .reverse
        .as_ref()
        .map(|r| report::reverse_tables(&r.details.borrow()))
        .unwrap_or_default();
    if !details.is_empty() {
        println!("{details}");
    }
    for (scenario, tool, err) in &results.failures {
        println!("failed: {} {}: {err}", scenario.id(), tool.name());
    }
    if cli.no_write {
        return Ok(());
    }
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let settings = json!({
        "reps": cli.reps,
        "p1_hits": cli.hits,
        "p1_jit_hits": cli.jit_hits,
        "p1_lldb_hits": cli.lldb_hits,
        "p3_steps": cli.steps,
        "p2_binary": cli.rg,
        "r1_compute": cli.r1_compute,
        "r1_syscalls": cli.r1_syscalls,
        "r1_io": cli.r1_io,
        "r1_traced_syscalls": cli.r1_traced_syscalls,
        "r1_traced_io": cli.r1_traced_io,
        "r1_gdb": cli.r1_gdb,
        "r2_rounds": cli.r2_rounds,
        "r2_back": cli.r2_back,
        "r2_back_seconds": cli.r2_back_seconds,
        "r2_gdb_rounds": cli.r2_gdb_rounds,
        "r2_gdb_back": cli.r2_gdb_back,
    });
    let docs = setup::workspace_root().join("docs").canonicalize()?;
    // Each group of scenarios has its own files, so that running one leaves the other's.
    let mut groups: Vec<(&str, &str)> = scenarios.iter().map(|s| s.group()).collect();
    groups.sort_unstable();
    groups.dedup();
    for (name, title) in groups {
        let results = results.subset(|s| s.group().0 == name);
        let mut header = json!({
            "date": date,
            "command": std::env::args().collect::<Vec<_>>().join(" "),
            "machine": machine,
            "load_average": { "before": load_before, "after": load_after },
            "settings": settings,
            "table_markdown": report::table(&results, cli.reps),
        });
        if let (Some(reverse), true) = (&bench.reverse, name == Scenario::R1.group().0) {
            header["details"] = reverse::json(&reverse.details.borrow());
            header["details_markdown"] = json!(details);
        }
        let json_path = docs.join(format!("{name}.json"));
        let svg_path = docs.join(format!("{name}.svg"));
        fs::write(
            &json_path,
            serde_json::to_string_pretty(&report::json(&results, header))? + "\n",
        )?;
        let subtitle = format!(
            "{date}; {} × {}, kernel {}; load {load_before} → {load_after}; {} repetitions",
            machine["nproc"],
            machine["cpu"].as_str().unwrap_or(""),
            machine["kernel"].as_str().unwrap_or(""),
            cli.reps
        );
        fs::write(&svg_path, report::svg(&results, title, &subtitle))?;
        eprintln!(
            "tandem-bench: wrote {} and {}",
            json_path.display(),
            svg_path.display()
        );
    }
    Ok(())
}
