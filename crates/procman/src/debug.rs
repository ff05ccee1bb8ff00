//! The owner of every debug session: start, attach, run control, end, and the fan-out
//! of each session's events to any number of views.
//!
//! A [`DebugSession`] wraps one `engine::Session` and is its events' only consumer:
//! the engine hands each event to the owner on the thread that produced it (a route,
//! not a queue), and the owner keeps the session's [`DebugState`] and sends every
//! [`DebugEvent`] to each subscriber, in order, exactly once. Run control (resume,
//! step, pause, end) goes through the session too, so `Resumed` and `Ended` are
//! published by the owner, never relayed by a view. `Resumed` is published on the
//! engine's thread once the program runs, so it precedes the stop it leads to.
//!
//! Lock order: the engine's thread takes the owner's state lock while it reports, so
//! the owner never holds that lock across a call into the engine. Views (the DAP adapter, the
//! language server's live values, `tandem debug`, an agent interface) translate their
//! protocol to these calls and these events to their protocol; they own no process
//! control.

use std::collections::VecDeque;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use engine::{FrameId, SessionEvent, StepKind, Stop};
use tracer::{Pid, Tid};

use crate::error::{Error, Result};
use crate::manager::{Bus, ManagerEvent};

/// Identifies a debug session for as long as the process lives; never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DebugId(pub u64);

impl fmt::Display for DebugId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Identifies a view (one DAP connection, one agent): run control names the view that
/// asked, so a view can tell its own resumes from another's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ViewId(pub u64);

impl ViewId {
    /// A view id no other view of this process has.
    pub fn new() -> ViewId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        ViewId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

impl Default for ViewId {
    fn default() -> Self {
        ViewId::new()
    }
}

/// What every subscriber of a session receives, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DebugEvent {
    /// An event of the engine: a stop, a logpoint's output, a thread started or exited,
    /// a pending breakpoint resolved, the program exited or was killed by a signal.
    Engine(SessionEvent),
    /// The program runs again (continue or step): values read before are stale.
    Resumed {
        /// The view that resumed it.
        by: ViewId,
    },
    /// A view set the breakpoints of a source file: each requested line with the line
    /// it was bound to (`None`: no code there or after it).
    BreakpointLines {
        /// The source file as the view named it.
        file: PathBuf,
        /// (requested line, bound line), 1-based.
        lines: Vec<(u32, Option<u32>)>,
    },
    /// Bytes the program wrote, read by the owner (see [`DebugSession::capture_output`]),
    /// decoded as UTF-8 (invalid sequences replaced).
    Output {
        /// Which stream.
        stream: OutputStream,
        /// The text, as read (not split at lines).
        text: String,
    },
    /// The session is over (the program exited, was killed or detached). Always the
    /// last event.
    Ended,
}

/// Which of the program's streams output came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputStream {
    /// Standard output (or the terminal, for a program on a pty).
    Stdout,
    /// Standard error.
    Stderr,
}

/// Where a session is now (answers a view that subscribes late).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DebugState {
    /// The program runs.
    Running,
    /// Every thread is stopped: the last stop.
    Stopped(Stop),
    /// The session is over.
    Ended {
        /// The exit code, when the program exited.
        code: Option<i32>,
        /// The signal that killed it, when one did.
        signal: Option<i32>,
    },
}

/// How to end a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndMode {
    /// A launched debuggee is killed, an attached one detached.
    Default,
    /// Killed (launched or attached).
    Kill,
    /// Detached with every breakpoint removed; it keeps running.
    Detach,
    /// Detached, then stopped with SIGSTOP: it waits, untraced, for SIGCONT.
    DetachStopped,
    /// Detached, then asked to end with SIGTERM (as the system asks a program).
    DetachTerminate,
}

/// How much of the debuggee's console output a session keeps for late views.
const OUTPUT_KEPT: usize = 256 * 1024;

/// How many events wait for a session's first subscriber.
const HELD_MAX: usize = 4096;

/// The state every view shares, guarded by one lock so that a subscriber added under
/// it sees every event published after the state it read.
struct State {
    state: DebugState,
    subscribers: Vec<Sender<DebugEvent>>,
    /// Events published before the first subscriber came (the engine's notes at the
    /// start: guessed source maps, warnings), handed to it; `None` once it came.
    held: Option<Vec<DebugEvent>>,
    /// Increases at every stop and resume; the frame cache belongs to one value.
    generation: u64,
    frames: Option<(u64, Tid, Vec<engine::Frame>)>,
    /// The engine's output (logpoints, notes) and the program's output when the owner
    /// reads it, bounded.
    output: VecDeque<String>,
    output_len: usize,
}

