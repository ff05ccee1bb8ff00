//! `tandem-bench`: speed of tandem side by side with gdb and lldb-dap (issue 11).
//!
//! Every scenario runs each debugger in turn, repetition after repetition (the order rotates
//! each time), so load from other work on the machine falls on all of them alike. The table
//! (Markdown) goes to stdout; progress to stderr; docs/benchmarks.json and
//! docs/benchmarks.svg are rewritten unless `--no-write` is given.
//!
//! ```sh
//! cargo run --release -p tandem-bench -- [p1 p2 p3 p5] [--reps 5]
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
mod scenarios;
mod setup;
mod stats;

use scenarios::{Bench, Scenario, Tool};

#[derive(Parser, Debug)]
#[command(
    name = "tandem-bench",
    about = "Speed of tandem side by side with gdb and lldb-dap"
)]
struct Cli {
    /// Scenarios to run: p1 (false conditional breakpoint), p2 (launch to the first
    /// breakpoint in ripgrep), p3 (next + stackTrace), p5 (a page of a large array). All by
    /// default.
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
    let lldb_dap = if wanted(Tool::LldbDap) {
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
            let mut order = tools.clone();
            order.rotate_left(rep % tools.len().max(1));
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
    let header = json!({
        "date": date,
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "machine": machine,
        "load_average": { "before": load_before, "after": load_after },
        "settings": {
            "reps": cli.reps,
            "p1_hits": cli.hits,
            "p1_jit_hits": cli.jit_hits,
            "p1_lldb_hits": cli.lldb_hits,
            "p3_steps": cli.steps,
            "p2_binary": cli.rg,
        },
        "table_markdown": table,
    });
    let docs = setup::workspace_root().join("docs").canonicalize()?;
    let json_path = docs.join("benchmarks.json");
    let svg_path = docs.join("benchmarks.svg");
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
    fs::write(&svg_path, report::svg(&results, &subtitle))?;
    eprintln!(
        "tandem-bench: wrote {} and {}",
        json_path.display(),
        svg_path.display()
    );
    Ok(())
}
