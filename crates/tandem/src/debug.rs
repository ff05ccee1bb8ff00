//! `tandem debug`: run a program under the engine from the command line, print the stack and
//! the requested values at every stop, continue to the end, and exit with the program's code.
//!
//! This is the engine driven without any protocol: the same calls the DAP front-end makes,
//! through the process manager, which owns the session (this is one more view of it).
//! Text output reads like gdb's; `--json` prints one JSON object per line for scripts.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use engine::{
    BreakpointStatus, FunctionBreakpoint, LaunchOptions, ScopeKind, SessionEvent, SourceBreakpoint,
    StopCause,
};
use procman::{DebugEvent, DebugSession, ProcessManager, ViewId};
use serde_json::{json, Value as Json};

#[derive(clap::Args, Debug)]
pub struct DebugArgs {
    /// Where to stop: `FILE:LINE`, `FUNCTION` (C, `Type::method`, `crate::module::func`) or
    /// `*ADDRESS`; append ` if EXPR` for a condition of this breakpoint alone.
    #[arg(long = "break", short = 'b', value_name = "LOC")]
    breaks: Vec<String>,

    /// An expression to print at every stop, in the stopped frame (repeatable).
    #[arg(long = "print", short = 'p', value_name = "EXPR")]
    prints: Vec<String>,

    /// A condition for every breakpoint that has none of its own.
    #[arg(long, value_name = "EXPR")]
    condition: Option<String>,

    /// One JSON object per line (stops, output, exit) instead of text.
    #[arg(long)]
    json: bool,

    /// Frames to print per stop.
    #[arg(long, default_value_t = 32)]
    max_frames: usize,

    /// Debug every process the program forks too, each with the same breakpoints; every
    /// stop and exit is printed with its process (`pid` in JSON).
    #[arg(long)]
    follow_children: bool,

    /// Record the program from its first instruction, as DAP's `reverseDebugging` does
    /// (docs/reverse.md): the overhead of recording, and where a recording would end, are
    /// seen from the command line (going back needs the DAP front-end).
    #[arg(long)]
    record: bool,

    /// Open this core file of PROGRAM instead of running it: print every thread's stack
    /// and the `--print` values (in the thread that got the fatal signal), then exit 0.
    #[arg(long, value_name = "CORE")]
    core: Option<PathBuf>,

    /// With --core: look for the core's libraries under this directory first (a core
    /// from a container or another machine).
    #[arg(long, value_name = "DIR", requires = "core")]
    sysroot: Option<PathBuf>,

    /// The program to run.
    program: PathBuf,

    /// Its arguments. Options may come before or after them; arguments that start with `-`
    /// go after `--` (`tandem debug prog --break main -- -v`).
    args: Vec<OsString>,
}

/// A breakpoint request parsed from `--break`.
enum Location {
    Line { file: PathBuf, line: u32 },
    Function(String),
    Address(u64),
}

fn parse_location(spec: &str) -> Result<(Location, Option<String>)> {
    let (loc, condition) = match spec.split_once(" if ") {
        Some((loc, cond)) => (loc.trim(), Some(cond.trim().to_owned())),
        None => (spec.trim(), None),
    };
    if let Some(addr) = loc.strip_prefix('*') {
        let addr = addr.trim();
        let value = match addr.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => addr.parse(),
        }
        .with_context(|| format!("not an address: {addr}"))?;
        return Ok((Location::Address(value), condition));
    }
    if let Some((file, line)) = loc.rsplit_once(':') {
        if let Ok(line) = line.parse::<u32>() {
            if line == 0 {
                bail!("line numbers start at 1: {loc}");
            }
            return Ok((
                Location::Line {
                    file: PathBuf::from(file),
                    line,
                },
                condition,
            ));
        }
    }
    if loc.is_empty() {
        bail!("empty breakpoint location");
    }
    Ok((Location::Function(loc.to_owned()), condition))
}

/// Serialises writes of stop reports and forwarded program output.
#[derive(Clone)]
struct Out {
    json: bool,
    lock: Arc<Mutex<()>>,
    /// With `--follow-children`: the process every report names.
    process: Option<i32>,
}

