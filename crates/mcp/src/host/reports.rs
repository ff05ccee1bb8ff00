//! Reading a stopped session for the agent: the stop report (reason, frames, locals),
//! stacks, variables, evaluation and output, as compact plain types. Everything is read
//! through the owner (`stop_frames`, cached per stop and shared with the other views)
//! and the engine's inspection calls; nothing here runs the program.

use engine::{ScopeKind, StopCause};
use procman::tracer::Tid;
use procman::{DebugSession, DebugState};

use super::{
    fail, Entry, FrameReport, Host, HostError, OutputReport, Result, RunState, StopReport,
    ValueReport, ValueTree, MAX_FRAMES, MAX_VALUES,
};

impl Host {
    /// The owner's state as the agent sees it.
    pub(super) fn report(&self, entry: &Entry, state: DebugState) -> RunState {
        match state {
            DebugState::Running => RunState::Running,
            DebugState::Stopped(stop) => RunState::Stopped(report_stop(&entry.session, &stop)),
            DebugState::Ended { code, signal } => {
                let (code, signal) = match (code, signal) {
                    (Some(code), _) => (code, None),
                    (None, Some(signo)) => (128 + signo, Some(signo)),
                    // Ended by a view: a launched program was killed, an attached one
                    // detached (and left running).
                    (None, None) if entry.session.launched() => {
                        (128 + libc::SIGKILL, Some(libc::SIGKILL))
                    }
                    (None, None) => (0, None),
                };
                RunState::Exited {
                    code,
                    signal: signal.map(engine::signals::signal_name),
                }
            }
        }
    }

    /// The frames of a thread (default: the one that stopped).
    pub fn stack(&self, id: u64, thread: Option<i32>) -> Result<Vec<FrameReport>> {
        let entry = self.get(id)?;
        let stopped = stopped_thread(&entry)?;
        let tid = thread.map_or(stopped, Tid);
        let frames = if tid == stopped {
            entry.session.stop_frames().map_err(fail)?
        } else {
            entry.session.engine().stack_trace(tid).map_err(fail)?
        };
        Ok(frames
            .iter()
            .take(MAX_FRAMES)
            .enumerate()
            .map(|(i, f)| frame_report(i, f))
            .collect())
    }

    /// The arguments and locals of a frame; with `path`, the value of that expression in
    /// the frame (`p->next`, `pts[2]`, `s.name`) and its children.
    pub fn variables(&self, id: u64, frame: usize, path: Option<&str>) -> Result<ValueTree> {
        let entry = self.get(id)?;
        let frame_id = frame_id(&entry, frame)?;
        let engine = entry.session.engine();
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
        let entry = self.get(id)?;
        let frame_id = frame_id(&entry, frame)?;
        let v = entry
            .session
            .engine()
            .evaluate(frame_id, expression)
            .map_err(fail)?;
        Ok(value_report(&v))
    }

    /// What the program wrote (stdout and stderr interleaved, logpoints too), at most
    /// the last `limit` bytes. Of a session another view started, what the owner kept:
    /// the engine's messages, and the program's output only when the owner reads it
    /// (an editor's adapter reads it itself and shows it there).
    pub fn output(&self, id: u64, limit: usize) -> Result<OutputReport> {
        let entry = self.get(id)?;
        let exited = entry.session.has_ended();
        Ok(match &entry.own {
            Some(own) => own.output.report(exited, limit),
            None => {
                let text = entry.session.output().concat();
                super::output::cut(text.as_bytes(), text.len() as u64, limit)
            }
        })
    }
}

/// The thread of the last stop, or why there is none.
pub(super) fn stopped_thread(entry: &Entry) -> Result<Tid> {
    match entry.session.state() {
        DebugState::Stopped(stop) => Ok(stop.tid),
        DebugState::Running => Err(HostError(format!(
            "session {} is running: pause it or wait with debug_continue",
            entry.id
        ))),
        DebugState::Ended { .. } => Err(HostError(format!("session {} has exited", entry.id))),
    }
}

pub(super) fn frame_id(entry: &Entry, frame: usize) -> Result<engine::FrameId> {
    stopped_thread(entry)?;
    let frames = entry.session.stop_frames().map_err(fail)?;
    frames.get(frame).map(|f| f.id).ok_or_else(|| {
        HostError(format!(
            "no frame {frame}: the stack has {} frames",
            frames.len()
        ))
    })
}

pub(super) fn fill_report(report: &mut super::BreakpointReport, st: &engine::BreakpointStatus) {
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
/// source (a crash inside libc shows the caller's locals). Frames are the owner's, cached
/// at the stop; a stop that is no longer the current one (another view resumed the
/// program since) gets no frames.
fn report_stop(session: &DebugSession, stop: &engine::Stop) -> StopReport {
    let engine = session.engine();
    let (reason, mut description) = match &stop.cause {
        StopCause::Entry => ("entry", None),
        StopCause::Attached => ("attach", None),
        StopCause::Breakpoint(_) => ("breakpoint", None),
        StopCause::Step => ("step", None),
        StopCause::Pause => ("pause", None),
        StopCause::Restart => ("restart", stop.description.clone()),
        StopCause::Signal(_) => ("signal", stop.description.clone()),
        StopCause::DataBreakpoint(_) => ("data breakpoint", stop.description.clone()),
        StopCause::WatchScope(_) => ("data breakpoint", stop.description.clone()),
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
    let current = matches!(session.state(), DebugState::Stopped(now) if now == *stop);
    let frames = if current {
        session.stop_frames().unwrap_or_default()
    } else {
        Vec::new()
    };
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
