//! Every call the MCP server makes into debug sessions, behind one narrow type: [`Host`].
//!
//! Today the host starts its own sessions through procman's `launch_debug` /
//! `attach_debug` and consumes each engine session's `events()` on a pump thread of its
//! own (as the DAP adapter does for its sessions). When procman owns every session and fans
//! their events out to any number of views, this module is what changes: the rest of the
//! crate sees only plain types ([`RunState`], [`FrameReport`], [`ValueReport`], …) and
//! session ids.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use engine::{ScopeKind, SessionEvent, StepKind, StopCause};
use procman::tracer::{self, Pid, Tid};
use procman::ProcessManager;

/// What a host call failed with: a message for the agent (a tool error).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HostError(pub String);

type Result<T> = std::result::Result<T, HostError>;

fn fail(e: impl std::fmt::Display) -> HostError {
    HostError(e.to_string())
}

/// At most this many frames in a stop report and a stack.
pub const MAX_FRAMES: usize = 24;
/// At most this many values in one list (locals, children).
pub const MAX_VALUES: usize = 64;
/// Output kept per session (the oldest bytes are dropped first).
const OUTPUT_KEPT: usize = 1 << 20;
/// How long `debug_pause` waits for the stop it asked for.
const PAUSE_WAIT: Duration = Duration::from_secs(3);

/// A breakpoint as the agent writes it.
#[derive(Clone, Debug, Default)]
pub struct BreakpointSpec {
    /// `file.c:12` (a path suffix is enough) or a function name.
    pub location: String,
    /// Stop only when this expression holds.
    pub condition: Option<String>,
    /// Log this message (`{expr}` interpolated) instead of stopping.
    pub log: Option<String>,
}

/// What became of one requested breakpoint.
#[derive(Clone, Debug)]
pub struct BreakpointReport {
    /// The location as requested.
    pub location: String,
    /// Whether it was planted somewhere.
    pub verified: bool,
    /// The file it was bound in.
    pub file: Option<String>,
    /// The line it was bound to (may be after the requested one).
    pub line: Option<u32>,
    /// Why it is not verified, or a problem with its condition.
    pub message: Option<String>,
}

/// How to start a program.
#[derive(Clone, Debug, Default)]
pub struct LaunchRequest {
    pub program: String,
    pub args: Vec<String>,
    pub cwd: Option<PathBuf>,
    /// Variables set (`Some`) or removed (`None`) on top of tandem's environment.
    pub env: Vec<(String, Option<String>)>,
    pub breakpoints: Vec<BreakpointSpec>,
    pub stop_on_entry: bool,
}

/// Which process to attach to: a pid, or a pid / program name inside a container, or
/// the one process running `program`.
#[derive(Clone, Debug, Default)]
pub struct AttachRequest {
    pub pid: Option<i32>,
    pub container: Option<String>,
    pub program: Option<String>,
    pub breakpoints: Vec<BreakpointSpec>,
}

/// Where a session is.
#[derive(Clone, Debug)]
pub enum RunState {
    /// Still running when the wait ended.
    Running,
    /// Stopped (every thread).
    Stopped(StopReport),
    /// The program is gone.
    Exited {
        /// Its exit code (128 + the signal when a signal killed it).
        code: i32,
        /// The signal that killed it.
        signal: Option<String>,
    },
}

/// A stop, as an agent needs it first.
#[derive(Clone, Debug)]
pub struct StopReport {
    /// `entry`, `breakpoint`, `step`, `pause`, `signal`, `data breakpoint`, `exception`.
    pub reason: String,
    /// The thread that stopped.
    pub thread: i32,
    /// Words for the user (`SIGSEGV: address not mapped to object at 0x0`).
    pub description: Option<String>,
    /// The signal's name, for a signal stop.
    pub signal: Option<String>,
    /// The faulting address of SIGSEGV, SIGBUS, SIGFPE, SIGILL.
    pub fault_address: Option<u64>,
    /// The stopped thread's frames, innermost first.
    pub frames: Vec<FrameReport>,
    /// Arguments and locals of the innermost frame that has source.
    pub locals: Vec<ValueReport>,
}

/// One stack frame.
#[derive(Clone, Debug)]
pub struct FrameReport {
    /// 0 = innermost; what `frame` arguments name.
    pub index: usize,
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub address: u64,
}