impl State {
    fn publish(&mut self, event: DebugEvent) {
        if let Some(held) = self.held.as_mut() {
            if held.len() < HELD_MAX {
                held.push(event.clone());
            }
        }
        self.subscribers.retain(|s| s.send(event.clone()).is_ok());
    }

    fn keep_output(&mut self, text: &str) {
        self.output.push_back(text.to_string());
        self.output_len += text.len();
        while self.output_len > OUTPUT_KEPT {
            match self.output.pop_front() {
                Some(old) => self.output_len -= old.len(),
                None => break,
            }
        }
    }
}

struct Shared {
    id: DebugId,
    pid: Pid,
    /// The debuggee was launched: its handed-over children die with tandem.
    launched: bool,
    state: Mutex<State>,
    ended: AtomicBool,
    bus: Arc<Bus>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Publishes the end once: `Ended` is the last event of a session.
    fn end_locked(&self, st: &mut State, code: Option<i32>, signal: Option<i32>) {
        if self.ended.swap(true, Ordering::AcqRel) {
            return;
        }
        st.state = DebugState::Ended { code, signal };
        st.generation += 1;
        st.frames = None;
        st.publish(DebugEvent::Ended);
        st.subscribers.clear();
        self.bus.send(ManagerEvent::DebugEnded {
            session: self.id,
            pid: self.pid,
        });
    }

    /// The program runs again (on the engine's thread, before any event the run leads
    /// to, so every view sees the resume before the stop it leads to).
    fn on_resumed(&self, by: ViewId) {
        let mut st = self.lock();
        if self.ended.load(Ordering::Acquire) {
            return;
        }
        st.state = DebugState::Running;
        st.generation += 1;
        st.frames = None;
        st.publish(DebugEvent::Resumed { by });
        self.bus.send(ManagerEvent::DebugResumed {
            session: self.id,
            pid: self.pid,
        });
    }

    fn on_engine(&self, event: SessionEvent) {
        let mut st = self.lock();
        if self.ended.load(Ordering::Acquire) {
            return;
        }
        match &event {
            SessionEvent::Stopped(stop) => {
                st.state = DebugState::Stopped(stop.clone());
                st.generation += 1;
                st.frames = None;
                self.bus.send(ManagerEvent::DebugStopped {
                    session: self.id,
                    pid: self.pid,
                    tid: stop.tid,
                });
            }
            SessionEvent::Output(text) => st.keep_output(text),
            // It waits for its session: if tandem dies first, the guard acts for it.
            SessionEvent::ChildForked { pid, .. } => crate::guard::watch(*pid, self.launched),
            _ => {}
        }
        let end = match &event {
            SessionEvent::Exited { code } => Some((Some(*code), None)),
            SessionEvent::Signaled { signo } => Some((None, Some(*signo))),
            _ => None,
        };
        st.publish(DebugEvent::Engine(event));
        if let Some((code, signal)) = end {
            self.end_locked(&mut st, code, signal);
        }
    }
}

/// One debug session, shared (`Arc`) by every view. Dropping the last handle ends it
/// (a launched debuggee is killed, an attached one detached).
pub struct DebugSession {
    engine: engine::Session,
    shared: Arc<Shared>,
    launched: bool,
}

impl fmt::Debug for DebugSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DebugSession")
            .field("id", &self.shared.id)
            .field("pid", &self.shared.pid)
            .finish_non_exhaustive()
    }
}

impl DebugSession {
    /// Takes ownership of a started engine session (stopped at its first stop) and
    /// routes its events to the owner: each is published to the views on the thread
    /// that produced it (no pump thread between the engine and the views).
    pub(crate) fn start(
        id: DebugId,
        engine: engine::Session,
        first: engine::StopCause,
        bus: Arc<Bus>,
    ) -> Result<Arc<DebugSession>> {
        let pid = engine.pid();
        let shared = Arc::new(Shared {
            id,
            pid,
            launched: engine.launched(),
            state: Mutex::new(State {
                state: DebugState::Stopped(Stop {
                    tid: Tid(pid.0),
                    cause: first,
                    return_value: None,
                    description: None,
                }),
                subscribers: Vec::new(),
                held: Some(Vec::new()),
                generation: 0,
                frames: None,
                output: VecDeque::new(),
                output_len: 0,
            }),
            ended: AtomicBool::new(false),
            bus,
        });
        let route = shared.clone();
        engine.route_events(Box::new(move |ev| route.on_engine(ev)));
        let launched = engine.launched();
        Ok(Arc::new(DebugSession {
            engine,
            shared,
            launched,
        }))
    }

