//! R1 and R2 (issue 30): what recording for reverse debugging costs a program, and how long
//! going back in a recording takes, with gdb's `record full` beside tandem.
//!
//! R1 runs three programs plain, under `tandem debug --record` (system calls buffered inside
//! the program, docs/reverse.md "Buffered system calls"), under the same with
//! `TANDEM_SYSCALL_BUFFER=0` (a ptrace stop at every call: the design before) and under gdb
//! 13's `record full`. Per-iteration costs make runs of different lengths comparable: the
//! traced recorder and gdb are run with far fewer iterations than the plain program. R2
//! records `rev_bench syscalls` for a second or more through DAP and times `stepBack` and
//! `reverseContinue` from request to `stopped`; gdb's `reverse-next` and
//! `reverse-continue` are timed on a small recording of the same program.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use serde_json::{json, Value};

use crate::dap::DapClient;
use crate::scenarios::{number, Bench, Better, Figures, Metric, Scenario, Tool};
use crate::setup::Sample;
use crate::stats;

/// The switch that makes tandem's recorder stop at every system call (docs/reverse.md).
const BUFFER_VAR: &str = "TANDEM_SYSCALL_BUFFER";

/// glibc's AVX and AVX-512 routines off in gdb's inferior: gdb 13 cannot record them
/// ("Process record does not support instruction"). The reverse suites' list
/// (tests/support/gdb_record.rs) and `-AVX_Fast_Unaligned_Load`, without which `printf`
/// still copies through `__memcpy_avx_unaligned_erms_rtm` (checked: `syscall_io` stopped
/// there under `record full` at its last line).
const GDB_TUNABLES: &str =
    "glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX2_Usable,-AVX2,-EVEX,-BMI2,-AVX_Fast_Unaligned_Load";

/// What a recording by tandem says when it ends before the program does.
const RECORDING_ENDED: &str = "recording stopped";

/// A program R1 runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Program {
    Compute,
    Syscalls,
    FileIo,
    /// `syscall_io` with the clock read by the system call: the one gdb can record (its
    /// `record full` stops at the vDSO's `rdtscp`).
    FileIoDirect,
}

impl Program {
    pub const R1: [Program; 3] = [Program::Compute, Program::Syscalls, Program::FileIo];

    /// The program gdb runs in this one's place.
    fn for_gdb(self) -> Program {
        match self {
            Program::FileIo => Program::FileIoDirect,
            other => other,
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Program::Compute => "`rev_bench compute N` (CPU-bound, no system call in the loop)",
            Program::Syscalls => "`rev_bench syscalls N` (`getppid` + `getpid` a round)",
            Program::FileIo => {
                "`syscall_io N FILE` (`clock_gettime` + `snprintf` + `write` a line; read back in 64-byte `read`s)"
            }
            Program::FileIoDirect => {
                "`syscall_io N FILE syscall` (the same, the clock read by the system call: for gdb)"
            }
        }
    }

    fn id(self) -> &'static str {
        match self {
            Program::Compute => "compute",
            Program::Syscalls => "syscalls",
            Program::FileIo => "io",
            Program::FileIoDirect => "io-syscall",
        }
    }

    /// The ids of its figures: recorded / plain (wall, CPU) and traced / plain.
    fn metric_ids(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Program::Compute => (
                "r1.compute.ratio",
                "r1.compute.cpu_ratio",
                "r1_traced.compute.ratio",
            ),
            Program::Syscalls => (
                "r1.syscalls.ratio",
                "r1.syscalls.cpu_ratio",
                "r1_traced.syscalls.ratio",
            ),
            Program::FileIo | Program::FileIoDirect => {
                ("r1.io.ratio", "r1.io.cpu_ratio", "r1_traced.io.ratio")
            }
        }
    }
}

/// How a program ran in R1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    Plain,
    /// `tandem debug --record`, system calls buffered in the program.
    Recorded,
    /// The same with `TANDEM_SYSCALL_BUFFER=0`: a ptrace stop at every call.
    Traced,
    /// gdb 13, `record full` from `main` to the end.
    GdbRecordFull,
}

impl Mode {
    pub const ALL: [Mode; 4] = [
        Mode::Plain,
        Mode::Recorded,
        Mode::Traced,
        Mode::GdbRecordFull,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::Recorded => "tandem `debug --record`",
            Mode::Traced => "tandem, every call traced (`TANDEM_SYSCALL_BUFFER=0`)",
            Mode::GdbRecordFull => "gdb `record full`",
        }
    }
}