/// One value, rendered as the DAP adapter renders it.
#[derive(Clone, Debug)]
pub struct ValueReport {
    pub name: String,
    pub type_name: String,
    pub value: String,
    /// How many children it has (members, elements), when it has any.
    pub children: Option<u64>,
    /// Whether `value` is an error (`<optimized out>`).
    pub error: bool,
}

/// A value with (the first of) its children.
#[derive(Clone, Debug)]
pub struct ValueTree {
    pub value: ValueReport,
    pub children: Vec<ValueReport>,
    /// Children not listed (past [`MAX_VALUES`]).
    pub omitted: u64,
}

/// One live or ended session, for `debug_sessions`.
#[derive(Clone, Debug)]
pub struct SessionReport {
    pub id: u64,
    pub pid: i32,
    pub program: String,
    /// `launched` or `attached`.
    pub origin: &'static str,
    /// `running`, `stopped` or `exited`.
    pub state: &'static str,
}

/// What the program wrote.
#[derive(Clone, Debug)]
pub struct OutputReport {
    pub text: String,
    /// Bytes written in all (including the dropped ones).
    pub total_bytes: u64,
    /// Bytes dropped from the front (kept: the last [`OUTPUT_KEPT`], and what was asked).
    pub omitted_bytes: u64,
}

/// A step's kind, as the agent names it.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    Over,
    In,
    Out,
}

enum Phase {
    Running,
    Stopped(Box<engine::Stop>),
    Exited { code: i32, signal: Option<i32> },
}

#[derive(Default)]
struct Output {
    bytes: Vec<u8>,
    total: u64,
    /// Readers still open (stdout, stderr).
    open: usize,
}

struct Hosted {
    id: u64,
    engine: Arc<engine::Session>,
    program: String,
    launched: bool,
    phase: Mutex<Phase>,
    changed: Condvar,
    output: Mutex<Output>,
    output_done: Condvar,
    /// Clones of the program's output streams, to see whether bytes are still unread.
    streams: Mutex<Vec<std::fs::File>>,
    /// Files with line breakpoints set, so a new set clears the ones left out.
    files: Mutex<BTreeSet<PathBuf>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Hosted {
    fn push_output(&self, data: &[u8]) {
        let mut out = lock(&self.output);
        out.total += data.len() as u64;
        out.bytes.extend_from_slice(data);
        if out.bytes.len() > OUTPUT_KEPT {
            let cut = out.bytes.len() - OUTPUT_KEPT;
            out.bytes.drain(..cut);
        }
    }

    fn set_phase(&self, phase: Phase) {
        *lock(&self.phase) = phase;
        self.changed.notify_all();
    }

    /// Waits until the program is not running, or `wait` passed.
    fn wait(&self, wait: Duration) -> MutexGuard<'_, Phase> {
        let deadline = Instant::now() + wait;
        let mut phase = lock(&self.phase);
        while matches!(*phase, Phase::Running) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            phase = self
                .changed
                .wait_timeout(phase, left)
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        phase
    }

    fn stopped_thread(&self) -> Result<Tid> {
        match &*lock(&self.phase) {
            Phase::Stopped(stop) => Ok(stop.tid),
            Phase::Running => Err(HostError(format!(
                "session {} is running: pause it or wait with debug_continue",
                self.id
            ))),
            Phase::Exited { .. } => Err(HostError(format!("session {} has exited", self.id))),
        }
    }
}

/// The debug sessions this MCP server drives, by stable id.
pub struct Host {
    manager: Arc<ProcessManager>,
    sessions: Mutex<BTreeMap<u64, Arc<Hosted>>>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").finish_non_exhaustive()
    }
}

impl Host {
    /// A host starting its sessions on `manager` (which ends them with tandem).
    pub fn new(manager: Arc<ProcessManager>) -> Host {
        Host {
            manager,
            sessions: Mutex::new(BTreeMap::new()),
            next_id: AtomicU64::new(1),
        }
    }

    fn get(&self, id: u64) -> Result<Arc<Hosted>> {
        lock(&self.sessions).get(&id).cloned().ok_or_else(|| {
            HostError(format!(
                "no session {id}: debug_sessions lists the sessions there are"
            ))
        })
    }