    /// The session's id.
    pub fn id(&self) -> DebugId {
        self.shared.id
    }

    /// The debuggee's process id.
    pub fn pid(&self) -> Pid {
        self.shared.pid
    }

    /// Whether the debuggee was launched (rather than attached to).
    pub fn launched(&self) -> bool {
        self.launched
    }

    /// The engine, for inspection: stacks, variables, evaluation, breakpoints, memory,
    /// modules. Run control goes through this session's own methods, and nothing but
    /// the owner reads the engine's events (`events`, `wait_stop`).
    pub fn engine(&self) -> &engine::Session {
        &self.engine
    }

    /// Every event from now on, in order. A receiver that is dropped is removed at the
    /// next event. After the end the receiver is closed at once. The first subscriber
    /// (the view that started the session) also receives what was published before it:
    /// the engine's notes at the start.
    pub fn subscribe(&self) -> Receiver<DebugEvent> {
        self.subscribe_with_state().1
    }

    /// The state now and every event after it, taken together (nothing between them
    /// is missed or seen twice).
    pub fn subscribe_with_state(&self) -> (DebugState, Receiver<DebugEvent>) {
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut st = self.shared.lock();
        for event in st.held.take().unwrap_or_default() {
            let _ = tx.send(event);
        }
        if !self.shared.ended.load(Ordering::Acquire) {
            st.subscribers.push(tx);
        }
        (st.state.clone(), rx)
    }

    /// Where the session is now.
    pub fn state(&self) -> DebugState {
        self.shared.lock().state.clone()
    }

    /// The last stop while the program is stopped.
    pub fn stopped(&self) -> Option<Stop> {
        match &self.shared.lock().state {
            DebugState::Stopped(stop) => Some(stop.clone()),
            _ => None,
        }
    }

    /// Whether the session is over.
    pub fn has_ended(&self) -> bool {
        self.shared.ended.load(Ordering::Acquire)
    }

    /// The threads (at a stop, the list taken at the stop).
    pub fn threads(&self) -> Result<Vec<Tid>> {
        Ok(self.engine.threads()?)
    }

    /// The stack of the thread that stopped, unwound once per stop and kept until the
    /// program runs again. Fails while the program runs (`engine::Error::Running`) and
    /// after the end (`Error::Ended`).
    pub fn stop_frames(&self) -> Result<Vec<engine::Frame>> {
        let (generation, tid) = {
            let st = self.shared.lock();
            match (&st.state, &st.frames) {
                (DebugState::Stopped(_), Some((g, _, frames))) if *g == st.generation => {
                    return Ok(frames.clone())
                }
                (DebugState::Stopped(stop), _) => (st.generation, stop.tid),
                (DebugState::Ended { .. }, _) => return Err(Error::Ended),
                (DebugState::Running, _) => return Err(Error::Engine(engine::Error::Running)),
            }
        };
        let frames = self.engine.stack_trace(tid)?;
        let mut st = self.shared.lock();
        if st.generation == generation {
            st.frames = Some((generation, tid, frames.clone()));
        }
        Ok(frames)
    }

    /// The output kept for late views (logpoints, the engine's notes, and the program's
    /// own output when the owner reads it), oldest first; bounded to the last 256 KiB.
    pub fn output(&self) -> Vec<String> {
        self.shared.lock().output.iter().cloned().collect()
    }

    /// Reads the program's stdout and stderr in the owner, when no view took them
    /// (`engine().take_stdio()`); its stdin is closed. Each read is kept (see
    /// [`DebugSession::output`]) and published as [`DebugEvent::Output`]. Reads are not
    /// synchronised with stops: output written just before a stop may follow it. False
    /// when the streams were taken already (or the session was attached).
    pub fn capture_output(&self) -> bool {
        let Some(stdio) = self.engine.take_stdio() else {
            return false;
        };
        drop(stdio.stdin);
        for (file, stream) in [
            (stdio.stdout, OutputStream::Stdout),
            (stdio.stderr, OutputStream::Stderr),
        ] {
            if let Some(file) = file {
                spawn_output_reader(file, stream, self.shared.clone());
            }
        }
        true
    }

