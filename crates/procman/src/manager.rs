//! The process manager: the debug sessions it owns, the shared event stream, shutdown.

use crate::debug::{DebugId, DebugSession};
use crate::error::Result;
use crate::postmortem::CoreDebug;
use crossbeam_channel::{Receiver, Sender};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use tracer::Pid;

/// What subscribers of [`ProcessManager::subscribe`] receive: every session's start,
/// stops, resumes, breakpoint lines and end (a view that wants a session's whole
/// stream subscribes to the session itself).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ManagerEvent {
    /// A debug session started (its program is stopped at its entry point, or where
    /// it was attached).
    DebugStarted {
        /// The session.
        session: DebugId,
        /// The debuggee.
        pid: Pid,
    },
    /// A debugged program stopped (all threads); `tid` is the thread the user looks at.
    DebugStopped {
        /// The session.
        session: DebugId,
        /// The debuggee.
        pid: Pid,
        /// The thread that stopped.
        tid: tracer::Tid,
    },
    /// A debugged program runs again (values read before are stale).
    DebugResumed {
        /// The session.
        session: DebugId,
        /// The debuggee.
        pid: Pid,
    },
    /// A debugging session ended (the program exited, was killed, or was detached).
    DebugEnded {
        /// The session.
        session: DebugId,
        /// The debuggee.
        pid: Pid,
    },
    /// A view set the breakpoints of a source file: each requested line with the line
    /// it was bound to (`None`: no code there or after it).
    BreakpointLines {
        /// The source file as the view named it.
        file: std::path::PathBuf,
        /// (requested line, bound line), 1-based.
        lines: Vec<(u32, Option<u32>)>,
    },
}

/// Where a debugged program is paused, for the other front-end (the LSP's live values).
#[derive(Clone, Debug)]
pub struct PausedDebuggee {
    /// The session.
    pub session: Paused,
    /// The thread that stopped.
    pub tid: tracer::Tid,
}

/// A stopped program: a live session paused, or a core file.
#[derive(Clone, Debug)]
pub enum Paused {
    /// A live session, paused.
    Live(Arc<DebugSession>),
    /// A core file.
    Core(Arc<CoreDebug>),
}

impl Paused {
    /// The stack of the thread that stopped (unwound once per stop).
    pub fn stop_frames(&self) -> Result<Vec<engine::Frame>> {
        match self {
            Paused::Live(s) => s.stop_frames(),
            Paused::Core(c) => c.stop_frames(),
        }
    }

    /// The engine, for reading values and memory.
    pub fn inspect(&self) -> &dyn engine::Inspect {
        match self {
            Paused::Live(s) => s.engine(),
            Paused::Core(c) => c.engine(),
        }
    }

    /// The stop shown: where and why it stopped and, after a step out, what the function
    /// returned. `None` when a live program ran again since it was listed.
    pub fn stop(&self) -> Option<engine::Stop> {
        match self {
            Paused::Live(s) => s.stopped(),
            Paused::Core(c) => Some(c.stop()),
        }
    }

    /// How often each line breakpoint of the session was hit (a core file has none).
    pub fn line_breakpoint_hits(&self) -> Vec<engine::LineHits> {
        match self {
            Paused::Live(s) => s.engine().line_breakpoint_hits(),
            Paused::Core(_) => Vec::new(),
        }
    }

    /// The debuggee's process id (a core file's: the process it was dumped from).
    pub fn pid(&self) -> Pid {
        match self {
            Paused::Live(s) => s.pid(),
            Paused::Core(c) => c.pid(),
        }
    }

    /// The session's id.
    pub fn id(&self) -> DebugId {
        match self {
            Paused::Live(s) => s.id(),
            Paused::Core(c) => c.id(),
        }
    }
}

#[derive(Default)]
pub(crate) struct Bus {
    subscribers: Mutex<Vec<Sender<ManagerEvent>>>,
}

impl Bus {
    pub(crate) fn send(&self, ev: ManagerEvent) {
        let Ok(mut subs) = self.subscribers.lock() else {
            return;
        };
        subs.retain(|s| s.send(ev.clone()).is_ok());
    }
}

struct Inner {
    bus: Arc<Bus>,
    /// Every debug session, held weakly: the views hold them; the last one dropped
    /// ends the session.
    sessions: Mutex<BTreeMap<DebugId, Weak<DebugSession>>>,
    /// Every open core file, held weakly like the sessions.
    cores: Mutex<BTreeMap<DebugId, Weak<CoreDebug>>>,
    next_id: AtomicU64,
}

