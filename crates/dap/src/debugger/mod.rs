//! The debugging state behind the requests, one file per request family (as BugStalker's
//! `yadap/session/*`): the debuggee (a session owned by the process manager, of which this
//! adapter is one view), the breakpoints the client asked for (kept across launches, so those
//! set before `launch` or before a `restart` take effect before the program runs), and the
//! ids handed out to the client.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use engine::{FrameId, ScopeKind, SessionEvent, SourceMap, StepKind, StopCause};
use procman::tracer::Tid;
use procman::{CoreDebug, DebugEvent, DebugSession, ProcessManager, ViewId};
use serde_json::{json, Value};
use wire::dap;

use crate::handles::{
    BreakpointIds, BreakpointKey, DapFrameId, FrameHandle, Handles, VarHandle, VarRef,
};
use crate::launch;
use crate::outbox::{drain_output, Failure, Outbox, OutputSender};
use crate::output::{self, Chunk};
use crate::types::{self, *};

/// setBreakpoints and the other breakpoint requests.
mod breakpoints;
/// Fork children in sessions of their own (`startDebugging`).
mod children;
/// A stripped program's debug information fetched from debuginfod before launch.
pub(crate) mod debuginfo;
/// The owner's events as DAP events.
mod events;
/// continue, step, pause.
mod execution;
/// `tandem/writeCore`: a core file of the paused program.
pub(crate) mod gcore;
/// A `setFunctionBreakpoints` held while the full index builds in the background.
pub(crate) mod hold;
/// threads, stacks, variables, evaluation, sources, modules.
mod inspect;
/// launch, attach, restart, disconnect, terminate.
mod lifecycle;
/// disassemble, readMemory, writeMemory.
mod memory;
/// A core file as a session (`attach`/`launch` with `coreFile`).
pub(crate) mod postmortem;
/// Children in this session (`followChildren: "same"`): in-process child adapters, relayed.
pub(crate) mod same;

pub(crate) use same::ChildMessage;

/// The largest `readMemory` answered in one response.
const MAX_READ: i64 = 16 << 20;

/// What the client said it supports (from `initialize`).
#[derive(Debug, Default)]
struct ClientCaps {
    run_in_terminal: bool,
    progress: bool,
    invalidated: bool,
    lines_start_at0: bool,
    columns_start_at0: bool,
    start_debugging: bool,
}

/// What a session shows: a program the process manager runs, or a core file it opened.
/// Both are read through `engine::Inspect`, so threads, stackTrace, scopes, variables,
/// evaluate, readMemory and disassemble have one handler each; running or changing the
/// program needs a live one.
#[derive(Clone)]
enum Target {
    Live(Arc<DebugSession>),
    Core(Arc<CoreDebug>),
}

impl Target {
    /// The state to read: the live engine or the core.
    fn inspect(&self) -> &dyn engine::Inspect {
        match self {
            Target::Live(s) => s.engine(),
            Target::Core(c) => c.engine(),
        }
    }

    /// The running program, for what reads are not: run control, breakpoints, writes.
    fn live(&self) -> Result<&Arc<DebugSession>, Failure> {
        match self {
            Target::Live(s) => Ok(s),
            Target::Core(_) => Err(Failure(
                "not possible on a core file (the program is not running)".into(),
            )),
        }
    }

    /// The process: the live one, or the one that wrote the core.
    fn pid(&self) -> procman::tracer::Pid {
        match self {
            Target::Live(s) => s.pid(),
            Target::Core(c) => c.pid(),
        }
    }

    /// Whether the state can change under a view (a live program that runs).
    fn is_stopped(&self) -> bool {
        match self {
            Target::Live(s) => s.engine().is_stopped(),
            Target::Core(_) => true,
        }
    }
}

/// The program being debugged, or the core being inspected.
struct Debuggee {
    /// Owned by the process manager; this adapter is one of its views.
    session: Target,
    events: Receiver<DebugEvent>,
    launched: bool,
    stop_on_entry: bool,
    /// configurationDone let it run (or report its entry stop).
    started: bool,
    source_map: SourceMap,
    /// The thread of the last stop.
    focus: Option<Tid>,
    /// Stacks unwound since the last stop.
    stacks: HashMap<Tid, Vec<(engine::Frame, DapFrameId)>>,
    /// The thread list as last answered (ids and names, read from /proc), until the
    /// program runs again or a thread starts or ends.
    listed: Option<Vec<(i64, String)>>,
    /// What the function just stepped out of returned.
    return_value: Option<engine::Value>,
    /// The last signal stop: thread, signal.
    signal: Option<(Tid, i32)>,
    modules: Vec<engine::ModuleInfo>,
    /// Output streams still open.
    open_streams: usize,
    /// Flush requests for the output readers (see `output.rs`), asked at every stop.
    flushers: Vec<output::Flusher>,
    /// The program's stdin when the debug console writes to it (`> text` in the REPL).
    stdin: Option<std::fs::File>,
}