    /// Lets every thread run.
    pub fn resume(&self, by: ViewId) -> Result<()> {
        if self.shared.ended.load(Ordering::Acquire) {
            return Err(Error::Ended);
        }
        let shared = self.shared.clone();
        Ok(self.engine.resume_then(move || shared.on_resumed(by))?)
    }

    /// Steps thread `tid`; the stop arrives as an event.
    pub fn step(&self, tid: Tid, kind: StepKind, by: ViewId) -> Result<()> {
        if self.shared.ended.load(Ordering::Acquire) {
            return Err(Error::Ended);
        }
        let shared = self.shared.clone();
        Ok(self
            .engine
            .step_then(tid, kind, move || shared.on_resumed(by))?)
    }

    /// Steps thread `tid` into a call listed by `engine::Session::step_in_targets`;
    /// the stop arrives as an event.
    pub fn step_into(&self, tid: Tid, target: u64, by: ViewId) -> Result<()> {
        if self.shared.ended.load(Ordering::Acquire) {
            return Err(Error::Ended);
        }
        let shared = self.shared.clone();
        Ok(self
            .engine
            .step_into_then(tid, target, move || shared.on_resumed(by))?)
    }

    /// Goes back to the last breakpoint hit before now (a recorded session); the stop
    /// arrives as an event.
    pub fn reverse_continue(&self, by: ViewId) -> Result<()> {
        if self.shared.ended.load(Ordering::Acquire) {
            return Err(Error::Ended);
        }
        let shared = self.shared.clone();
        Ok(self
            .engine
            .reverse_continue_then(move || shared.on_resumed(by))?)
    }

    /// Steps back by line or instruction (a recorded session); the stop arrives as an
    /// event.
    pub fn step_back(&self, tid: Tid, kind: StepKind, by: ViewId) -> Result<()> {
        if self.shared.ended.load(Ordering::Acquire) {
            return Err(Error::Ended);
        }
        let shared = self.shared.clone();
        Ok(self
            .engine
            .step_back_then(tid, kind, move || shared.on_resumed(by))?)
    }

    /// Goes back to the last write to the lvalue `expression` names (a recorded
    /// session); the stop arrives as an event.
    pub fn last_write(&self, frame: Option<FrameId>, expression: &str, by: ViewId) -> Result<()> {
        if self.shared.ended.load(Ordering::Acquire) {
            return Err(Error::Ended);
        }
        let shared = self.shared.clone();
        Ok(self
            .engine
            .last_write_then(frame, expression, move || shared.on_resumed(by))?)
    }

    /// Goes back to the start of the function invocation a frame shows (a recorded
    /// session); the stop arrives as an event.
    pub fn restart_frame(&self, frame: FrameId, by: ViewId) -> Result<()> {
        if self.shared.ended.load(Ordering::Acquire) {
            return Err(Error::Ended);
        }
        let shared = self.shared.clone();
        Ok(self
            .engine
            .restart_frame_then(frame, move || shared.on_resumed(by))?)
    }

    /// Stops every thread; the stop arrives as an event (`engine::Error::Running`
    /// inside `Error::Engine` when it is stopped already).
    pub fn pause(&self) -> Result<()> {
        Ok(self.engine.pause()?)
    }

    /// Sets the breakpoints of a source file (see `engine::Session::set_line_breakpoints`)
    /// and tells every view which line each request was bound to.
    pub fn set_line_breakpoints(
        &self,
        file: &Path,
        specs: &[engine::SourceBreakpoint],
    ) -> Result<Vec<engine::BreakpointStatus>> {
        let statuses = self.engine.set_line_breakpoints(file, specs)?;
        let lines: Vec<(u32, Option<u32>)> = specs
            .iter()
            .zip(&statuses)
            .map(|(spec, st)| (spec.line, st.line.filter(|_| st.verified).map(|l| l.get())))
            .collect();
        let mut st = self.shared.lock();
        if !self.shared.ended.load(Ordering::Acquire) {
            st.publish(DebugEvent::BreakpointLines {
                file: file.to_path_buf(),
                lines: lines.clone(),
            });
        }
        self.shared.bus.send(ManagerEvent::BreakpointLines {
            file: file.to_path_buf(),
            lines,
        });
        Ok(statuses)
    }

