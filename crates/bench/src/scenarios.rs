//! The scenarios, each driven the same way through every debugger: DAP for tandem and
//! lldb-dap (the request sequence VS Code sends), gdb's Python API in batch mode for gdb.
//! R1 and R2 (recording and going back) live in `reverse.rs`.

use std::collections::HashMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, ensure, Context, Result};
use serde_json::{json, Value};

use crate::dap::DapClient;
use crate::procfs::{mib, tree_memory};
use crate::reverse::Reverse;
use crate::setup::{Sample, Tools};
use crate::stats;

/// A debugger under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tool {
    Tandem,
    Gdb,
    LldbDap,
}

impl Tool {
    pub const ALL: [Tool; 3] = [Tool::Tandem, Tool::Gdb, Tool::LldbDap];

    pub fn name(self) -> &'static str {
        match self {
            Tool::Tandem => "tandem",
            Tool::Gdb => "gdb",
            Tool::LldbDap => "lldb-dap",
        }
    }
}

/// A scenario's name on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scenario {
    P1,
    P2,
    P3,
    P5,
    /// Recording for reverse debugging: its overhead, with gdb's `record full` beside it.
    R1,
    /// Going back in a recording: `stepBack` and `reverseContinue` latency.
    R2,
}

impl Scenario {
    pub const ALL: [Scenario; 6] = [
        Scenario::P1,
        Scenario::P2,
        Scenario::P3,
        Scenario::P5,
        Scenario::R1,
        Scenario::R2,
    ];

    pub fn parse(name: &str) -> Result<Scenario> {
        Ok(match name.to_ascii_lowercase().as_str() {
            "p1" => Scenario::P1,
            "p2" => Scenario::P2,
            "p3" => Scenario::P3,
            "p5" => Scenario::P5,
            "r1" => Scenario::R1,
            "r2" => Scenario::R2,
            other => bail!("unknown scenario `{other}` (p1, p2, p3, p5, r1, r2)"),
        })
    }

    pub fn id(self) -> &'static str {
        match self {
            Scenario::P1 => "p1",
            Scenario::P2 => "p2",
            Scenario::P3 => "p3",
            Scenario::P5 => "p5",
            Scenario::R1 => "r1",
            Scenario::R2 => "r2",
        }
    }

    /// Whether `tool` takes part (lldb-dap has no reverse execution).
    pub fn supports(self, tool: Tool) -> bool {
        match self {
            Scenario::R1 | Scenario::R2 => tool != Tool::LldbDap,
            _ => true,
        }
    }

    /// The results files (docs/NAME.json and .svg) its figures go to, and their plot's title:
    /// recording and going back have their own, so that a run of one group leaves the
    /// other's alone.
    pub fn group(self) -> (&'static str, &'static str) {
        match self {
            Scenario::R1 | Scenario::R2 => (
                "benchmarks-reverse",
                "tandem vs gdb record full (issue 30), medians",
            ),
            _ => (
                "benchmarks",
                "tandem vs gdb vs lldb-dap (issue 11), medians",
            ),
        }
    }
}

/// Whether a larger figure is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

/// One figure a scenario reports.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    pub id: &'static str,
    pub scenario: Scenario,
    pub title: &'static str,
    pub unit: &'static str,
    pub better: Better,
    /// The target for tandem, in `unit`.
    pub target: Option<f64>,
    /// Whether a ratio between debuggers means something (not for differences of a few
    /// pages, where it would divide noise by noise).
    pub ratio: bool,
    /// For a figure only tandem reports (a second way tandem runs the same scenario): the
    /// figure whose peers' values it is compared with.
    pub peers_from: Option<&'static str>,
}