    /// Launches `req.program` (stopped at its entry), sets the breakpoints, and runs it
    /// unless `stop_on_entry`; returns within `wait`.
    pub fn launch(
        &self,
        req: LaunchRequest,
        wait: Duration,
    ) -> Result<(u64, Vec<BreakpointReport>, RunState)> {
        if req.program.trim().is_empty() {
            return Err(fail("'program' is empty"));
        }
        if let Some(cwd) = &req.cwd {
            if !cwd.is_dir() {
                return Err(HostError(format!(
                    "the working directory {} does not exist",
                    cwd.display()
                )));
            }
        }
        let mut program = PathBuf::from(&req.program);
        if program.is_relative() {
            if let Some(c) = req.cwd.as_ref().map(|c| c.join(&program)) {
                if c.is_file() {
                    program = c;
                }
            }
        }
        let mut source_map = engine::SourceMap::new();
        if let Some(cwd) = &req.cwd {
            source_map.set_local_root(cwd);
            engine::guess_source_map(&mut source_map, &program);
        }
        let env = if req.env.is_empty() {
            tracer::Env::Inherit
        } else {
            tracer::Env::Merge(
                req.env
                    .iter()
                    .map(|(k, v)| (OsString::from(k), v.as_ref().map(OsString::from)))
                    .collect(),
            )
        };
        let options = engine::LaunchOptions {
            program: program.clone(),
            args: req.args.iter().map(OsString::from).collect(),
            cwd: req.cwd.clone(),
            env,
            // Two terminals: C's stdio line-buffers, so output printed before a stop is
            // there at the stop; stderr stays apart.
            stdio: tracer::StdioMode::Terminals,
            disable_aslr: true,
            source_map,
        };
        let engine = self
            .manager
            .launch_debug(options)
            .map_err(|e| HostError(format!("cannot launch {}: {e}", program.display())))?;
        let stdio = engine.take_stdio();
        let hosted = self.adopt(engine, program.display().to_string(), true);
        if let Some(stdio) = stdio {
            let mut open = 0;
            for file in [stdio.stdout, stdio.stderr].into_iter().flatten() {
                if let Ok(clone) = file.try_clone() {
                    lock(&hosted.streams).push(clone);
                }
                open += usize::from(spawn_output_reader(file, hosted.clone()));
            }
            lock(&hosted.output).open = open;
        }
        let reports = self.apply_breakpoints(&hosted, &req.breakpoints)?;
        let state = if req.stop_on_entry {
            self.state_of(&hosted, Duration::ZERO)
        } else {
            self.run(&hosted, None, wait)?
        };
        Ok((hosted.id, reports, state))
    }

