//! The debugging state behind the requests: the debuggee (an engine session owned by the
//! process manager), the breakpoints the client asked for (kept across launches, so those
//! set before `launch` or before a `restart` take effect before the program runs), and the
//! ids handed out to the client.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use engine::{FrameId, ScopeKind, SessionEvent, SourceMap, StepKind, StopCause};
use procman::tracer::Tid;
use procman::{DebugEvent, DebugSession, ProcessManager, ViewId};
use serde_json::{json, Value};
use wire::dap;

use crate::handles::{
    BreakpointIds, BreakpointKey, DapFrameId, FrameHandle, Handles, VarHandle, VarRef,
};
use crate::launch;
use crate::output::{self, Chunk};
use crate::server::{drain_output, Failure, Outbox, OutputSender};
use crate::types::{self, *};

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
}

/// The program being debugged.
struct Debuggee {
    /// Owned by the process manager; this adapter is one of its views.
    session: Arc<DebugSession>,
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
    /// The `runInTerminal` request in flight, and how to give up on its terminal.
    terminal_request: Option<(i64, Arc<std::sync::atomic::AtomicBool>)>,
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
            terminal_request: None,
        }
    }

    pub(crate) fn set_client(&mut self, args: &InitializeArguments) {
        self.client = ClientCaps {
            run_in_terminal: args.supports_run_in_terminal_request == Some(true),
            progress: args.supports_progress_reporting == Some(true),
            invalidated: args.supports_invalidated_event == Some(true),
            lines_start_at0: args.lines_start_at1 == Some(false),
            columns_start_at0: args.columns_start_at1 == Some(false),
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

    // -------------------------------------------------------------- launch and attach

    pub(crate) fn launch(&mut self, args: LaunchArguments) -> Result<(), Failure> {
        if self.debuggee.is_some() {
            return Err("a program is already being debugged".into());
        }
        let mut options = launch::launch_options(&args)?;
        let terminal = match args.console.as_deref() {
            Some("integratedTerminal") => Some("integrated"),
            Some("externalTerminal") => Some("external"),
            _ => None,
        };
        let terminal = match terminal {
            Some(kind) if self.client.run_in_terminal => {
                options.stdio = procman::tracer::StdioMode::Pty;
                Some(kind)
            }
            Some(_) => {
                self.console(
                    "the client cannot run a terminal (no runInTerminal support): \
                     the program's output goes to the debug console",
                );
                None
            }
            None => None,
        };
        let source_map = options.source_map.clone();
        let program = options.program.display().to_string();
        let cwd = options.cwd.clone();
        let progress = self.progress_start("Launching", &program);
        let session = self.manager.launch_debug(options);
        self.progress_end(progress);
        let session = session.map_err(|e| format!("cannot launch {program}: {e}"))?;
        self.launch_args = Some(args.clone());
        let stdio = session.engine().take_stdio();
        self.start_debuggee(session, args.stop_on_entry, source_map, "launch");
        if let Some(stdio) = stdio {
            self.connect_output(stdio, terminal, &program, cwd);
        }
        Ok(())
    }

    /// Sends the program's output to the debug console, or to a terminal of the
    /// client's through `runInTerminal`.
    fn connect_output(
        &mut self,
        stdio: procman::tracer::Stdio,
        terminal: Option<&str>,
        program: &str,
        cwd: Option<PathBuf>,
    ) {
        let mut open_streams = 0;
        let mut flushers = Vec::new();
        let mut keep_stdin = None;
        match (terminal, stdio.stdin, stdio.stdout) {
            (Some(kind), Some(master), Some(out)) => {
                match crate::terminal::start(master, out, self.output_tx.clone()) {
                    Ok(t) => {
                        open_streams = 1;
                        let cwd = cwd
                            .or_else(|| std::env::current_dir().ok())
                            .map(|c| c.display().to_string())
                            .unwrap_or_else(|| "/".into());
                        let title = Path::new(program).file_name().map_or_else(
                            || program.to_string(),
                            |n| n.to_string_lossy().into_owned(),
                        );
                        let seq = self.out.request(
                            "runInTerminal",
                            json!({"kind": kind, "title": title, "cwd": cwd, "args": t.args}),
                        );
                        self.terminal_request = Some((seq, t.give_up));
                    }
                    Err(e) => self.console(format!("cannot set up the terminal: {e}")),
                }
            }
            (_, stdin, stdout) => {
                // The debug console writes to stdin (`> text`); a program reading it
                // from a terminal waits for a line, from a pipe it may read the end.
                keep_stdin = stdin;
                for (file, category) in [(stdout, "stdout"), (stdio.stderr, "stderr")] {
                    if let Some(file) = file {
                        if let Some(f) =
                            output::spawn_flushable_reader(file, category, self.output_tx.clone())
                        {
                            flushers.push(f);
                            open_streams += 1;
                        }
                    }
                }
            }
        }
        if let Some(d) = self.debuggee.as_mut() {
            d.open_streams = open_streams;
            d.flushers = flushers;
            d.stdin = keep_stdin;
        }
    }

    pub(crate) fn attach(&mut self, args: AttachArguments) -> Result<(), Failure> {
        if self.debuggee.is_some() {
            return Err("a program is already being debugged".into());
        }
        let pid = launch::attach_pid(&args)?;
        let source_map = launch::attach_source_map(&args, pid);
        let progress = self.progress_start("Attaching", &format!("process {}", pid.0));
        let session = self.manager.attach_debug(pid, source_map.clone());
        self.progress_end(progress);
        let session = session.map_err(|e| format!("cannot attach to process {}: {e}", pid.0))?;
        self.launch_args = None;
        self.start_debuggee(session, args.stop_on_entry, source_map, "attach");
        Ok(())
    }

    fn progress_start(&mut self, title: &str, message: &str) -> Option<String> {
        if !self.client.progress {
            return None;
        }
        self.progress += 1;
        let id = format!("tandem-{}", self.progress);
        self.out.event(
            "progressStart",
            Some(json!({"progressId": id, "title": title, "message": message})),
        );
        Some(id)
    }

    fn progress_end(&mut self, id: Option<String>) {
        if let Some(id) = id {
            self.out
                .event("progressEnd", Some(json!({"progressId": id})));
        }
    }

    fn start_debuggee(
        &mut self,
        session: Arc<DebugSession>,
        stop_on_entry: bool,
        source_map: SourceMap,
        method: &str,
    ) {
        let pid = session.pid();
        let row = procman::read_process(pid);
        let mut name = row
            .as_ref()
            .and_then(|r| r.exe.clone())
            .map_or_else(|| format!("process {}", pid.0), |e| e.display().to_string());
        // A process in another PID namespace: its pid there too.
        if let Some(inner) = row.as_ref().map(|r| r.inner_pid()) {
            if inner != pid {
                name = format!("{name} ({} in its container)", inner.0);
            }
        }
        self.ids.unbind_all();
        self.handles.invalidate();
        self.debuggee = Some(Debuggee {
            events: session.subscribe(),
            launched: session.launched(),
            session,
            stop_on_entry,
            started: false,
            source_map,
            focus: Some(Tid(pid.0)),
            stacks: HashMap::new(),
            listed: None,
            return_value: None,
            signal: None,
            modules: Vec::new(),
            open_streams: 0,
            flushers: Vec::new(),
            stdin: None,
        });
        self.after(
            "process",
            json!({
                "name": name,
                "systemProcessId": pid.0,
                "isLocalProcess": true,
                "startMethod": method,
                "pointerSize": 64,
            }),
        );
        if let Ok(threads) = self.debuggee().map(|d| d.session.engine().threads()) {
            for tid in threads.unwrap_or_default() {
                self.after("thread", json!({"reason": "started", "threadId": tid.0}));
            }
        }
        self.refresh_modules();
        self.apply_stored_breakpoints();
        if self.configured {
            self.start_running();
        }
    }

    /// After configuration: report the entry stop, or let the program run.
    fn start_running(&mut self) {
        let Some(d) = self.debuggee.as_mut() else {
            return;
        };
        if d.started {
            return;
        }
        d.started = true;
        if d.stop_on_entry {
            let tid = Tid(d.session.pid().0);
            d.focus = Some(tid);
            self.after(
                "stopped",
                json!({"reason": "entry", "threadId": tid.0, "allThreadsStopped": true}),
            );
        } else if let Err(e) = d.session.resume(self.view) {
            self.console(format!("cannot start the program: {e}"));
        } else {
            let tid = d.session.pid().0;
            self.after(
                "continued",
                json!({"threadId": tid, "allThreadsContinued": true}),
            );
        }
    }

    pub(crate) fn configuration_done(&mut self, _: Option<NoArguments>) -> Result<(), Failure> {
        self.configured = true;
        self.start_running();
        Ok(())
    }

    pub(crate) fn restart(&mut self, args: Option<RestartArguments>) -> Result<(), Failure> {
        let new_args = match args.and_then(|a| a.arguments) {
            Some(v) => Some(
                serde_json::from_value::<LaunchArguments>(v)
                    .map_err(|e| format!("invalid arguments for restart: {e}"))?,
            ),
            None => None,
        };
        let Some(args) = new_args.or_else(|| self.launch_args.clone()) else {
            return Err("restart works for launched programs; detach and attach again".into());
        };
        if let Some(d) = self.debuggee.take() {
            if !d.launched {
                self.debuggee = Some(d);
                return Err("restart works for launched programs; detach and attach again".into());
            }
            let _ = d.session.terminate();
        }
        self.configured = true;
        self.launch(args)
    }

    pub(crate) fn disconnect(&mut self, args: Option<DisconnectArguments>) -> Result<(), Failure> {
        let args = args.unwrap_or_default();
        if let Some(d) = self.debuggee.take() {
            let terminate = args.terminate_debuggee.unwrap_or(d.launched);
            let how = if terminate {
                procman::EndMode::Kill
            } else if args.suspend_debuggee == Some(true) {
                // Detached and then stopped: it waits, untraced, for SIGCONT.
                procman::EndMode::DetachStopped
            } else {
                procman::EndMode::Detach
            };
            d.session.end(how).map_err(fail)?;
        }
        Ok(())
    }

    pub(crate) fn terminate(&mut self, _: Option<TerminateArguments>) -> Result<(), Failure> {
        if let Some(d) = self.debuggee.take() {
            // An attached program is asked to end as the system asks it: detached,
            // then SIGTERM.
            let how = if d.launched {
                procman::EndMode::Kill
            } else {
                procman::EndMode::DetachTerminate
            };
            d.session.end(how).map_err(fail)?;
        }
        self.handles.invalidate();
        self.after("terminated", json!({}));
        Ok(())
    }

    pub(crate) fn on_client_response(&mut self, resp: dap::Response) {
        tracing::debug!(command = %resp.command, success = resp.success, "response from the client");
        if let Some((seq, give_up)) = &self.terminal_request {
            if resp.request_seq == *seq {
                if !resp.success {
                    give_up.store(true, std::sync::atomic::Ordering::Release);
                    self.console(format!(
                        "the client could not start the terminal ({}): the program's output goes to the debug console",
                        resp.message.as_deref().unwrap_or("no reason given")
                    ));
                }
                self.terminal_request = None;
            }
        }
    }

    // -------------------------------------------------------------- debuggee events

    pub(crate) fn on_output(&mut self, chunk: Chunk) {
        match chunk {
            Chunk::Text { category, text } => self.out.event(
                "output",
                Some(json!({"category": category, "output": text})),
            ),
            Chunk::End => {
                if let Some(d) = self.debuggee.as_mut() {
                    d.open_streams = d.open_streams.saturating_sub(1);
                }
            }
            Chunk::Flushed => {}
        }
    }

    /// Forwards everything the stopped program has written so far, before its `stopped`
    /// event: each reader reads what is waiting and answers (bounded wait).
    fn flush_output(&mut self, output_rx: &Receiver<Chunk>) {
        let asked = self
            .debuggee
            .as_ref()
            .map_or(0, |d| d.flushers.iter().filter(|f| f.request()).count());
        let deadline = Instant::now() + Duration::from_millis(200);
        let mut answered = 0;
        while answered < asked {
            let left = deadline.saturating_duration_since(Instant::now());
            match output_rx.recv_timeout(left) {
                Ok(Chunk::Flushed) => answered += 1,
                Ok(c @ Chunk::End) => {
                    answered += 1;
                    self.on_output(c);
                }
                Ok(c) => self.on_output(c),
                Err(_) => {
                    tracing::debug!("output flush: {answered} of {asked} readers answered");
                    break;
                }
            }
        }
    }

    /// An event of the session this adapter views.
    pub(crate) fn on_debuggee_event(&mut self, ev: DebugEvent, output_rx: &Receiver<Chunk>) {
        match ev {
            DebugEvent::Engine(ev) => self.on_engine_event(ev, output_rx),
            // Another view let the program run: what this client holds is stale.
            DebugEvent::Resumed { by } if by != self.view => {
                let tid = self
                    .debuggee
                    .as_ref()
                    .map(|d| d.focus.unwrap_or(Tid(d.session.pid().0)));
                self.before_run(tid);
                self.flush_after();
            }
            DebugEvent::Ended => self.on_debuggee_gone(),
            _ => {}
        }
    }

    fn on_engine_event(&mut self, ev: SessionEvent, output_rx: &Receiver<Chunk>) {
        tracing::debug!(?ev, "debuggee event");
        match ev {
            SessionEvent::Stopped(stop) => {
                self.flush_output(output_rx);
                self.on_stop(stop)
            }
            SessionEvent::Output(text) => self.out.event(
                "output",
                Some(json!({"category": "console", "output": text})),
            ),
            SessionEvent::BreakpointResolved(status) => {
                if let Some(bp) = self.breakpoint_from_status(&status) {
                    self.out.event(
                        "breakpoint",
                        Some(json!({"reason": "changed", "breakpoint": bp})),
                    );
                }
            }
            SessionEvent::ThreadStarted(tid) => {
                if let Some(d) = self.debuggee.as_mut() {
                    d.listed = None;
                }
                self.out.event(
                    "thread",
                    Some(json!({"reason": "started", "threadId": tid.0})),
                )
            }
            SessionEvent::ThreadExited(tid) => {
                if let Some(d) = self.debuggee.as_mut() {
                    d.listed = None;
                }
                self.out.event(
                    "thread",
                    Some(json!({"reason": "exited", "threadId": tid.0})),
                )
            }
            SessionEvent::Exited { code } => self.on_exit(code, None, output_rx),
            SessionEvent::Signaled { signo } => self.on_exit(128 + signo, Some(signo), output_rx),
            other => tracing::debug!(?other, "debuggee event ignored"),
        }
    }

    fn on_exit(&mut self, code: i32, signal: Option<i32>, output_rx: &Receiver<Chunk>) {
        let Some(mut d) = self.debuggee.take() else {
            return;
        };
        let out = self.out.clone();
        drain_output(output_rx, &mut d.open_streams, |c| {
            if let Chunk::Text { category, text } = c {
                out.event(
                    "output",
                    Some(json!({"category": category, "output": text})),
                );
            }
        });
        if let Some(signo) = signal {
            self.console(format!(
                "program terminated by signal {} ({})",
                engine::signals::signal_name(signo),
                engine::signals::signal_description(signo)
            ));
        } else {
            self.console(format!("program exited with code {code}"));
        }
        self.handles.invalidate();
        self.out.event("exited", Some(json!({"exitCode": code})));
        self.out.event("terminated", Some(json!({})));
    }

    pub(crate) fn on_debuggee_gone(&mut self) {
        if self.debuggee.take().is_some() {
            self.handles.invalidate();
            self.out.event("terminated", Some(json!({})));
        }
    }

    fn on_stop(&mut self, stop: engine::Stop) {
        self.handles.invalidate();
        let step = stop.cause == StopCause::Step;
        let mut body = json!({"threadId": stop.tid.0, "allThreadsStopped": true});
        let (reason, description) = match &stop.cause {
            StopCause::Entry => ("entry", None),
            StopCause::Attached => ("entry", Some("attached".to_string())),
            StopCause::Step => ("step", None),
            StopCause::Pause => ("pause", None),
            StopCause::Breakpoint(ids) => {
                let mut reason = "breakpoint";
                let mut dap_ids = Vec::new();
                for id in ids {
                    if let Some((dap_id, key)) = self.ids.of_engine(*id) {
                        dap_ids.push(dap_id.0);
                        if reason == "breakpoint" {
                            reason = key.stop_reason();
                        }
                    }
                }
                body["hitBreakpointIds"] = json!(dap_ids);
                (reason, None)
            }
            StopCause::DataBreakpoint(ids) => {
                let dap_ids: Vec<i64> = ids
                    .iter()
                    .filter_map(|id| self.ids.of_engine(*id).map(|(d, _)| d.0))
                    .collect();
                body["hitBreakpointIds"] = json!(dap_ids);
                ("data breakpoint", stop.description.clone())
            }
            StopCause::Exception { kind, message } => {
                let (text, what) = match kind {
                    engine::ExceptionStop::RustPanic => ("panic", "Rust panic"),
                    engine::ExceptionStop::CppThrow => ("throw", "C++ exception thrown"),
                    engine::ExceptionStop::CppCatch => ("catch", "C++ exception caught"),
                    _ => ("exception", "exception"),
                };
                body["text"] = json!(text);
                (
                    "exception",
                    Some(match stop.description.clone().or_else(|| message.clone()) {
                        Some(m) => format!("{what}: {m}"),
                        None => what.to_string(),
                    }),
                )
            }
            StopCause::Signal(signo) => {
                body["text"] = json!(engine::signals::signal_name(*signo));
                (
                    "exception",
                    Some(stop.description.clone().unwrap_or_else(|| {
                        format!(
                            "{} ({})",
                            engine::signals::signal_name(*signo),
                            engine::signals::signal_description(*signo)
                        )
                    })),
                )
            }
            _ => ("pause", None),
        };
        body["reason"] = json!(reason);
        if let Some(description) = description {
            body["description"] = json!(description);
        }
        if let Some(d) = self.debuggee.as_mut() {
            d.focus = Some(stop.tid);
            d.stacks.clear();
            d.listed = None;
            d.return_value = stop.return_value.and_then(|r| r.value);
            d.signal = match stop.cause {
                StopCause::Signal(signo) => Some((stop.tid, signo)),
                _ => None,
            };
        }
        if !step {
            self.refresh_modules();
            self.flush_after();
        }
        self.out.event("stopped", Some(body));
    }

    /// Sends `module` events for the libraries loaded or unloaded since the last look.
    fn refresh_modules(&mut self) {
        let Some(d) = self.debuggee.as_mut() else {
            return;
        };
        let now = d.session.engine().modules();
        let before: HashSet<&PathBuf> = d.modules.iter().map(|m| &m.path).collect();
        let after_paths: HashSet<&PathBuf> = now.iter().map(|m| &m.path).collect();
        let mut events = Vec::new();
        for m in &now {
            if !before.contains(&m.path) {
                events.push(json!({"reason": "new", "module": module_json(m)}));
            }
        }
        for m in &d.modules {
            if !after_paths.contains(&m.path) {
                events.push(json!({"reason": "removed", "module": module_json(m)}));
            }
        }
        d.modules = now;
        for e in events {
            self.after("module", e);
        }
    }

    // -------------------------------------------------------------- breakpoints

    fn breakpoint_from_status(&mut self, status: &engine::BreakpointStatus) -> Option<Breakpoint> {
        let (id, key) = self.ids.of_engine(status.id)?.clone();
        let (source, line) = match &key {
            BreakpointKey::Line(file, line) => (
                self.source_bps
                    .get(file)
                    .map(|(s, _)| s.clone())
                    .or_else(|| Some(self.local_source(file))),
                status.line.map_or(*line, |l| i64::from(l.get())),
            ),
            _ => (
                status.file.as_deref().map(|f| self.local_source(f)),
                status.line.map_or(0, |l| i64::from(l.get())),
            ),
        };
        Some(Breakpoint {
            id: Some(id.0),
            verified: status.verified,
            message: status.message.clone(),
            source,
            line: (line > 0).then(|| self.line_out(line)),
            instruction_reference: status.addresses.first().map(|a| format!("{a:#x}")),
            reason: None,
        })
    }

    /// Records which engine breakpoint `key` became, and describes it for the client.
    fn bind_status(&mut self, st: &engine::BreakpointStatus, key: BreakpointKey) -> Breakpoint {
        self.ids.bind(st.id, &key);
        self.breakpoint_from_status(st)
            .unwrap_or_else(|| Breakpoint::unverified(st.message.clone()))
    }

    fn apply_stored_breakpoints(&mut self) {
        let files: Vec<PathBuf> = self.source_bps.keys().cloned().collect();
        let mut changed = Vec::new();
        for file in files {
            if let Ok(bps) = self.apply_source(&file) {
                changed.extend(bps);
            }
        }
        if !self.function_bps.is_empty() {
            if let Ok(bps) = self.apply_functions() {
                changed.extend(bps);
            }
        }
        if !self.instruction_bps.is_empty() {
            if let Ok(bps) = self.apply_instructions() {
                changed.extend(bps);
            }
        }
        if !self.data_bps.is_empty() {
            if let Ok(bps) = self.apply_data() {
                changed.extend(bps);
            }
        }
        if let Err(e) = self.apply_signal_filters() {
            self.console(format!("cannot set the signal filters: {}", e.0));
        }
        for bp in changed {
            self.after("breakpoint", json!({"reason": "changed", "breakpoint": bp}));
        }
    }

    fn pending(
        &mut self,
        key: BreakpointKey,
        source: Option<Source>,
        line: Option<i64>,
    ) -> Breakpoint {
        Breakpoint {
            id: Some(self.ids.id_for(&key).0),
            verified: false,
            message: Some("pending: resolved when the program starts".into()),
            source,
            line,
            instruction_reference: None,
            reason: Some("pending".into()),
        }
    }

    pub(crate) fn set_breakpoints(
        &mut self,
        args: SetBreakpointsArguments,
    ) -> Result<BreakpointsBody, Failure> {
        let Some(path) = args.source.path.clone().filter(|p| !p.is_empty()) else {
            return Err(
                "setBreakpoints needs a source path (tandem gives out no source references)".into(),
            );
        };
        let specs = match (args.breakpoints, args.lines) {
            (Some(b), _) => b,
            (None, Some(lines)) => lines
                .into_iter()
                .map(|line| types::SourceBreakpoint {
                    line,
                    column: None,
                    condition: None,
                    hit_condition: None,
                    log_message: None,
                })
                .collect(),
            (None, None) => Vec::new(),
        };
        let file = PathBuf::from(&path);
        self.source_bps
            .insert(file.clone(), (args.source.clone(), specs));
        let breakpoints = self.apply_source(&file)?;
        if self
            .source_bps
            .get(&file)
            .is_some_and(|(_, specs)| specs.is_empty())
        {
            self.source_bps.remove(&file);
        }
        Ok(BreakpointsBody { breakpoints })
    }

    fn apply_source(&mut self, file: &Path) -> Result<Vec<Breakpoint>, Failure> {
        let Some((source, specs)) = self.source_bps.get(file).cloned() else {
            return Ok(Vec::new());
        };
        let lines: Vec<i64> = specs.iter().map(|s| self.line_in(s.line)).collect();
        let Some(d) = self.debuggee.as_ref() else {
            return Ok(lines
                .iter()
                .map(|&line| {
                    self.pending(
                        BreakpointKey::Line(file.to_path_buf(), line),
                        Some(source.clone()),
                        (1..=i64::from(u32::MAX))
                            .contains(&line)
                            .then(|| self.line_out(line)),
                    )
                })
                .collect());
        };
        let engine_specs: Vec<engine::SourceBreakpoint> = specs
            .iter()
            .zip(&lines)
            .map(|(s, &line)| engine::SourceBreakpoint {
                line: u32::try_from(line).unwrap_or(0),
                condition: s.condition.clone(),
                hit_condition: s.hit_condition.clone(),
                log_message: s.log_message.clone(),
            })
            .collect();
        // The owner tells every view (the language server's hints) where they bound.
        let statuses = d
            .session
            .set_line_breakpoints(file, &engine_specs)
            .map_err(fail)?;
        Ok(statuses
            .iter()
            .zip(&lines)
            .map(|(st, &line)| {
                let id = self
                    .ids
                    .bind(st.id, &BreakpointKey::Line(file.to_path_buf(), line));
                let bound = st.line.map_or(line, |l| i64::from(l.get()));
                let message = if u32::try_from(line).map_or(true, |l| l == 0) {
                    Some(format!("line {} does not exist", self.line_out(line)))
                } else {
                    st.message.clone()
                };
                Breakpoint {
                    id: Some(id.0),
                    verified: st.verified,
                    message,
                    source: Some(source.clone()),
                    // A line the engine cannot take (past u32) is not echoed back.
                    line: (1..=i64::from(u32::MAX))
                        .contains(&bound)
                        .then(|| self.line_out(bound)),
                    instruction_reference: st.addresses.first().map(|a| format!("{a:#x}")),
                    reason: (!st.verified).then(|| "pending".to_string()),
                }
            })
            .collect())
    }

    pub(crate) fn set_function_breakpoints(
        &mut self,
        args: SetFunctionBreakpointsArguments,
    ) -> Result<BreakpointsBody, Failure> {
        self.function_bps = args.breakpoints;
        Ok(BreakpointsBody {
            breakpoints: self.apply_functions()?,
        })
    }

    fn apply_functions(&mut self) -> Result<Vec<Breakpoint>, Failure> {
        let specs = self.function_bps.clone();
        let Some(d) = self.debuggee.as_ref() else {
            return Ok(specs
                .iter()
                .map(|s| self.pending(BreakpointKey::Function(s.name.clone()), None, None))
                .collect());
        };
        let engine_specs: Vec<engine::FunctionBreakpoint> = specs
            .iter()
            .map(|s| engine::FunctionBreakpoint {
                name: s.name.trim().to_string(),
                condition: s.condition.clone(),
                hit_condition: s.hit_condition.clone(),
            })
            .collect();
        let statuses = d
            .session
            .engine()
            .set_function_breakpoints(&engine_specs)
            .map_err(fail)?;
        Ok(statuses
            .iter()
            .zip(&specs)
            .map(|(st, s)| self.bind_status(st, BreakpointKey::Function(s.name.clone())))
            .collect())
    }

    pub(crate) fn set_instruction_breakpoints(
        &mut self,
        args: SetInstructionBreakpointsArguments,
    ) -> Result<BreakpointsBody, Failure> {
        self.instruction_bps = args.breakpoints;
        Ok(BreakpointsBody {
            breakpoints: self.apply_instructions()?,
        })
    }

    fn apply_instructions(&mut self) -> Result<Vec<Breakpoint>, Failure> {
        let specs = self.instruction_bps.clone();
        let mut addrs = Vec::new();
        for s in &specs {
            let base = parse_address(&s.instruction_reference)?;
            addrs.push(base.wrapping_add_signed(s.offset.unwrap_or(0)));
        }
        let Some(d) = self.debuggee.as_ref() else {
            return Ok(addrs
                .iter()
                .map(|a| self.pending(BreakpointKey::Instruction(*a), None, None))
                .collect());
        };
        let statuses = d
            .session
            .engine()
            .set_instruction_breakpoints(&addrs)
            .map_err(fail)?;
        Ok(statuses
            .iter()
            .zip(&specs)
            .zip(&addrs)
            .map(|((st, spec), addr)| {
                let mut bp = self.bind_status(st, BreakpointKey::Instruction(*addr));
                bp.instruction_reference = Some(format!("{addr:#x}"));
                if spec.condition.is_some() || spec.hit_condition.is_some() {
                    bp.message = Some(
                        "conditions on instruction breakpoints are not supported: it always stops"
                            .into(),
                    );
                }
                bp
            })
            .collect())
    }

    pub(crate) fn set_exception_breakpoints(
        &mut self,
        args: SetExceptionBreakpointsArguments,
    ) -> Result<Option<BreakpointsBody>, Failure> {
        let mut filters = args.filters;
        filters.extend(
            args.filter_options
                .unwrap_or_default()
                .into_iter()
                .map(|o| o.filter_id),
        );
        let breakpoints = filters
            .iter()
            .map(|f| {
                let ok = crate::dispatch::filter(f).is_some();
                Breakpoint {
                    verified: ok,
                    ..Breakpoint::unverified(
                        (!ok).then(|| format!("unknown exception filter '{f}'")),
                    )
                }
            })
            .collect();
        self.signal_filters = Some(filters);
        self.apply_signal_filters()?;
        Ok(Some(BreakpointsBody { breakpoints }))
    }

    /// The signals that stop: the filters set, or the fatal ones by default.
    fn apply_signal_filters(&mut self) -> Result<(), Failure> {
        let Some(d) = self.debuggee.as_ref() else {
            return Ok(());
        };
        // Until the client sets filters, the defaults the capabilities announce apply;
        // once it does, its set replaces them (as VS Code expects: it sends the filters
        // marked `default` plus the ticked ones).
        let chosen: Vec<&crate::dispatch::Filter> = match &self.signal_filters {
            Some(ids) => ids
                .iter()
                .filter_map(|f| crate::dispatch::filter(f))
                .collect(),
            None => crate::dispatch::FILTERS
                .iter()
                .filter(|f| f.default)
                .collect(),
        };
        let signals: Vec<i32> = chosen
            .iter()
            .filter_map(|f| match f.event {
                crate::dispatch::FilterEvent::Signal(s) => Some(s),
                crate::dispatch::FilterEvent::Exception(_) => None,
            })
            .collect();
        d.session.engine().set_signal_stops(&signals).map_err(fail)?;
        let stops: Vec<engine::ExceptionStop> = chosen
            .iter()
            .filter_map(|f| match f.event {
                crate::dispatch::FilterEvent::Exception(k) => Some(k),
                crate::dispatch::FilterEvent::Signal(_) => None,
            })
            .collect();
        // Not planted yet (libstdc++ not loaded) is fine: the engine plants them when
        // the library loads.
        d.session.engine().set_exception_stops(&stops).map_err(fail)?;
        Ok(())
    }

    pub(crate) fn exception_info(
        &mut self,
        args: ExceptionInfoArguments,
    ) -> Result<ExceptionInfoBody, Failure> {
        let tid = self.thread(args.thread_id)?;
        if let Some(e) = self.debuggee()?.session.engine().last_exception(tid) {
            let id = match e.kind {
                engine::ExceptionStop::RustPanic => "rust-panic",
                engine::ExceptionStop::CppThrow => "cpp-throw",
                _ => "cpp-catch",
            };
            let description = match (&e.type_name, &e.message) {
                (Some(t), Some(m)) => format!("{t}: {m}"),
                (Some(t), None) => t.clone(),
                (None, Some(m)) => m.clone(),
                (None, None) => id.to_string(),
            };
            return Ok(ExceptionInfoBody {
                exception_id: id.into(),
                description: Some(description),
                break_mode: "always".into(),
                details: Some(ExceptionDetails {
                    message: e.message,
                    type_name: e.type_name,
                    evaluate_name: None,
                    stack_trace: None,
                }),
            });
        }
        let info = self
            .debuggee()?
            .session
            .engine()
            .exception_info(tid)
            .ok_or_else(|| {
                Failure(format!(
                    "thread {} did not stop for a signal",
                    args.thread_id
                ))
            })?;
        Ok(ExceptionInfoBody {
            exception_id: info.name.clone(),
            description: Some(info.description.clone()),
            break_mode: "always".into(),
            details: Some(ExceptionDetails {
                message: Some(info.description),
                type_name: Some(info.name),
                evaluate_name: None,
                stack_trace: None,
            }),
        })
    }

    // -------------------------------------------------------------- data breakpoints

    pub(crate) fn data_breakpoint_info(
        &mut self,
        args: DataBreakpointInfoArguments,
    ) -> Result<DataBreakpointInfoBody, Failure> {
        let unavailable = |why: String| DataBreakpointInfoBody {
            data_id: None,
            description: why,
            access_types: None,
            can_persist: None,
        };
        let Some(d) = self.debuggee.as_ref() else {
            return Ok(unavailable("no program is being debugged".into()));
        };
        let session = d.session.clone();
        let info = if args.as_address == Some(true) {
            let Ok(address) = parse_address(&args.name) else {
                return Ok(unavailable(format!("'{}' is not an address", args.name)));
            };
            let size = args.bytes.and_then(|b| u64::try_from(b).ok()).unwrap_or(8);
            session.engine().data_breakpoint_info_for_address(address, size)
        } else {
            let (frame, expression) = match args.variables_reference.filter(|r| *r > 0) {
                Some(r) => match self.var_handle(r)? {
                    VarHandle::Scope { frame, kind, .. } => {
                        match scope_evaluate_name(&args.name, kind) {
                            Some(e) if kind != ScopeKind::Registers => (Some(frame), e),
                            _ => {
                                return Ok(unavailable(format!("'{}' is not in memory", args.name)))
                            }
                        }
                    }
                    VarHandle::Value {
                        frame,
                        evaluate_name: Some(parent),
                        ..
                    } => match child_evaluate_name(&parent, &args.name) {
                        Some(e) => (frame, e),
                        None => {
                            return Ok(unavailable(format!("'{}' cannot be watched", args.name)))
                        }
                    },
                    VarHandle::Value { .. } => {
                        return Ok(unavailable(format!("'{}' cannot be watched", args.name)))
                    }
                },
                None => {
                    let frame = match args.frame_id {
                        Some(id) => Some(self.frame(id)?.frame),
                        None => self.eval_frame(None).ok(),
                    };
                    (frame, args.name.clone())
                }
            };
            session.engine().data_breakpoint_info(frame, &expression)
        };
        Ok(match info {
            Ok(info) => DataBreakpointInfoBody {
                data_id: Some(info.data_id()),
                description: info.description.clone(),
                access_types: Some(
                    info.access_types
                        .iter()
                        .map(|a| access_name(*a).to_string())
                        .collect(),
                ),
                can_persist: Some(false),
            },
            Err(e) => unavailable(e.to_string()),
        })
    }

    pub(crate) fn set_data_breakpoints(
        &mut self,
        args: SetDataBreakpointsArguments,
    ) -> Result<BreakpointsBody, Failure> {
        self.data_bps = args.breakpoints;
        Ok(BreakpointsBody {
            breakpoints: self.apply_data()?,
        })
    }

    fn apply_data(&mut self) -> Result<Vec<Breakpoint>, Failure> {
        let specs = self.data_bps.clone();
        let mut wanted = Vec::new();
        for s in &specs {
            let (address, size) = engine::watch::parse_data_id(&s.data_id).ok_or_else(|| {
                Failure(format!(
                    "'{}' is not a data id from dataBreakpointInfo",
                    s.data_id
                ))
            })?;
            let access = match s.access_type.as_deref() {
                Some("read") => engine::DataAccess::Read,
                Some("readWrite") => engine::DataAccess::ReadWrite,
                None | Some("write") => engine::DataAccess::Write,
                Some(other) => return Err(format!("unknown access type '{other}'").into()),
            };
            wanted.push(engine::DataBreakpoint {
                address,
                size,
                access,
                condition: s.condition.clone(),
                hit_condition: s.hit_condition.clone(),
            });
        }
        let keys: Vec<BreakpointKey> = specs
            .iter()
            .map(|s| {
                BreakpointKey::Data(format!(
                    "{}:{}",
                    s.data_id,
                    s.access_type.as_deref().unwrap_or("write")
                ))
            })
            .collect();
        let Some(d) = self.debuggee.as_ref() else {
            return Ok(keys
                .into_iter()
                .map(|k| self.pending(k, None, None))
                .collect());
        };
        let statuses = d.session.engine().set_data_breakpoints(&wanted).map_err(fail)?;
        Ok(statuses
            .iter()
            .zip(&keys)
            .map(|(st, key)| {
                let id = self.ids.bind(st.id, key);
                Breakpoint {
                    id: Some(id.0),
                    verified: st.verified,
                    message: st.message.clone(),
                    source: None,
                    line: None,
                    instruction_reference: None,
                    reason: None,
                }
            })
            .collect())
    }

    // -------------------------------------------------------------- code and sources

    pub(crate) fn disassemble(
        &mut self,
        args: DisassembleArguments,
    ) -> Result<DisassembleBody, Failure> {
        let base = parse_address(&args.memory_reference)?;
        let addr = base.wrapping_add_signed(args.offset.unwrap_or(0));
        let count = usize::try_from(args.instruction_count)
            .map_err(|_| Failure("instructionCount must not be negative".into()))?;
        if count > 100_000 {
            return Err("instructionCount is too large (at most 100000)".into());
        }
        let instructions = self
            .debuggee()?
            .session
            .engine()
            .disassemble(addr, args.instruction_offset.unwrap_or(0), count)
            .map_err(fail)?;
        let resolve = args.resolve_symbols != Some(false);
        let mut last_file: Option<PathBuf> = None;
        let mut out = Vec::with_capacity(instructions.len());
        for i in instructions {
            let location = match &i.file {
                Some(f) if last_file.as_ref() != Some(f) => Some(self.local_source(f)),
                _ => None,
            };
            if i.file.is_some() {
                last_file = i.file.clone();
            }
            out.push(DisassembledInstruction {
                address: format!("{:#x}", i.address),
                instruction_bytes: (!i.bytes.is_empty()).then(|| {
                    i.bytes
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                }),
                instruction: if i.invalid { "??".into() } else { i.text },
                symbol: if resolve { i.symbol } else { None },
                location,
                line: i.line.map(|l| self.line_out(i64::from(l.get()))),
                presentation_hint: i.invalid.then(|| "invalid".to_string()),
            });
        }
        Ok(DisassembleBody { instructions: out })
    }

    pub(crate) fn completions(
        &mut self,
        args: CompletionsArguments,
    ) -> Result<CompletionsBody, Failure> {
        let frame = match args.frame_id {
            Some(id) => Some(self.frame(id)?.frame),
            None => self.eval_frame(None).ok(),
        };
        // The text before the cursor; columns count UTF-16 code units.
        let column = if self.client.columns_start_at0 {
            args.column
        } else {
            args.column - 1
        };
        let units: Vec<u16> = args.text.encode_utf16().collect();
        let upto = usize::try_from(column.max(0)).unwrap_or(0).min(units.len());
        let prefix = String::from_utf16_lossy(&units[..upto]);
        let word: usize = prefix
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .map(char::len_utf16)
            .sum();
        let start = upto - word;
        let items = self.debuggee()?.session.engine().completions(frame, &prefix);
        Ok(CompletionsBody {
            targets: items
                .into_iter()
                .map(|c| CompletionItem {
                    label: c.label,
                    kind: Some(
                        match c.kind {
                            engine::CompletionKind::Variable => "variable",
                            engine::CompletionKind::Function => "function",
                            engine::CompletionKind::Type => "class",
                            engine::CompletionKind::Field => "field",
                        }
                        .to_string(),
                    ),
                    start: Some(if self.client.columns_start_at0 {
                        start as i64
                    } else {
                        start as i64 + 1
                    }),
                    length: Some(word as i64),
                })
                .collect(),
        })
    }

    pub(crate) fn loaded_sources(
        &mut self,
        _: Option<NoArguments>,
    ) -> Result<LoadedSourcesBody, Failure> {
        let Some(d) = self.debuggee.as_ref() else {
            return Ok(LoadedSourcesBody {
                sources: Vec::new(),
            });
        };
        let files = d.session.engine().sources();
        Ok(LoadedSourcesBody {
            sources: files.iter().map(|f| self.local_source(f)).collect(),
        })
    }

    pub(crate) fn breakpoint_locations(
        &mut self,
        args: BreakpointLocationsArguments,
    ) -> Result<BreakpointLocationsBody, Failure> {
        let Some(path) = args.source.path.as_deref() else {
            return Err("breakpointLocations needs a source path".into());
        };
        let first = self.line_in(args.line);
        let last = args.end_line.map_or(first, |l| self.line_in(l));
        let Some(d) = self.debuggee.as_ref() else {
            return Ok(BreakpointLocationsBody {
                breakpoints: Vec::new(),
            });
        };
        let lines = d.session.engine().breakpoint_lines(Path::new(path)).map_err(fail)?;
        Ok(BreakpointLocationsBody {
            breakpoints: lines
                .into_iter()
                .map(|l| i64::from(l.get()))
                .filter(|l| (first..=last).contains(l))
                .map(|line| BreakpointLocation {
                    line: self.line_out(line),
                })
                .collect(),
        })
    }

    // -------------------------------------------------------------- execution

    fn thread(&self, id: i64) -> Result<Tid, Failure> {
        i32::try_from(id)
            .ok()
            .filter(|t| *t > 0)
            .map(Tid)
            .ok_or_else(|| Failure(format!("unknown thread {id}")))
    }

    /// The program runs again (continue or a step of `tid`): ids given out are stale,
    /// and the client hears `continued` after the response.
    fn before_run(&mut self, tid: Option<Tid>) {
        if let Some(tid) = tid {
            self.after(
                "continued",
                json!({"threadId": tid.0, "allThreadsContinued": true}),
            );
        }
        self.handles.invalidate();
        if let Some(d) = self.debuggee.as_mut() {
            d.stacks.clear();
            d.listed = None;
            d.return_value = None;
            d.signal = None;
        }
    }

    pub(crate) fn continue_(&mut self, args: ContinueArguments) -> Result<ContinueBody, Failure> {
        self.debuggee()?
            .session
            .resume(self.view)
            .map_err(fail)?;
        let tid = i32::try_from(args.thread_id).ok().map(Tid);
        self.before_run(tid);
        Ok(ContinueBody {
            all_threads_continued: true,
        })
    }

    fn step(&mut self, args: StepArguments, kind: StepKind) -> Result<(), Failure> {
        let tid = self.thread(args.thread_id)?;
        let d = self.debuggee()?;
        let threads = d.session.engine().threads().map_err(fail)?;
        if !threads.contains(&tid) {
            return Err(format!("unknown thread {}", args.thread_id).into());
        }
        let kind = match (kind, args.granularity.as_deref()) {
            (StepKind::Out, _) => StepKind::Out,
            (_, Some("instruction")) => StepKind::Instruction,
            (k, _) => k,
        };
        d.session.step(tid, kind, self.view).map_err(fail)?;
        self.before_run(Some(tid));
        Ok(())
    }

    pub(crate) fn next(&mut self, args: StepArguments) -> Result<(), Failure> {
        self.step(args, StepKind::Over)
    }

    pub(crate) fn step_in(&mut self, args: StepArguments) -> Result<(), Failure> {
        self.step(args, StepKind::In)
    }

    pub(crate) fn step_out(&mut self, args: StepArguments) -> Result<(), Failure> {
        self.step(args, StepKind::Out)
    }

    pub(crate) fn pause(&mut self, args: PauseArguments) -> Result<(), Failure> {
        let tid = self.thread(args.thread_id)?;
        let d = self.debuggee()?;
        if !d.session.engine().threads().map_err(fail)?.contains(&tid) {
            return Err(format!("unknown thread {}", args.thread_id).into());
        }
        match d.session.pause() {
            Ok(()) => Ok(()),
            // Already stopped: nothing to do, as the specification asks.
            Err(procman::Error::Engine(engine::Error::Running)) => Ok(()),
            Err(e) => Err(fail(e)),
        }
    }

    // -------------------------------------------------------------- state

    pub(crate) fn threads(&mut self, _: Option<NoArguments>) -> Result<ThreadsBody, Failure> {
        let Some(d) = self.debuggee.as_mut() else {
            return Ok(ThreadsBody {
                threads: Vec::new(),
            });
        };
        if let Some(listed) = &d.listed {
            return Ok(ThreadsBody {
                threads: listed
                    .iter()
                    .map(|(id, name)| Thread {
                        id: *id,
                        name: name.clone(),
                    })
                    .collect(),
            });
        }
        let tids = d.session.engine().threads().map_err(fail)?;
        let pid = d.session.pid();
        let body = ThreadsBody {
            threads: tids
                .into_iter()
                .map(|tid| {
                    // A thread in a container also shows its id there: "main (1234, 7 in
                    // container)".
                    let ids = match procman::containers::ns_tid(pid, tid.0) {
                        Some(inner) if inner != tid.0 => {
                            format!("{}, {inner} in container", tid.0)
                        }
                        _ => tid.0.to_string(),
                    };
                    Thread {
                        id: i64::from(tid.0),
                        name: d
                            .session
                            .engine()
                            .thread_name(tid)
                            .map_or_else(|| format!("thread {ids}"), |n| format!("{n} ({ids})")),
                    }
                })
                .collect(),
        };
        // Kept only at a stop, where the list cannot change.
        if d.session.engine().is_stopped() {
            d.listed = Some(
                body.threads
                    .iter()
                    .map(|t| (t.id, t.name.clone()))
                    .collect(),
            );
        }
        Ok(body)
    }

    /// The frames of a thread's stack, unwound once per stop.
    fn frames_of(&mut self, tid: Tid) -> Result<Vec<(engine::Frame, DapFrameId)>, Failure> {
        let d = self
            .debuggee
            .as_mut()
            .ok_or_else(|| Failure("no program is being debugged".into()))?;
        if let Some(frames) = d.stacks.get(&tid) {
            return Ok(frames.clone());
        }
        let frames = d.session.engine().stack_trace(tid).map_err(fail)?;
        let with_ids: Vec<(engine::Frame, DapFrameId)> = frames
            .into_iter()
            .enumerate()
            .map(|(index, f)| {
                let id = self.handles.add_frame(FrameHandle {
                    frame: f.id,
                    tid,
                    index,
                });
                (f, id)
            })
            .collect();
        d.stacks.insert(tid, with_ids.clone());
        Ok(with_ids)
    }

    pub(crate) fn stack_trace(
        &mut self,
        args: StackTraceArguments,
    ) -> Result<StackTraceBody, Failure> {
        let tid = self.thread(args.thread_id)?;
        {
            let d = self.debuggee()?;
            if !d.session.engine().threads().map_err(fail)?.contains(&tid) {
                return Err(format!("unknown thread {}", args.thread_id).into());
            }
        }
        let frames = self.frames_of(tid)?;
        let total = frames.len();
        let start = usize::try_from(args.start_frame.unwrap_or(0).max(0)).unwrap_or(usize::MAX);
        let levels = match args.levels {
            Some(n) if n > 0 => usize::try_from(n).unwrap_or(usize::MAX),
            _ => usize::MAX,
        };
        let modules = self.debuggee()?.modules.clone();
        let stack_frames = frames
            .iter()
            .skip(start)
            .take(levels)
            .map(|(f, id)| self.stack_frame(f, *id, &modules))
            .collect();
        Ok(StackTraceBody {
            stack_frames,
            total_frames: total as i64,
        })
    }

    fn stack_frame(
        &self,
        f: &engine::Frame,
        id: DapFrameId,
        modules: &[engine::ModuleInfo],
    ) -> StackFrame {
        let pc = f.pc.0;
        let source = f.file.as_deref().map(|p| self.local_source(p));
        let line = f.line.map_or(0, |l| i64::from(l.get()));
        let has_source = source
            .as_ref()
            .is_some_and(|s| s.presentation_hint.is_none())
            && line > 0;
        let name = match &f.function {
            Some(n) => n.clone(),
            None => format!("{pc:#x}"),
        };
        let module = modules
            .iter()
            .find(|m| (m.start..m.end).contains(&pc))
            .map(|m| m.path.display().to_string());
        StackFrame {
            id: id.0,
            name,
            line: if line > 0 { self.line_out(line) } else { 0 },
            column: if line > 0 {
                self.column_out(f.column.map_or(1, |c| i64::from(c.get())))
            } else {
                0
            },
            source,
            instruction_pointer_reference: Some(format!("{pc:#x}")),
            module_id: module,
            presentation_hint: (!has_source).then(|| "subtle".to_string()),
        }
    }

    fn frame(&self, id: i64) -> Result<FrameHandle, Failure> {
        self.handles.frame(DapFrameId(id)).ok_or_else(|| {
            Failure(format!(
                "unknown frame id {id} (frames are valid until the program runs again)"
            ))
        })
    }

    pub(crate) fn scopes(&mut self, args: ScopesArguments) -> Result<ScopesBody, Failure> {
        let handle = self.frame(args.frame_id)?;
        let top = handle.index == 0 && self.debuggee()?.focus == Some(handle.tid);
        let scope = |h: &mut Handles, kind| {
            h.add_var(VarHandle::Scope {
                frame: handle.frame,
                kind,
                top,
            })
            .0
        };
        // (name, hint, kind, expensive): registers and a unit's statics are fetched
        // only when the client opens them.
        const SCOPES: [(&str, &str, ScopeKind, bool); 4] = [
            ("Locals", "locals", ScopeKind::Locals, false),
            ("Arguments", "arguments", ScopeKind::Arguments, false),
            ("Globals and statics", "globals", ScopeKind::Globals, true),
            ("Registers", "registers", ScopeKind::Registers, true),
        ];
        let scopes = SCOPES
            .iter()
            .map(|&(name, hint, kind, expensive)| Scope {
                name: name.into(),
                presentation_hint: Some(hint.into()),
                variables_reference: scope(&mut self.handles, kind),
                named_variables: (kind == ScopeKind::Registers).then_some(17),
                expensive,
            })
            .collect();
        Ok(ScopesBody { scopes })
    }

    fn var_handle(&self, reference: i64) -> Result<VarHandle, Failure> {
        self.handles.var(VarRef(reference)).cloned().ok_or_else(|| {
            Failure(format!(
                "unknown variables reference {reference} (values are valid until the program runs again)"
            ))
        })
    }

    /// A DAP variable for an engine value (a handle for its children when it has any).
    fn variable(
        &mut self,
        v: engine::Value,
        frame: Option<FrameId>,
        evaluate_name: Option<String>,
    ) -> Variable {
        let indexed = v.indexed;
        let reference = v.children.map_or(0, |c| {
            self.handles
                .add_var(VarHandle::Value {
                    value: c,
                    frame,
                    evaluate_name: evaluate_name.clone(),
                    indexed,
                })
                .0
        });
        let count = v.child_count.and_then(|c| i64::try_from(c).ok());
        Variable {
            name: v.name,
            value: v.rendered,
            type_name: (!v.type_name.is_empty()).then_some(v.type_name),
            evaluate_name,
            variables_reference: reference,
            named_variables: if reference != 0 && !indexed {
                count
            } else {
                None
            },
            indexed_variables: if reference != 0 && indexed {
                count
            } else {
                None
            },
            memory_reference: v.address.map(|a| format!("{a:#x}")),
        }
    }

    pub(crate) fn variables(&mut self, args: VariablesArguments) -> Result<VariablesBody, Failure> {
        let handle = self.var_handle(args.variables_reference)?;
        let start = u64::try_from(args.start.unwrap_or(0)).unwrap_or(0);
        let count = args
            .count
            .filter(|c| *c > 0)
            .and_then(|c| u64::try_from(c).ok());
        let d = self.debuggee()?;
        let session = d.session.clone();
        let variables = match handle {
            VarHandle::Scope { frame, kind, top } => {
                if args.filter.as_deref() == Some("indexed") {
                    return Ok(VariablesBody {
                        variables: Vec::new(),
                    });
                }
                let mut values = session.engine().variables(frame, kind).map_err(fail)?;
                if kind == ScopeKind::Locals && top {
                    if let Some(mut rv) = d.return_value.clone() {
                        rv.name = format!("{} returned", rv.name);
                        values.insert(0, rv);
                    }
                }
                let end = count.map_or(values.len(), |c| {
                    usize::try_from(start.saturating_add(c)).unwrap_or(usize::MAX)
                });
                values
                    .into_iter()
                    .enumerate()
                    .filter(|(i, _)| (*i as u64) >= start && *i < end)
                    .map(|(_, v)| {
                        let eval = scope_evaluate_name(&v.name, kind);
                        self.variable(v, Some(frame), eval)
                    })
                    .collect()
            }
            VarHandle::Value {
                value,
                frame,
                evaluate_name,
                indexed,
            } => {
                match args.filter.as_deref() {
                    Some("indexed") if !indexed => {
                        return Ok(VariablesBody {
                            variables: Vec::new(),
                        })
                    }
                    Some("named") if indexed => {
                        return Ok(VariablesBody {
                            variables: Vec::new(),
                        })
                    }
                    _ => {}
                }
                let values = session.engine().children(value, start, count).map_err(fail)?;
                values
                    .into_iter()
                    .map(|v| {
                        let eval = evaluate_name
                            .as_deref()
                            .and_then(|p| child_evaluate_name(p, &v.name));
                        self.variable(v, frame, eval)
                    })
                    .collect()
            }
        };
        Ok(VariablesBody { variables })
    }

    fn assigned(&mut self, v: engine::Value, frame: FrameId, target: &str) -> SetVariableBody {
        let var = self.variable(v, Some(frame), Some(target.to_string()));
        if self.client.invalidated {
            // Other views of the same memory (a pointee, an alias) may have changed too.
            self.after("invalidated", json!({"areas": ["variables"]}));
        }
        SetVariableBody {
            value: var.value,
            type_name: var.type_name,
            variables_reference: var.variables_reference,
            named_variables: var.named_variables,
            indexed_variables: var.indexed_variables,
            memory_reference: var.memory_reference,
        }
    }

    pub(crate) fn set_variable(
        &mut self,
        args: SetVariableArguments,
    ) -> Result<SetVariableBody, Failure> {
        let handle = self.var_handle(args.variables_reference)?;
        let (frame, target) = match handle {
            VarHandle::Scope { frame, kind, .. } => {
                let Some(target) = scope_evaluate_name(&args.name, kind) else {
                    return Err(format!("'{}' cannot be assigned here", args.name).into());
                };
                (frame, target)
            }
            VarHandle::Value {
                frame: Some(frame),
                evaluate_name: Some(parent),
                ..
            } => {
                let Some(target) = child_evaluate_name(&parent, &args.name) else {
                    return Err(format!("'{}' cannot be assigned", args.name).into());
                };
                (frame, target)
            }
            VarHandle::Value { .. } => {
                return Err(format!("'{}' cannot be assigned", args.name).into())
            }
        };
        let v = self
            .debuggee()?
            .session
            .engine()
            .set_variable(frame, &target, &args.value)
            .map_err(fail)?;
        Ok(self.assigned(v, frame, &target))
    }

    /// The frame an expression is evaluated in: the given one, else the innermost frame
    /// of the thread that stopped.
    fn eval_frame(&mut self, frame_id: Option<i64>) -> Result<FrameId, Failure> {
        if let Some(id) = frame_id {
            return Ok(self.frame(id)?.frame);
        }
        let focus = self
            .debuggee()?
            .focus
            .ok_or_else(|| Failure("the program is running".into()))?;
        let frames = self.frames_of(focus)?;
        frames
            .first()
            .map(|(f, _)| f.id)
            .ok_or_else(|| Failure("the stopped thread has no frames".into()))
    }

    pub(crate) fn set_expression(
        &mut self,
        args: SetExpressionArguments,
    ) -> Result<SetVariableBody, Failure> {
        let frame = self.eval_frame(args.frame_id)?;
        let v = self
            .debuggee()?
            .session
            .engine()
            .set_variable(frame, &args.expression, &args.value)
            .map_err(fail)?;
        Ok(self.assigned(v, frame, &args.expression))
    }

    pub(crate) fn evaluate(&mut self, args: EvaluateArguments) -> Result<EvaluateBody, Failure> {
        let expression = args.expression.trim();
        if expression.is_empty() {
            return Err("nothing to evaluate".into());
        }
        if args.context.as_deref() == Some("repl") {
            if let Some(line) = args.expression.trim_start().strip_prefix('>') {
                return self.write_stdin(line.strip_prefix(' ').unwrap_or(line));
            }
        }
        let frame = self.eval_frame(args.frame_id)?;
        let v = self
            .debuggee()?
            .session
            .engine()
            .evaluate(frame, expression)
            .map_err(fail)?;
        if v.error && args.context.as_deref() == Some("hover") {
            // A hover shows a value or nothing.
            return Err(v.rendered.into());
        }
        let var = self.variable(v, Some(frame), Some(expression.to_string()));
        Ok(EvaluateBody {
            result: var.value,
            type_name: var.type_name,
            variables_reference: var.variables_reference,
            named_variables: var.named_variables,
            indexed_variables: var.indexed_variables,
            memory_reference: var.memory_reference,
        })
    }

    /// `> text` in the debug console: `text` and a newline to the program's stdin; a
    /// lone `>` ends its input (end of file: Ctrl-D on a terminal, closing a pipe).
    fn write_stdin(&mut self, line: &str) -> Result<EvaluateBody, Failure> {
        use std::io::Write;
        let d = self
            .debuggee
            .as_mut()
            .ok_or("no program is being debugged")?;
        let stdin = d
            .stdin
            .as_mut()
            .ok_or("the program's stdin is not the debug console's")?;
        let end = line.is_empty();
        let is_tty = {
            use std::os::fd::AsRawFd;
            // SAFETY: isatty on a descriptor we own.
            unsafe { libc::isatty(stdin.as_raw_fd()) == 1 }
        };
        let result = if end && !is_tty {
            d.stdin = None;
            "stdin closed".to_string()
        } else {
            let bytes: Vec<u8> = if end {
                vec![4]
            } else {
                format!("{line}\n").into_bytes()
            };
            stdin
                .write_all(&bytes)
                .map_err(|e| format!("cannot write to the program's stdin: {e}"))?;
            if end {
                "end of input sent".to_string()
            } else {
                String::new()
            }
        };
        Ok(EvaluateBody {
            result,
            type_name: None,
            variables_reference: 0,
            named_variables: None,
            indexed_variables: None,
            memory_reference: None,
        })
    }

    pub(crate) fn source(&mut self, args: SourceArguments) -> Result<SourceBody, Failure> {
        let path = args
            .source
            .and_then(|s| s.path)
            .filter(|p| !p.is_empty())
            .ok_or_else(|| {
                Failure(format!(
                    "unknown source reference {} (tandem gives out none)",
                    args.source_reference
                ))
            })?;
        let content =
            std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
        Ok(SourceBody {
            content,
            mime_type: None,
        })
    }

    pub(crate) fn modules(
        &mut self,
        args: Option<ModulesArguments>,
    ) -> Result<ModulesBody, Failure> {
        let Some(d) = self.debuggee.as_mut() else {
            return Ok(ModulesBody {
                modules: Vec::new(),
                total_modules: 0,
            });
        };
        let all = d.session.engine().modules();
        d.modules = all.clone();
        let start = args
            .as_ref()
            .and_then(|a| a.start_module)
            .and_then(|s| usize::try_from(s).ok())
            .unwrap_or(0);
        let count = args
            .as_ref()
            .and_then(|a| a.module_count)
            .filter(|c| *c > 0)
            .and_then(|c| usize::try_from(c).ok())
            .unwrap_or(usize::MAX);
        Ok(ModulesBody {
            total_modules: all.len() as i64,
            modules: all.iter().skip(start).take(count).map(module).collect(),
        })
    }

    pub(crate) fn read_memory(
        &mut self,
        args: ReadMemoryArguments,
    ) -> Result<ReadMemoryBody, Failure> {
        use base64::Engine as _;
        let base = parse_address(&args.memory_reference)?;
        let addr = base.wrapping_add_signed(args.offset.unwrap_or(0));
        if args.count < 0 {
            return Err("count must not be negative".into());
        }
        let count = args.count.min(MAX_READ);
        let data = if count == 0 {
            Vec::new()
        } else {
            match self.debuggee()?.session.engine().read_memory(addr, count as usize) {
                Ok(d) => d,
                Err(engine::Error::Running) => return Err("the program is running".into()),
                Err(engine::Error::Exited) => return Err("the process has exited".into()),
                Err(_) => Vec::new(),
            }
        };
        let unreadable = count - data.len() as i64;
        Ok(ReadMemoryBody {
            address: format!("{addr:#x}"),
            unreadable_bytes: (unreadable > 0).then_some(unreadable),
            data: Some(base64::engine::general_purpose::STANDARD.encode(&data)),
        })
    }

    pub(crate) fn write_memory(
        &mut self,
        args: WriteMemoryArguments,
    ) -> Result<WriteMemoryBody, Failure> {
        use base64::Engine as _;
        let base = parse_address(&args.memory_reference)?;
        let addr = base.wrapping_add_signed(args.offset.unwrap_or(0));
        let data = base64::engine::general_purpose::STANDARD
            .decode(args.data.trim())
            .map_err(|e| format!("data is not base64: {e}"))?;
        let len = data.len() as i64;
        self.debuggee()?
            .session
            .engine()
            .write_memory(addr, data)
            .map_err(|e| format!("cannot write {len} bytes at {addr:#x}: {e}"))?;
        if self.client.invalidated {
            self.after("invalidated", json!({"areas": ["variables"]}));
        }
        Ok(WriteMemoryBody {
            offset: None,
            bytes_written: Some(len),
        })
    }

    pub(crate) fn cancel(&mut self, _: Option<CancelArguments>) -> Result<(), Failure> {
        // Requests still queued when their cancel arrived were answered "cancelled" by
        // the main loop; anything else has been answered already.
        Ok(())
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