pub const METRICS: &[Metric] = &[
    Metric {
        id: "p1.hits_per_s",
        scenario: Scenario::P1,
        title: "P1 false conditional breakpoint, condition in the debuggee",
        unit: "hits/s",
        better: Better::Higher,
        target: Some(1_000_000.0),
        ratio: true,
        peers_from: None,
    },
    Metric {
        id: "p1_int3.hits_per_s",
        scenario: Scenario::P1,
        title: "P1 false conditional breakpoint, int3 path",
        unit: "hits/s",
        better: Better::Higher,
        target: Some(20_000.0),
        ratio: true,
        // gdb and lldb-dap have one way to run P1; tandem's int3 path is measured
        // against the same runs.
        peers_from: Some("p1.hits_per_s"),
    },
    Metric {
        id: "p2.time_s",
        scenario: Scenario::P2,
        title: "P2 spawn → stopped at rg main",
        unit: "s",
        better: Better::Lower,
        target: Some(0.4),
        ratio: true,
        peers_from: None,
    },
    Metric {
        id: "p2.peak_mib",
        scenario: Scenario::P2,
        title: "P2 debugger peak RSS at the stop",
        unit: "MiB",
        better: Better::Lower,
        target: Some(100.0),
        ratio: true,
        peers_from: None,
    },
    Metric {
        id: "p2.peak_1s_mib",
        scenario: Scenario::P2,
        title: "P2 debugger peak RSS 1 s after",
        unit: "MiB",
        better: Better::Lower,
        target: Some(100.0),
        ratio: true,
        peers_from: None,
    },
    Metric {
        id: "p3.median_ms",
        scenario: Scenario::P3,
        title: "P3 next + stopped + stackTrace, median",
        unit: "ms",
        better: Better::Lower,
        target: Some(0.5),
        ratio: true,
        peers_from: None,
    },
    Metric {
        id: "p3.p95_ms",
        scenario: Scenario::P3,
        title: "P3 next + stopped + stackTrace, p95",
        unit: "ms",
        better: Better::Lower,
        target: None,
        ratio: true,
        peers_from: None,
    },
    Metric {
        id: "p3.step_ms",
        scenario: Scenario::P3,
        title: "P3 of which next → stopped, median",
        unit: "ms",
        better: Better::Lower,
        target: None,
        ratio: true,
        peers_from: None,
    },
    Metric {
        id: "p3.trace_ms",
        scenario: Scenario::P3,
        title: "P3 of which stackTrace, median",
        unit: "ms",
        better: Better::Lower,
        target: None,
        ratio: true,
        peers_from: None,
    },
    Metric {
        id: "p3.floor_ms",
        scenario: Scenario::P3,
        title: "P3 protocol floor: `threads` round trip",
        unit: "ms",
        better: Better::Lower,
        target: None,
        ratio: true,
        peers_from: None,
    },
    Metric {
        id: "p5.page_ms",
        scenario: Scenario::P5,
        title: "P5 one page of 100 of 1,000,000 elements",
        unit: "ms",
        better: Better::Lower,
        target: Some(20.0),
        ratio: true,
        peers_from: None,
    },
    Metric {
        id: "p5.locals_ms",
        scenario: Scenario::P5,
        title: "P5 the locals holding the array",
        unit: "ms",
        better: Better::Lower,
        target: None,
        ratio: true,
        peers_from: None,
    },
    Metric {
        id: "p5.rss_growth_mib",
        scenario: Scenario::P5,
        title: "P5 debugger RSS growth over locals + page",
        unit: "MiB",
        better: Better::Lower,
        target: None,
        ratio: false,
        peers_from: None,
    },
    Metric {
        id: "p5.rss_mib",
        scenario: Scenario::P5,
        title: "P5 debugger RSS after the page",
        unit: "MiB",
        better: Better::Lower,
        target: None,
        ratio: true,
        peers_from: None,
    },
];

/// Every figure: the catalogue above, then R1's and R2's.
pub fn metrics() -> impl Iterator<Item = &'static Metric> {
    METRICS.iter().chain(crate::reverse::METRICS)
}