    /// Attaches to a process, sets the breakpoints, and lets it run; returns within `wait`.
    pub fn attach(
        &self,
        req: AttachRequest,
        wait: Duration,
    ) -> Result<(u64, Vec<BreakpointReport>, RunState)> {
        let pid = attach_pid(&req)?;
        let exe = tracer::procfs::exe_of(pid)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| format!("process {}", pid.0));
        let engine = self
            .manager
            .attach_debug(pid, engine::SourceMap::new())
            .map_err(|e| HostError(format!("cannot attach to process {}: {e}", pid.0)))?;
        let hosted = self.adopt(engine, exe, false);
        let reports = self.apply_breakpoints(&hosted, &req.breakpoints)?;
        let state = self.run(&hosted, None, wait)?;
        Ok((hosted.id, reports, state))
    }

    fn adopt(&self, engine: Arc<engine::Session>, program: String, launched: bool) -> Arc<Hosted> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        // The engine consumed its first stop (entry or attach) before returning.
        let first = engine::Stop {
            tid: Tid(engine.pid().0),
            cause: if launched {
                StopCause::Entry
            } else {
                StopCause::Attached
            },
            return_value: None,
            description: None,
        };
        let hosted = Arc::new(Hosted {
            id,
            engine,
            program,
            launched,
            phase: Mutex::new(Phase::Stopped(Box::new(first))),
            changed: Condvar::new(),
            output: Mutex::new(Output::default()),
            output_done: Condvar::new(),
            streams: Mutex::new(Vec::new()),
            files: Mutex::new(BTreeSet::new()),
        });
        spawn_event_pump(hosted.clone());
        lock(&self.sessions).insert(id, hosted.clone());
        hosted
    }

    /// Continues the program and waits up to `wait` for it to stop or end; a program
    /// already running is only waited for.
    pub fn resume(&self, id: u64, wait: Duration) -> Result<RunState> {
        let hosted = self.get(id)?;
        self.run(&hosted, None, wait)
    }

    fn run(
        &self,
        hosted: &Arc<Hosted>,
        step: Option<(Tid, StepKind)>,
        wait: Duration,
    ) -> Result<RunState> {
        {
            let mut phase = lock(&hosted.phase);
            match &*phase {
                Phase::Exited { .. } => return Ok(self.state_locked(hosted, &phase)),
                Phase::Running => {
                    drop(phase);
                    return Ok(self.state_of(hosted, wait));
                }
                Phase::Stopped(_) => {}
            }
            // Running before the engine is told, so the stop that follows is the new one.
            let before = std::mem::replace(&mut *phase, Phase::Running);
            let started = match step {
                Some((tid, kind)) => hosted.engine.step(tid, kind),
                None => hosted.engine.resume(),
            };
            if let Err(e) = started {
                // Refused (still stopped where it was), or gone: the pump says which.
                if hosted.engine.is_stopped() {
                    *phase = before;
                }
                return Err(fail(e));
            }
        }
        Ok(self.state_of(hosted, wait))
    }

    /// Steps the thread (default: the one that stopped) and waits up to `wait`.
    pub fn step(
        &self,
        id: u64,
        kind: Step,
        thread: Option<i32>,
        wait: Duration,
    ) -> Result<RunState> {
        let hosted = self.get(id)?;
        let tid = match thread {
            Some(t) => Tid(t),
            None => hosted.stopped_thread()?,
        };
        hosted.stopped_thread()?;
        let kind = match kind {
            Step::Over => StepKind::Over,
            Step::In => StepKind::In,
            Step::Out => StepKind::Out,
        };
        self.run(&hosted, Some((tid, kind)), wait)
    }

    /// Pauses a running program and waits for the stop.
    pub fn pause(&self, id: u64) -> Result<RunState> {
        let hosted = self.get(id)?;
        if matches!(*lock(&hosted.phase), Phase::Running) {
            hosted.engine.pause().map_err(fail)?;
        }
        Ok(self.state_of(&hosted, PAUSE_WAIT))
    }

    /// The session's state after waiting up to `wait` for a running program.
    pub fn wait_for_stop(&self, id: u64, wait: Duration) -> Result<RunState> {
        let hosted = self.get(id)?;
        Ok(self.state_of(&hosted, wait))
    }

    fn state_of(&self, hosted: &Arc<Hosted>, wait: Duration) -> RunState {
        let phase = hosted.wait(wait);
        self.state_locked(hosted, &phase)
    }

    fn state_locked(&self, hosted: &Hosted, phase: &Phase) -> RunState {
        match phase {
            Phase::Running => RunState::Running,
            Phase::Exited { code, signal } => RunState::Exited {
                code: *code,
                signal: signal.map(engine::signals::signal_name),
            },
            Phase::Stopped(stop) => RunState::Stopped(report_stop(&hosted.engine, stop)),
        }
    }

    /// Replaces every breakpoint of the session with `specs`.
    pub fn set_breakpoints(
        &self,
        id: u64,
        specs: &[BreakpointSpec],
    ) -> Result<Vec<BreakpointReport>> {
        let hosted = self.get(id)?;
        if matches!(*lock(&hosted.phase), Phase::Exited { .. }) {
            return Err(HostError(format!("session {id} has exited")));
        }
        self.apply_breakpoints(&hosted, specs)
    }

    fn apply_breakpoints(
        &self,
        hosted: &Hosted,
        specs: &[BreakpointSpec],
    ) -> Result<Vec<BreakpointReport>> {
        let mut by_file: BTreeMap<PathBuf, Vec<(usize, engine::SourceBreakpoint)>> =
            BTreeMap::new();
        let mut functions: Vec<(usize, engine::FunctionBreakpoint)> = Vec::new();
        let mut reports: Vec<BreakpointReport> = specs
            .iter()
            .map(|s| BreakpointReport {
                location: s.location.clone(),
                verified: false,
                file: None,
                line: None,
                message: None,
            })
            .collect();
        for (i, spec) in specs.iter().enumerate() {
            let location = spec.location.trim();
            match parse_location(location) {
                Some(Location::Line(file, line)) => by_file.entry(file).or_default().push((
                    i,
                    engine::SourceBreakpoint {
                        line,
                        condition: spec.condition.clone(),
                        hit_condition: None,
                        log_message: spec.log.clone(),
                    },
                )),
                Some(Location::Function(name)) => {
                    if spec.log.is_some() {
                        reports[i].message =
                            Some("'log' needs a file:line location; this one stops".into());
                    }
                    functions.push((
                        i,
                        engine::FunctionBreakpoint {
                            name,
                            condition: spec.condition.clone(),
                            hit_condition: None,
                        },
                    ))
                }
                None => {
                    reports[i].message = Some(format!(
                        "'{location}' is not a location: write file.c:LINE or a function name"
                    ))
                }
            }
        }
        let mut files = lock(&hosted.files);
        let cleared: Vec<PathBuf> = files
            .iter()
            .filter(|f| !by_file.contains_key(*f))
            .cloned()
            .collect();
        for file in cleared {
            hosted
                .engine
                .set_line_breakpoints(&file, &[])
                .map_err(fail)?;
            files.remove(&file);
        }
        for (file, list) in &by_file {
            let bps: Vec<engine::SourceBreakpoint> = list.iter().map(|(_, b)| b.clone()).collect();
            let statuses = hosted
                .engine
                .set_line_breakpoints(file, &bps)
                .map_err(fail)?;
            for ((i, _), st) in list.iter().zip(statuses) {
                fill_report(&mut reports[*i], &st);
            }
            files.insert(file.clone());
        }
        let fbps: Vec<engine::FunctionBreakpoint> =
            functions.iter().map(|(_, b)| b.clone()).collect();
        let statuses = hosted
            .engine
            .set_function_breakpoints(&fbps)
            .map_err(fail)?;
        for ((i, _), st) in functions.iter().zip(statuses) {
            fill_report(&mut reports[*i], &st);
        }
        Ok(reports)
    }

    /// The frames of a thread (default: the one that stopped).
    pub fn stack(&self, id: u64, thread: Option<i32>) -> Result<Vec<FrameReport>> {
        let hosted = self.get(id)?;
        let stopped = hosted.stopped_thread()?;
        let tid = thread.map_or(stopped, Tid);
        let frames = hosted.engine.stack_trace(tid).map_err(fail)?;
        Ok(frames
            .iter()
            .take(MAX_FRAMES)
            .enumerate()
            .map(|(i, f)| frame_report(i, f))
            .collect())
    }

    fn frame_id(hosted: &Hosted, frame: usize) -> Result<engine::FrameId> {
        let tid = hosted.stopped_thread()?;
        let frames = hosted.engine.stack_trace(tid).map_err(fail)?;
        frames.get(frame).map(|f| f.id).ok_or_else(|| {
            HostError(format!(
                "no frame {frame}: the stack has {} frames",
                frames.len()
            ))
        })
    }

    /// The arguments and locals of a frame; with `path`, the value of that expression in
    /// the frame (`p->next`, `pts[2]`, `s.name`) and its children.
    pub fn variables(&self, id: u64, frame: usize, path: Option<&str>) -> Result<ValueTree> {
        let hosted = self.get(id)?;
        let frame_id = Self::frame_id(&hosted, frame)?;
        let engine = &hosted.engine;
        match path.map(str::trim).filter(|p| !p.is_empty()) {
            None => {
                let mut values = engine
                    .variables(frame_id, ScopeKind::Arguments)
                    .map_err(fail)?;
                values.extend(
                    engine
                        .variables(frame_id, ScopeKind::Locals)
                        .map_err(fail)?,
                );
                let total = values.len() as u64;
                let children: Vec<ValueReport> =
                    values.iter().take(MAX_VALUES).map(value_report).collect();
                Ok(ValueTree {
                    value: ValueReport {
                        name: format!("frame {frame}"),
                        type_name: String::new(),
                        value: String::new(),
                        children: Some(total),
                        error: false,
                    },
                    omitted: total - children.len() as u64,
                    children,
                })
            }
            Some(path) => {
                let v = engine.evaluate(frame_id, path).map_err(fail)?;
                if v.error {
                    return Err(HostError(format!("{path}: {}", v.rendered)));
                }
                let mut children = Vec::new();
                let mut omitted = 0;
                if let Some(r) = v.children {
                    let list = engine
                        .children(r, 0, Some(MAX_VALUES as u64))
                        .map_err(fail)?;
                    children = list.iter().map(value_report).collect();
                    omitted = v
                        .child_count
                        .unwrap_or(children.len() as u64)
                        .saturating_sub(children.len() as u64);
                }
                let mut value = value_report(&v);
                value.name = path.to_string();
                Ok(ValueTree {
                    value,
                    children,
                    omitted,
                })
            }
        }
    }

    /// Evaluates an expression in a frame (no side effects).
    pub fn evaluate(&self, id: u64, expression: &str, frame: usize) -> Result<ValueReport> {
        let expression = expression.trim();
        if expression.is_empty() {
            return Err(fail("nothing to evaluate"));
        }
        let hosted = self.get(id)?;
        let frame_id = Self::frame_id(&hosted, frame)?;
        let v = hosted.engine.evaluate(frame_id, expression).map_err(fail)?;
        Ok(value_report(&v))
    }

    /// What the program wrote (stdout and stderr interleaved, logpoints too), at most
    /// the last `limit` bytes.
    pub fn output(&self, id: u64, limit: usize) -> Result<OutputReport> {
        let hosted = self.get(id)?;
        let exited = matches!(*lock(&hosted.phase), Phase::Exited { .. });
        if !exited {
            // What the program wrote before it stopped is in its terminals: let the
            // readers take it first (they are quick; the wait is bounded).
            let deadline = Instant::now() + Duration::from_millis(200);
            while lock(&hosted.streams).iter().any(readable_now) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        let mut out = lock(&hosted.output);
        if exited {
            // The program is gone: its last bytes are on their way to the readers.
            let deadline = Instant::now() + Duration::from_millis(500);
            while out.open > 0 {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                out = hosted
                    .output_done
                    .wait_timeout(out, left)
                    .map(|(g, _)| g)
                    .unwrap_or_else(|p| p.into_inner().0);
            }
        }
        let start = out.bytes.len().saturating_sub(limit);
        // Never cut a UTF-8 sequence in half.
        let start = (start..out.bytes.len())
            .find(|&i| out.bytes[i] & 0xC0 != 0x80)
            .unwrap_or(out.bytes.len());
        Ok(OutputReport {
            text: String::from_utf8_lossy(&out.bytes[start..]).into_owned(),
            total_bytes: out.total,
            omitted_bytes: out.total - (out.bytes.len() - start) as u64,
        })
    }

    /// Ends a session: a launched program is killed, an attached one detached.
    pub fn end(&self, id: u64) -> Result<RunState> {
        let hosted = self.get(id)?;
        let result = hosted.engine.end();
        let state = {
            let phase = lock(&hosted.phase);
            match &*phase {
                Phase::Exited { .. } => self.state_locked(&hosted, &phase),
                _ => RunState::Exited {
                    code: if hosted.launched {
                        128 + libc::SIGKILL
                    } else {
                        0
                    },
                    signal: hosted
                        .launched
                        .then(|| engine::signals::signal_name(libc::SIGKILL)),
                },
            }
        };
        lock(&self.sessions).remove(&id);
        result.map_err(fail)?;
        Ok(state)
    }

    /// Every session this host started, with its state.
    pub fn sessions(&self) -> Vec<SessionReport> {
        lock(&self.sessions)
            .values()
            .map(|h| SessionReport {
                id: h.id,
                pid: h.engine.pid().0,
                program: h.program.clone(),
                origin: if h.launched { "launched" } else { "attached" },
                state: match &*lock(&h.phase) {
                    Phase::Running => "running",
                    Phase::Stopped(_) => "stopped",
                    Phase::Exited { .. } => "exited",
                },
            })
            .collect()
    }

    /// Ends every session (the server is going away).
    pub fn end_all(&self) {
        let all: Vec<Arc<Hosted>> = std::mem::take(&mut *lock(&self.sessions))
            .into_values()
            .collect();
        for h in all {
            let _ = h.engine.end();
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.end_all();
    }
}

enum Location {
    Line(PathBuf, u32),
    Function(String),
}

fn parse_location(text: &str) -> Option<Location> {
    if text.is_empty() {
        return None;
    }
    if let Some((file, line)) = text.rsplit_once(':') {
        if let Ok(line) = line.trim().parse::<u32>() {
            if file.trim().is_empty() {
                return None;
            }
            return Some(Location::Line(PathBuf::from(file.trim()), line));
        }
        // `ns::f` is a function; `file.c:abc` is not a location.
        if !text.contains("::") {
            return None;
        }
    }
    if text.chars().any(char::is_whitespace) {
        return None;
    }
    Some(Location::Function(text.to_string()))
}

fn fill_report(report: &mut BreakpointReport, st: &engine::BreakpointStatus) {
    report.verified = st.verified;
    report.file = st.file.as_ref().map(|f| f.display().to_string());
    report.line = st.line.map(|l| l.get());
    if st.message.is_some() {
        report.message = st.message.clone();
    }
}

fn frame_report(index: usize, f: &engine::Frame) -> FrameReport {
    FrameReport {
        index,
        function: f.function.clone(),
        file: f.file.as_ref().map(|p| p.display().to_string()),
        line: f.line.map(|l| l.get()),
        address: f.pc.0,
    }
}

fn value_report(v: &engine::Value) -> ValueReport {
    ValueReport {
        name: v.name.clone(),
        type_name: v.type_name.clone(),
        value: v.rendered.clone(),
        children: v.children.map(|_| v.child_count.unwrap_or(0)),
        error: v.error,
    }
}

/// The report of a stop: reason, frames, and the locals of the innermost frame with
/// source (a crash inside libc shows the caller's locals).
fn report_stop(engine: &engine::Session, stop: &engine::Stop) -> StopReport {
    let (reason, mut description) = match &stop.cause {
        StopCause::Entry => ("entry", None),
        StopCause::Attached => ("attach", None),
        StopCause::Breakpoint(_) => ("breakpoint", None),
        StopCause::Step => ("step", None),
        StopCause::Pause => ("pause", None),
        StopCause::Signal(_) => ("signal", stop.description.clone()),
        StopCause::DataBreakpoint(_) => ("data breakpoint", stop.description.clone()),
        StopCause::Exception { message, .. } => (
            "exception",
            stop.description.clone().or_else(|| message.clone()),
        ),
        _ => ("pause", stop.description.clone()),
    };
    let (mut signal, mut fault_address) = (None, None);
    if let StopCause::Signal(signo) = stop.cause {
        signal = Some(engine::signals::signal_name(signo));
        if let Some(info) = engine.exception_info(stop.tid) {
            fault_address = info.fault_address;
            description.get_or_insert(info.description);
        }
    }
    let frames = engine.stack_trace(stop.tid).unwrap_or_default();
    let locals = frames
        .iter()
        .find(|f| f.file.is_some() && f.line.is_some())
        .map(|f| {
            let mut values = engine
                .variables(f.id, ScopeKind::Arguments)
                .unwrap_or_default();
            values.extend(
                engine
                    .variables(f.id, ScopeKind::Locals)
                    .unwrap_or_default(),
            );
            values.iter().take(MAX_VALUES).map(value_report).collect()
        })
        .unwrap_or_default();
    StopReport {
        reason: reason.to_string(),
        thread: stop.tid.0,
        description,
        signal,
        fault_address,
        frames: frames
            .iter()
            .take(MAX_FRAMES)
            .enumerate()
            .map(|(i, f)| frame_report(i, f))
            .collect(),
        locals,
    }
}

/// Reads the engine's events for as long as the session lives.
fn spawn_event_pump(hosted: Arc<Hosted>) {
    let name = format!("mcp-events-{}", hosted.id);
    let spawned = std::thread::Builder::new().name(name).spawn(move || {
        let events = hosted.engine.events().clone();
        for ev in events.iter() {
            match ev {
                SessionEvent::Stopped(stop) => hosted.set_phase(Phase::Stopped(Box::new(stop))),
                SessionEvent::Exited { code } => {
                    hosted.set_phase(Phase::Exited { code, signal: None });
                    break;
                }
                SessionEvent::Signaled { signo } => {
                    hosted.set_phase(Phase::Exited {
                        code: 128 + signo,
                        signal: Some(signo),
                    });
                    break;
                }
                SessionEvent::Output(text) => hosted.push_output(text.as_bytes()),
                _ => {}
            }
        }
        // The channel closed without an exit: the session was ended.
        let mut phase = lock(&hosted.phase);
        if !matches!(*phase, Phase::Exited { .. }) {
            *phase = Phase::Exited {
                code: 128 + libc::SIGKILL,
                signal: Some(libc::SIGKILL),
            };
        }
        drop(phase);
        hosted.changed.notify_all();
    });
    if let Err(e) = spawned {
        tracing::error!("cannot start an event reader: {e}");
    }
}

/// Copies one of the program's streams into the session's output; false when no thread
/// could be started.
fn spawn_output_reader(mut file: std::fs::File, hosted: Arc<Hosted>) -> bool {
    let name = format!("mcp-output-{}", hosted.id);
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            let mut buf = vec![0u8; 8192];
            loop {
                match file.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => hosted.push_output(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    // EIO on a terminal whose last writer is gone is its end of file.
                    Err(_) => break,
                }
            }
            let mut out = lock(&hosted.output);
            out.open = out.open.saturating_sub(1);
            drop(out);
            hosted.output_done.notify_all();
        })
        .map_err(|e| tracing::warn!("cannot start an output reader: {e}"))
        .is_ok()
}