/// Iterations of one R1 program in each mode.
#[derive(Clone, Copy, Debug)]
pub struct Iterations {
    /// The plain run and tandem's recording with buffered calls.
    pub recorded: u64,
    /// tandem with every call traced.
    pub traced: u64,
    /// gdb `record full` (about 10,000 instructions a second).
    pub gdb: u64,
}

/// One timed run of R1.
#[derive(Clone, Copy, Debug)]
pub struct Measured {
    pub n: u64,
    /// Seconds, the whole run (for gdb: its `continue` under `record full`).
    pub wall: f64,
    pub cpu: f64,
    /// Microseconds per iteration: the run minus the same with no iteration, over N (for gdb,
    /// whose timing starts at `main`, the run over N).
    pub per_iter_wall: f64,
    pub per_iter_cpu: f64,
}

/// One R2 run: a recording and the times of going back in it.
#[derive(Clone, Debug)]
pub struct GoingBack {
    pub rounds: u64,
    /// Seconds from resuming the program to the stop at its last tick.
    pub record_s: f64,
    /// Five steps back by line (gdb: `reverse-next`), milliseconds each.
    pub steps_ms: Vec<f64>,
    /// Each reverse-continue.
    pub back: Vec<Back>,
}

/// How far back a reverse-continue was asked to go.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub enum Distance {
    Rounds(u64),
    /// Seconds of recorded execution, turned into rounds at the recording's pace.
    Seconds(f64),
}

/// One reverse-continue.
#[derive(Clone, Copy, Debug)]
pub struct Back {
    pub asked: Distance,
    pub rounds: u64,
    /// From the request to `stopped`.
    pub latency_s: f64,
}

impl GoingBack {
    /// Seconds of recorded execution `rounds` back.
    pub fn recorded_s(&self, rounds: u64) -> f64 {
        self.record_s * rounds as f64 / self.rounds as f64
    }
}

/// Everything R1 and R2 measured beyond the table's figures, for the detail tables.
#[derive(Debug, Default)]
pub struct Details {
    pub r1: BTreeMap<(Program, Mode), Vec<Measured>>,
    pub r2: BTreeMap<Tool, Vec<GoingBack>>,
}

/// R1's and R2's settings and workloads.
#[derive(Debug)]
pub struct Reverse {
    /// samples/c/rev_bench.c (`gcc -g -O1`), the line of `tick`'s body.
    pub rev_bench: Sample,
    /// samples/bench/syscall_io.c (`gcc -g -O1`).
    pub syscall_io: PathBuf,
    /// tests/support/gdb_no_xstate.c, built: gdb through it reads and writes the x87/SSE
    /// registers by FXSAVE, which is what lets gdb 13 go back on a CPU with AMX.
    pub gdb_launcher: Option<PathBuf>,
    pub compute: Iterations,
    pub syscalls: Iterations,
    pub io: Iterations,
    /// R2: rounds recorded by tandem and how far back its reverse-continues go: so many
    /// rounds, and so many seconds of recorded execution (turned into rounds by the
    /// recording's own pace).
    pub rounds: u64,
    pub back: Vec<u64>,
    pub back_seconds: Vec<f64>,
    /// R2: the same for gdb.
    pub gdb_rounds: u64,
    pub gdb_back: Vec<u64>,
    pub details: RefCell<Details>,
}

impl Reverse {
    fn iterations(&self, program: Program) -> Iterations {
        match program {
            Program::Compute => self.compute,
            Program::Syscalls => self.syscalls,
            Program::FileIo | Program::FileIoDirect => self.io,
        }
    }
}

const fn ratio_metric(
    id: &'static str,
    scenario: Scenario,
    title: &'static str,
    target: Option<f64>,
    peers_from: Option<&'static str>,
) -> Metric {
    Metric {
        id,
        scenario,
        title,
        unit: "×",
        better: Better::Lower,
        target,
        ratio: true,
        peers_from,
    }
}

const fn latency_metric(
    id: &'static str,
    title: &'static str,
    unit: &'static str,
    target: Option<f64>,
) -> Metric {
    Metric {
        id,
        scenario: Scenario::R2,
        title,
        unit,
        better: Better::Lower,
        target,
        ratio: true,
        peers_from: None,
    }
}