/// What one run of one scenario with one debugger measured.
pub type Figures = Vec<(&'static str, f64)>;

/// Settings shared by every run.
#[derive(Debug)]
pub struct Bench {
    pub tools: Tools,
    pub work: PathBuf,
    pub timeout: Duration,
    /// P1: hits for tandem on the int3 path and for gdb, for tandem with the condition in
    /// the debuggee (millions are needed before its time stands out of the noise), and
    /// for lldb-dap (much slower per hit).
    pub hits: u32,
    pub jit_hits: u32,
    pub lldb_hits: u32,
    /// P3: steps per run.
    pub steps: u32,
    pub cond: Sample,
    pub step: Sample,
    pub array: Sample,
    pub rg: Option<Sample>,
    /// R1 and R2's workloads and settings, when they run.
    pub reverse: Option<Reverse>,
    /// Counts runs, to name their logs.
    pub run_no: std::cell::Cell<u32>,
}

/// Where tandem evaluates a breakpoint's condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conditions {
    /// In code placed in the debuggee where the condition allows (tandem's default).
    InDebuggee,
    /// Always in tandem, after an int3 trap (`TANDEM_CONDITIONS_IN_DEBUGGEE=0`).
    Int3,
}

/// The switch tandem reads at launch.
const CONDITIONS_VAR: &str = "TANDEM_CONDITIONS_IN_DEBUGGEE";

/// P1: below this difference between the N-hit and the one-hit run, start-up noise is
/// as large as the hits being timed.
const P1_MIN_DIFFERENCE_S: f64 = 0.05;

/// P5's page: 100 elements from the middle of the array.
const PAGE_START: u32 = 500_000;
const PAGE_COUNT: u32 = 100;

impl Bench {
    pub fn available(&self, tool: Tool) -> bool {
        match tool {
            Tool::Tandem => true,
            Tool::Gdb => self.tools.gdb.is_some(),
            Tool::LldbDap => self.tools.lldb_dap.is_some(),
        }
    }

    pub fn run(&self, scenario: Scenario, tool: Tool) -> Result<Figures> {
        match scenario {
            Scenario::P1 => self.p1(tool),
            Scenario::P2 => self.p2(tool),
            Scenario::P3 => self.p3(tool),
            Scenario::P5 => self.p5(tool),
            Scenario::R1 => self.r1(tool),
            Scenario::R2 => self.r2(tool),
        }
    }

    pub(crate) fn log_path(&self, tool: Tool, what: &str) -> PathBuf {
        let n = self.run_no.get() + 1;
        self.run_no.set(n);
        self.work.join(format!("{n:03}-{what}-{}.log", tool.name()))
    }

    // ---- P1 ------------------------------------------------------------------------------

    /// False hits per second. tandem runs twice: with the condition in the debuggee (its
    /// default) and on the int3 path; gdb and lldb-dap once.
    fn p1(&self, tool: Tool) -> Result<Figures> {
        Ok(match tool {
            Tool::Tandem => vec![
                (
                    "p1.hits_per_s",
                    self.p1_rate(tool, self.jit_hits, Conditions::InDebuggee)?,
                ),
                (
                    "p1_int3.hits_per_s",
                    self.p1_rate(tool, self.hits, Conditions::Int3)?,
                ),
            ],
            Tool::Gdb => vec![(
                "p1.hits_per_s",
                self.p1_rate(tool, self.hits, Conditions::Int3)?,
            )],
            Tool::LldbDap => vec![(
                "p1.hits_per_s",
                self.p1_rate(tool, self.lldb_hits, Conditions::Int3)?,
            )],
        })
    }

    /// The time from resuming the program to the stop, with `hits` hits minus the same
    /// with one hit (start-up and the true hit cancel out), as false hits per second.
    fn p1_rate(&self, tool: Tool, hits: u32, conditions: Conditions) -> Result<f64> {
        let one = self.p1_once(tool, 1, conditions)?;
        let many = self.p1_once(tool, hits, conditions)?;
        let difference = many - one;
        ensure!(
            difference >= P1_MIN_DIFFERENCE_S,
            "{} hits took {difference:.4} s more than one hit ({many:.4} s vs {one:.4} s): \
             too few to time, raise --hits / --jit-hits / --lldb-hits",
            hits
        );
        Ok(f64::from(hits - 1) / difference)
    }