impl Inner {
    fn live(&self) -> Vec<Arc<DebugSession>> {
        let Ok(mut map) = self.sessions.lock() else {
            return Vec::new();
        };
        map.retain(|_, w| w.strong_count() > 0);
        map.values().filter_map(Weak::upgrade).collect()
    }

    fn shutdown(&self) {
        self.shutdown_where(|_| true);
    }

    /// Ends the sessions whose tracer thread `keep` accepts.
    fn shutdown_where(&self, keep: impl Fn(i32) -> bool + Sync) {
        let sessions = self.live();
        // Ending a session joins its tracer thread; do them all in parallel so a
        // slow detach does not hold up the others.
        std::thread::scope(|s| {
            for session in sessions.iter().filter(|x| keep(x.tracer_thread_id())) {
                s.spawn(move || session.end(crate::debug::EndMode::Default));
            }
        });
    }
}

/// Owns every debuggee — launched or attached — and its tracer thread.
///
/// Dropping the manager ends every session: launched debuggees are killed and
/// reaped, attached ones detached with their breakpoints removed.
pub struct ProcessManager {
    inner: Arc<Inner>,
}

impl fmt::Debug for ProcessManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcessManager").finish_non_exhaustive()
    }
}

impl Default for ProcessManager {
    fn default() -> Self {
        ProcessManager::new()
    }
}

/// A `Send + Clone` handle that can end every session from anywhere (a signal
/// thread, a panic hook) without owning the manager.
#[derive(Clone)]
pub struct ShutdownHandle {
    inner: Weak<Inner>,
}

impl fmt::Debug for ShutdownHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShutdownHandle").finish_non_exhaustive()
    }
}

impl ShutdownHandle {
    /// Ends every live session (see [`ProcessManager::shutdown`]).
    pub fn shutdown(&self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.shutdown();
        }
    }

    /// Ends the sessions whose tracer thread is not the calling thread (a panic hook
    /// running on a tracer thread cannot wait for itself; its own tracer is cleaned
    /// up by unwinding).
    pub(crate) fn shutdown_others(&self) {
        let Some(inner) = self.inner.upgrade() else {
            return;
        };
        // SAFETY: gettid has no preconditions.
        let me = unsafe { libc::gettid() };
        inner.shutdown_where(|tracer| tracer != me);
    }
}

impl ProcessManager {
    /// A manager with no sessions.
    pub fn new() -> ProcessManager {
        ProcessManager {
            inner: Arc::new(Inner {
                bus: Arc::new(Bus::default()),
                sessions: Mutex::new(BTreeMap::new()),
                cores: Mutex::new(BTreeMap::new()),
                next_id: AtomicU64::new(1),
            }),
        }
    }

    /// A new receiver of every session's start, stops, resumes, breakpoint lines and
    /// end (each subscriber gets every event; a dropped receiver is removed).
    pub fn subscribe(&self) -> Receiver<ManagerEvent> {
        let (tx, rx) = crossbeam_channel::unbounded();
        if let Ok(mut subs) = self.inner.bus.subscribers.lock() {
            subs.push(tx);
        }
        rx
    }

    /// A handle for signal and panic hooks.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// Launches a program under the debugger, stopped at its entry point (see
    /// [`engine::Session::launch`]): set breakpoints, then resume. The manager ends it
    /// with every other session.
    pub fn launch_debug(&self, options: engine::LaunchOptions) -> Result<Arc<DebugSession>> {
        let engine = engine::Session::launch(options)?;
        self.adopt(engine, engine::StopCause::Entry)
    }

    /// Attaches the debugger to a running process, which is stopped (see
    /// [`engine::Session::attach`]). Ending the session detaches.
    pub fn attach_debug(
        &self,
        pid: Pid,
        source_map: engine::SourceMap,
    ) -> Result<Arc<DebugSession>> {
        self.attach_debug_with(pid, source_map, engine::AttachOptions::default())
    }

    /// [`Manager::attach_debug`] with options: taking over a fork child another session
    /// handed over ([`engine::SessionEvent::ChildForked`]), following its children.
    pub fn attach_debug_with(
        &self,
        pid: Pid,
        source_map: engine::SourceMap,
        options: engine::AttachOptions,
    ) -> Result<Arc<DebugSession>> {
        let handed_over = options.handed_over;
        let engine = match engine::Session::attach_with(pid, source_map, options) {
            Ok(engine) => engine,
            Err(e) => {
                // A handed-over child nobody can take runs on as without the debugger.
                if handed_over {
                    release_child(pid);
                }
                return Err(e.into());
            }
        };
        if handed_over {
            crate::guard::forget(pid);
        }
        self.adopt(engine, engine::StopCause::Attached)
    }