pub struct Debugger {
    out: Arc<Outbox>,
    manager: Arc<ProcessManager>,
    /// This adapter as a view of the sessions it drives.
    view: ViewId,
    output_tx: OutputSender,
    never: Receiver<DebugEvent>,
    client: ClientCaps,
    /// Events to send after the current response.
    after: Vec<(&'static str, Value)>,
    debuggee: Option<Debuggee>,
    configured: bool,
    handles: Handles,
    ids: BreakpointIds,
    source_bps: BTreeMap<PathBuf, (Source, Vec<types::SourceBreakpoint>)>,
    function_bps: Vec<types::FunctionBreakpoint>,
    instruction_bps: Vec<types::InstructionBreakpoint>,
    data_bps: Vec<types::DataBreakpoint>,
    signal_filters: Option<Vec<String>>,
    launch_args: Option<LaunchArguments>,
    progress: u64,
    /// The progress shown while the program's symbol index builds in the background.
    indexing: Option<String>,
    /// The `runInTerminal` request in flight, and how to give up on its terminal.
    terminal_request: Option<(i64, Arc<std::sync::atomic::AtomicBool>)>,
    /// A launch waiting for its program's debug information (debuginfod).
    fetcher: debuginfo::Fetcher,
    /// A `setFunctionBreakpoints` waiting for the program's name table.
    held_functions: Option<hold::HeldFunctions>,
    /// What happens to the program's children, and their `startDebugging`s in flight.
    children: children::Children,
    /// The adapters of the children debugged in this session.
    pub(crate) same: same::Same,
}

fn fail(e: impl std::fmt::Display) -> Failure {
    Failure(e.to_string())
}

impl Debugger {
    pub(crate) fn new(
        out: Arc<Outbox>,
        manager: Arc<ProcessManager>,
        output_tx: OutputSender,
    ) -> Debugger {
        Debugger {
            out,
            manager,
            view: ViewId::new(),
            output_tx,
            never: crossbeam_channel::never(),
            client: ClientCaps::default(),
            after: Vec::new(),
            debuggee: None,
            configured: false,
            handles: Handles::default(),
            ids: BreakpointIds::default(),
            source_bps: BTreeMap::new(),
            function_bps: Vec::new(),
            instruction_bps: Vec::new(),
            data_bps: Vec::new(),
            signal_filters: None,
            launch_args: None,
            progress: 0,
            indexing: None,
            terminal_request: None,
            fetcher: debuginfo::Fetcher::default(),
            held_functions: None,
            same: same::Same::default(),
            children: children::Children::default(),
        }
    }

    /// Hands out frame ids and variables references in `lo..=hi` only (the adapter of a
    /// child process in its parent's session).
    pub(crate) fn use_ids(&mut self, lo: i64, hi: i64) {
        self.handles = Handles::in_block(lo, hi);
    }

    pub(crate) fn set_client(&mut self, args: &InitializeArguments) {
        self.client = ClientCaps {
            run_in_terminal: args.supports_run_in_terminal_request == Some(true),
            progress: args.supports_progress_reporting == Some(true),
            invalidated: args.supports_invalidated_event == Some(true),
            lines_start_at0: args.lines_start_at1 == Some(false),
            columns_start_at0: args.columns_start_at1 == Some(false),
            start_debugging: args.supports_start_debugging_request == Some(true),
        };
    }

    /// The debuggee's event stream, or one that never delivers.
    pub(crate) fn events(&self) -> Receiver<DebugEvent> {
        self.debuggee
            .as_ref()
            .map_or_else(|| self.never.clone(), |d| d.events.clone())
    }

    fn after(&mut self, event: &'static str, body: Value) {
        self.after.push((event, body));
    }

    pub(crate) fn flush_after(&mut self) {
        for (event, body) in self.after.drain(..) {
            self.out.event(event, Some(body));
        }
    }

    fn console(&self, text: impl Into<String>) {
        let mut text = text.into();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        self.out.event(
            "output",
            Some(json!({"category": "console", "output": text})),
        );
    }

    // -------------------------------------------------------------- conversions

    fn line_out(&self, line: i64) -> i64 {
        if self.client.lines_start_at0 {
            line - 1
        } else {
            line
        }
    }

    fn line_in(&self, line: i64) -> i64 {
        if self.client.lines_start_at0 {
            line + 1
        } else {
            line
        }
    }