    /// Ends the session `how`; idempotent. Subscribers receive `Ended`.
    pub fn end(&self, how: EndMode) -> Result<()> {
        if self.shared.ended.load(Ordering::Acquire) {
            return Ok(());
        }
        let res = match how {
            EndMode::Default => self.engine.end(),
            EndMode::Kill => self.engine.terminate(),
            EndMode::Detach | EndMode::DetachStopped | EndMode::DetachTerminate => {
                self.engine.detach()
            }
        };
        let signal = match how {
            EndMode::DetachStopped => Some(libc::SIGSTOP),
            EndMode::DetachTerminate => Some(libc::SIGTERM),
            _ => None,
        };
        if let (Ok(()), Some(sig)) = (&res, signal) {
            // The process is no longer traced: it gets the signal as from anyone else.
            if let Err(e) = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.shared.pid.0),
                nix::sys::signal::Signal::try_from(sig).ok(),
            ) {
                tracing::warn!(pid = self.shared.pid.0, "signalling after detach: {e}");
            }
        }
        let mut st = self.shared.lock();
        self.shared.end_locked(&mut st, None, None);
        Ok(res?)
    }

    /// Kills the debuggee and ends the session.
    pub fn terminate(&self) -> Result<()> {
        self.end(EndMode::Kill)
    }

    /// Detaches (breakpoints removed, the program keeps running) and ends the session.
    pub fn detach(&self) -> Result<()> {
        self.end(EndMode::Detach)
    }

    /// Writes an ELF core file of the stopped program to `path` (see
    /// `engine::Session::write_core`); the program stays stopped. Refused while it runs
    /// ([`Error::NotPaused`]) and after the end.
    pub fn write_core(&self, path: &Path) -> Result<engine::CoreWritten> {
        match self.state() {
            DebugState::Stopped(_) => {}
            DebugState::Running => return Err(Error::NotPaused),
            DebugState::Ended { .. } => return Err(Error::Ended),
        }
        match self.engine.write_core(path) {
            Err(engine::Error::Running) => Err(Error::NotPaused),
            other => Ok(other?),
        }
    }

    /// Waits for the next stop or end (for the CLI and tests): the state when it is
    /// not running, else the next stop or end a subscription sees.
    pub fn wait_stop(&self, timeout: Duration) -> Result<DebugState> {
        let (state, rx) = self.subscribe_with_state();
        if state != DebugState::Running {
            return Ok(state);
        }
        wait_on(&rx, timeout, |_| {})
    }

    pub(crate) fn tracer_thread_id(&self) -> i32 {
        self.engine.tracer_thread_id()
    }
}

/// Reads a subscription until the program stops or the session ends, handing every
/// other event to `other` (the CLI prints logpoint output this way).
pub fn wait_on(
    rx: &Receiver<DebugEvent>,
    timeout: Duration,
    mut other: impl FnMut(&DebugEvent),
) -> Result<DebugState> {
    let deadline = Instant::now() + timeout;
    let mut exit = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(DebugEvent::Engine(SessionEvent::Stopped(stop))) => {
                return Ok(DebugState::Stopped(stop))
            }
            Ok(DebugEvent::Engine(SessionEvent::Exited { code })) => {
                exit = Some((Some(code), None));
            }
            Ok(DebugEvent::Engine(SessionEvent::Signaled { signo })) => {
                exit = Some((None, Some(signo)));
            }
            Ok(DebugEvent::Ended) => {
                let (code, signal) = exit.unwrap_or((None, None));
                return Ok(DebugState::Ended { code, signal });
            }
            Ok(ev) => other(&ev),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                return Err(Error::Engine(engine::Error::Timeout))
            }
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                let (code, signal) = exit.unwrap_or((None, None));
                return Ok(DebugState::Ended { code, signal });
            }
        }
    }
}

impl Drop for DebugSession {
    fn drop(&mut self) {
        if let Err(e) = self.end(EndMode::Default) {
            tracing::warn!(session = self.shared.id.0, "ending the debug session: {e}");
        }
    }
}

fn spawn_output_reader(mut file: std::fs::File, stream: OutputStream, shared: Arc<Shared>) {
    let spawned = std::thread::Builder::new()
        .name(format!("debug-output:{}", shared.id))
        .spawn(move || {
            use std::io::Read;
            let mut buf = vec![0u8; 8192];
            loop {
                match file.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                        let mut st = shared.lock();
                        st.keep_output(&text);
                        if !shared.ended.load(Ordering::Acquire) {
                            st.publish(DebugEvent::Output { stream, text });
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    // EIO on a pty whose last writer is gone is its end of file.
                    Err(_) => break,
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot start an output reader: {e}");
    }
}
