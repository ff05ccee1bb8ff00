//! A debugging session: one launched process, its modules, breakpoints, stops, frames
//! and values. Everything that touches the process runs on the tracer thread, either
//! in the event sink (hits, steps) or in closures sent through the tracer handle.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use symbols::{Binary, Line, LoadBias, SourceMap};
use tracer::{Event, Pid, Tid, Tracer, TracerHandle};

use crate::breakpoints::{
    parse_log, Bp, BpKey, BreakpointStatus, FunctionBreakpoint, HitCondition, HitSite, LogPart,
    SourceBreakpoint,
};
use crate::error::{Error, Result};
use crate::expr::{self, Enumerators, Env};
use crate::ids::{BreakpointId, FrameId, ValueRef};
use crate::mem::{FrameRegs, LiveRegs, TracerMemory};
use crate::modules::{is_system, Module, Modules};
use crate::unwind::{self, Frame, FrameData};
use crate::values::{Node, Place, Renderer, Value};

/// Line stepping: the plan of a step and its decisions on the tracer thread.
mod step;
use step::{current_line, StepPlan};
/// Completions and loaded sources.
mod complete;
/// Data breakpoints: hardware watchpoints set, hit and described on the tracer thread.
mod data;
/// Disassembly: instruction boundaries, symbols and lines.
mod disasm;
/// The expression environment of a frame, or of the globals without one.
mod env;
pub use complete::{Completion, CompletionKind};
/// Exceptions and panics as stop causes.
mod exceptions;
/// Which signals stop, and what the last one was.
mod signals;
pub use exceptions::{ExceptionInfo, ExceptionStop};

/// How long the session waits for the first stop after launching.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(20);
/// A single-stepped line longer than this many instructions is finished by continuing
/// (a guard against stepping a long loop one instruction at a time forever).
const MAX_STEPS: u32 = 1_000_000;

/// How to start the debuggee.
#[derive(Clone, Debug, Default)]
pub struct LaunchOptions {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Environment.
    pub env: tracer::Env,
    /// Where its standard streams go.
    pub stdio: tracer::StdioMode,
    /// Turn address randomization off.
    pub disable_aslr: bool,
    /// Build-time → local path prefixes.
    pub source_map: SourceMap,
}

/// Why the debuggee stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopCause {
    /// At the program's entry point, after launch.
    Entry,
    /// Attached to a running process.
    Attached,
    /// User breakpoints whose conditions held.
    Breakpoint(Vec<BreakpointId>),
    /// A step (over, in, out, instruction) finished.
    Step,
    /// A pause request.
    Pause,
    /// A signal.
    Signal(i32),
    /// Data breakpoints (hardware watchpoints) whose conditions held. The access has
    /// happened: the pc is past the instruction that made it.
    DataBreakpoint(Vec<BreakpointId>),
    /// A Rust panic or a C++ throw or catch chosen by [`Session::set_exception_stops`];
    /// the thread is at the entry of the runtime's function (`rust_begin_unwind`,
    /// `__cxa_throw`, `__cxa_begin_catch`). [`Session::last_exception`] has the details.
    Exception {
        /// Which event.
        kind: ExceptionStop,
        /// The panic message, or the thrown C++ type, when it could be read.
        message: Option<String>,
    },
}

/// A stop of the whole process (all threads are stopped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stop {
    /// The thread that stopped.
    pub tid: Tid,
    /// Why.
    pub cause: StopCause,
    /// After a step out: the registers holding the return value.
    pub return_value: Option<ReturnValue>,
    /// Words for the user: the old and new value at a data breakpoint
    /// (`counter: 3 → 4`), the signal's reason (`SIGSEGV: address not mapped to
    /// object at 0x0`).
    pub description: Option<String>,
}

/// What a function returned, after a step out: the raw SysV return registers and,
/// when the function's return type is known, the value rendered from them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReturnValue {
    /// First integer return register.
    pub rax: u64,
    /// Second integer return register.
    pub rdx: u64,
    /// The low 8 bytes of xmm0 (a `double` return value).
    pub xmm0: u64,
    /// The returned value typed by the function's return type (integers and pointers
    /// from rax/rdx, floating point from xmm0 or st(0), small structs split between
    /// rax/rdx and xmm0/xmm1, large ones from the memory rax points to), named after
    /// the function. `None` for a `void` function or one without debug information.
    pub value: Option<Value>,
}

/// What the session reports, in order, on [`Session::events`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionEvent {
    /// The process stopped.
    Stopped(Stop),
    /// A logpoint's message, or a problem with a condition.
    Output(String),
    /// A pending breakpoint was planted in a library that was just loaded.
    BreakpointResolved(BreakpointStatus),
    /// A thread started.
    ThreadStarted(Tid),
    /// A thread exited.
    ThreadExited(Tid),
    /// The process exited.
    Exited {
        /// Its exit code.
        code: i32,
    },
    /// The process was killed by a signal.
    Signaled {
        /// The signal.
        signo: i32,
    },
}

/// Adds to `map` the rules guessed for the sources of `executable` when the map has a
/// local root (see [`symbols::guess_source_rules`]): a binary built elsewhere whose
/// compilation directories do not exist here, with the same files under the root. A
/// front-end that keeps its own copy of the map calls this before starting the session;
/// the session announces every guessed rule as an output event when it starts.
pub fn guess_source_map(map: &mut SourceMap, executable: &Path) {
    if map.local_root().is_none() {
        return;
    }
    match Binary::open(executable) {
        Ok(binary) => guess_sources_of(&binary, map),
        Err(e) => tracing::debug!(path = %executable.display(), "no sources to map: {e}"),
    }
}

fn guess_sources_of(binary: &Binary, map: &mut SourceMap) {
    let Some(root) = map.local_root().map(Path::to_path_buf) else {
        return;
    };
    match binary.source_files() {
        Ok(files) => {
            for (from, to) in symbols::guess_source_rules(&files, map, &root, Path::is_file) {
                map.add_guessed(from, to);
            }
        }
        Err(e) => tracing::debug!("no sources to map: {e}"),
    }
}

/// A module as front-ends list it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleInfo {
    /// The file.
    pub path: PathBuf,
    /// Runtime minus file addresses.
    pub bias: u64,
    /// First mapped byte.
    pub start: u64,
    /// One past the last mapped byte.
    pub end: u64,
    /// Whether it is the main executable.
    pub main: bool,
}

/// The kinds of step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepKind {
    /// To the next line of this function, calls complete (recursion-safe: the CFA is
    /// compared).
    Over,
    /// To the next line, entering calls into functions with debug information.
    In,
    /// Until the current function returns.
    Out,
    /// One machine instruction.
    Instruction,
}

/// Which variables of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopeKind {
    /// Parameters.
    Arguments,
    /// Local variables (every block covering the pc, innermost first).
    Locals,
    /// Globals and statics of the frame's compilation unit.
    Globals,
    /// General registers.
    Registers,
}

// ------------------------------------------------------------------ tracer-side state

struct Core {
    pid: Pid,
    modules: Modules,
    bps: BTreeMap<BreakpointId, Bp>,
    by_addr: HashMap<u64, Vec<BreakpointId>>,
    next_bp: u32,
    step: Option<StepPlan>,
    /// After stepping a thread off a breakpoint it was not stopped by, continue.
    continue_after_step: bool,
    last_stop: Option<(Tid, bool)>,
    running: bool,
    exited: bool,
    events: Sender<SessionEvent>,
    /// The dynamic linker's `_dl_debug_state`, called after every library load.
    dl_hook: Option<u64>,
    /// Modules before this index were searched for pending breakpoints.
    scanned: usize,
    enums: Arc<Enumerators>,
    source_map: SourceMap,
    /// Data breakpoints and the debug-register slots they use.
    data: data::DataTable,
    /// Signals that stop (the others pass silently).
    signal_stops: crate::signals::SignalSet,
    /// The signal of the last stop, when it was one.
    last_signal: Option<(Tid, crate::signals::SignalInfo)>,
    /// Exception events that stop, their internal breakpoints, the last one.
    exceptions: exceptions::ExceptionTable,
    /// Whether conditions may run in the debuggee (see `crate::jit`).
    jit: bool,
    /// Breakpoints were planted while the process ran (or in a new image or library):
    /// their conditions move into the debuggee at the next false hit.
    jit_pending: bool,
    /// A stop was just shown: what requests will ask first is prepared right after.
    stop_shown: bool,
    /// What is known at the stop shown last, so the first requests after a stop are
    /// answered without a round trip to the tracer thread. `None` while running.
    at_stop: Option<AtStop>,
    /// Frame ids, shared with [`Session`]: never reused within a session.
    frame_ids: Arc<AtomicU64>,
}