    fn column_out(&self, column: i64) -> i64 {
        if self.client.columns_start_at0 {
            (column - 1).max(0)
        } else {
            column
        }
    }

    fn debuggee(&self) -> Result<&Debuggee, Failure> {
        self.debuggee
            .as_ref()
            .ok_or_else(|| Failure("no program is being debugged".into()))
    }

    /// The running program (an error on a core file).
    fn live(&self) -> Result<&Arc<DebugSession>, Failure> {
        self.debuggee()?.session.live()
    }

    /// Whether a core file is being inspected.
    pub(crate) fn is_core(&self) -> bool {
        matches!(
            self.debuggee.as_ref().map(|d| &d.session),
            Some(Target::Core(_))
        )
    }

    fn local_source(&self, file: &Path) -> Source {
        let local = self
            .debuggee
            .as_ref()
            .map_or_else(|| file.to_path_buf(), |d| d.source_map.to_local(file));
        let exists = local.is_absolute() && local.is_file();
        Source {
            name: local.file_name().map(|n| n.to_string_lossy().into_owned()),
            path: Some(local.display().to_string()),
            source_reference: None,
            presentation_hint: (!exists).then(|| "deemphasize".to_string()),
        }
    }
}

fn module(m: &engine::ModuleInfo) -> Module {
    Module {
        id: m.path.display().to_string(),
        name: m.path.file_name().map_or_else(
            || m.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
        path: m.path.display().to_string(),
        is_user_code: m.main || !engine::modules::is_system(&m.path),
        symbol_status: None,
        symbol_file_path: None,
        address_range: format!("{:#x}-{:#x}", m.start, m.end),
    }
}

fn module_json(m: &engine::ModuleInfo) -> Value {
    serde_json::to_value(module(m)).unwrap_or(Value::Null)
}

fn access_name(a: engine::DataAccess) -> &'static str {
    match a {
        engine::DataAccess::Read => "read",
        engine::DataAccess::Write => "write",
        _ => "readWrite",
    }
}

/// An address written as `0x…` (or decimal).
fn parse_address(text: &str) -> Result<u64, Failure> {
    let t = text.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse::<u64>(),
    };
    parsed.map_err(|_| Failure(format!("'{text}' is not a memory reference")))
}

/// The expression for a variable of a scope (`None` when it cannot be named).
fn scope_evaluate_name(name: &str, kind: ScopeKind) -> Option<String> {
    if name.contains(' ') || name.is_empty() {
        // "x (shadowed)", "f returned": not reachable by name.
        return None;
    }
    Some(match kind {
        ScopeKind::Registers => format!("${name}"),
        _ => name.to_string(),
    })
}

/// The expression for a child of the value `parent` (`[3]`, `*p`, or a member).
fn child_evaluate_name(parent: &str, child: &str) -> Option<String> {
    let p = wrap(parent);
    if child.starts_with('[') {
        Some(format!("{p}{child}"))
    } else if child.starts_with('*') {
        Some(format!("*{p}"))
    } else if child.is_empty() || child.contains(' ') {
        None
    } else {
        Some(format!("{p}.{child}"))
    }
}

/// `parent` as the operand of a postfix operator: parenthesised unless it is a plain
/// chain of names, members and subscripts.
fn wrap(parent: &str) -> String {
    let plain = !parent.is_empty()
        && !parent.starts_with(['*', '&', '(', '-', '!', '~'])
        && parent
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '[' | ']' | '>' | '-' | '$'))
        && !parent.contains("--");
    if plain {
        parent.to_string()
    } else {
        format!("({parent})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluate_names_compose() {
        assert_eq!(child_evaluate_name("a", "[3]").as_deref(), Some("a[3]"));
        assert_eq!(child_evaluate_name("p", "*p").as_deref(), Some("*p"));
        assert_eq!(child_evaluate_name("*p", "x").as_deref(), Some("(*p).x"));
        assert_eq!(child_evaluate_name("s.in", "v").as_deref(), Some("s.in.v"));
        assert_eq!(child_evaluate_name("p->q", "v").as_deref(), Some("p->q.v"));
        assert_eq!(
            child_evaluate_name("a - b", "v").as_deref(),
            Some("(a - b).v")
        );
        assert_eq!(child_evaluate_name("s", "").as_deref(), None);
        assert_eq!(scope_evaluate_name("x (shadowed)", ScopeKind::Locals), None);
        assert_eq!(
            scope_evaluate_name("rax", ScopeKind::Registers).as_deref(),
            Some("$rax")
        );
    }

    #[test]
    fn addresses_parse() {
        assert_eq!(parse_address("0x10").ok(), Some(16));
        assert_eq!(parse_address(" 42 ").ok(), Some(42));
        assert!(parse_address("main").is_err());
    }
}
