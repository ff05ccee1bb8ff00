//! Every call the MCP server makes into debug sessions, behind one narrow type: [`Host`].
//!
//! The host is one view of procman's session owner ([`procman::DebugSession`]), with a
//! [`ViewId`] of its own: it starts sessions through the shared [`ProcessManager`], reads
//! each session's state and events from a subscription (never the engine's own event
//! stream: the owner's pump is its only consumer), and runs, steps, pauses and ends them
//! through the owner, which tells every other view (an editor's debug adapter sees
//! `continued`/`stopped` for the agent's run control). Sessions other views started are
//! found in the manager by their id and driven the same way, except that ending one only
//! lets go of it (docs/agents.md, "Who drives a session"). The rest of the crate sees only
//! plain types ([`RunState`], [`FrameReport`], [`ValueReport`], …) and session ids
//! (the owner's [`procman::DebugId`]s, stable for the process's life).
//!
//! `run.rs` has starting, run control and breakpoints; `reports.rs` turns stops, frames
//! and values into reports; `output.rs` keeps what the program writes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use procman::tracer::Pid;
use procman::{DebugId, DebugSession, DebugState, EndMode, ProcessManager, ViewId};

mod output;
mod reports;
mod run;

use output::Output;

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
/// Output kept per session this host started (the oldest bytes are dropped first).
const OUTPUT_KEPT: usize = 1 << 20;

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
    /// Record from the first instruction, so the session can go back in time.
    pub record: bool,
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
    /// Whether this server started it (else another view did: an editor's debug
    /// adapter, another agent).
    pub own: bool,
    /// The session of the process that forked this one, when it is being debugged too
    /// (a child followed in a session of its own).
    pub parent: Option<u64>,
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
#[derive(Clone, Debug)]
pub enum Step {
    Over,
    In,
    Out,
    /// Into one call of the current line: the function's name and which of its calls
    /// on the line (1 = the first the program makes).
    Into(String, u32),
}

/// A session this host started: it reads the program's output itself.
struct Own {
    session: Arc<DebugSession>,
    program: String,
    output: Arc<Output>,
}

/// A session as one call sees it.
struct Entry {
    id: u64,
    session: Arc<DebugSession>,
    /// Set when this host started the session.
    own: Option<Arc<Own>>,
}

/// The breakpoints this host set in one session, so that a new set replaces its own and
/// nobody else's.
#[derive(Default)]
struct AgentBreakpoints {
    files: BTreeSet<PathBuf>,
    functions: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One view of the process's debug sessions: those it starts, and every other one the
/// process manager has.
pub struct Host {
    manager: Arc<ProcessManager>,
    view: ViewId,
    own: Mutex<BTreeMap<u64, Arc<Own>>>,
    breakpoints: Mutex<BTreeMap<u64, AgentBreakpoints>>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("view", &self.view)
            .finish_non_exhaustive()
    }
}

impl Host {
    /// A host starting its sessions on `manager` (which ends them with tandem), and
    /// seeing every other session of it.
    pub fn new(manager: Arc<ProcessManager>) -> Host {
        Host {
            manager,
            view: ViewId::new(),
            own: Mutex::new(BTreeMap::new()),
            breakpoints: Mutex::new(BTreeMap::new()),
        }
    }

    fn get(&self, id: u64) -> Result<Entry> {
        if let Some(own) = lock(&self.own).get(&id) {
            return Ok(Entry {
                id,
                session: own.session.clone(),
                own: Some(own.clone()),
            });
        }
        self.manager
            .debug_session(DebugId(id))
            .map(|session| Entry {
                id,
                session,
                own: None,
            })
            .ok_or_else(|| {
                HostError(format!(
                    "no session {id}: debug_sessions lists the sessions there are"
                ))
            })
    }

    /// Ends a session this host started (a launched program is killed, an attached one
    /// detached); of a session another view started, removes this host's breakpoints and
    /// lets go of it, leaving it as it is. The bool says which: true when the session
    /// goes on.
    pub fn end(&self, id: u64) -> Result<(RunState, bool)> {
        let entry = self.get(id)?;
        if entry.own.is_none() {
            self.clear_breakpoints(&entry);
            let state = self.report(&entry, entry.session.state());
            return Ok((state, true));
        }
        let result = entry.session.end(EndMode::Default);
        let state = self.report(&entry, entry.session.state());
        lock(&self.own).remove(&id);
        lock(&self.breakpoints).remove(&id);
        result.map_err(fail)?;
        Ok((state, false))
    }

    /// Every session: the ones this host started (until `debug_end`, also after they
    /// exited) and the live ones other views started.
    pub fn sessions(&self) -> Vec<SessionReport> {
        let own: Vec<Arc<Own>> = lock(&self.own).values().cloned().collect();
        let mut list: Vec<SessionReport> = own
            .iter()
            .map(|o| session_report(&o.session, o.program.clone(), true))
            .collect();
        for session in self.manager.debug_sessions() {
            if list.iter().any(|r| r.id == session.id().0) {
                continue;
            }
            let program = program_of(session.pid());
            list.push(session_report(&session, program, false));
        }
        // A child followed in a session of its own: its parent process is another
        // session's (read from /proc, so it holds whichever view opened either).
        let pids: Vec<(i32, u64)> = list.iter().map(|r| (r.pid, r.id)).collect();
        for r in &mut list {
            let ppid = procman::read_process(procman::tracer::Pid(r.pid)).map(|p| p.ppid.0);
            r.parent = pids
                .iter()
                .find(|(pid, id)| Some(*pid) == ppid && *id != r.id)
                .map(|(_, id)| *id);
        }
        list.sort_by_key(|r| r.id);
        list
    }

    /// Ends every session this host started and removes its breakpoints from the others
    /// (the server is going away).
    pub fn end_all(&self) {
        let own: Vec<Arc<Own>> = std::mem::take(&mut *lock(&self.own))
            .into_values()
            .collect();
        for o in &own {
            if let Err(e) = o.session.end(EndMode::Default) {
                tracing::debug!("ending session {}: {e}", o.session.id());
            }
        }
        let touched: Vec<u64> = lock(&self.breakpoints).keys().copied().collect();
        for id in touched {
            if let Some(session) = self.manager.debug_session(DebugId(id)) {
                let entry = Entry {
                    id,
                    session,
                    own: None,
                };
                self.clear_breakpoints(&entry);
            }
        }
        lock(&self.breakpoints).clear();
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.end_all();
    }
}

fn session_report(session: &DebugSession, program: String, own: bool) -> SessionReport {
    SessionReport {
        id: session.id().0,
        pid: session.pid().0,
        program,
        origin: if session.launched() {
            "launched"
        } else {
            "attached"
        },
        state: match session.state() {
            DebugState::Running => "running",
            DebugState::Stopped(_) => "stopped",
            DebugState::Ended { .. } => "exited",
        },
        own,
        parent: None,
    }
}

/// The executable of a process, for the listing.
fn program_of(pid: Pid) -> String {
    procman::tracer::procfs::exe_of(pid)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| format!("process {}", pid.0))
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