/// The state of a stop that every front-end asks for first.
struct AtStop {
    /// The threads, sorted.
    threads: Vec<Tid>,
    /// The stopped thread's frames, unwound on the tracer thread right after the stop
    /// was sent (while the front-end forwards it).
    frames: Option<(Tid, Vec<FrameData>)>,
}

/// Unwinds `tid` at a stop with frame ids from `first` on, reading /proc/PID/maps again
/// only when a frame lies in code of a module not seen yet.
fn unwind_thread(t: &mut Tracer, c: &mut Core, tid: Tid, first: u64) -> Result<Vec<FrameData>> {
    let regs = t.regs(tid)?;
    let mem = TracerMemory(t);
    let unwind = |modules: &Modules| {
        unwind::frames(
            FrameRegs::from_registers(&regs),
            modules,
            &mem,
            unwind::MAX_FRAMES,
            first,
        )
    };
    let mut frames = unwind(&c.modules);
    if frames.iter().any(|f| f.module.is_none()) {
        c.modules.refresh(c.pid);
        frames = unwind(&c.modules);
    }
    for f in &mut frames {
        f.tid = Some(tid);
    }
    Ok(frames)
}

/// Ids for one stack trace's frames (and their inlined frames).
const FRAME_IDS_PER_TRACE: u64 = unwind::MAX_FRAMES as u64 * 2;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Core {
    fn send(&self, ev: SessionEvent) {
        let _ = self.events.send(ev);
    }

    fn stopped(
        &mut self,
        tid: Tid,
        cause: StopCause,
        at_bp: bool,
        return_value: Option<ReturnValue>,
    ) {
        self.stopped_with(tid, cause, at_bp, return_value, None);
    }

    fn stopped_with(
        &mut self,
        tid: Tid,
        cause: StopCause,
        at_bp: bool,
        return_value: Option<ReturnValue>,
        description: Option<String>,
    ) {
        self.running = false;
        self.stop_shown = true;
        self.last_stop = Some((tid, at_bp));
        if !matches!(cause, StopCause::Signal(_)) {
            self.last_signal = None;
        }
        self.send(SessionEvent::Stopped(Stop {
            tid,
            cause,
            return_value,
            description,
        }));
    }

    fn clear_step(&mut self, t: &mut Tracer) {
        if let Some(plan) = self.step.take() {
            if let Some((addr, _)) = plan.temp {
                let _ = t.remove_breakpoint(tracer::RuntimeAddr(addr));
            }
        }
    }

    /// Resumes after an event nobody is shown (a false condition, a library load, a
    /// step's internal stop) — unless a pause asked for meanwhile is still owed: then
    /// that is the stop.
    fn resume(&mut self, t: &mut Tracer) {
        if let Some(tid) = t.take_owed_pause() {
            self.clear_step(t);
            self.stopped(tid, StopCause::Pause, false, None);
            return;
        }
        self.running = true;
        self.at_stop = None;
        if let Err(e) = t.resume() {
            tracing::warn!("resuming: {e}");
        }
    }

    /// After a stop was sent: the threads and the stopped thread's frames, which every
    /// front-end asks for first, while the front-end is still forwarding the stop.
    fn prepare_stop(&mut self, t: &mut Tracer) {
        let threads = t.threads();
        let frames = self.last_stop.and_then(|(tid, _)| {
            let first = self
                .frame_ids
                .fetch_add(FRAME_IDS_PER_TRACE, Ordering::Relaxed);
            unwind_thread(t, self, tid, first).ok().map(|f| (tid, f))
        });
        self.at_stop = Some(AtStop { threads, frames });
    }

    fn on_event(&mut self, t: &mut Tracer, ev: Event) {
        match ev {
            Event::Stopped { tid, reason } => self.on_stop(t, tid, reason),
            Event::ThreadCreated { tid, .. } => self.send(SessionEvent::ThreadStarted(tid)),
            Event::ThreadExited { tid } => self.send(SessionEvent::ThreadExited(tid)),
            Event::Exited { code } => {
                self.exited = true;
                self.running = false;
                self.at_stop = None;
                self.send(SessionEvent::Exited { code });
            }
            Event::Signaled { signo, .. } => {
                self.exited = true;
                self.running = false;
                self.at_stop = None;
                self.send(SessionEvent::Signaled { signo });
            }
            _ => {}
        }
    }

    fn on_stop(&mut self, t: &mut Tracer, tid: Tid, reason: tracer::StopReason) {
        use tracer::StopReason as R;
        match reason {
            R::Breakpoint { addr } => self.on_breakpoint(t, tid, addr.0),
            R::Step => self.on_step(t, tid),
            R::Attached => self.stopped(tid, StopCause::Attached, false, None),
            R::Exec { .. } => self.on_exec(t, tid),
            R::Entry => self.stopped(tid, StopCause::Entry, false, None),
            R::Paused => {
                self.clear_step(t);
                self.stopped(tid, StopCause::Pause, false, None);
            }
            R::Watchpoint { dr6 } => self.on_watchpoint(t, tid, dr6),
            R::Signal { signo, .. } => self.on_signal(t, tid, signo),
            R::GroupStop { signo } => self.on_group_stop(t, tid, signo),
            _ => {
                self.clear_step(t);
                self.stopped(tid, StopCause::Pause, false, None);
            }
        }
    }

    /// The program called exec: its image, every module and every int3 are gone. Load
    /// the new executable, re-resolve every breakpoint in it (libraries follow through
    /// the dynamic linker's hook, as at launch) and keep running, as gdb does.
    fn on_exec(&mut self, t: &mut Tracer, tid: Tid) {
        let info = t.info().clone();
        let binary = info
            .exe
            .as_ref()
            .map(|exe| Binary::open(exe).map(|b| (exe.clone(), Arc::new(b))));
        let (exe, binary) = match binary {
            Some(Ok(found)) => found,
            Some(Err(e)) => {
                tracing::warn!("after exec: cannot load the new program: {e}");
                self.stopped(tid, StopCause::Entry, false, None);
                return;
            }
            None => {
                tracing::warn!("after exec: the new program is unknown");
                self.stopped(tid, StopCause::Entry, false, None);
                return;
            }
        };
        let bias = LoadBias(info.load_bias.unwrap_or(0));
        self.modules = Modules::new(Module::with_binary(exe.clone(), 0, 0, bias, binary.clone()));
        self.modules.set_main_range(self.pid);
        self.modules.refresh(self.pid);
        self.scanned = self.modules.all().len();
        self.enums = Arc::new(Enumerators::new(binary));
        self.step = None;
        self.by_addr.clear();
        self.data_after_exec();
        self.exceptions.addrs.clear();
        let loaded: Vec<Arc<Module>> = self.modules.all().to_vec();
        self.plant_exceptions(t, &loaded);
        self.dl_hook = dl_debug_state(&self.modules, &info).filter(|&hook| {
            t.insert_breakpoint(tracer::RuntimeAddr(hook))
                .map_err(|e| tracing::warn!("cannot watch library loads at {hook:#x}: {e}"))
                .is_ok()
        });
        self.send(SessionEvent::Output(format!(
            "process {} is executing new program: {}\n",
            self.pid.0,
            exe.display()
        )));
        let all: Vec<Arc<Module>> = self.modules.all().to_vec();
        self.jit_pending = true;
        let Core {
            bps,
            by_addr,
            source_map,
            events,
            ..
        } = self;
        for bp in bps.values_mut() {
            bp.addrs.clear();
            bp.scopes.clear();
            bp.jit_tried = false;
            if matches!(bp.key, BpKey::Address(_)) {
                // An address in the old image means nothing in the new one.
                continue;
            }
            let found = resolve_in(&all, &bp.key, source_map);
            for a in &found.addrs {
                match t.insert_breakpoint(tracer::RuntimeAddr(*a)) {
                    Ok(()) => {
                        bp.addrs.push(*a);
                        by_addr.entry(*a).or_default().push(bp.id);
                    }
                    Err(e) => tracing::warn!("planting a breakpoint at {a:#x}: {e}"),
                }
            }
            let _ = events.send(SessionEvent::BreakpointResolved(BreakpointStatus {
                id: bp.id,
                verified: !bp.addrs.is_empty(),
                message: bp
                    .addrs
                    .is_empty()
                    .then(|| "pending: not found in the new program".to_string()),
                file: found.file,
                line: found.line,
                moved: found.moved,
                addresses: bp.addrs.clone(),
            }));
        }
        self.resume(t);
    }

    /// The hot path: decide on the tracer thread whether a hit stops.
    fn on_breakpoint(&mut self, t: &mut Tracer, tid: Tid, addr: u64) {
        if Some(addr) == self.dl_hook {
            self.library_event(t);
        }
        let stop_ids = self.user_hits(t, tid, addr);
        if !stop_ids.is_empty() {
            self.clear_step(t);
            self.stopped(tid, StopCause::Breakpoint(stop_ids), true, None);
            return;
        }
        if let Some(kind) = self.exceptions.at(addr) {
            self.on_exception(t, tid, kind);
            return;
        }
        if let Some(plan) = self.step.as_ref() {
            if let Some((temp, expected_sp)) = plan.temp {
                if temp == addr && plan.tid == tid {
                    let sp = t.regs(tid).map(|r| r.sp()).unwrap_or(0);
                    if expected_sp.is_none_or(|e| e == sp) {
                        self.temp_reached(t, tid);
                        return;
                    }
                }
            }
        }
        if std::mem::take(&mut self.jit_pending) {
            let ids: Vec<BreakpointId> = self
                .bps
                .values()
                .filter(|b| !b.jit_tried)
                .map(|b| b.id)
                .collect();
            for id in ids {
                accelerate(t, self, id);
            }
        }
        self.resume(t);
    }

    /// Libraries were loaded or unloaded: plant pending breakpoints in the new ones.
    fn library_event(&mut self, t: &mut Tracer) {
        self.modules.refresh(self.pid);
        let all: Vec<Arc<Module>> = self.modules.all().to_vec();
        let new = all.get(self.scanned..).unwrap_or_default();
        self.scanned = all.len();
        if new.is_empty() {
            return;
        }
        self.plant_exceptions(t, new);
        let Core {
            bps,
            by_addr,
            source_map,
            events,
            jit_pending,
            ..
        } = self;
        for bp in bps.values_mut().filter(|b| b.addrs.is_empty()) {
            let found = resolve_in(new, &bp.key, source_map);
            for a in &found.addrs {
                match t.insert_breakpoint(tracer::RuntimeAddr(*a)) {
                    Ok(()) => {
                        bp.addrs.push(*a);
                        by_addr.entry(*a).or_default().push(bp.id);
                    }
                    Err(e) => tracing::warn!("planting a breakpoint at {a:#x}: {e}"),
                }
            }
            if !bp.addrs.is_empty() {
                bp.jit_tried = false;
                *jit_pending = true;
                let _ = events.send(SessionEvent::BreakpointResolved(BreakpointStatus {
                    id: bp.id,
                    verified: true,
                    message: None,
                    file: found.file,
                    line: found.line,
                    moved: found.moved,
                    addresses: bp.addrs.clone(),
                }));
            }
        }
    }

    /// Counts the hit on every user breakpoint at `addr` and returns those that stop.
    fn user_hits(&mut self, t: &mut Tracer, tid: Tid, addr: u64) -> Vec<BreakpointId> {
        let mut stop_ids = Vec::new();
        let Some(ids) = self.by_addr.get(&addr) else {
            return stop_ids;
        };
        let Core {
            bps,
            modules,
            events,
            enums,
            ..
        } = self;
        for id in ids {
            let Some(bp) = bps.get_mut(id) else { continue };
            if !bp.enabled {
                continue;
            }
            if let Some(cond) = &bp.condition {
                match eval_condition(t, tid, addr, modules, enums, &mut bp.scopes, cond) {
                    Ok(false) => continue,
                    Ok(true) => {}
                    Err(e) => {
                        // Like gdb: a condition that cannot be evaluated stops, and says why.
                        let _ = events.send(SessionEvent::Output(format!(
                            "error in condition of breakpoint {}: {e}\n",
                            bp.id
                        )));
                    }
                }
            }
            bp.hits += 1;
            if let Some(hc) = bp.hit_condition {
                if !hc.allows(bp.hits) {
                    continue;
                }
            }
            if let Some(log) = &bp.log {
                let text = render_log(t, tid, addr, modules, enums, &mut bp.scopes, log);
                let _ = events.send(SessionEvent::Output(text));
                continue;
            }
            stop_ids.push(bp.id);
        }
        stop_ids
    }
}