/// R1's and R2's figures in the main table. gdb's R1 ratios are per iteration (it runs far
/// fewer); tandem's recorded / plain is the whole run's, start-up included, as the issue
/// states its target.
pub const METRICS: &[Metric] = &[
    ratio_metric(
        "r1.compute.ratio",
        Scenario::R1,
        "R1 CPU-bound `rev_bench compute`: recorded / plain, wall",
        Some(2.0),
        None,
    ),
    ratio_metric(
        "r1.compute.cpu_ratio",
        Scenario::R1,
        "R1 CPU-bound: recorded / plain, CPU",
        None,
        None,
    ),
    ratio_metric(
        "r1_traced.compute.ratio",
        Scenario::R1,
        "R1 CPU-bound, every call traced (before): per iteration / plain",
        None,
        Some("r1.compute.ratio"),
    ),
    ratio_metric(
        "r1.syscalls.ratio",
        Scenario::R1,
        "R1 `rev_bench syscalls` (getpid/getppid): recorded / plain, wall",
        Some(5.0),
        None,
    ),
    ratio_metric(
        "r1.syscalls.cpu_ratio",
        Scenario::R1,
        "R1 getpid/getppid: recorded / plain, CPU",
        None,
        None,
    ),
    ratio_metric(
        "r1_traced.syscalls.ratio",
        Scenario::R1,
        "R1 getpid/getppid, every call traced (before): per iteration / plain",
        None,
        Some("r1.syscalls.ratio"),
    ),
    ratio_metric(
        "r1.io.ratio",
        Scenario::R1,
        "R1 `syscall_io` (clock, write, read): recorded / plain, wall",
        Some(5.0),
        None,
    ),
    ratio_metric(
        "r1.io.cpu_ratio",
        Scenario::R1,
        "R1 file I/O: recorded / plain, CPU",
        None,
        None,
    ),
    ratio_metric(
        "r1_traced.io.ratio",
        Scenario::R1,
        "R1 file I/O, every call traced (before): per iteration / plain",
        None,
        Some("r1.io.ratio"),
    ),
    latency_metric(
        "r2.record_us",
        "R2 recording `rev_bench syscalls`, per round",
        "µs",
        None,
    ),
    latency_metric(
        "r2.step_back_ms",
        "R2 `stepBack` (gdb: `reverse-next`), median of 5",
        "ms",
        Some(50.0),
    ),
    latency_metric(
        "r2.step_back_max_ms",
        "R2 `stepBack` (gdb: `reverse-next`), slowest of 5",
        "ms",
        Some(50.0),
    ),
    latency_metric(
        "r2.back_1000_ms",
        "R2 `reverseContinue` 1,000 rounds back",
        "ms",
        None,
    ),
    latency_metric(
        "r2.back_1s",
        "R2 `reverseContinue` across 1 s of recorded execution",
        "s",
        Some(1.0),
    ),
];