/// Whether a read of `file` would not block now (bytes are waiting).
fn readable_now(file: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: polling one valid descriptor through a live struct, without waiting.
    let r = unsafe { libc::poll(&mut p, 1, 0) };
    r > 0 && p.revents & libc::POLLIN != 0
}

/// The pid an attach request names, in tandem's pid namespace.
fn attach_pid(req: &AttachRequest) -> Result<Pid> {
    let container = req
        .container
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty());
    let program = req
        .program
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty());
    let rows = || procman::list_processes();
    match (req.pid, container) {
        (Some(pid), None) if pid > 0 => return Ok(Pid(pid)),
        (Some(pid), _) if pid <= 0 => return Err(HostError(format!("{pid} is not a process id"))),
        (Some(inner), Some(c)) => {
            let found = procman::container_processes(&rows(), c).map_err(fail)?;
            return found
                .iter()
                .find(|r| r.inner_pid().0 == inner && r.state != 'Z')
                .map(|r| r.pid)
                .ok_or_else(|| {
                    HostError(format!("no process has pid {inner} in container '{c}'"))
                });
        }
        _ => {}
    }
    let Some(program) = program else {
        return Err(fail(
            "debug_attach needs a 'pid', or a 'program' name (with or without a 'container')",
        ));
    };
    let candidates = match container {
        Some(c) => procman::container_processes(&rows(), c).map_err(fail)?,
        None => rows(),
    };
    let me = std::process::id() as i32;
    let base = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    let named: Vec<&procman::ProcessRow> = candidates
        .iter()
        .filter(|r| r.pid.0 != me && r.state != 'Z')
        .filter(|r| {
            r.exe.as_deref().and_then(base).as_deref() == Some(program)
                || r.exe.as_deref() == Some(Path::new(program))
                || r.cmdline
                    .first()
                    .and_then(|a| base(Path::new(a)))
                    .as_deref()
                    == Some(program)
        })
        .collect();
    match named.as_slice() {
        [one] => Ok(one.pid),
        [] => Err(HostError(format!(
            "no process named '{program}' is running"
        ))),
        many => Err(HostError(format!(
            "{} processes are named '{program}'; attach by pid to one of: {}",
            many.len(),
            many.iter()
                .map(|r| r.pid.0.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse() {
        assert!(
            matches!(parse_location("a.c:12"), Some(Location::Line(f, 12)) if f == Path::new("a.c"))
        );
        assert!(matches!(
            parse_location("src/main.rs:3"),
            Some(Location::Line(_, 3))
        ));
        assert!(matches!(parse_location("main"), Some(Location::Function(f)) if f == "main"));
        assert!(matches!(parse_location("ns::f"), Some(Location::Function(f)) if f == "ns::f"));
        assert!(parse_location("a.c:abc").is_none());
        assert!(parse_location(":3").is_none());
        assert!(parse_location("").is_none());
        assert!(parse_location("two words").is_none());
    }
}