/// The modules one `setBreakpoints` resolves in (main, then non-system libraries) and
/// their files' lines, resolved once.
#[derive(Default)]
struct LineMemo {
    /// The main executable's module(s), taken on first use.
    main_modules: Option<Vec<Arc<Module>>>,
    /// The loaded libraries that are not system libraries.
    other_modules: Vec<Arc<Module>>,
    main: FileLines,
    others: FileLines,
}

/// Where a breakpoint resolved in some modules.
#[derive(Default)]
struct Resolution {
    addrs: Vec<u64>,
    file: Option<PathBuf>,
    line: Option<Line>,
    moved: bool,
}

/// Every line of one file resolved at once, per module (by its index in the list
/// resolved in): a `setBreakpoints` of many lines reads the file's line tables once
/// instead of once per line.
type FileLines = HashMap<usize, Vec<symbols::LineResolution>>;

/// `resolve_line(file, line)` answered from the whole file's resolutions: the first with
/// code at or after `line` (what `Binary::resolve_file_lines` promises).
fn resolve_from(all: &[symbols::LineResolution], line: Line) -> Option<symbols::LineResolution> {
    let i = all.partition_point(|r| r.line < line);
    let mut r = all.get(i)?.clone();
    r.requested = line;
    Some(r)
}

/// Resolves a breakpoint's request in `modules`.
fn resolve_in(modules: &[Arc<Module>], key: &BpKey, map: &SourceMap) -> Resolution {
    resolve_in_with(modules, key, map, None)
}

/// [`resolve_in`], answering line requests from `memo` (filled on first use per module).
fn resolve_in_with(
    modules: &[Arc<Module>],
    key: &BpKey,
    map: &SourceMap,
    mut memo: Option<&mut FileLines>,
) -> Resolution {
    let mut out = Resolution::default();
    for (index, m) in modules.iter().enumerate() {
        let Some(b) = m.binary() else { continue };
        match key {
            BpKey::Line(file, line) => {
                let Some(line) = Line::new(*line) else {
                    continue;
                };
                let res = match memo.as_deref_mut() {
                    Some(memo) => {
                        let all = memo
                            .entry(index)
                            .or_insert_with(|| b.resolve_file_lines(file, map).unwrap_or_default());
                        Ok(resolve_from(all, line))
                    }
                    None => b.resolve_line(file, line, map),
                };
                if let Ok(Some(res)) = res {
                    out.line = out.line.or(Some(res.line));
                    out.moved |= res.moved();
                    if out.file.is_none() {
                        out.file = res.locations.first().map(|l| l.file.clone());
                    }
                    out.addrs
                        .extend(res.locations.iter().map(|l| m.to_runtime(l.addr)));
                }
            }
            BpKey::Address(_) => {}
            BpKey::Function(name) => {
                // A system library's DWARF (libc's separate debug file) is large: find
                // its functions by ELF symbol, reading only the units that match.
                let found = if !m.main && is_system(&m.path) {
                    b.functions_by_symbol_name(name)
                } else {
                    b.functions_by_name(name)
                };
                for f in found.unwrap_or_default() {
                    for a in f.breakpoint_addrs() {
                        out.addrs.push(m.to_runtime(a));
                        if out.line.is_none() {
                            if let Ok(Some(loc)) = b.frame_location_for_addr(a) {
                                out.file = Some(loc.file);
                                out.line = loc.line;
                            }
                        }
                    }
                }
            }
        }
    }
    out.addrs.sort_unstable();
    out.addrs.dedup();
    out
}

/// What a condition needs at breakpoint address `addr`, computed once and kept.
fn hit_site(
    module: &Module,
    binary: &Binary,
    addr: u64,
    scopes: &mut HashMap<u64, Arc<HitSite>>,
) -> Result<Arc<HitSite>> {
    if let Some(s) = scopes.get(&addr) {
        return Ok(s.clone());
    }
    let file_pc = module.to_file(addr);
    let s = Arc::new(HitSite {
        scope: binary.scope_at(file_pc)?,
        inline_index: binary
            .function_at(file_pc)
            .ok()
            .flatten()
            .map_or(0, |f| f.inlined.len() as u32),
        row: binary.unwind_row(file_pc).ok().flatten(),
    });
    scopes.insert(addr, s.clone());
    Ok(s)
}