    /// Seconds from resuming to the stop where `i == hits - 1`.
    fn p1_once(&self, tool: Tool, hits: u32, conditions: Conditions) -> Result<f64> {
        let last = hits - 1;
        let sample = &self.cond;
        let args = [hits.to_string()];
        if tool == Tool::Gdb {
            let out = self.gdb(None, "p1", sample, &args, &[("LAST", last.to_string())])?;
            ensure!(
                out.get("i").map(String::as_str) == Some(last.to_string().as_str()),
                "gdb stopped at i = {:?}, expected {last}",
                out.get("i")
            );
            return number(&out, "elapsed");
        }
        let condition = format!("i == {last}");
        let what = match conditions {
            Conditions::InDebuggee => "p1",
            Conditions::Int3 => "p1-int3",
        };
        let mut s = self.launch(tool, what, sample, &args, Some(&condition), conditions)?;
        let (stopped_at, thread) = s.stopped()?;
        let elapsed = stopped_at.duration_since(s.configured).as_secs_f64();
        let frame = s.top_frame(thread)?;
        let i = s.client.request(
            "evaluate",
            json!({ "expression": "i", "frameId": frame["id"], "context": "watch" }),
        )?;
        let value = i["result"].as_str().unwrap_or_default().to_owned();
        ensure!(
            value == last.to_string(),
            "{} stopped at i = {value}, expected {last}",
            tool.name()
        );
        s.client.close()?;
        Ok(elapsed)
    }

    // ---- P2 ------------------------------------------------------------------------------

    /// From spawning the debugger to the stop at the first line of ripgrep's `main`, and the
    /// debugger's peak RSS then and one second later (background indexing shows there).
    fn p2(&self, tool: Tool) -> Result<Figures> {
        let sample = self
            .rg
            .as_ref()
            .context("no ripgrep debug build (see --rg)")?;
        let args = ["--version".to_owned()];
        if tool == Tool::Gdb {
            let t0 = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs_f64();
            let out = self.gdb(None, "p2", sample, &args, &[("T0", format!("{t0:.6}"))])?;
            ensure!(
                out.get("line") == Some(&sample.line.to_string()),
                "gdb stopped at line {:?}, expected {}",
                out.get("line"),
                sample.line
            );
            let peak = number(&out, "peak")?;
            return Ok(vec![
                ("p2.time_s", number(&out, "elapsed")?),
                ("p2.peak_mib", peak / 1048576.0),
            ]);
        }
        let mut s = self.launch(tool, "p2", sample, &args, None, Conditions::InDebuggee)?;
        let (stopped_at, thread) = s.stopped()?;
        let elapsed = stopped_at.duration_since(s.spawned).as_secs_f64();
        let debuggee = s.debuggee();
        let at_stop = tree_memory(s.client.pid(), debuggee);
        let frame = s.top_frame(thread)?;
        ensure!(
            frame["line"].as_u64() == Some(u64::from(sample.line)),
            "{} stopped at line {}, expected {}",
            tool.name(),
            frame["line"],
            sample.line
        );
        std::thread::sleep(Duration::from_secs(1));
        let later = tree_memory(s.client.pid(), debuggee);
        s.client.close()?;
        Ok(vec![
            ("p2.time_s", elapsed),
            ("p2.peak_mib", mib(at_stop.peak)),
            ("p2.peak_1s_mib", mib(later.peak)),
        ])
    }

    // ---- P3 ------------------------------------------------------------------------------