impl Out {
    /// The same output, for reports of another process.
    fn for_process(&self, pid: i32) -> Out {
        Out {
            process: Some(pid),
            ..self.clone()
        }
    }

    /// A process's end: its exit code and how often it stopped.
    fn exited(&self, code: i32, stops: u64) {
        if self.json {
            self.json(&json!({"event": "exited", "code": code, "stops": stops}));
        } else {
            self.text(&format!(
                "{}[exited with code {code} after {stops} stop(s)]\n",
                self.tag()
            ));
        }
    }

    /// What starts a text report: the process, when several are debugged.
    fn tag(&self) -> String {
        self.process
            .map(|p| format!("[process {p}] "))
            .unwrap_or_default()
    }

    fn text(&self, text: &str) {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }

    fn json(&self, value: &Json) {
        match (self.process, value) {
            (Some(pid), Json::Object(map)) => {
                let mut map = map.clone();
                map.insert("pid".into(), json!(pid));
                self.text(&format!("{}\n", Json::Object(map)));
            }
            _ => self.text(&format!("{value}\n")),
        }
    }

    /// Forwards one of the program's streams: as it is in text mode, as output objects in
    /// JSON mode (so the output stays machine-readable).
    fn forward(
        &self,
        mut from: std::fs::File,
        stream: &'static str,
    ) -> std::thread::JoinHandle<()> {
        let out = self.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                let n = match from.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let chunk = &buf[..n];
                if out.json {
                    out.json(&json!({"event": "output", "stream": stream, "text": String::from_utf8_lossy(chunk)}));
                } else if stream == "stderr" {
                    let _ = std::io::stderr().write_all(chunk);
                } else {
                    out.text(&String::from_utf8_lossy(chunk));
                }
            }
        })
    }
}

pub fn run(args: DebugArgs) -> Result<i32> {
    let out = Out {
        json: args.json,
        lock: Arc::new(Mutex::new(())),
        process: None,
    };
    if let Some(core) = &args.core {
        if !args.breaks.is_empty() || !args.args.is_empty() {
            bail!("--core inspects a core file: --break and program arguments do not apply");
        }
        return run_core(&out, core, &args);
    }
    let mut lines: Vec<(PathBuf, SourceBreakpoint)> = Vec::new();
    let mut functions = Vec::new();
    let mut addresses = Vec::new();
    for spec in &args.breaks {
        let (loc, own) = parse_location(spec)?;
        let condition = own.or_else(|| args.condition.clone());
        match loc {
            Location::Line { file, line } => lines.push((
                file,
                SourceBreakpoint {
                    line,
                    condition,
                    hit_condition: None,
                    log_message: None,
                },
            )),
            Location::Function(name) => functions.push(FunctionBreakpoint {
                name,
                condition,
                hit_condition: None,
            }),
            Location::Address(address) => addresses.push(engine::InstructionBreakpoint {
                address,
                condition,
                hit_condition: None,
            }),
        }
    }

    // The manager ends the program on SIGINT/SIGTERM/SIGHUP and on a panic.
    let manager = ProcessManager::new();
    if let Err(err) = procman::install_signal_hook(manager.shutdown_handle()) {
        tracing::warn!("cannot install the signal hook: {err}");
    }
    procman::install_panic_hook(manager.shutdown_handle());
    let session = manager
        .launch_debug(LaunchOptions {
            program: args.program.clone(),
            args: args.args.clone(),
            follow_children: args.follow_children,
            record: args.record,
            ..LaunchOptions::default()
        })
        .with_context(|| format!("cannot debug {}", args.program.display()))?;
    let out = if args.follow_children {
        out.for_process(session.pid().0)
    } else {
        out
    };
    let events = session.subscribe();
    let me = ViewId::new();
    let mut forwarders = Vec::new();
    if let Some(stdio) = session.engine().take_stdio() {
        // The program reads end of input: the CLI does not forward its own stdin.
        drop(stdio.stdin);
        forwarders.extend(stdio.stdout.map(|f| out.forward(f, "stdout")));
        forwarders.extend(stdio.stderr.map(|f| out.forward(f, "stderr")));
    }

    let mut by_file: Vec<(PathBuf, Vec<SourceBreakpoint>)> = Vec::new();
    for (file, bp) in lines {
        match by_file.iter_mut().find(|(f, _)| *f == file) {
            Some((_, list)) => list.push(bp),
            None => by_file.push((file, vec![bp])),
        }
    }
    let plan = Plan {
        by_file,
        functions,
        addresses,
    };
    let statuses = plan.plant(&session)?;
    for (spec, status) in args.breaks.iter().zip(&statuses) {
        report_breakpoint(&out, spec, status);
    }

    session.resume(me)?;
    // Followed children are driven on threads of their own, all joined before the end.
    let (code, stops) = std::thread::scope(|scope| {
        Run {
            out: out.clone(),
            args: &args,
            plan: &plan,
            manager: &manager,
            scope,
        }
        .drive(&session, &events, me)
    })?;
    for f in forwarders {
        let _ = f.join();
    }

    out.exited(code, stops);
    Ok(code)
}