/// Moves a breakpoint's condition into the debuggee at each of its addresses where it
/// can run there (see `crate::jit`); elsewhere the int3 stays.
fn accelerate(t: &mut Tracer, c: &mut Core, id: BreakpointId) {
    let Core {
        bps,
        modules,
        enums,
        jit,
        ..
    } = c;
    let Some(bp) = bps.get_mut(&id) else { return };
    bp.jit_tried = true;
    let cond = bp
        .condition
        .as_ref()
        .filter(|_| *jit && bp.enabled && bp.hit_condition.is_none() && bp.log.is_none());
    for &addr in &bp.addrs {
        if let Some(cond) = cond {
            let site = modules
                .find(addr)
                .and_then(|m| Some((m.clone(), m.binary()?.clone())))
                .map(|(m, b)| hit_site(&m, &b, addr, &mut bp.scopes));
            let outcome = match site {
                Some(Ok(site)) => crate::jit::accelerate(t, modules, enums, &site, addr, cond),
                Some(Err(e)) => Err(e.to_string()),
                None => Err("no symbols at the site".into()),
            };
            match outcome {
                Ok(true) => {
                    tracing::debug!(addr, "breakpoint {id}: condition runs in the debuggee");
                    continue;
                }
                // Placed but not jumped to: its copy still serves resuming from hits.
                Ok(false) => {
                    tracing::debug!(addr, "breakpoint {id}: the jump cannot go in yet");
                    continue;
                }
                Err(why) => tracing::debug!(
                    addr,
                    "breakpoint {id}: condition stays with the debugger: {why}"
                ),
            }
        }
        // Every hit that resumes runs a copy of the site's instruction instead of
        // stepping over the int3.
        match crate::jit::place_step_over(t, modules, addr) {
            Ok(_) => tracing::debug!(addr, "breakpoint {id}: hits resume through a copy"),
            Err(why) => tracing::debug!(addr, "breakpoint {id}: stepped over after hits: {why}"),
        }
    }
}

