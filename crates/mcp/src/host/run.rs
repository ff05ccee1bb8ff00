//! Starting sessions (launch, attach), run control through the owner (continue, step,
//! pause, each waiting on this view's subscription for the stop it leads to) and the
//! breakpoints this host sets.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use engine::StepKind;
use procman::tracer::{self, Tid};
use procman::{DebugSession, DebugState};

use super::output::Output;
use super::reports::{fill_report, stopped_thread};
use super::{
    attach_pid, fail, lock, AttachRequest, BreakpointReport, BreakpointSpec, Entry, Host,
    HostError, LaunchRequest, Own, Result, RunState, Step,
};
use crate::call::Call;

/// How long `debug_pause` waits for the stop it asked for.
const PAUSE_WAIT: Duration = Duration::from_secs(3);

impl Host {
    /// Launches `req.program` (stopped at its entry), sets the breakpoints, and runs it
    /// unless `stop_on_entry`; returns within `wait`.
    pub fn launch(
        &self,
        req: LaunchRequest,
        wait: Duration,
        cx: &Call<'_>,
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
            record: req.record,
            ..Default::default()
        };
        let session = self
            .manager
            .launch_debug(options)
            .map_err(|e| HostError(format!("cannot launch {}: {e}", program.display())))?;
        let entry = self.adopt(session, program.display().to_string());
        let reports = self.first_breakpoints(&entry, &req.breakpoints, cx)?;
        let state = if req.stop_on_entry {
            self.report(&entry, entry.session.state())
        } else {
            self.run(&entry, Start::Resume, wait)?
        };
        Ok((entry.id, reports, state))
    }

    /// Attaches to a process, sets the breakpoints, and lets it run; returns within `wait`.
    pub fn attach(
        &self,
        req: AttachRequest,
        wait: Duration,
        cx: &Call<'_>,
    ) -> Result<(u64, Vec<BreakpointReport>, RunState)> {
        let pid = attach_pid(&req)?;
        let exe = super::program_of(pid);
        let session = self
            .manager
            .attach_debug(pid, engine::SourceMap::new())
            .map_err(|e| HostError(format!("cannot attach to process {}: {e}", pid.0)))?;
        let entry = self.adopt(session, exe);
        let reports = self.first_breakpoints(&entry, &req.breakpoints, cx)?;
        let state = self.run(&entry, Start::Resume, wait)?;
        Ok((entry.id, reports, state))
    }

    /// Sets the breakpoints of a session just started; when the call is cancelled while
    /// they wait for the name table, the session is ended (a launched program killed,
    /// an attached one let go) rather than left stopped.
    fn first_breakpoints(
        &self,
        entry: &Entry,
        specs: &[BreakpointSpec],
        cx: &Call<'_>,
    ) -> Result<Vec<BreakpointReport>> {
        let set = self.apply_breakpoints(entry, specs, cx);
        if set.is_err() && cx.was_cancelled() {
            if let Err(e) = self.end(entry.id) {
                tracing::debug!("ending cancelled session {}: {}", entry.id, e.0);
            }
        }
        set
    }

    /// Keeps a session this host started: its first subscription (which also carries
    /// the engine's notes from the start) and the program's streams feed its output.
    fn adopt(&self, session: Arc<DebugSession>, program: String) -> Entry {
        let id = session.id().0;
        let output = Arc::new(Output::default());
        output.watch(session.subscribe(), id);
        if let Some(stdio) = session.engine().take_stdio() {
            output.read_streams(stdio, id);
        }
        let own = Arc::new(Own {
            session: session.clone(),
            program,
            output,
        });
        lock(&self.own).insert(id, own.clone());
        Entry {
            id,
            session,
            own: Some(own),
        }
    }

    /// Continues the program and waits up to `wait` for it to stop or end; a program
    /// already running is only waited for.
    pub fn resume(&self, id: u64, wait: Duration) -> Result<RunState> {
        let entry = self.get(id)?;
        self.run(&entry, Start::Resume, wait)
    }

    /// Steps the thread (default: the one that stopped) and waits up to `wait`.
    pub fn step(
        &self,
        id: u64,
        kind: Step,
        thread: Option<i32>,
        wait: Duration,
    ) -> Result<RunState> {
        let entry = self.get(id)?;
        let stopped = stopped_thread(&entry)?;
        let tid = thread.map_or(stopped, Tid);
        let start = match kind {
            Step::Over => Start::Step(tid, StepKind::Over),
            Step::In => Start::Step(tid, StepKind::In),
            Step::Out => Start::Step(tid, StepKind::Out),
            Step::Into(name, index) => Start::Into(tid, call_target(&entry, tid, &name, index)?),
        };
        self.run(&entry, start, wait)
    }

    /// Goes back in a recorded session: one line (or instruction) of the thread
    /// (default: the one that stopped), and waits up to `wait` for the stop.
    pub fn step_back(
        &self,
        id: u64,
        instruction: bool,
        thread: Option<i32>,
        wait: Duration,
    ) -> Result<RunState> {
        let entry = self.get(id)?;
        let stopped = stopped_thread(&entry)?;
        let tid = thread.map_or(stopped, Tid);
        let kind = if instruction {
            StepKind::Instruction
        } else {
            StepKind::Over
        };
        self.run(&entry, Start::StepBack(tid, kind), wait)
    }

    /// Goes back to the last breakpoint hit in a recorded session.
    pub fn reverse_continue(&self, id: u64, wait: Duration) -> Result<RunState> {
        let entry = self.get(id)?;
        self.run(&entry, Start::ReverseContinue, wait)
    }

    /// Goes back to the last write to the lvalue `expression` names in frame `frame`
    /// (an index, 0 = innermost) of the stopped thread.
    pub fn last_write(
        &self,
        id: u64,
        expression: &str,
        frame: usize,
        wait: Duration,
    ) -> Result<RunState> {
        let expression = expression.trim();
        if expression.is_empty() {
            return Err(fail("'expression' is empty"));
        }
        let entry = self.get(id)?;
        let frame_id = super::reports::frame_id(&entry, frame)?;
        self.run(
            &entry,
            Start::LastWrite(Some(frame_id), expression.to_string()),
            wait,
        )
    }

    /// Resumes or steps through the owner (which tells every view), then waits on this
    /// view's subscription, taken before, so the stop it leads to cannot be missed.
    fn run(&self, entry: &Entry, start: Start, wait: Duration) -> Result<RunState> {
        let (state, events) = entry.session.subscribe_with_state();
        match state {
            DebugState::Stopped(_) => {}
            DebugState::Running => {
                return Ok(self.settled(entry, procman::wait_on(&events, wait, |_| {})))
            }
            ended @ DebugState::Ended { .. } => return Ok(self.report(entry, ended)),
        }
        let started = match start {
            Start::Step(tid, kind) => entry.session.step(tid, kind, self.view),
            Start::Into(tid, target) => entry.session.step_into(tid, target, self.view),
            Start::Resume => entry.session.resume(self.view),
            Start::StepBack(tid, kind) => entry.session.step_back(tid, kind, self.view),
            Start::ReverseContinue => entry.session.reverse_continue(self.view),
            Start::LastWrite(frame, expr) => entry.session.last_write(frame, &expr, self.view),
        };
        if let Err(e) = started {
            // Another view may have resumed it in between: then this one waits too.
            if !matches!(entry.session.state(), DebugState::Running) {
                return Err(fail(e));
            }
        }
        Ok(self.settled(entry, procman::wait_on(&events, wait, |_| {})))
    }

    /// The stop or end a wait on this view's subscription saw, else `Running` (the
    /// wait timed out).
    fn settled(&self, entry: &Entry, waited: procman::Result<DebugState>) -> RunState {
        match waited {
            Ok(state) => self.report(entry, state),
            Err(_) => RunState::Running,
        }
    }

    /// Pauses a running program and waits for the stop.
    pub fn pause(&self, id: u64) -> Result<RunState> {
        let entry = self.get(id)?;
        let (state, events) = entry.session.subscribe_with_state();
        if state != DebugState::Running {
            return Ok(self.report(&entry, state));
        }
        if let Err(e) = entry.session.pause() {
            if matches!(entry.session.state(), DebugState::Running) {
                return Err(fail(e));
            }
        }
        Ok(self.settled(&entry, procman::wait_on(&events, PAUSE_WAIT, |_| {})))
    }

    /// Replaces every breakpoint this host set in the session with `specs`.
    pub fn set_breakpoints(
        &self,
        id: u64,
        specs: &[BreakpointSpec],
        cx: &Call<'_>,
    ) -> Result<Vec<BreakpointReport>> {
        let entry = self.get(id)?;
        if entry.session.has_ended() {
            return Err(HostError(format!("session {id} has exited")));
        }
        self.apply_breakpoints(&entry, specs, cx)
    }

    /// Removes the breakpoints this host set in a session (ending it or letting go).
    pub(super) fn clear_breakpoints(&self, entry: &Entry) {
        if let Err(e) = self.apply_breakpoints(entry, &[], &Call::unwatched()) {
            tracing::debug!("clearing breakpoints of session {}: {e}", entry.id);
        }
        lock(&self.breakpoints).remove(&entry.id);
    }

    /// Sets `specs` as this host's breakpoints in the session. Line breakpoints are set
    /// per file, so files this host did not name keep theirs (an editor's); function
    /// breakpoints replace every function breakpoint of the session, so they are only
    /// set when this host names functions or named some before.
    fn apply_breakpoints(
        &self,
        entry: &Entry,
        specs: &[BreakpointSpec],
        cx: &Call<'_>,
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
        let names: Vec<&str> = functions.iter().map(|(_, f)| f.name.as_str()).collect();
        wait_for_index(&entry.session, &names, cx)?;
        let mut all = lock(&self.breakpoints);
        let mine = all.entry(entry.id).or_default();
        let cleared: Vec<PathBuf> = mine
            .files
            .iter()
            .filter(|f| !by_file.contains_key(*f))
            .cloned()
            .collect();
        let session = &entry.session;
        for file in cleared {
            session.set_line_breakpoints(&file, &[]).map_err(fail)?;
            mine.files.remove(&file);
        }
        for (file, list) in &by_file {
            let bps: Vec<engine::SourceBreakpoint> = list.iter().map(|(_, b)| b.clone()).collect();
            let statuses = session.set_line_breakpoints(file, &bps).map_err(fail)?;
            for ((i, _), st) in list.iter().zip(statuses) {
                fill_report(&mut reports[*i], &st);
            }
            mine.files.insert(file.clone());
        }
        if !functions.is_empty() || mine.functions {
            let fbps: Vec<engine::FunctionBreakpoint> =
                functions.iter().map(|(_, b)| b.clone()).collect();
            let statuses = session
                .engine()
                .set_function_breakpoints(&fbps)
                .map_err(fail)?;
            for ((i, _), st) in functions.iter().zip(statuses) {
                fill_report(&mut reports[*i], &st);
            }
            mine.functions = !functions.is_empty();
        }
        Ok(reports)
    }
}