/// The breakpoints asked for, planted in the program and in each child followed.
struct Plan {
    by_file: Vec<(PathBuf, Vec<SourceBreakpoint>)>,
    functions: Vec<FunctionBreakpoint>,
    addresses: Vec<engine::InstructionBreakpoint>,
}

impl Plan {
    fn plant(&self, session: &DebugSession) -> Result<Vec<BreakpointStatus>> {
        let mut statuses = Vec::new();
        for (file, list) in &self.by_file {
            statuses.extend(session.set_line_breakpoints(file, list)?);
        }
        if !self.functions.is_empty() {
            // Only the name table, still building in the background, finds one of them:
            // said, rather than a silent pause of seconds on a big program.
            let names: Vec<&str> = self.functions.iter().map(|f| f.name.as_str()).collect();
            if let Some(name) = session.engine().function_waiting_for_index(&names) {
                eprintln!("tandem: waiting for the debug information index to find {name}");
            }
            statuses.extend(session.engine().set_function_breakpoints(&self.functions)?);
        }
        if !self.addresses.is_empty() {
            statuses.extend(
                session
                    .engine()
                    .set_instruction_breakpoints(&self.addresses)?,
            );
        }
        Ok(statuses)
    }
}

/// One process's session driven to its end: stops reported, children followed.
struct Run<'scope, 'env> {
    out: Out,
    args: &'env DebugArgs,
    plan: &'env Plan,
    manager: &'env ProcessManager,
    scope: &'scope std::thread::Scope<'scope, 'env>,
}

impl<'scope, 'env> Run<'scope, 'env> {
    /// Reports every stop and resumes, until the process ends: its exit code (128 +
    /// the signal when killed) and the number of stops.
    fn drive(
        &self,
        session: &DebugSession,
        events: &crossbeam_channel::Receiver<DebugEvent>,
        me: ViewId,
    ) -> Result<(i32, u64)> {
        let out = &self.out;
        let mut stops = 0u64;
        let code = loop {
            let event = events
                .recv()
                .context("the debug session ended unexpectedly")?;
            let DebugEvent::Engine(event) = event else {
                if event == DebugEvent::Ended {
                    bail!("the debug session ended unexpectedly");
                }
                continue;
            };
            match event {
                SessionEvent::Stopped(stop) => {
                    stops += 1;
                    report_stop(out, session, &stop, stops, self.args)?;
                    session.resume(me)?;
                }
                SessionEvent::Output(text) => {
                    if out.json {
                        out.json(&json!({"event": "log", "text": text}));
                    } else {
                        out.text(&format!("{}{}\n", out.tag(), text.trim_end()));
                    }
                }
                SessionEvent::BreakpointResolved(status) => {
                    if out.json {
                        out.json(&json!({"event": "breakpoint", "id": status.id.0, "verified": status.verified,
                            "file": status.file.as_ref().map(|f| f.display().to_string()),
                            "line": status.line.map(|l| l.get())}));
                    } else {
                        out.text(&format!(
                            "{}breakpoint {} resolved\n",
                            out.tag(),
                            status.id.0
                        ));
                    }
                }
                SessionEvent::WatchScopeEnded(id) => {
                    let text = engine::watch::scope_ended_message(id);
                    if out.json {
                        out.json(&json!({"event": "breakpoint", "id": id.0, "removed": true,
                            "reason": text}));
                    } else {
                        out.text(&format!("{}{text}\n", out.tag()));
                    }
                }
                SessionEvent::ChildForked { pid, vfork } => self.follow(pid, vfork),
                SessionEvent::Exited { code } => break code,
                SessionEvent::Signaled { signo } => {
                    if !out.json {
                        eprintln!(
                            "tandem: {}the program was killed by signal {signo}",
                            out.tag()
                        );
                    }
                    break 128 + signo;
                }
                _ => {}
            }
        };
        Ok((code, stops))
    }