/// Builds the expression environment of frame 0 at a breakpoint and runs `f` in it.
fn with_frame0<R>(
    t: &mut Tracer,
    tid: Tid,
    addr: u64,
    modules: &Modules,
    enums: &Enumerators,
    scopes: &mut HashMap<u64, Arc<HitSite>>,
    f: impl FnOnce(&Env<'_>) -> Result<R>,
) -> Result<R> {
    let module = modules
        .find(addr)
        .ok_or_else(|| Error::Eval("no module at the breakpoint".into()))?;
    let binary = module
        .binary()
        .ok_or_else(|| Error::Eval("no symbols at the breakpoint".into()))?;
    let site = hit_site(&module, binary, addr, scopes)?;
    let general = FrameRegs::from_registers(&t.regs(tid)?);
    let cfa = site.row.as_ref().and_then(|r| r.cfa(&general).ok());
    let regs = LiveRegs {
        general: &general,
        tracer: t,
        tid,
    };
    let mem = TracerMemory(t);
    // Recovered from the caller's call site only if the expression reads an entry value.
    let entry = unwind::LazyEntryRegisters {
        regs: &general,
        pc: addr,
        row: site.row.as_ref(),
        module: &module,
        modules,
        mem: &mem,
        cell: std::cell::OnceCell::new(),
    };
    let env = Env {
        binary,
        bias: module.bias,
        mem: &mem,
        regs: &regs,
        pc: addr,
        cfa,
        scope: &site.scope,
        inline_index: site.inline_index,
        enums: module.main.then_some(enums),
        entry_regs: Some(&entry),
        modules: Some(modules.all()),
    };
    f(&env)
}

fn eval_condition(
    t: &mut Tracer,
    tid: Tid,
    addr: u64,
    modules: &Modules,
    enums: &Enumerators,
    scopes: &mut HashMap<u64, Arc<HitSite>>,
    cond: &expr::Expr,
) -> Result<bool> {
    with_frame0(t, tid, addr, modules, enums, scopes, |env| {
        let v = env.eval(cond)?;
        env.truthy(&v)
    })
}

fn render_log(
    t: &mut Tracer,
    tid: Tid,
    addr: u64,
    modules: &Modules,
    enums: &Enumerators,
    scopes: &mut HashMap<u64, Arc<HitSite>>,
    parts: &[LogPart],
) -> String {
    let r = with_frame0(t, tid, addr, modules, enums, scopes, |env| {
        let mut out = String::new();
        for p in parts {
            match p {
                LogPart::Text(s) => out.push_str(s),
                LogPart::Expr(e, _) => match env.eval(e) {
                    Ok(v) => out.push_str(&env.text(&v)),
                    Err(err) => out.push_str(&format!("<error: {err}>")),
                },
            }
        }
        out.push('\n');
        Ok(out)
    });
    r.unwrap_or_else(|e| format!("<error: {e}>\n"))
}

// ------------------------------------------------------------------ session

#[derive(Default)]
struct Tables {
    frames: HashMap<FrameId, FrameData>,
    nodes: HashMap<u64, Node>,
    next_ref: u64,
}

/// One debugged process. Methods are called from any one thread (the front-end's);
/// events arrive on [`Session::events`].
pub struct Session {
    handle: TracerHandle,
    core: Arc<Mutex<Core>>,
    events: Receiver<SessionEvent>,
    main: Arc<Binary>,
    pid: Pid,
    source_map: SourceMap,
    tables: Mutex<Tables>,
    frame_ids: Arc<AtomicU64>,
    stdio: Mutex<Option<tracer::Stdio>>,
    launched: bool,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Launches the program and waits until it stops at its entry point (libraries
    /// are loaded, no user code has run). Set breakpoints, then [`Session::resume`].
    pub fn launch(options: LaunchOptions) -> Result<Session> {
        let program = resolve_program(&options.program)?;
        let config = tracer::LaunchConfig {
            program: program.clone(),
            args: options.args.clone(),
            cwd: options.cwd.clone(),
            env: options.env.clone(),
            stdio: options.stdio,
            disable_aslr: options.disable_aslr,
            stop_at: tracer::StopAt::Entry,
            ..Default::default()
        };
        let open = program.clone();
        Session::start(program, &open, options.source_map, move |sink| {
            let (handle, launch) = tracer::spawn_launch(config, sink)?;
            Ok((handle, Some(launch.stdio)))
        })
    }

    /// Attaches to a running process and waits until it is stopped. Ending the
    /// session detaches (breakpoints removed, the process keeps running).
    /// A process in another mount namespace (a container) is read through /proc/PID/exe
    /// and /proc/PID/root: nothing needs to be installed in the container.
    pub fn attach(pid: Pid, source_map: SourceMap) -> Result<Session> {
        let program = tracer::procfs::exe_of(pid)
            .ok_or_else(|| Error::NoExecutable(format!("/proc/{pid}/exe")))?;
        let open = crate::modules::main_executable(pid, &program);
        Session::start(program, &open, source_map, move |sink| {
            let handle = tracer::spawn_attach(pid, tracer::AttachConfig::default(), sink)?;
            Ok((handle, None))
        })
    }

    /// `program` is the executable's path as the process sees it; `open` is where tandem
    /// reads it.
    fn start(
        program: PathBuf,
        open: &Path,
        source_map: SourceMap,
        spawn: impl FnOnce(tracer::EventSink) -> Result<(TracerHandle, Option<tracer::Stdio>)>,
    ) -> Result<Session> {
        let main = Arc::new(Binary::open(open)?);
        let enums = Arc::new(Enumerators::new(main.clone()));
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut source_map = source_map;
        guess_sources_of(&main, &mut source_map);
        // Said once the first stop has been consumed below, so the front-end sees them.
        let mut notes: Vec<String> = source_map
            .guessed()
            .iter()
            .map(|(from, to)| {
                format!(
                    "mapped {} → {} (the compilation directory does not exist here)\n",
                    from.display(),
                    to.display()
                )
            })
            .collect();
        let notes_tx = tx.clone();
        let frame_ids = Arc::new(AtomicU64::new(1));
        let core = Arc::new(Mutex::new(Core {
            pid: Pid(0),
            modules: Modules::default(),
            bps: BTreeMap::new(),
            by_addr: HashMap::new(),
            next_bp: 1,
            step: None,
            continue_after_step: false,
            last_stop: None,
            running: true,
            exited: false,
            events: tx,
            dl_hook: None,
            scanned: 0,
            enums: enums.clone(),
            source_map: source_map.clone(),
            data: data::DataTable::default(),
            signal_stops: crate::signals::SignalSet::of(&crate::signals::DEFAULT_STOPS),
            last_signal: None,
            exceptions: exceptions::ExceptionTable::default(),
            // TANDEM_CONDITIONS_IN_DEBUGGEE=0 keeps every condition on the int3 path
            // (for comparisons; a front-end can also set it per session).
            jit: std::env::var_os("TANDEM_CONDITIONS_IN_DEBUGGEE").is_none_or(|v| v != "0"),
            jit_pending: false,
            stop_shown: false,
            at_stop: None,
            frame_ids: frame_ids.clone(),
        }));
        let sink_core = core.clone();
        let sink: tracer::EventSink = Box::new(move |t: &mut Tracer, ev: Event| {
            let mut c = lock(&sink_core);
            c.on_event(t, ev);
            if std::mem::take(&mut c.stop_shown) && !c.exited {
                c.prepare_stop(t);
            }
        });
        let (handle, stdio) = spawn(sink)?;
        let pid = handle.pid();
        // What did not go as asked but did not fail the start (ASLR left on when
        // personality() is refused, as under a container's seccomp profile).
        notes.extend(
            handle
                .info()
                .warnings
                .iter()
                .map(|w| format!("warning: {w}\n")),
        );
        let bias = LoadBias(handle.info().load_bias.unwrap_or(0));
        {
            let mut c = lock(&core);
            c.pid = pid;
            c.modules = Modules::new(Module::with_binary(
                program.clone(),
                0,
                0,
                bias,
                main.clone(),
            ));
            c.modules.set_main_range(pid);
            c.modules.refresh(pid);
            c.scanned = c.modules.all().len();
        }
        // Only the signals that kill the program stop it; the rest pass silently.
        handle.call(|t: &mut Tracer| {
            signals::apply_policy(
                t,
                crate::signals::SignalSet::of(&crate::signals::DEFAULT_STOPS),
            )
        })?;
        let hook = dl_debug_state(&lock(&core).modules, handle.info());
        if let Some(hook) = hook {
            let hook_core = core.clone();
            let planted = handle.call(move |t: &mut Tracer| {
                let ok = t.insert_breakpoint(tracer::RuntimeAddr(hook)).is_ok();
                if ok {
                    lock(&hook_core).dl_hook = Some(hook);
                }
                ok
            })?;
            if !planted {
                tracing::warn!("cannot watch library loads at {hook:#x}");
            }
        }
        let session = Session {
            handle,
            core,
            events: rx,
            main,
            pid,
            source_map,
            tables: Mutex::new(Tables {
                next_ref: 1,
                ..Tables::default()
            }),
            frame_ids,
            launched: stdio.is_some(),
            stdio: Mutex::new(stdio),
        };
        // The first stop (entry point or attach).
        let deadline = Instant::now() + LAUNCH_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match session.events.recv_timeout(left) {
                Ok(SessionEvent::Stopped(_)) => break,
                Ok(SessionEvent::Exited { .. } | SessionEvent::Signaled { .. }) => {
                    return Err(Error::Exited)
                }
                Ok(_) => continue,
                Err(_) => return Err(Error::Timeout),
            }
        }
        for note in notes {
            let _ = notes_tx.send(SessionEvent::Output(note));
        }
        Ok(session)
    }

    /// The debuggee's process id.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// The debuggee's standard streams (pipes or pty), taken once.
    pub fn take_stdio(&self) -> Option<tracer::Stdio> {
        lock(&self.stdio).take()
    }

    /// Everything the session reports, in order.
    pub fn events(&self) -> &Receiver<SessionEvent> {
        &self.events
    }

    /// Waits for the next stop or exit, discarding the output, thread and breakpoint
    /// events before it (for the CLI and tests; front-ends read [`Session::events`]).
    pub fn wait_stop(&self, timeout: Duration) -> Result<SessionEvent> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(
                    ev @ (SessionEvent::Stopped(_)
                    | SessionEvent::Exited { .. }
                    | SessionEvent::Signaled { .. }),
                ) => return Ok(ev),
                Ok(_) => continue,
                Err(_) => return Err(Error::Timeout),
            }
        }
    }

    /// The threads of the process.
    pub fn threads(&self) -> Result<Vec<Tid>> {
        // At a stop, the list taken right after it: no round trip to the tracer thread.
        if let Some(at) = lock(&self.core).at_stop.as_ref() {
            return Ok(at.threads.clone());
        }
        Ok(self.handle.threads()?)
    }

    /// Whether the program is stopped (not running, not exited): what is read from it
    /// now stays true until it runs again.
    pub fn is_stopped(&self) -> bool {
        let c = lock(&self.core);
        !c.running && !c.exited
    }

    /// A thread's name (/proc/PID/task/TID/comm), for thread lists.
    pub fn thread_name(&self, tid: Tid) -> Option<String> {
        std::fs::read_to_string(format!("/proc/{}/task/{}/comm", self.pid.0, tid.0))
            .ok()
            .map(|s| s.trim_end().to_string())
    }

    /// Enables or disables a breakpoint: a disabled one keeps its id, locations and hit
    /// count, but its hits are neither counted nor stop (nor log).
    pub fn set_breakpoint_enabled(&self, id: BreakpointId, enabled: bool) -> Result<()> {
        let mut c = lock(&self.core);
        if let Some(bp) = c.data.get_mut(id) {
            bp.enabled = enabled;
            return Ok(());
        }
        let bp = c
            .bps
            .get_mut(&id)
            .ok_or_else(|| Error::Eval(format!("no breakpoint {id}")))?;
        bp.enabled = enabled;
        Ok(())
    }

    /// Sets the instruction breakpoints (runtime addresses), replacing the ones set
    /// before.
    pub fn set_instruction_breakpoints(&self, addresses: &[u64]) -> Result<Vec<BreakpointStatus>> {
        let mut wanted = Vec::new();
        let mut statuses = Vec::new();
        for &a in addresses {
            let (file, line) = {
                let c = lock(&self.core);
                c.modules
                    .find(a)
                    .and_then(|m| {
                        let loc = m.binary()?.frame_location_for_addr(m.to_file(a)).ok()??;
                        Some((Some(loc.file), loc.line))
                    })
                    .unwrap_or((None, None))
            };
            statuses.push(BreakpointStatus {
                id: BreakpointId(0),
                verified: true,
                message: None,
                file,
                line,
                moved: false,
                addresses: vec![a],
            });
            wanted.push((BpKey::Address(a), vec![a], None, None, None));
        }
        let ids = self.install(wanted, |k| matches!(k, BpKey::Address(_)))?;
        for (s, id) in statuses.iter_mut().zip(ids) {
            s.id = id;
        }
        Ok(statuses)
    }

    fn source_path(&self, file: &Path) -> PathBuf {
        file.to_path_buf()
    }

    /// The main executable's symbols (a new program after exec).
    fn main_binary(&self) -> Arc<Binary> {
        lock(&self.core)
            .modules
            .main()
            .and_then(|m| m.binary().cloned())
            .unwrap_or_else(|| self.main.clone())
    }

    fn is_type_fn(&self) -> impl Fn(&str) -> bool + '_ {
        let main = self.main_binary();
        move |name: &str| !main.types_by_name(name).is_empty()
    }

    /// Sets the line breakpoints of one source file, replacing the ones set before in
    /// that file (the DAP `setBreakpoints` semantics). Ids stay the same for lines set again.
    pub fn set_line_breakpoints(
        &self,
        file: &Path,
        specs: &[SourceBreakpoint],
    ) -> Result<Vec<BreakpointStatus>> {
        let file = self.source_path(file);
        let mut wanted = Vec::new();
        let mut statuses = Vec::new();
        let mut memo = LineMemo::default();
        for spec in specs {
            let key = BpKey::Line(file.clone(), spec.line);
            let mut status = BreakpointStatus {
                id: BreakpointId(0),
                verified: false,
                message: None,
                file: None,
                line: None,
                moved: false,
                addresses: Vec::new(),
            };
            let mut addrs = Vec::new();
            if spec.line == 0 {
                status.message = Some("line 0 does not exist".into());
            } else {
                let found = if specs.len() > 1 {
                    self.resolve_line_now(&key, &mut memo)
                } else {
                    self.resolve_now(&key)
                };
                if found.addrs.is_empty() {
                    status.message = Some(format!(
                        "pending: no code at or after line {} in {} in the loaded modules",
                        spec.line,
                        file.display()
                    ));
                }
                status.line = found.line;
                status.moved = found.moved;
                status.file = found.file;
                addrs = found.addrs;
            }
            let compiled = self.compile(
                spec.condition.as_deref(),
                spec.hit_condition.as_deref(),
                spec.log_message.as_deref(),
            );
            let (condition, hit, log) = match compiled {
                Ok(c) => c,
                Err(e) => {
                    status.message = Some(e.to_string());
                    (None, None, None)
                }
            };
            status.verified = !addrs.is_empty();
            status.addresses = addrs.clone();
            wanted.push((key, addrs, condition, hit, log));
            statuses.push(status);
        }
        let group = file.clone();
        let ids = self.install(
            wanted,
            move |k| matches!(k, BpKey::Line(f, _) if *f == group),
        )?;
        for (s, id) in statuses.iter_mut().zip(ids) {
            s.id = id;
        }
        Ok(statuses)
    }

    /// Sets the function breakpoints, replacing every function breakpoint set before.
    pub fn set_function_breakpoints(
        &self,
        specs: &[FunctionBreakpoint],
    ) -> Result<Vec<BreakpointStatus>> {
        let mut wanted = Vec::new();
        let mut statuses = Vec::new();
        for spec in specs {
            let mut status = BreakpointStatus {
                id: BreakpointId(0),
                verified: false,
                message: None,
                file: None,
                line: None,
                moved: false,
                addresses: Vec::new(),
            };
            let found = self.resolve_now(&BpKey::Function(spec.name.clone()));
            status.file = found.file;
            status.line = found.line;
            let addrs = found.addrs;
            if addrs.is_empty() {
                status.message = Some(format!(
                    "pending: no function named '{}' in the loaded modules",
                    spec.name
                ));
            }
            let (condition, hit, log) = match self.compile(
                spec.condition.as_deref(),
                spec.hit_condition.as_deref(),
                None,
            ) {
                Ok(c) => c,
                Err(e) => {
                    status.message = Some(e.to_string());
                    (None, None, None)
                }
            };
            status.verified = !addrs.is_empty();
            status.addresses = addrs.clone();
            wanted.push((
                BpKey::Function(spec.name.clone()),
                addrs,
                condition,
                hit,
                log,
            ));
            statuses.push(status);
        }
        let ids = self.install(wanted, |k| matches!(k, BpKey::Function(_)))?;
        for (s, id) in statuses.iter_mut().zip(ids) {
            s.id = id;
        }
        Ok(statuses)
    }

    #[allow(clippy::type_complexity)]
    fn compile(
        &self,
        condition: Option<&str>,
        hit: Option<&str>,
        log: Option<&str>,
    ) -> Result<(
        Option<expr::Expr>,
        Option<HitCondition>,
        Option<Vec<LogPart>>,
    )> {
        let is_type = self.is_type_fn();
        let condition = condition
            .filter(|c| !c.trim().is_empty())
            .map(|c| expr::parse(c, &is_type))
            .transpose()?;
        let hit = hit
            .filter(|h| !h.trim().is_empty())
            .map(HitCondition::parse)
            .transpose()?;
        let log = log.map(|l| parse_log(l, &is_type)).transpose()?;
        Ok((condition, hit, log))
    }

    fn install(
        &self,
        wanted: Vec<Wanted>,
        replaces: impl Fn(&BpKey) -> bool + Send + 'static,
    ) -> Result<Vec<BreakpointId>> {
        let core = self.core.clone();
        self.handle
            .call(move |t: &mut Tracer| {
                // Every text write happens with every thread stopped: a running program
                // is stopped for the edit (nothing is reported) and resumed after it.
                t.edit_text(|t| install_now(t, &core, wanted, replaces))
            })
            .map_err(Error::from)?
            .map_err(Error::from)
    }
}