    /// Opens a core file written by `program` (see [`engine::CoreSession::open_with`]).
    /// It is listed with the paused debuggees until the last handle is dropped; views
    /// are told through [`ManagerEvent::DebugStarted`] and `DebugStopped`.
    pub fn open_core(
        &self,
        program: &std::path::Path,
        core: &std::path::Path,
        sysroot: Option<&std::path::Path>,
    ) -> Result<Arc<CoreDebug>> {
        let id = DebugId(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let opened = Arc::new(CoreDebug::open(
            id,
            program,
            core,
            sysroot,
            self.inner.bus.clone(),
        )?);
        if let Ok(mut map) = self.inner.cores.lock() {
            map.retain(|_, w| w.strong_count() > 0);
            map.insert(id, Arc::downgrade(&opened));
        }
        let pid = opened.pid();
        self.inner
            .bus
            .send(ManagerEvent::DebugStarted { session: id, pid });
        self.inner.bus.send(ManagerEvent::DebugStopped {
            session: id,
            pid,
            tid: opened.stop().tid,
        });
        Ok(opened)
    }

    /// The open core files, oldest first.
    pub fn core_sessions(&self) -> Vec<Arc<CoreDebug>> {
        let Ok(mut map) = self.inner.cores.lock() else {
            return Vec::new();
        };
        map.retain(|_, w| w.strong_count() > 0);
        map.values().filter_map(Weak::upgrade).collect()
    }

    fn adopt(
        &self,
        engine: engine::Session,
        first: engine::StopCause,
    ) -> Result<Arc<DebugSession>> {
        let id = DebugId(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let session = DebugSession::start(id, engine, first, self.inner.bus.clone())?;
        if let Ok(mut map) = self.inner.sessions.lock() {
            map.retain(|_, w| w.strong_count() > 0);
            map.insert(id, Arc::downgrade(&session));
        }
        self.inner.bus.send(ManagerEvent::DebugStarted {
            session: id,
            pid: session.pid(),
        });
        Ok(session)
    }

    /// The live debug sessions, oldest first.
    pub fn debug_sessions(&self) -> Vec<Arc<DebugSession>> {
        self.inner
            .live()
            .into_iter()
            .filter(|s| !s.has_ended())
            .collect()
    }

    /// A live debug session by id.
    pub fn debug_session(&self, id: DebugId) -> Option<Arc<DebugSession>> {
        let map = self.inner.sessions.lock().ok()?;
        map.get(&id)
            .and_then(Weak::upgrade)
            .filter(|s| !s.has_ended())
    }

    /// The debuggees paused right now, with the thread each stopped in (from each
    /// session's state: right whichever view stopped or resumed it), then the open
    /// core files.
    pub fn paused_debuggees(&self) -> Vec<PausedDebuggee> {
        self.debug_sessions()
            .into_iter()
            .filter_map(|session| {
                let tid = session.stopped()?.tid;
                Some(PausedDebuggee {
                    session: Paused::Live(session),
                    tid,
                })
            })
            .chain(self.core_sessions().into_iter().map(|core| PausedDebuggee {
                tid: core.stop().tid,
                session: Paused::Core(core),
            }))
            .collect()
    }

    /// Ends every session: launched debuggees killed and reaped, attached ones
    /// detached. Sessions handed out stay valid but answer errors.
    pub fn shutdown(&self) {
        self.inner.shutdown();
    }
}

impl Drop for ProcessManager {
    fn drop(&mut self) {
        self.inner.shutdown();
    }
}

/// Lets a fork child that was handed over ([`engine::SessionEvent::ChildForked`]) and
/// that no session takes over run on: it is untraced and free of breakpoints, waiting
/// parked ([`tracer::park`]) or in a job-control stop. A pid that is gone is no error.
pub fn release_child(pid: Pid) {
    tracer::park::free(pid);
    crate::guard::forget(pid);
}

/// Ends a fork child of a program whose session kills it (SIGKILL: the child's own
/// session, if any, sees it die). A pid that is gone is no error.
pub fn kill_child(pid: Pid) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid.0), nix::sys::signal::SIGKILL);
    crate::guard::forget(pid);
}
