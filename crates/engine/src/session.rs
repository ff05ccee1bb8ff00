//! A debugging session: one launched process, its modules, breakpoints, stops, frames
//! and values. Everything that touches the process runs on the tracer thread, either
//! in the event sink (hits, steps) or in closures sent through the tracer handle.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use symbols::{Binary, Line, LoadBias, RuntimeAddr, SourceMap};
use tracer::{Event, Pid, Tid, Tracer, TracerHandle};

use crate::breakpoints::{
    parse_log, Bp, BpKey, BreakpointStatus, FunctionBreakpoint, HitCondition, HitSite,
    InstructionBreakpoint, LineHits, LogPart, SourceBreakpoint,
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
pub(crate) use disasm::disassemble_in;
/// The expression environment of a frame, or of the globals without one.
mod env;
pub use complete::{Completion, CompletionKind};
/// Exceptions and panics as stop causes.
mod exceptions;
/// Which signals stop, and what the last one was.
mod signals;
pub use exceptions::{ExceptionInfo, ExceptionStop};
/// The background index and what waits for it.
mod index;
/// What runs on the tracer thread: the state that decides about stops, and the handling of
/// each tracer event.
mod route;
pub use route::EventRoute;
mod tracer_side;
use tracer_side::*;
/// Breakpoints: set, resolved, installed and enabled.
mod breakpoints;
/// Inspection of a stopped process: memory, modules, stack traces, variables, evaluate.
mod inspect;
/// Restarting a frame in a recording: back to its function's entry.
mod restart;
mod reverse;
/// Step into the call you choose: the calls of the rest of a line, and the step into one.
mod targets;
pub(crate) use inspect::{frame_variables_in, render_result};
pub use targets::StepInTarget;

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
    /// Where the program's separate debug information is looked for.
    pub debug_info: crate::DebugInfoOptions,
    /// Hand every child the program forks over to a session of its own
    /// ([`SessionEvent::ChildForked`]) instead of detaching it.
    pub follow_children: bool,
    /// Record from the first instruction, so the session can go back in time
    /// ([`Session::reverse_continue_then`], [`Session::step_back_then`]; docs/reverse.md).
    pub record: bool,
}

/// How to attach ([`Session::attach_with`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct AttachOptions {
    /// The process is a fork child another session handed over
    /// ([`SessionEvent::ChildForked`]): it waits parked (`tracer::park`), ended on attach.
    pub handed_over: bool,
    /// It is a vfork child that has not exec'd yet: its memory is its parent's, so its
    /// breakpoints are planted only once it execs.
    pub vfork_child: bool,
    /// Hand the children it forks over too.
    pub follow_children: bool,
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
    /// Data breakpoints on a local, a parameter or a register ended with their frame
    /// (it returned, or was left by `longjmp` or an exception) and were deleted, as gdb
    /// deletes such watchpoints and stops ([`SessionEvent::WatchScopeEnded`] came
    /// first). Going back, the point shown is where the frame began: the call in its
    /// caller.
    WatchScope(Vec<BreakpointId>),
    /// A frame was restarted in a recording ([`Session::restart_frame_then`]): the
    /// process shown is at the start of that function invocation, as it was then.
    Restart,
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
    /// A data breakpoint's frame is gone ([`StopCause::WatchScope`]): the breakpoint
    /// is deleted, its id no longer set (gdb's "Watchpoint N deleted because the program
    /// has left the block in which its expression is valid", see
    /// [`crate::watch::scope_ended_message`]).
    WatchScopeEnded(BreakpointId),
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
    /// The process executed a new program (its symbols are loaded, breakpoints resolved
    /// again in it); it runs on.
    Executed {
        /// The new program.
        program: PathBuf,
    },
    /// The program forked (or vforked) and the child was handed over: freed of every
    /// breakpoint and patch, untraced, waiting parked (`tracer::park`) for a session to
    /// attach with [`AttachOptions::handed_over`] (or for `tracer::park::free`, which
    /// lets it run free). Only with [`LaunchOptions::follow_children`] / [`AttachOptions`].
    ChildForked {
        /// The new process.
        pid: Pid,
        /// Whether it was a vfork (its memory is the parent's until it execs).
        vfork: bool,
    },
    /// The program forked and the child was detached (not followed): freed of every
    /// breakpoint and patch, it runs without the debugger.
    ChildDetached {
        /// The new process.
        pid: Pid,
    },
    /// The program's full symbol index is being built in the background: `done` of
    /// `total` units (`done == total` once, at the end). No request waits for it;
    /// function breakpoints gain their inlined copies when it ends.
    Indexing {
        /// Units indexed so far.
        done: usize,
        /// Units in the program.
        total: usize,
    },
}