/// One breakpoint a request asks for: where, the addresses it resolved to, its condition,
/// hit condition and log message.
type Wanted = (
    BpKey,
    Vec<u64>,
    Option<expr::Expr>,
    Option<HitCondition>,
    Option<Vec<LogPart>>,
);

fn install_now(
    t: &mut Tracer,
    core: &Mutex<Core>,
    wanted: Vec<Wanted>,
    replaces: impl Fn(&BpKey) -> bool,
) -> Vec<BreakpointId> {
    let mut c = lock(core);
    // Old breakpoints of this group, by key (to keep their ids and hit counts).
    let old_ids: Vec<BreakpointId> = c
        .bps
        .values()
        .filter(|b| replaces(&b.key))
        .map(|b| b.id)
        .collect();
    let mut old: HashMap<BpKey, Bp> = HashMap::new();
    for id in old_ids {
        if let Some(bp) = c.bps.remove(&id) {
            for a in &bp.addrs {
                let _ = t.remove_breakpoint(tracer::RuntimeAddr(*a));
            }
            old.insert(bp.key.clone(), bp);
        }
    }
    let mut ids = Vec::new();
    for (key, addrs, condition, hit_condition, log) in wanted {
        // Setting the same location again keeps its id, hit count and
        // enabled state.
        let (id, hits, enabled) = match old.remove(&key) {
            Some(b) => (b.id, b.hits, b.enabled),
            None => {
                let id = BreakpointId(c.next_bp);
                c.next_bp += 1;
                (id, 0, true)
            }
        };
        let mut planted = Vec::new();
        for a in addrs {
            match t.insert_breakpoint(tracer::RuntimeAddr(a)) {
                Ok(()) => planted.push(a),
                Err(e) => tracing::warn!("planting a breakpoint at {a:#x}: {e}"),
            }
        }
        c.bps.insert(
            id,
            Bp {
                id,
                key,
                addrs: planted,
                condition,
                hit_condition,
                log,
                hits,
                enabled,
                scopes: HashMap::new(),
                jit_tried: false,
            },
        );
        ids.push(id);
    }
    let mut by_addr: HashMap<u64, Vec<BreakpointId>> = HashMap::new();
    for bp in c.bps.values() {
        for a in &bp.addrs {
            by_addr.entry(*a).or_default().push(bp.id);
        }
    }
    c.by_addr = by_addr;
    for id in &ids {
        accelerate(t, &mut c, *id);
    }
    ids
}

impl Session {
    /// [`Session::resolve_now`] for a line, with the file's lines resolved once per module
    /// for all the lines of one request.
    fn resolve_line_now(&self, key: &BpKey, memo: &mut LineMemo) -> Resolution {
        if memo.main_modules.is_none() {
            let modules: Vec<Arc<Module>> = lock(&self.core).modules.all().to_vec();
            let (main, rest): (Vec<Arc<Module>>, Vec<Arc<Module>>) =
                modules.into_iter().partition(|m| m.main);
            memo.other_modules = rest.into_iter().filter(|m| !is_system(&m.path)).collect();
            memo.main_modules = Some(main);
        }
        let main = memo.main_modules.as_deref().unwrap_or_default();
        let found = resolve_in_with(main, key, &self.source_map, Some(&mut memo.main));
        if !found.addrs.is_empty() {
            return found;
        }
        resolve_in_with(
            &memo.other_modules,
            key,
            &self.source_map,
            Some(&mut memo.others),
        )
    }

    /// Resolves in the main executable, else in the loaded non-system libraries, else
    /// (functions only) in the loaded system libraries such as libc.
    fn resolve_now(&self, key: &BpKey) -> Resolution {
        let modules: Vec<Arc<Module>> = lock(&self.core).modules.all().to_vec();
        let (main, rest): (Vec<Arc<Module>>, Vec<Arc<Module>>) =
            modules.into_iter().partition(|m| m.main);
        let (system, others): (Vec<Arc<Module>>, Vec<Arc<Module>>) =
            rest.into_iter().partition(|m| is_system(&m.path));
        let found = resolve_in(&main, key, &self.source_map);
        if !found.addrs.is_empty() {
            return found;
        }
        let found = resolve_in(&others, key, &self.source_map);
        if !found.addrs.is_empty() || !matches!(key, BpKey::Function(_)) {
            return found;
        }
        resolve_in(&system, key, &self.source_map)
    }

    fn clear_tables(&self) {
        let mut t = lock(&self.tables);
        t.frames.clear();
        t.nodes.clear();
    }

    fn check_stopped(&self) -> Result<()> {
        let c = lock(&self.core);
        if c.exited {
            return Err(Error::Exited);
        }
        if c.running {
            return Err(Error::Running);
        }
        Ok(())
    }

    /// Continues every thread.
    pub fn resume(&self) -> Result<()> {
        self.check_stopped()?;
        self.clear_tables();
        let core = self.core.clone();
        self.handle.call(move |t: &mut Tracer| -> Result<()> {
            let mut c = lock(&core);
            c.clear_step(t);
            c.running = true;
            c.at_stop = None;
            // The user saw a stop since any pause they asked for.
            let _ = t.take_owed_pause();
            // A thread standing on an int3 it was not stopped by (after a step) is
            // stepped off it first; the tracer only does that for reported hits.
            if let Some((tid, false)) = c.last_stop {
                let pc = t.regs(tid).map(|r| r.pc()).unwrap_or(0);
                if t.breakpoints().iter().any(|(a, _)| a.0 == pc) {
                    c.continue_after_step = true;
                    return t.step(tid).map_err(Error::from);
                }
            }
            t.resume().map_err(Error::from)
        })?
    }