pub(super) enum Location {
    Line(PathBuf, u32),
    Function(String),
}

pub(super) fn parse_location(text: &str) -> Option<Location> {
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

/// How a run starts.
enum Start {
    Resume,
    /// Back in a recording: by line or instruction.
    StepBack(Tid, StepKind),
    /// Back to the last breakpoint hit (or the recording's start).
    ReverseContinue,
    /// Back to the last write to an lvalue: the frame and the expression.
    LastWrite(Option<engine::FrameId>, String),
    Step(Tid, StepKind),
    /// Into a step-in target (`engine::Session::step_in_targets`) of the thread.
    Into(Tid, u64),
}

/// The step-in target of thread `tid`'s current line that is the `index`-th call
/// (1-based, in the order the program makes them) of the function `name`; an error
/// listing the line's calls when there is none.
fn call_target(entry: &Entry, tid: Tid, name: &str, index: u32) -> Result<u64> {
    let engine = entry.session.engine();
    let frames = engine.stack_trace(tid).map_err(fail)?;
    let top = frames
        .first()
        .ok_or_else(|| fail(format!("thread {} has no frames", tid.0)))?;
    let targets = engine.step_in_targets(tid, top.id).map_err(fail)?;
    let matching: Vec<&engine::StepInTarget> = targets
        .iter()
        .filter(|t| t.function.as_deref() == Some(name) || t.label == name)
        .collect();
    let k = usize::try_from(index.max(1)).unwrap_or(usize::MAX);
    match matching.get(k - 1) {
        Some(t) => Ok(t.id),
        None => {
            let calls: Vec<&str> = targets.iter().map(|t| t.label.as_str()).collect();
            Err(fail(if matching.is_empty() {
                format!(
                    "the current line makes no call to '{name}' (its calls: {})",
                    if calls.is_empty() {
                        "none".to_string()
                    } else {
                        calls.join(", ")
                    }
                )
            } else {
                format!(
                    "the current line calls '{name}' {} time(s), not {k}",
                    matching.len()
                )
            }))
        }
    }
}

/// How often a call waiting for the name table looks at it (and for a cancellation).
const INDEX_POLL: Duration = Duration::from_millis(100);

/// Waits, with progress, while one of `names` needs the main executable's name table
/// that the session is still building (see `engine::Session::function_waiting_for_index`):
/// setting it would block the call silently until then. `Err` when the call is
/// cancelled meanwhile; nothing is set then.
fn wait_for_index(session: &DebugSession, names: &[&str], cx: &Call<'_>) -> Result<()> {
    let engine = session.engine();
    let Some(name) = engine.function_waiting_for_index(names) else {
        return Ok(());
    };
    let message = format!("Waiting for the debug information index to find {name}");
    while let Some((done, total)) = engine.index_progress() {
        if cx.is_cancelled() {
            return Err(HostError("cancelled".into()));
        }
        cx.progress(done as u64, total as u64, &message);
        std::thread::sleep(INDEX_POLL);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

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