/// The CPU time of this process's children that have been waited for, in seconds.
fn children_cpu() -> f64 {
    // SAFETY: getrusage writes one rusage into the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// What one child process did.
struct Ran {
    wall: f64,
    cpu: f64,
    code: Option<i32>,
    /// Its stdout and stderr together.
    output: String,
}

fn per_iteration(run: &Ran, zero: &Ran, n: u64) -> Measured {
    let n_f = n.max(1) as f64;
    Measured {
        n,
        wall: run.wall,
        cpu: run.cpu,
        per_iter_wall: (run.wall - zero.wall) / n_f * 1e6,
        per_iter_cpu: (run.cpu - zero.cpu) / n_f * 1e6,
    }
}

impl Bench {
    fn rev(&self) -> Result<&Reverse> {
        self.reverse
            .as_ref()
            .context("R1/R2 workloads were not prepared")
    }

    /// Runs `command` in the work directory to its end, its output in a log: wall and CPU
    /// time (its own and its waited-for children's, from `getrusage(RUSAGE_CHILDREN)`).
    fn timed(&self, tool: Tool, what: &str, mut command: Command) -> Result<Ran> {
        let log = self.log_path(tool, what);
        let out = File::create(&log)?;
        command
            .current_dir(&self.work)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        let cpu_before = children_cpu();
        let start = Instant::now();
        let mut child = command
            .spawn()
            .with_context(|| format!("starting {command:?}"))?;
        let deadline = start + self.timeout;
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!("{what} timed out (log: {})", log.display());
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let wall = start.elapsed().as_secs_f64();
        let cpu = children_cpu() - cpu_before;
        Ok(Ran {
            wall,
            cpu,
            code: status.code(),
            output: fs::read_to_string(&log).unwrap_or_default(),
        })
    }

    /// The program and its arguments for `n` iterations.
    fn argv(&self, program: Program, n: u64) -> Result<(PathBuf, Vec<String>)> {
        let rev = self.rev()?;
        let file = || {
            self.work
                .join(format!("syscall_io-{}.txt", std::process::id()))
                .display()
                .to_string()
        };
        Ok(match program {
            Program::Compute => (
                rev.rev_bench.bin.clone(),
                vec!["compute".into(), n.to_string()],
            ),
            Program::Syscalls => (
                rev.rev_bench.bin.clone(),
                vec!["syscalls".into(), n.to_string()],
            ),
            Program::FileIo => (rev.syscall_io.clone(), vec![n.to_string(), file()]),
            Program::FileIoDirect => (
                rev.syscall_io.clone(),
                vec![n.to_string(), file(), "syscall".into()],
            ),
        })
    }

    fn run_plain(&self, tool: Tool, program: Program, n: u64) -> Result<Ran> {
        let (bin, args) = self.argv(program, n)?;
        let mut command = Command::new(bin);
        command.args(args);
        let ran = self.timed(tool, &format!("r1-{}-plain-{n}", program.id()), command)?;
        check_io(program, &ran, "plain")?;
        Ok(ran)
    }

    fn run_tandem(&self, program: Program, mode: Mode, n: u64) -> Result<Ran> {
        let (bin, args) = self.argv(program, n)?;
        let mut command = Command::new(&self.tools.tandem);
        command.args(["debug", "--record"]).arg(bin).args(args);
        let what = match mode {
            Mode::Traced => {
                command.env(BUFFER_VAR, "0");
                "traced"
            }
            _ => {
                command.env_remove(BUFFER_VAR);
                "recorded"
            }
        };
        let ran = self.timed(
            Tool::Tandem,
            &format!("r1-{}-{what}-{n}", program.id()),
            command,
        )?;
        ensure!(
            !ran.output.contains(RECORDING_ENDED),
            "the recording of {} ended early: {}",
            program.id(),
            ran.output.trim()
        );
        check_io(program, &ran, what)?;
        Ok(ran)
    }

    /// R1 for one debugger: the three programs, each plain and recorded.
    pub fn r1(&self, tool: Tool) -> Result<Figures> {
        let rev = self.rev()?;
        let mut figures = Figures::new();
        for program in Program::R1 {
            let counts = rev.iterations(program);
            let (ratio_id, cpu_id, traced_id) = program.metric_ids();
            match tool {
                Tool::Tandem => {
                    let n = counts.recorded;
                    let plain_zero = self.run_plain(tool, program, 0)?;
                    let plain = self.run_plain(tool, program, n)?;
                    let recorded_zero = self.run_tandem(program, Mode::Recorded, 0)?;
                    let recorded = self.run_tandem(program, Mode::Recorded, n)?;
                    ensure!(
                        recorded.code == plain.code,
                        "{} exited {:?} recorded, {:?} plain",
                        program.id(),
                        recorded.code,
                        plain.code
                    );
                    let traced_zero = self.run_tandem(program, Mode::Traced, 0)?;
                    let traced = self.run_tandem(program, Mode::Traced, counts.traced)?;
                    let plain_m = per_iteration(&plain, &plain_zero, n);
                    let recorded_m = per_iteration(&recorded, &recorded_zero, n);
                    let traced_m = per_iteration(&traced, &traced_zero, counts.traced);
                    figures.push((ratio_id, recorded.wall / plain.wall));
                    figures.push((cpu_id, recorded.cpu / plain.cpu));
                    figures.push((traced_id, traced_m.per_iter_wall / plain_m.per_iter_wall));
                    let mut details = rev.details.borrow_mut();
                    for (mode, m) in [
                        (Mode::Plain, plain_m),
                        (Mode::Recorded, recorded_m),
                        (Mode::Traced, traced_m),
                    ] {
                        details.r1.entry((program, mode)).or_default().push(m);
                    }
                }
                Tool::Gdb => {
                    let program = program.for_gdb();
                    let n = counts.recorded;
                    let plain_zero = self.run_plain(tool, program, 0)?;
                    let plain = self.run_plain(tool, program, n)?;
                    let plain_m = per_iteration(&plain, &plain_zero, n);
                    let gdb_m = self.r1_gdb(program, counts.gdb)?;
                    figures.push((ratio_id, gdb_m.per_iter_wall / plain_m.per_iter_wall));
                    figures.push((cpu_id, gdb_m.per_iter_cpu / plain_m.per_iter_cpu));
                    let mut details = rev.details.borrow_mut();
                    // Plain runs of the same program add to the tandem slot's.
                    details
                        .r1
                        .entry((program, Mode::Plain))
                        .or_default()
                        .push(plain_m);
                    details
                        .r1
                        .entry((program, Mode::GdbRecordFull))
                        .or_default()
                        .push(gdb_m);
                }
                Tool::LldbDap => bail!("lldb-dap cannot record"),
            }
        }
        Ok(figures)
    }

    /// gdb `record full` from `main` to the program's end: the `continue`'s wall and CPU time
    /// (gdb's and the program's) over N.
    fn r1_gdb(&self, program: Program, n: u64) -> Result<Measured> {
        let (bin, args) = self.argv(program, n)?;
        let rev = self.rev()?;
        let sample = Sample {
            bin,
            source: rev.rev_bench.source.clone(),
            line: 0,
        };
        let out = self.gdb(
            rev.gdb_launcher.as_deref(),
            "r1",
            &sample,
            &args,
            &[("TUNABLES", GDB_TUNABLES.to_owned())],
        )?;
        let wall = number(&out, "elapsed")?;
        let cpu = number(&out, "cpu")?;
        let insns = number(&out, "insns")?;
        ensure!(
            insns >= n as f64,
            "gdb recorded {insns} instructions for {n} iterations"
        );
        let n_f = n.max(1) as f64;
        Ok(Measured {
            n,
            wall,
            cpu,
            per_iter_wall: wall / n_f * 1e6,
            per_iter_cpu: cpu / n_f * 1e6,
        })
    }

    /// R2 for one debugger.
    pub fn r2(&self, tool: Tool) -> Result<Figures> {
        let rev = self.rev()?;
        let run = match tool {
            Tool::Tandem => self.r2_tandem()?,
            Tool::Gdb => self.r2_gdb()?,
            Tool::LldbDap => bail!("lldb-dap cannot go back"),
        };
        let mut figures = vec![
            ("r2.record_us", run.record_s / run.rounds as f64 * 1e6),
            ("r2.step_back_ms", stats::median(&run.steps_ms)),
            (
                "r2.step_back_max_ms",
                run.steps_ms.iter().copied().fold(f64::NAN, f64::max),
            ),
        ];
        if let Some(b) = run.back.iter().find(|b| b.asked == Distance::Rounds(1000)) {
            figures.push(("r2.back_1000_ms", b.latency_s * 1e3));
        }
        if tool == Tool::Tandem {
            // The shortest distance asked in seconds that is a second or more.
            match run
                .back
                .iter()
                .filter(|b| matches!(b.asked, Distance::Seconds(s) if s >= 1.0))
                .min_by(|a, b| a.rounds.cmp(&b.rounds))
            {
                Some(b) => figures.push(("r2.back_1s", b.latency_s)),
                None => eprint!("(no reverse-continue went 1 s back: raise --r2-rounds) "),
            }
        }
        rev.details
            .borrow_mut()
            .r2
            .entry(tool)
            .or_default()
            .push(run);
        Ok(figures)
    }

    /// tandem over DAP: `rev_bench syscalls ROUNDS` recorded to its last tick, five
    /// `stepBack`s, then for each distance: forward to the last tick, and `reverseContinue`
    /// to the tick that many rounds before it (checked by evaluating `i` there).
    fn r2_tandem(&self) -> Result<GoingBack> {
        let rev = self.rev()?;
        let sample = &rev.rev_bench;
        let rounds = rev.rounds;
        ensure!(
            rounds >= 2000 && rounds % 1000 == 0,
            "--r2-rounds must be a multiple of 1,000 (rev_bench ticks every 1,000 rounds)"
        );
        let last = rounds - 1;
        let mut command = Command::new(&self.tools.tandem);
        command.arg("dap").current_dir(&self.work);
        for var in ["TANDEM_CONDITIONS_IN_DEBUGGEE", BUFFER_VAR] {
            command.env_remove(var);
        }
        let log = self.log_path(Tool::Tandem, "r2");
        let mut c = DapClient::spawn("tandem", command, &log, self.timeout)?;
        let result = (|| -> Result<GoingBack> {
            c.request(
                "initialize",
                json!({ "clientID": "tandem-bench", "adapterID": "tandem", "linesStartAt1": true,
                        "columnsStartAt1": true, "pathFormat": "path" }),
            )?;
            let launch = c.send(
                "launch",
                json!({ "program": sample.bin, "args": ["syscalls", rounds.to_string()],
                        "cwd": self.work, "stdio": "pipes", "reverseDebugging": true }),
            )?;
            c.event("initialized")?;
            let at_tick = |c: &mut DapClient, i: u64| {
                c.request(
                    "setBreakpoints",
                    json!({ "source": { "path": sample.source },
                            "breakpoints": [{ "line": sample.line, "condition": format!("i == {i}") }] }),
                )
            };
            at_tick(&mut c, last)?;
            let start = Instant::now();
            c.request("configurationDone", json!({}))?;
            c.response(launch)?;
            let mut thread = stopped(&mut c, "breakpoint")?;
            let record_s = start.elapsed().as_secs_f64();
            check_i(&mut c, thread, last)?;
            let mut steps_ms = Vec::new();
            for _ in 0..5 {
                let t0 = Instant::now();
                let seq = c.send("stepBack", json!({ "threadId": thread }))?;
                thread = stopped(&mut c, "step")?;
                c.response(seq)?;
                steps_ms.push(t0.elapsed().as_secs_f64() * 1e3);
            }
            // Seconds back as rounds, at the recording's pace, rounded up to whole ticks.
            let per_s = rounds as f64 / record_s;
            let mut distances: Vec<(Distance, u64)> = rev
                .back
                .iter()
                .map(|&r| (Distance::Rounds(r), r))
                .chain(rev.back_seconds.iter().map(|&s| {
                    (
                        Distance::Seconds(s),
                        ((s * per_s / 1000.0).ceil() as u64) * 1000,
                    )
                }))
                .collect();
            distances.sort_by_key(|&(_, rounds)| rounds);
            let mut back = Vec::new();
            for (asked, distance) in distances {
                let Some(target) = last.checked_sub(distance).filter(|&t| t >= 999) else {
                    continue;
                };
                // From the present (the last tick) every time.
                at_tick(&mut c, last)?;
                let seq = c.send("continue", json!({ "threadId": thread }))?;
                c.response(seq)?;
                thread = stopped(&mut c, "breakpoint")?;
                check_i(&mut c, thread, last)?;
                at_tick(&mut c, target)?;
                let t0 = Instant::now();
                let seq = c.send("reverseContinue", json!({ "threadId": thread }))?;
                thread = stopped(&mut c, "breakpoint")?;
                c.response(seq)?;
                back.push(Back {
                    asked,
                    rounds: distance,
                    latency_s: t0.elapsed().as_secs_f64(),
                });
                check_i(&mut c, thread, target)?;
            }
            Ok(GoingBack {
                rounds,
                record_s,
                steps_ms,
                back,
            })
        })();
        match result {
            Ok(run) => {
                c.close()?;
                Ok(run)
            }
            Err(err) => Err(err.context(format!("log: {}", log.display()))),
        }
    }

    /// gdb: the same program recorded with `record full` from `main` to its last tick, five
    /// `reverse-next`s, and `reverse-continue`s from the end of the log.
    fn r2_gdb(&self) -> Result<GoingBack> {
        let rev = self.rev()?;
        let rounds = rev.gdb_rounds;
        ensure!(
            rounds >= 2000 && rounds % 1000 == 0,
            "--r2-gdb-rounds must be a multiple of 1,000"
        );
        let last = rounds - 1;
        let back: Vec<u64> = rev
            .gdb_back
            .iter()
            .copied()
            .filter(|&b| last.checked_sub(b).is_some_and(|t| t >= 999))
            .collect();
        let args = ["syscalls".to_owned(), rounds.to_string()];
        let out = self.gdb(
            rev.gdb_launcher.as_deref(),
            "r2",
            &rev.rev_bench,
            &args,
            &[
                ("TUNABLES", GDB_TUNABLES.to_owned()),
                ("LAST", last.to_string()),
                (
                    "BACK",
                    back.iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
            ],
        )?;
        let list = |key: &str| -> Result<Vec<f64>> {
            out.get(key)
                .with_context(|| format!("gdb reported no `{key}`"))?
                .split_whitespace()
                .map(|v| v.parse::<f64>().with_context(|| format!("gdb's `{key}`")))
                .collect()
        };
        let steps_ms = list("steps")?.into_iter().map(|s| s * 1e3).collect();
        let latencies = list("back")?;
        ensure!(
            latencies.len() == back.len(),
            "gdb went back {} times, asked {}",
            latencies.len(),
            back.len()
        );
        Ok(GoingBack {
            rounds,
            record_s: number(&out, "record")?,
            steps_ms,
            back: back
                .into_iter()
                .zip(latencies)
                .map(|(rounds, latency_s)| Back {
                    asked: Distance::Rounds(rounds),
                    rounds,
                    latency_s,
                })
                .collect(),
        })
    }
}

/// `syscall_io` checks what it read back against what it wrote: exit 0 and its summary line.
fn check_io(program: Program, ran: &Ran, what: &str) -> Result<()> {
    if matches!(program, Program::FileIo | Program::FileIoDirect) {
        ensure!(
            ran.code == Some(0) && ran.output.contains("syscall_io: "),
            "syscall_io ({what}) exited {:?}: {}",
            ran.code,
            ran.output.trim()
        );
    }
    Ok(())
}

/// Waits for `stopped` with `reason`; returns its thread.
fn stopped(c: &mut DapClient, reason: &str) -> Result<i64> {
    let body = c.event("stopped")?;
    ensure!(
        body["reason"] == reason,
        "stopped with reason {} ({}), expected {reason}",
        body["reason"],
        body["description"]
    );
    body["threadId"]
        .as_i64()
        .context("stopped without threadId")
}

/// Checks that `i` reads `expected` in the top frame.
fn check_i(c: &mut DapClient, thread: i64, expected: u64) -> Result<()> {
    let trace = c.request(
        "stackTrace",
        json!({ "threadId": thread, "startFrame": 0, "levels": 1 }),
    )?;
    let frame = trace["stackFrames"][0]["id"].clone();
    let value = c.request(
        "evaluate",
        json!({ "expression": "i", "frameId": frame, "context": "watch" }),
    )?;
    ensure!(
        value["result"] == expected.to_string().as_str(),
        "stopped at i = {}, expected {expected}",
        value["result"]
    );
    Ok(())
}

/// The raw runs, for the results file.
pub fn json(details: &Details) -> Value {
    let r1: Vec<Value> = details
        .r1
        .iter()
        .map(|((program, mode), runs)| {
            json!({
                "program": program.id(),
                "mode": format!("{mode:?}"),
                "runs": runs.iter().map(|m| json!({
                    "n": m.n, "wall_s": m.wall, "cpu_s": m.cpu,
                    "per_iteration_wall_us": m.per_iter_wall,
                    "per_iteration_cpu_us": m.per_iter_cpu,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let r2: serde_json::Map<String, Value> = details
        .r2
        .iter()
        .map(|(tool, runs)| {
            let runs: Vec<Value> = runs
                .iter()
                .map(|r| {
                    json!({
                        "rounds": r.rounds, "record_s": r.record_s, "steps_ms": r.steps_ms,
                        "back": r.back.iter().map(|b| json!({
                            "asked": match b.asked {
                                Distance::Rounds(n) => json!({ "rounds": n }),
                                Distance::Seconds(s) => json!({ "seconds": s }),
                            },
                            "rounds": b.rounds, "recorded_s": r.recorded_s(b.rounds),
                            "latency_s": b.latency_s,
                        })).collect::<Vec<_>>(),
                    })
                })
                .collect();
            (tool.name().to_owned(), json!(runs))
        })
        .collect();
    json!({ "r1": r1, "r2": r2 })
}