    /// Pauses the running process; the stop arrives as an event.
    pub fn pause(&self) -> Result<()> {
        self.handle.pause()?;
        Ok(())
    }

    /// Starts a step of thread `tid`; the stop arrives as an event (reason `Step`, or
    /// `Breakpoint` when a breakpoint is hit first). Other threads stay stopped during
    /// single-steps and run while a call is stepped over or a function finishes.
    pub fn step(&self, tid: Tid, kind: StepKind) -> Result<()> {
        self.check_stopped()?;
        self.clear_tables();
        let core = self.core.clone();
        self.handle.call(move |t: &mut Tracer| -> Result<()> {
            let mut c = lock(&core);
            c.clear_step(t);
            c.at_stop = None;
            let _ = t.take_owed_pause();
            let regs = t.regs(tid)?;
            let (pc, sp) = (regs.pc(), regs.sp());
            let module = c.modules.find(pc);
            let mem = TracerMemory(t);
            let frames = unwind::frames(FrameRegs::from_registers(&regs), &c.modules, &mem, 2, 0);
            let cfa = frames.first().and_then(|f| f.frame.cfa);
            let mut plan = StepPlan {
                tid,
                kind,
                start_line: module.as_ref().and_then(|m| current_line(m, pc)),
                frame_cfa: cfa,
                prev_pc: pc,
                prev_sp: sp,
                temp: None,
                tramp_sp: None,
                steps: 0,
                out_of: (kind == StepKind::Out).then_some(pc),
            };
            c.running = true;
            match kind {
                StepKind::Out => {
                    let caller = frames.iter().find(|f| f.physical == 1);
                    let (Some(cfa), Some(caller)) = (cfa, caller) else {
                        c.running = false;
                        return Err(Error::Eval("cannot find the caller of this frame".into()));
                    };
                    let ra = caller.frame.pc.0;
                    plan.temp = Some((ra, Some(cfa)));
                    t.insert_breakpoint(tracer::RuntimeAddr(ra))?;
                    c.step = Some(plan);
                    c.last_stop = None;
                    t.resume()?;
                }
                _ => {
                    c.step = Some(plan);
                    t.step(tid)?;
                }
            }
            Ok(())
        })?
    }

    /// Ends the session: a launched debuggee is killed.
    pub fn terminate(&self) -> Result<()> {
        self.handle.end(tracer::EndMode::Kill)?;
        Ok(())
    }

    /// Ends the session the default way: a launched debuggee is killed, an attached
    /// one detached (every breakpoint removed) and left running.
    pub fn end(&self) -> Result<()> {
        self.handle.end(tracer::EndMode::Default)?;
        Ok(())
    }

    /// Whether the process was launched (rather than attached to).
    pub fn launched(&self) -> bool {
        self.launched
    }

    /// The thread that traces the debuggee (a panic hook running on it must not wait
    /// for itself).
    pub fn tracer_thread_id(&self) -> i32 {
        self.handle.tracer_thread_id()
    }

    /// Ends the session leaving the process running, every breakpoint removed.
    pub fn detach(&self) -> Result<()> {
        self.handle.end(tracer::EndMode::Detach)?;
        Ok(())
    }

    /// Reads up to `len` bytes of the stopped process (breakpoints show their
    /// original bytes); fewer when the range runs into unmapped memory.
    pub fn read_memory(&self, addr: u64, len: usize) -> Result<Vec<u8>> {
        self.check_stopped()?;
        Ok(self.handle.read_memory(tracer::RuntimeAddr(addr), len)?)
    }

    /// Writes memory of the stopped process (value nodes read it again when expanded).
    pub fn write_memory(&self, addr: u64, data: Vec<u8>) -> Result<()> {
        self.check_stopped()?;
        self.handle.write_memory(tracer::RuntimeAddr(addr), data)?;
        Ok(())
    }

    /// Lines of a source file where a breakpoint can bind (for `breakpointLocations`
    /// and the gutter).
    pub fn breakpoint_lines(&self, file: &Path) -> Result<Vec<Line>> {
        Ok(self.main_binary().lines_with_code(file, &self.source_map)?)
    }

    /// The modules mapped so far: file, load bias, mapped range, whether symbols
    /// were opened.
    pub fn modules(&self) -> Vec<ModuleInfo> {
        let mut c = lock(&self.core);
        let pid = c.pid;
        c.modules.refresh(pid);
        c.modules
            .all()
            .iter()
            .map(|m| ModuleInfo {
                path: m.path.clone(),
                bias: m.bias.0,
                start: m.start,
                end: m.end,
                main: m.main,
            })
            .collect()
    }

    /// The stack of a stopped thread, innermost frame first (inlined calls included).
    pub fn stack_trace(&self, tid: Tid) -> Result<Vec<Frame>> {
        self.check_stopped()?;
        // The stopped thread's frames were unwound right after the stop was sent.
        let prepared = lock(&self.core).at_stop.as_ref().and_then(|at| {
            at.frames
                .as_ref()
                .filter(|(t, _)| *t == tid)
                .map(|(_, f)| f.clone())
        });
        let data = match prepared {
            Some(frames) => frames,
            None => {
                let first = self
                    .frame_ids
                    .fetch_add(FRAME_IDS_PER_TRACE, Ordering::Relaxed);
                let core = self.core.clone();
                self.handle
                    .call(move |t: &mut Tracer| -> Result<Vec<FrameData>> {
                        unwind_thread(t, &mut lock(&core), tid, first)
                    })??
            }
        };
        let mut tables = lock(&self.tables);
        let out = data.iter().map(|d| d.frame.clone()).collect();
        for d in data {
            tables.frames.insert(d.frame.id, d);
        }
        Ok(out)
    }

    fn frame(&self, id: FrameId) -> Result<FrameData> {
        lock(&self.tables)
            .frames
            .get(&id)
            .cloned()
            .ok_or(Error::UnknownFrame(id.0))
    }

    /// The variables of one scope of a frame.
    pub fn variables(&self, frame: FrameId, kind: ScopeKind) -> Result<Vec<Value>> {
        self.check_stopped()?;
        let data = self.frame(frame)?;
        let rendered = self
            .handle
            .call(move |t: &mut Tracer| frame_variables(t, &data, kind))??;
        Ok(self.register_nodes(rendered))
    }

    /// Children of a structured value: members, elements `start..start+count` (all
    /// when `count` is `None`), or the pointee.
    pub fn children(&self, value: ValueRef, start: u64, count: Option<u64>) -> Result<Vec<Value>> {
        self.check_stopped()?;
        let node = lock(&self.tables)
            .nodes
            .get(&value.0)
            .cloned()
            .ok_or(Error::UnknownValueRef(value.0))?;
        let bias = self.module_bias_of(&node.binary);
        let rendered = self.handle.call(move |t: &mut Tracer| {
            let mem = TracerMemory(t);
            let r = Renderer {
                binary: &node.binary,
                bias,
                mem: &mem,
                bounds: None,
            };
            r.children(&node, start, count)
        })?;
        Ok(self.register_nodes(rendered))
    }

    fn module_bias_of(&self, binary: &Arc<Binary>) -> LoadBias {
        let c = lock(&self.core);
        c.modules
            .all()
            .iter()
            .find(|m| m.binary().is_some_and(|b| Arc::ptr_eq(b, binary)))
            .map_or(LoadBias(0), |m| m.bias)
    }

    fn register_nodes(&self, rendered: Vec<(Value, Option<Node>)>) -> Vec<Value> {
        let mut tables = lock(&self.tables);
        rendered
            .into_iter()
            .map(|(mut v, node)| {
                if let Some(node) = node {
                    let r = tables.next_ref;
                    tables.next_ref += 1;
                    tables.nodes.insert(r, node);
                    v.children = Some(ValueRef(r));
                }
                v
            })
            .collect()
    }