    /// `next`, its `stopped` event and a 20-frame `stackTrace`, repeated; median and p95,
    /// and the median of each half. For the DAP adapters also the protocol's floor: the
    /// median round trip of `threads`, which does no debugging work.
    fn p3(&self, tool: Tool) -> Result<Figures> {
        let sample = &self.step;
        let args = ["1000000".to_owned()];
        // (step, stack trace) seconds per step.
        let mut floor = Vec::new();
        let times: Vec<(f64, f64)> = if tool == Tool::Gdb {
            let out = self.gdb(
                None,
                "p3",
                sample,
                &args,
                &[("STEPS", self.steps.to_string())],
            )?;
            out.get("steps")
                .context("gdb reported no steps")?
                .split_whitespace()
                .map(|pair| {
                    let (step, trace) = pair.split_once('+').context("gdb step time")?;
                    Ok((step.parse::<f64>()?, trace.parse::<f64>()?))
                })
                .collect::<Result<_>>()?
        } else {
            let mut s = self.launch(tool, "p3", sample, &args, None, Conditions::InDebuggee)?;
            let (_, thread) = s.stopped()?;
            s.client.request(
                "setBreakpoints",
                json!({ "source": { "path": sample.source }, "breakpoints": [] }),
            )?;
            for _ in 0..20 {
                let start = Instant::now();
                s.client.request("threads", json!({}))?;
                floor.push(start.elapsed().as_secs_f64() * 1e3);
            }
            let mut times = Vec::new();
            let mut depth = 0;
            for _ in 0..self.steps {
                let start = Instant::now();
                let next = s.client.send("next", json!({ "threadId": thread }))?;
                s.client.event("stopped")?;
                s.client.response(next)?;
                let stepped = Instant::now();
                let trace = s.client.request(
                    "stackTrace",
                    json!({ "threadId": thread, "startFrame": 0, "levels": 20 }),
                )?;
                times.push((
                    stepped.duration_since(start).as_secs_f64(),
                    stepped.elapsed().as_secs_f64(),
                ));
                depth = trace["stackFrames"].as_array().map_or(0, Vec::len);
            }
            // inner ← middle ← outer ← main, at least.
            ensure!(
                depth >= 4,
                "{} showed {depth} frames while stepping",
                tool.name()
            );
            s.client.close()?;
            times
        };
        ensure!(!times.is_empty(), "no steps measured");
        let ms =
            |f: fn(&(f64, f64)) -> f64| -> Vec<f64> { times.iter().map(|t| f(t) * 1e3).collect() };
        let total = ms(|(step, trace)| step + trace);
        let mut figures = vec![
            ("p3.median_ms", stats::median(&total)),
            ("p3.p95_ms", stats::percentile(&total, 95.0)),
            ("p3.step_ms", stats::median(&ms(|t| t.0))),
            ("p3.trace_ms", stats::median(&ms(|t| t.1))),
        ];
        if !floor.is_empty() {
            figures.push(("p3.floor_ms", stats::median(&floor)));
        }
        Ok(figures)
    }

    // ---- P5 ------------------------------------------------------------------------------