fn fork_policy(follow: bool) -> tracer::ForkPolicy {
    if follow {
        tracer::ForkPolicy::Follow
    } else {
        tracer::ForkPolicy::Detach
    }
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

impl ModuleInfo {
    /// How front-ends see a mapped module.
    pub(crate) fn of(m: &crate::modules::Module) -> ModuleInfo {
        ModuleInfo {
            path: m.path.clone(),
            bias: m.bias.0,
            start: m.start,
            end: m.end,
            main: m.main,
        }
    }
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

// ------------------------------------------------------------------ session

#[derive(Default)]
struct Tables {
    frames: HashMap<FrameId, FrameData>,
    nodes: HashMap<u64, Node>,
    next_ref: u64,
    /// Step-in targets listed at this stop, by id.
    targets: HashMap<u64, targets::TargetEntry>,
    /// The last step-in target id given out (ids are never reused, so a stale one is
    /// recognised).
    next_target: u64,
}

/// One debugged process. Methods are called from any one thread (the front-end's);
/// events arrive on [`Session::events`].
pub struct Session {
    /// Shared only with the background index thread, which holds it weakly: dropping
    /// the session still ends it.
    handle: Arc<TracerHandle>,
    core: Arc<Mutex<Core>>,
    events: Receiver<SessionEvent>,
    route: route::EventTx,
    main: Arc<Binary>,
    pid: Pid,
    source_map: SourceMap,
    tables: Mutex<Tables>,
    frame_ids: Arc<AtomicU64>,
    stdio: Mutex<Option<tracer::Stdio>>,
    launched: bool,
    /// The main executable's name table, building in the background (`session/index.rs`).
    index: Arc<index::IndexState>,
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
            fork_policy: fork_policy(options.follow_children),
            record: options.record,
            ..Default::default()
        };
        let open = program.clone();
        let debug = options.debug_info.open_options();
        Session::start(program, &open, &debug, options.source_map, move |sink| {
            let (handle, launch) = tracer::spawn_launch(config, sink)?;
            Ok((handle, Some(launch.stdio)))
        })
    }

    /// Attaches to a running process and waits until it is stopped. Ending the
    /// session detaches (breakpoints removed, the process keeps running).
    /// A process in another mount namespace (a container) is read through /proc/PID/exe
    /// and /proc/PID/root: nothing needs to be installed in the container.
    pub fn attach(pid: Pid, source_map: SourceMap) -> Result<Session> {
        Session::attach_with(pid, source_map, AttachOptions::default())
    }

    /// [`Session::attach`] with options: taking over a fork child another session handed
    /// over, following the children of the process.
    pub fn attach_with(pid: Pid, source_map: SourceMap, options: AttachOptions) -> Result<Session> {
        let program = tracer::procfs::exe_of(pid)
            .ok_or_else(|| Error::NoExecutable(format!("/proc/{pid}/exe")))?;
        let open = crate::modules::main_executable(pid, &program);
        // A front-end downloads from debuginfod first if it wants to (the attach must
        // not wait on a network it cannot cancel): the cache only.
        let debug = crate::DebugInfoOptions {
            debuginfod: crate::Debuginfod::CacheOnly,
            ..Default::default()
        }
        .open_options();
        Session::start(program, &open, &debug, source_map, move |sink| {
            let config = tracer::AttachConfig {
                fork_policy: fork_policy(options.follow_children),
                continue_job_stop: options.handed_over,
                vfork_child: options.vfork_child,
            };
            let handle = tracer::spawn_attach(pid, config, sink)?;
            Ok((handle, None))
        })
    }

    /// `program` is the executable's path as the process sees it; `open` is where tandem
    /// reads it.
    fn start(
        program: PathBuf,
        open: &Path,
        debug: &symbols::OpenOptions,
        source_map: SourceMap,
        spawn: impl FnOnce(tracer::EventSink) -> Result<(TracerHandle, Option<tracer::Stdio>)>,
    ) -> Result<Session> {
        let main = Arc::new(Binary::open_with(open, debug)?);
        let enums = Arc::new(Enumerators::new(main.clone()));
        let (tx, rx) = route::EventTx::channel();
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
        // A skeleton unit whose .dwo is nowhere: its lines still work, its DIEs do not.
        notes.extend(main.missing_split_units().iter().map(|m| {
            format!(
                "warning: split DWARF file {} not found{}: its functions, variables and types are not available\n",
                m.dwo.display(),
                m.unit_name
                    .as_ref()
                    .map(|n| format!(" (unit {n})"))
                    .unwrap_or_default()
            )
        }));
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
            stop_at_user_bp: None,
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
            recording_end_told: false,
        }));
        let sink_core = core.clone();
        let sink: tracer::EventSink = Box::new(move |t: &mut Tracer, ev: Event| {
            let mut c = lock(&sink_core);
            c.on_event(t, ev);
            if std::mem::take(&mut c.stop_shown) && !c.exited {
                c.end_gone_watches(t);
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
                let ok = t.insert_breakpoint(RuntimeAddr(hook)).is_ok();
                if ok {
                    lock(&hook_core).dl_hook = Some(hook);
                }
                ok
            })?;
            if !planted {
                tracing::warn!("cannot watch library loads at {hook:#x}");
            }
        }
        let handle = Arc::new(handle);
        let session = Session {
            handle,
            core,
            events: rx,
            route: notes_tx.clone(),
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
            index: Arc::default(),
        };
        // The first stop (entry point or attach). What the session said before it (a
        // unit of the program found unreadable at that stop) is said again after, for
        // whoever reads the events: the user must hear of it.
        let deadline = Instant::now() + LAUNCH_TIMEOUT;
        let mut said = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match session.events.recv_timeout(left) {
                Ok(SessionEvent::Stopped(_)) => break,
                Ok(SessionEvent::Exited { .. } | SessionEvent::Signaled { .. }) => {
                    return Err(Error::Exited)
                }
                Ok(SessionEvent::Output(text)) => said.push(text),
                Ok(_) => continue,
                Err(_) => return Err(Error::Timeout),
            }
        }
        for note in said.into_iter().chain(notes) {
            let _ = notes_tx.send(SessionEvent::Output(note));
        }
        index::start(
            session.main.clone(),
            Arc::downgrade(&session.handle),
            Arc::downgrade(&session.core),
            notes_tx,
            session.index.clone(),
        );
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

    /// Hands every event to `route` from now on, on the thread that produces it (the
    /// engine's thread, mostly), instead of queueing it for [`Session::events`]; what
    /// is queued already goes first, in order. `route` must not call this session or
    /// wait for a thread that does: it runs where the session's own work waits on it.
    pub fn route_events(&self, route: EventRoute) {
        self.route.install(&self.events, route);
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

    fn clear_tables(&self) {
        let mut t = lock(&self.tables);
        t.frames.clear();
        t.nodes.clear();
        t.targets.clear();
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
        self.resume_then(|| {})
    }

    /// [`Session::resume`], calling `then` on the engine's thread once the program
    /// runs, before any event the run leads to: an owner publishing "resumed" there
    /// orders it before the stop for every view. `then` must not call the session.
    pub fn resume_then(&self, then: impl FnOnce() + Send + 'static) -> Result<()> {
        self.check_stopped()?;
        self.clear_tables();
        let core = self.core.clone();
        self.handle.call(move |t: &mut Tracer| -> Result<()> {
            let res = resume_on_tracer(&core, t);
            if res.is_ok() {
                then();
            }
            res
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
        self.step_then(tid, kind, || {})
    }

    /// [`Session::step`], calling `then` on the engine's thread once the step has
    /// started, before its stop (as [`Session::resume_then`]).
    pub fn step_then(
        &self,
        tid: Tid,
        kind: StepKind,
        then: impl FnOnce() + Send + 'static,
    ) -> Result<()> {
        self.check_stopped()?;
        self.clear_tables();
        let core = self.core.clone();
        self.handle.call(move |t: &mut Tracer| -> Result<()> {
            let res = step_on_tracer(&core, t, tid, kind, None);
            if res.is_ok() {
                then();
            }
            res
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
}

/// The tracer-thread half of [`Session::resume`].
fn resume_on_tracer(core: &Mutex<Core>, t: &mut Tracer) -> Result<()> {
    let mut c = lock(core);
    c.clear_step(t);
    c.accelerate_pending(t);
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
}

/// The tracer-thread half of [`Session::step`].
fn step_on_tracer(
    core: &Mutex<Core>,
    t: &mut Tracer,
    tid: Tid,
    kind: StepKind,
    into: Option<targets::Into>,
) -> Result<()> {
    let mut c = lock(core);
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
        // At the chosen call already: the first single-step enters it.
        into_call: into.filter(|i| i.call != pc).map(|i| (i.call, i.jump)),
        enter_jump: into.is_some_and(|i| i.call == pc && i.jump),
    };
    c.running = true;
    match kind {
        StepKind::Out => {
            // Rebuilt tail-call frames are skipped: the return goes to the physical caller.
            let caller = frames
                .iter()
                .find(|f| f.physical == 1 && !f.frame.tail_call);
            let (Some(cfa), Some(caller)) = (cfa, caller) else {
                c.running = false;
                return Err(Error::Eval("cannot find the caller of this frame".into()));
            };
            let ra = caller.frame.pc.0;
            plan.temp = Some((ra, Some(cfa)));
            t.insert_breakpoint(RuntimeAddr(ra))?;
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

pub(crate) fn resolve_program(program: &Path) -> Result<PathBuf> {
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