    /// Takes over a child the program forked (handed over, waiting stopped): its own
    /// session, the same breakpoints, driven on a thread of its own. A child that cannot
    /// be taken over is let go, running without the debugger.
    fn follow(&self, pid: procman::tracer::Pid, vfork: bool) {
        let child = Run {
            out: self.out.for_process(pid.0),
            args: self.args,
            plan: self.plan,
            manager: self.manager,
            scope: self.scope,
        };
        let parent = self.out.process;
        self.scope
            .spawn(move || child.take_over(pid, vfork, parent));
    }

    /// [`Run::follow`], on the child's own thread.
    fn take_over(self, pid: procman::tracer::Pid, vfork: bool, parent: Option<i32>) {
        let options = engine::AttachOptions {
            handed_over: true,
            vfork_child: vfork,
            follow_children: true,
        };
        let out = self.out.clone();
        let session =
            match self
                .manager
                .attach_debug_with(pid, engine::SourceMap::default(), options)
            {
                Ok(s) => s,
                Err(e) => {
                    procman::release_child(pid);
                    out.text(&format!("{}not followed: {e}\n", out.tag()));
                    return;
                }
            };
        if out.json {
            out.json(&json!({"event": "process", "parent": parent}));
        } else {
            out.text(&format!(
                "{}forked{}\n",
                out.tag(),
                parent
                    .map(|p| format!(" by process {p}"))
                    .unwrap_or_default()
            ));
        }
        let events = session.subscribe();
        let me = ViewId::new();
        // Breakpoints that cannot go in yet (a vfork child before its exec) resolve there.
        if let Err(e) = self.plan.plant(&session) {
            out.text(&format!("{}breakpoints: {e}\n", out.tag()));
        }
        if let Err(e) = session.resume(me) {
            out.text(&format!("{}cannot run: {e}\n", out.tag()));
            return;
        }
        match self.drive(&session, &events, me) {
            Ok((code, stops)) => out.exited(code, stops),
            Err(e) => out.text(&format!("{}{e}\n", out.tag())),
        }
    }
}

fn report_breakpoint(out: &Out, spec: &str, status: &BreakpointStatus) {
    let where_ = match (&status.file, status.line) {
        (Some(file), Some(line)) => format!("{}:{}", file.display(), line.get()),
        _ => String::new(),
    };
    if out.json {
        out.json(&json!({"event": "breakpoint", "id": status.id.0, "spec": spec, "verified": status.verified,
            "file": status.file.as_ref().map(|f| f.display().to_string()), "line": status.line.map(|l| l.get()),
            "moved": status.moved, "message": status.message}));
        return;
    }
    if status.verified {
        let moved = if status.moved {
            " (moved to the next line with code)"
        } else {
            ""
        };
        out.text(&format!("breakpoint {} at {where_}{moved}\n", status.id.0));
    } else {
        let why = status.message.as_deref().unwrap_or("no code found");
        out.text(&format!(
            "breakpoint {} ({spec}) pending: {why}\n",
            status.id.0
        ));
    }
    if let (true, Some(message)) = (status.verified, &status.message) {
        out.text(&format!("  note: {message}\n"));
    }
}