    /// The locals holding a 1,000,000-element array, then one page of 100 of its elements.
    fn p5(&self, tool: Tool) -> Result<Figures> {
        let sample = &self.array;
        if tool == Tool::Gdb {
            let out = self.gdb(
                None,
                "p5",
                sample,
                &[],
                &[
                    ("START", PAGE_START.to_string()),
                    ("COUNT", PAGE_COUNT.to_string()),
                ],
            )?;
            ensure!(
                out.get("first") == Some(&PAGE_START.to_string()),
                "gdb's page starts with {:?}",
                out.get("first")
            );
            let before = number(&out, "rss_before")?;
            let after = number(&out, "rss_after")?;
            return Ok(vec![
                ("p5.page_ms", number(&out, "page")? * 1e3),
                ("p5.locals_ms", number(&out, "locals")? * 1e3),
                ("p5.rss_growth_mib", (after - before) / 1048576.0),
                ("p5.rss_mib", after / 1048576.0),
            ]);
        }
        let mut s = self.launch(tool, "p5", sample, &[], None, Conditions::InDebuggee)?;
        let (_, thread) = s.stopped()?;
        let debuggee = s.debuggee();
        let frame = s.top_frame(thread)?;
        let before = tree_memory(s.client.pid(), debuggee);
        let scopes = s
            .client
            .request("scopes", json!({ "frameId": frame["id"] }))?;
        let locals = scopes["scopes"]
            .as_array()
            .and_then(|all| {
                all.iter().find(|scope| {
                    scope["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("Locals"))
                })
            })
            .context("no Locals scope")?["variablesReference"]
            .clone();
        let start = Instant::now();
        let vars = s
            .client
            .request("variables", json!({ "variablesReference": locals }))?;
        let locals_time = start.elapsed().as_secs_f64();
        let big = vars["variables"]
            .as_array()
            .and_then(|all| all.iter().find(|v| v["name"] == "big"))
            .context("no `big` among the locals")?["variablesReference"]
            .clone();
        let start = Instant::now();
        let page = s.client.request(
            "variables",
            json!({ "variablesReference": big, "start": PAGE_START, "count": PAGE_COUNT }),
        )?;
        let page_time = start.elapsed().as_secs_f64();
        let after = tree_memory(s.client.pid(), debuggee);
        let elements = page["variables"].as_array().context("no page")?;
        ensure!(
            elements.len() == PAGE_COUNT as usize,
            "{} returned {} elements",
            tool.name(),
            elements.len()
        );
        ensure!(
            elements[0]["value"] == PAGE_START.to_string().as_str(),
            "{}'s page starts with {}",
            tool.name(),
            elements[0]
        );
        s.client.close()?;
        Ok(vec![
            ("p5.page_ms", page_time * 1e3),
            ("p5.locals_ms", locals_time * 1e3),
            ("p5.rss_growth_mib", mib(after.rss) - mib(before.rss)),
            ("p5.rss_mib", mib(after.rss)),
        ])
    }

    // ---- drivers -------------------------------------------------------------------------

    /// Starts a DAP session the way VS Code does: initialize; launch; on `initialized`,
    /// setBreakpoints and configurationDone. Returns once configurationDone is answered.
    /// `conditions` applies to tandem only.
    fn launch(
        &self,
        tool: Tool,
        what: &str,
        sample: &Sample,
        args: &[String],
        condition: Option<&str>,
        conditions: Conditions,
    ) -> Result<Session> {
        let mut command = match tool {
            Tool::Tandem => {
                let mut c = Command::new(&self.tools.tandem);
                c.arg("dap");
                // Set or cleared either way, so that the caller's environment decides nothing.
                match conditions {
                    Conditions::InDebuggee => c.env_remove(CONDITIONS_VAR),
                    Conditions::Int3 => c.env(CONDITIONS_VAR, "0"),
                };
                c
            }
            Tool::LldbDap => Command::new(self.tools.lldb_dap.as_ref().context("no lldb-dap")?),
            Tool::Gdb => bail!("gdb is not driven through DAP"),
        };
        command.current_dir(&self.work);
        let log = self.log_path(tool, what);
        let spawned = Instant::now();
        let mut client = DapClient::spawn(tool.name(), command, &log, self.timeout)
            .with_context(|| format!("log: {}", log.display()))?;
        let result = (|| -> Result<Instant> {
            client.request(
                "initialize",
                json!({
                    "clientID": "tandem-bench",
                    "adapterID": tool.name(),
                    "linesStartAt1": true,
                    "columnsStartAt1": true,
                    "pathFormat": "path",
                    "supportsVariableType": true,
                }),
            )?;
            let launch = client.send(
                "launch",
                json!({
                    "program": sample.bin,
                    "args": args,
                    "cwd": self.work,
                    "stopOnEntry": false,
                }),
            )?;
            client.event("initialized")?;
            let mut breakpoint = json!({ "line": sample.line });
            if let Some(condition) = condition {
                breakpoint["condition"] = json!(condition);
            }
            client.request(
                "setBreakpoints",
                json!({ "source": { "path": sample.source }, "breakpoints": [breakpoint] }),
            )?;
            let configured = Instant::now();
            client.request("configurationDone", json!({}))?;
            client.response(launch)?;
            Ok(configured)
        })();
        match result {
            Ok(configured) => Ok(Session {
                client,
                spawned,
                configured,
            }),
            Err(err) => Err(err.context(format!("log: {}", log.display()))),
        }
    }

    /// Runs gdb in batch mode with the scenario script, through `launcher` when given (see
    /// setup::gdb_launcher); returns its `BENCH key value` lines.
    pub(crate) fn gdb(
        &self,
        launcher: Option<&Path>,
        scenario: &str,
        sample: &Sample,
        args: &[String],
        params: &[(&str, String)],
    ) -> Result<HashMap<String, String>> {
        let gdb = self.tools.gdb.as_ref().context("no gdb")?;
        let script = self.work.join("gdb_bench.py");
        // Written every time: a script left by an older harness must not answer for this one.
        fs::write(&script, include_str!("gdb_bench.py"))?;
        let log = self.log_path(Tool::Gdb, scenario);
        let out_path = log.with_extension("out");
        let mut command = match launcher {
            Some(launcher) => {
                let mut c = Command::new(launcher);
                c.arg(gdb);
                c
            }
            None => Command::new(gdb),
        };
        command
            .current_dir(&self.work)
            .args(["-batch", "-nx", "-q"])
            .args(["-iex", "set debuginfod enabled off"])
            .arg("-x")
            .arg(&script)
            .arg("--args")
            .arg(&sample.bin)
            .args(args)
            .env("BENCH_SCENARIO", scenario)
            .env("BENCH_FILE", &sample.source)
            .env("BENCH_LINE", sample.line.to_string())
            .stdin(Stdio::null())
            .stdout(File::create(&out_path)?)
            .stderr(File::create(&log)?);
        for (key, value) in params {
            command.env(format!("BENCH_{key}"), value);
        }
        let mut child = command.spawn().context("starting gdb")?;
        let deadline = Instant::now() + self.timeout;
        loop {
            if child.try_wait()?.is_some() {
                break;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!("gdb timed out (log: {})", log.display());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let text = fs::read_to_string(&out_path)?;
        let figures: HashMap<String, String> = text
            .lines()
            .filter_map(|l| l.strip_prefix("BENCH "))
            .filter_map(|l| l.split_once(' '))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        if let Some(err) = figures.get("error") {
            bail!("gdb script: {err} (log: {})", log.display());
        }
        Ok(figures)
    }
}

/// A DAP session between launch and disconnect.
struct Session {
    client: DapClient,
    spawned: Instant,
    /// Just before configurationDone was sent: the program runs from here.
    configured: Instant,
}

impl Session {
    /// Waits for the `stopped` event; returns when it arrived and the thread that stopped.
    fn stopped(&mut self) -> Result<(Instant, i64)> {
        let body = self.client.event("stopped")?;
        let at = Instant::now();
        let thread = body["threadId"]
            .as_i64()
            .context("stopped without threadId")?;
        Ok((at, thread))
    }

    fn top_frame(&mut self, thread: i64) -> Result<Value> {
        let trace = self.client.request(
            "stackTrace",
            json!({ "threadId": thread, "startFrame": 0, "levels": 1 }),
        )?;
        trace["stackFrames"]
            .get(0)
            .cloned()
            .context("empty stack trace")
    }

    /// The debuggee's pid from the `process` event, if the adapter sent one.
    fn debuggee(&mut self) -> Option<u32> {
        self.client
            .queued_event("process")
            .and_then(|body| body["systemProcessId"].as_u64())
            .and_then(|pid| u32::try_from(pid).ok())
    }
}

pub(crate) fn number(figures: &HashMap<String, String>, key: &str) -> Result<f64> {
    figures
        .get(key)
        .with_context(|| format!("gdb reported no `{key}`"))?
        .parse()
        .with_context(|| format!("gdb's `{key}`"))
}