    /// Assigns `value` to the lvalue `target` in a frame (DAP `setVariable` and
    /// `setExpression`), then returns the new value of `target`. Only values in memory
    /// can be assigned; a variable kept in a register is refused.
    pub fn set_variable(&self, frame: FrameId, target: &str, value: &str) -> Result<Value> {
        self.check_stopped()?;
        let data = self.frame(frame)?;
        let is_type = self.is_type_fn();
        let lhs = expr::parse(target, &is_type)?;
        let rhs = expr::parse(value, &is_type)?;
        let enums = lock(&self.core).enums.clone();
        self.handle.call(move |t: &mut Tracer| -> Result<()> {
            let module = data
                .module
                .clone()
                .ok_or_else(|| Error::Eval("no symbols for this frame".into()))?;
            let binary = module
                .binary()
                .ok_or_else(|| Error::Eval("no symbols for this frame".into()))?;
            let scope = binary.scope_at(module.to_file(data.lookup_pc))?;
            let (addr, bytes) = {
                let mem = TracerMemory(t);
                let env = Env {
                    binary,
                    bias: module.bias,
                    mem: &mem,
                    regs: &data.regs,
                    pc: data.lookup_pc,
                    cfa: data.frame.cfa,
                    scope: &scope,
                    inline_index: data.inline_index,
                    enums: module.main.then_some(&*enums),
                    entry_regs: None,
                    modules: None,
                };
                let place = env.eval(&lhs)?;
                let v = env.eval(&rhs)?;
                env.assignment(&place, &v)?
            };
            t.write_memory(tracer::RuntimeAddr(addr), &bytes)?;
            Ok(())
        })??;
        // Value nodes stay valid: their children are read from memory when asked for.
        self.evaluate(frame, target)
    }

    /// Evaluates an expression in a frame (watch, hover, repl; no side effects).
    pub fn evaluate(&self, frame: FrameId, expression: &str) -> Result<Value> {
        self.check_stopped()?;
        let data = self.frame(frame)?;
        let parsed = expr::parse(expression, &self.is_type_fn())?;
        let name = expression.to_string();
        let enums = lock(&self.core).enums.clone();
        // In a frame outside the program (libc's usleep), the program's globals are still
        // visible, as in gdb: a name the frame does not know is looked for there.
        let (main, all) = {
            let core = lock(&self.core);
            (core.modules.main().cloned(), core.modules.all().to_vec())
        };
        let fallback = main.filter(|m| {
            !data
                .module
                .as_ref()
                .is_some_and(|f| Arc::ptr_eq(f, m) || f.main)
        });
        let rendered = self.handle.call(move |t: &mut Tracer| {
            let render = |env: &Env<'_>| -> Result<(Value, Option<Node>)> {
                let v = env.eval(&parsed)?;
                Ok(render_result(env, &v, &name))
            };
            let in_frame = env::with_env_seeing(
                t,
                &env::Place::Frame(Box::new(data)),
                &all,
                Some(&parsed),
                &enums,
                render,
            );
            match (in_frame, fallback) {
                (Err(Error::Eval(m)), Some(main)) if m.starts_with("no symbol") => {
                    env::with_env(t, &env::Place::Globals(main), Some(&parsed), &enums, render)
                        .map_err(|_| Error::Eval(m))
                }
                (other, _) => other,
            }
        })??;
        Ok(self.register_nodes(vec![rendered]).remove(0))
    }
}

/// The value of an evaluated expression as a front-end shows it: a typed value is rendered
/// (and may have children), anything else (a computed integer) is its text.
fn render_result(env: &Env<'_>, v: &expr::EVal, name: &str) -> (Value, Option<Node>) {
    match (&v.ty, &v.loc) {
        (expr::ETy::Dwarf(ty) | expr::ETy::SubArray(ty, _), loc) => {
            let dim = match v.ty {
                expr::ETy::SubArray(_, d) => d,
                _ => 0,
            };
            let place = match loc {
                expr::Loc::Mem(a) => Place::Memory(*a),
                expr::Loc::Val(b) => Place::Bytes(Arc::from(b.as_slice()), 0),
            };
            let bounds = |e: &symbols::LocationExpr| env.eval_bound(e);
            let r = Renderer {
                binary: env.binary,
                bias: env.bias,
                mem: env.mem,
                bounds: Some(&bounds),
            };
            r.render(name, *ty, place, dim)
        }
        _ => (
            Value {
                name: name.to_string(),
                type_name: env.type_name(&v.ty),
                rendered: env.text(v),
                children: None,
                child_count: None,
                indexed: false,
                error: false,
                address: None,
            },
            None,
        ),
    }
}

/// Renders the variables of one scope of a frame (on the tracer thread).
fn frame_variables(
    t: &mut Tracer,
    data: &FrameData,
    kind: ScopeKind,
) -> Result<Vec<(Value, Option<Node>)>> {
    if kind == ScopeKind::Registers {
        const NAMES: [&str; 17] = [
            "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11",
            "r12", "r13", "r14", "r15", "rip",
        ];
        return Ok(NAMES
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let v = data.regs.get(i as u16);
                (
                    Value {
                        name: n.to_string(),
                        type_name: "long".into(),
                        rendered: v.map_or_else(|| "<not saved>".into(), |v| format!("{v:#x}")),
                        children: None,
                        child_count: None,
                        indexed: false,
                        error: v.is_none(),
                        address: None,
                    },
                    None,
                )
            })
            .collect());
    }
    let Some(module) = data.module.clone() else {
        return Ok(Vec::new());
    };
    let Some(binary) = module.binary() else {
        return Ok(Vec::new());
    };
    let scope = binary.scope_at(module.to_file(data.lookup_pc))?;
    let mem = TracerMemory(t);
    let frame_regs = data.registers(t);
    let regs: &dyn symbols::RegisterReader = &frame_regs;
    let entry = match (&data.caller, kind) {
        (Some(c), ScopeKind::Arguments | ScopeKind::Locals) => unwind::entry_registers(c, &mem),
        _ => None,
    };
    let env = Env {
        binary,
        bias: module.bias,
        mem: &mem,
        regs,
        pc: data.lookup_pc,
        cfa: data.frame.cfa,
        scope: &scope,
        inline_index: data.inline_index,
        enums: None,
        entry_regs: entry.as_ref().map(|m| m as &dyn symbols::RegisterReader),
        modules: None,
    };
    let vars: Vec<&symbols::Variable> = match kind {
        ScopeKind::Globals => scope.globals.iter().collect(),
        ScopeKind::Arguments => scope
            .locals
            .iter()
            .filter(|v| v.frame == data.inline_index && expr::is_parameter(v))
            .collect(),
        _ => {
            let mut v: Vec<&symbols::Variable> = scope
                .locals
                .iter()
                .filter(|v| v.frame == data.inline_index && !expr::is_parameter(v))
                .collect();
            // Innermost block first, as gdb lists them.
            v.sort_by_key(|x| std::cmp::Reverse(x.depth));
            v
        }
    };
    let bounds = |e: &symbols::LocationExpr| env.eval_bound(e);
    let renderer = Renderer {
        binary,
        bias: module.bias,
        mem: &mem,
        bounds: Some(&bounds),
    };
    let mut out = Vec::new();
    for var in vars {
        let Some(name) = var.name.clone() else {
            continue;
        };
        // `this` is artificial but is what a C++ method's user wants to see.
        if var.artificial && name != "this" {
            continue;
        }
        let Some(ty) = var.ty else {
            out.push((
                Value::error(&name, String::new(), "<error: no type>".into()),
                None,
            ));
            continue;
        };
        match env.variable_value(var) {
            Ok(v) => {
                let place = match v.loc {
                    expr::Loc::Mem(a) => Place::Memory(a),
                    expr::Loc::Val(b) => Place::Bytes(Arc::from(b.as_slice()), 0),
                };
                let (mut value, node) = renderer.render(&name, ty, place, 0);
                if var.shadowed {
                    value.name = format!("{name} (shadowed)");
                }
                out.push((value, node));
            }
            Err(e) => {
                let msg = e.to_string();
                let text = if msg.contains("optimized out") {
                    "<optimized out>".to_string()
                } else {
                    format!("<error: {msg}>")
                };
                out.push((
                    Value::error(&name, binary.type_name(ty).unwrap_or_default(), text),
                    None,
                ));
            }
        }
    }
    Ok(out)
}

/// The dynamic linker's `_dl_debug_state` (r_debug's r_brk), which it calls after
/// each change to the list of loaded libraries.
fn dl_debug_state(modules: &Modules, info: &tracer::ProcessInfo) -> Option<u64> {
    let base = info.auxv.interp_base?.0;
    let ld = modules.all().iter().find(|m| m.contains(base))?.clone();
    let binary = ld.binary()?;
    // By ELF symbol: the dynamic linker's whole symbol index is not needed for one
    // function, and building it would delay every launch.
    let f = binary
        .functions_by_symbol_name("_dl_debug_state")
        .ok()?
        .into_iter()
        .find_map(|f| f.entry())?;
    Some(ld.to_runtime(f))
}

fn resolve_program(program: &Path) -> Result<PathBuf> {
    if program.components().count() > 1 || program.is_file() {
        return Ok(program.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join(program);
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(Error::NoExecutable(program.display().to_string()))
}