fn cause_text(cause: &StopCause) -> String {
    match cause {
        StopCause::Breakpoint(ids) => {
            let ids: Vec<String> = ids.iter().map(|id| id.0.to_string()).collect();
            format!("breakpoint {}", ids.join(", "))
        }
        StopCause::Signal(signo) => format!("signal {signo}"),
        StopCause::Step => "step".into(),
        StopCause::Pause => "pause".into(),
        StopCause::Entry => "entry".into(),
        StopCause::Attached => "attached".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}

fn report_stop(
    out: &Out,
    session: &DebugSession,
    stop: &engine::Stop,
    n: u64,
    args: &DebugArgs,
) -> Result<()> {
    let frames = session.stop_frames()?;
    let mut frame_json = Vec::new();
    let mut text = format!(
        "\n{}stop {n}: {} in thread {}\n",
        out.tag(),
        cause_text(&stop.cause),
        stop.tid.0
    );
    for (i, frame) in frames.iter().take(args.max_frames).enumerate() {
        let function = frame.function.as_deref().unwrap_or("??");
        let params: Vec<(String, String)> = session
            .engine()
            .variables(frame.id, ScopeKind::Arguments)
            .unwrap_or_default()
            .into_iter()
            // In a one-line frame summary an unreadable argument is shown the way gdb shows
            // it; the full reason stays in the JSON output and in `--print`.
            .map(|v| (v.name.clone(), summary_value(v)))
            .collect();
        let location = match (&frame.file, frame.line) {
            (Some(file), Some(line)) => format!(" at {}:{}", file.display(), line.get()),
            _ => frame
                .module
                .as_ref()
                .map(|m| format!(" from {m}"))
                .unwrap_or_default(),
        };
        let args_text: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let inlined = match (frame.inlined, frame.tail_call) {
            (true, _) => " [inlined]",
            (_, true) => " [tail call]",
            _ => "",
        };
        text.push_str(&format!(
            "  #{i:<2} {:#018x} in {function} ({}){location}{inlined}\n",
            frame.pc.0,
            args_text.join(", ")
        ));
        frame_json.push(json!({
            "function": frame.function, "file": frame.file.as_ref().map(|f| f.display().to_string()),
            "line": frame.line.map(|l| l.get()), "pc": format!("{:#x}", frame.pc.0), "inlined": frame.inlined,
            "tail_call": frame.tail_call,
            "module": frame.module, "args": params.iter().map(|(k, v)| json!({"name": k, "value": v})).collect::<Vec<_>>(),
        }));
    }
    let mut values = Vec::new();
    if let Some(top) = frames.first() {
        for expr in &args.prints {
            match session.engine().evaluate(top.id, expr) {
                Ok(v) => {
                    text.push_str(&format!("  {expr} = {}\n", v.rendered));
                    values.push(json!({"expr": expr, "value": v.rendered, "type": v.type_name, "error": v.error}));
                }
                Err(e) => {
                    text.push_str(&format!("  {expr}: {e}\n"));
                    values.push(json!({"expr": expr, "error": true, "value": e.to_string()}));
                }
            }
        }
    }
    if let Some(value) = stop.return_value.as_ref().and_then(|rv| rv.value.as_ref()) {
        text.push_str(&format!("  {} returned {}\n", value.name, value.rendered));
    }
    if out.json {
        out.json(&json!({"event": "stopped", "stop": n, "reason": cause_text(&stop.cause), "thread": stop.tid.0,
            "frames": frame_json, "values": values}));
    } else {
        out.text(&text);
    }
    Ok(())
}

/// `tandem debug PROGRAM --core CORE`: the core's stop, every thread's stack with its
/// arguments, and the `--print` values in the stopped thread's innermost frame.
fn run_core(out: &Out, core: &std::path::Path, args: &DebugArgs) -> Result<i32> {
    // Through the manager, as every session: the CLI is one more view of the owner.
    let manager = ProcessManager::new();
    let owner = manager
        .open_core(&args.program, core, args.sysroot.as_deref())
        .with_context(|| {
            format!(
                "cannot open {} with {}",
                core.display(),
                args.program.display()
            )
        })?;
    let session = owner.engine();
    for w in session.warnings() {
        eprintln!("tandem: warning: {w}");
    }
    let stop = session.stop();
    let mut text = format!(
        "core {}: {}{} in thread {}\n",
        core.display(),
        cause_text(&stop.cause),
        stop.description
            .as_ref()
            .map(|d| format!(" ({d})"))
            .unwrap_or_default(),
        stop.tid.0
    );
    let mut threads_json = Vec::new();
    let mut values = Vec::new();
    let mut tids = session.threads();
    // The stopped thread first, as gdb lists the current thread's stack first.
    if let Some(i) = tids.iter().position(|t| *t == stop.tid) {
        let t = tids.remove(i);
        tids.insert(0, t);
    }
    for tid in tids {
        let frames = session.stack_trace(tid)?;
        text.push_str(&format!("\nthread {}:\n", tid.0));
        let mut frame_json = Vec::new();
        for (i, frame) in frames.iter().take(args.max_frames).enumerate() {
            let params: Vec<(String, String)> = session
                .variables(frame.id, ScopeKind::Arguments)
                .unwrap_or_default()
                .into_iter()
                .map(|v| (v.name.clone(), summary_value(v)))
                .collect();
            let (line, json) = frame_line(i, frame, &params);
            text.push_str(&line);
            frame_json.push(json);
        }
        if tid == stop.tid {
            if let Some(top) = frames.first() {
                for expr in &args.prints {
                    match session.evaluate(top.id, expr) {
                        Ok(v) => {
                            text.push_str(&format!("  {expr} = {}\n", v.rendered));
                            values.push(json!({"expr": expr, "value": v.rendered, "type": v.type_name, "error": v.error}));
                        }
                        Err(e) => {
                            text.push_str(&format!("  {expr}: {e}\n"));
                            values
                                .push(json!({"expr": expr, "error": true, "value": e.to_string()}));
                        }
                    }
                }
            }
        }
        threads_json.push(json!({"thread": tid.0, "frames": frame_json}));
    }
    if out.json {
        out.json(&json!({"event": "core", "reason": cause_text(&stop.cause), "description": stop.description,
            "thread": stop.tid.0, "threads": threads_json, "values": values}));
    } else {
        out.text(&text);
    }
    Ok(0)
}

/// One frame as `#N  PC in FUNCTION (ARGS) at FILE:LINE`, and as JSON.
fn frame_line(i: usize, frame: &engine::Frame, params: &[(String, String)]) -> (String, Json) {
    let function = frame.function.as_deref().unwrap_or("??");
    let location = match (&frame.file, frame.line) {
        (Some(file), Some(line)) => format!(" at {}:{}", file.display(), line.get()),
        _ => frame
            .module
            .as_ref()
            .map(|m| format!(" from {m}"))
            .unwrap_or_default(),
    };
    let args_text: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let inlined = match (frame.inlined, frame.tail_call) {
        (true, _) => " [inlined]",
        (_, true) => " [tail call]",
        _ => "",
    };
    let text = format!(
        "  #{i:<2} {:#018x} in {function} ({}){location}{inlined}\n",
        frame.pc.0,
        args_text.join(", ")
    );
    let json = json!({
        "function": frame.function, "file": frame.file.as_ref().map(|f| f.display().to_string()),
        "line": frame.line.map(|l| l.get()), "pc": format!("{:#x}", frame.pc.0), "inlined": frame.inlined,
            "tail_call": frame.tail_call,
        "module": frame.module, "args": params.iter().map(|(k, v)| json!({"name": k, "value": v})).collect::<Vec<_>>(),
    });
    (text, json)
}

/// An argument in a one-line frame summary, as gdb shows it: its value, `<optimized out>`,
/// or `<unavailable>` for any other reason it cannot be read.
fn summary_value(v: engine::Value) -> String {
    match (v.error, v.rendered.as_str()) {
        (false, _) | (true, "<optimized out>") => v.rendered,
        (true, _) => "<unavailable>".to_owned(),
    }
}
