//! The process manager: sessions, their tracer threads, the shared event stream.

use crate::error::{Error, Result};
use crossbeam_channel::{Receiver, Sender};
use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use tracer::{AttachConfig, EndMode, LaunchConfig, Origin, Pid, TracerHandle};

/// Identifies a session for as long as the manager lives; never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub u64);

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Which stream debuggee output came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputStream {
    /// Standard output (pipe).
    Stdout,
    /// Standard error (pipe).
    Stderr,
    /// The pseudo-terminal (stdout and stderr together).
    Pty,
}

/// What subscribers of [`ProcessManager::subscribe`] receive.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ManagerEvent {
    /// A session started (after launch or attach succeeded).
    Started {
        /// The session.
        session: SessionId,
        /// Its debuggee.
        pid: Pid,
        /// Launched or attached.
        origin: Origin,
    },
    /// An event of the session's debuggee.
    Target {
        /// The session.
        session: SessionId,
        /// What happened.
        event: tracer::Event,
    },
    /// Bytes the debuggee wrote.
    Output {
        /// The session.
        session: SessionId,
        /// Which stream.
        stream: OutputStream,
        /// The bytes, as read (not split at lines or UTF-8 boundaries).
        data: Vec<u8>,
    },
    /// The session ended: its debuggee was killed and reaped, or detached.
    Ended {
        /// The session.
        session: SessionId,
    },
    /// A debugged program stopped (all threads); `tid` is the thread the user looks at.
    DebugStopped {
        /// The debuggee.
        pid: Pid,
        /// The thread that stopped.
        tid: tracer::Tid,
    },
    /// A debugged program runs again (values read before are stale).
    DebugResumed {
        /// The debuggee.
        pid: Pid,
    },
    /// A debugging session ended (the program exited, was killed, or was detached).
    DebugEnded {
        /// The debuggee.
        pid: Pid,
    },
    /// The debug adapter set the breakpoints of a source file: each requested line with
    /// the line it was bound to (`None`: no code there or after it).
    BreakpointLines {
        /// The source file as the client named it.
        file: std::path::PathBuf,
        /// (requested line, bound line), 1-based.
        lines: Vec<(u32, Option<u32>)>,
    },
}

/// Where a debugged program is paused, for the other front-end (the LSP's live values).
#[derive(Clone, Debug)]
pub struct PausedDebuggee {
    /// The session.
    pub session: Arc<engine::Session>,
    /// The thread that stopped.
    pub tid: tracer::Tid,
}

/// A summary of one live session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    /// The session.
    pub id: SessionId,
    /// Its debuggee.
    pub pid: Pid,
    /// Launched or attached.
    pub origin: Origin,
}

#[derive(Default)]
struct Bus {
    subscribers: Mutex<Vec<Sender<ManagerEvent>>>,
}

impl Bus {
    fn send(&self, ev: ManagerEvent) {
        let Ok(mut subs) = self.subscribers.lock() else {
            return;
        };
        subs.retain(|s| s.send(ev.clone()).is_ok());
    }
}

/// Holds a new session's events until its `Started` event is out, so subscribers
/// never see a session's events before they know the session.
struct Gate {
    bus: Arc<Bus>,
    open: AtomicBool,
    held: Mutex<Vec<ManagerEvent>>,
}

impl Gate {
    fn send(&self, ev: ManagerEvent) {
        if !self.open.load(Ordering::Acquire) {
            if let Ok(mut held) = self.held.lock() {
                if !self.open.load(Ordering::Acquire) {
                    held.push(ev);
                    return;
                }
            }
        }
        self.bus.send(ev);
    }

    fn open_with(&self, first: ManagerEvent) {
        let Ok(mut held) = self.held.lock() else {
            return;
        };
        self.bus.send(first);
        for ev in held.drain(..) {
            self.bus.send(ev);
        }
        self.open.store(true, Ordering::Release);
    }
}

struct Inner {
    bus: Arc<Bus>,
    sessions: Mutex<HashMap<SessionId, Weak<SessionInner>>>,
    /// Debugging sessions (the engine's): ended with the others.
    debuggers: Mutex<Vec<Weak<engine::Session>>>,
    /// The thread each paused debuggee stopped in, by pid.
    paused: Mutex<HashMap<Pid, tracer::Tid>>,
    next_id: AtomicU64,
}

impl Inner {
    fn live_sessions(&self) -> Vec<Arc<SessionInner>> {
        let Ok(mut map) = self.sessions.lock() else {
            return Vec::new();
        };
        map.retain(|_, w| w.strong_count() > 0);
        map.values().filter_map(Weak::upgrade).collect()
    }

    fn live_debuggers(&self) -> Vec<Arc<engine::Session>> {
        let Ok(mut list) = self.debuggers.lock() else {
            return Vec::new();
        };
        list.retain(|w| w.strong_count() > 0);
        list.iter().filter_map(Weak::upgrade).collect()
    }

    fn shutdown(&self) {
        self.shutdown_where(|_| true);
    }

    /// Ends the sessions whose tracer thread `keep` accepts.
    fn shutdown_where(&self, keep: impl Fn(i32) -> bool + Sync) {
        let sessions = self.live_sessions();
        let debuggers = self.live_debuggers();
        // Ending a session joins its tracer thread; do them all in parallel so a
        // slow detach does not hold up the others.
        std::thread::scope(|s| {
            for session in sessions
                .iter()
                .filter(|x| keep(x.handle.tracer_thread_id()))
            {
                s.spawn(move || session.end(EndMode::Default));
            }
            for debugger in debuggers.iter().filter(|x| keep(x.tracer_thread_id())) {
                s.spawn(move || debugger.end());
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
                sessions: Mutex::new(HashMap::new()),
                debuggers: Mutex::new(Vec::new()),
                paused: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(1),
            }),
        }
    }

    /// A new receiver of every session's events (each subscriber gets every event).
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

    fn gate(&self) -> Arc<Gate> {
        Arc::new(Gate {
            bus: self.inner.bus.clone(),
            open: AtomicBool::new(false),
            held: Mutex::new(Vec::new()),
        })
    }

    fn sink(gate: &Arc<Gate>, id: SessionId) -> tracer::EventSink {
        let gate = gate.clone();
        Box::new(move |_tracer: &mut tracer::Tracer, event| {
            gate.send(ManagerEvent::Target { session: id, event })
        })
    }

    fn register(&self, session: &Arc<SessionInner>, gate: &Gate) {
        if let Ok(mut map) = self.inner.sessions.lock() {
            map.retain(|_, w| w.strong_count() > 0);
            map.insert(session.id, Arc::downgrade(session));
        }
        gate.open_with(ManagerEvent::Started {
            session: session.id,
            pid: session.pid,
            origin: session.origin,
        });
    }

    fn next_id(&self) -> SessionId {
        SessionId(self.inner.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Launches a program under a new tracer thread. Its output arrives as
    /// [`ManagerEvent::Output`]; its first stop as a `Target` event.
    pub fn launch(&self, config: LaunchConfig) -> Result<Session> {
        let id = self.next_id();
        let gate = self.gate();
        let (handle, launch) = tracer::spawn_launch(config, Self::sink(&gate, id))?;
        let stdio = launch.stdio;
        let pty = stdio.stderr.is_none() && stdio.stdout.is_some();
        let mut readers = Vec::new();
        if let Some(out) = stdio.stdout {
            let stream = if pty {
                OutputStream::Pty
            } else {
                OutputStream::Stdout
            };
            readers.push(spawn_reader(out, id, stream, gate.clone()));
        }
        if let Some(err) = stdio.stderr {
            readers.push(spawn_reader(err, id, OutputStream::Stderr, gate.clone()));
        }
        let session = Arc::new(SessionInner {
            id,
            pid: handle.pid(),
            origin: Origin::Launched,
            handle,
            stdin: Mutex::new(stdio.stdin),
            readers: Mutex::new(readers.into_iter().flatten().collect()),
            bus: self.inner.bus.clone(),
            ended: Mutex::new(false),
        });
        self.register(&session, &gate);
        Ok(Session { inner: session })
    }

    /// Attaches to a running process under a new tracer thread.
    pub fn attach(&self, pid: Pid, config: AttachConfig) -> Result<Session> {
        let id = self.next_id();
        let gate = self.gate();
        let handle = tracer::spawn_attach(pid, config, Self::sink(&gate, id))?;
        let session = Arc::new(SessionInner {
            id,
            pid,
            origin: Origin::Attached,
            handle,
            stdin: Mutex::new(None),
            readers: Mutex::new(Vec::new()),
            bus: self.inner.bus.clone(),
            ended: Mutex::new(false),
        });
        self.register(&session, &gate);
        Ok(Session { inner: session })
    }

    /// Follows a fork child handed over by a session launched or attached with
    /// `ForkPolicy::Follow` (its `ForkDetached { stopped: true, .. }` event): a new
    /// session attached to the child, which is continued on its first resume.
    pub fn attach_fork_child(
        &self,
        child: Pid,
        fork_policy: tracer::ForkPolicy,
    ) -> Result<Session> {
        self.attach(
            child,
            AttachConfig {
                fork_policy,
                continue_job_stop: true,
            },
        )
    }

    /// Launches a program under the debugger (stopped at its entry point, see
    /// [`engine::Session::launch`]). The manager ends it with every other session.
    pub fn launch_debug(&self, options: engine::LaunchOptions) -> Result<Arc<engine::Session>> {
        let session = Arc::new(engine::Session::launch(options)?);
        self.adopt(&session);
        Ok(session)
    }

    /// Attaches the debugger to a running process (see [`engine::Session::attach`]).
    pub fn attach_debug(
        &self,
        pid: Pid,
        source_map: engine::SourceMap,
    ) -> Result<Arc<engine::Session>> {
        let session = Arc::new(engine::Session::attach(pid, source_map)?);
        self.adopt(&session);
        Ok(session)
    }

    fn adopt(&self, session: &Arc<engine::Session>) {
        if let Ok(mut list) = self.inner.debuggers.lock() {
            list.retain(|w| w.strong_count() > 0);
            list.push(Arc::downgrade(session));
        }
    }

    /// The live debugging sessions (for the other front-end: the LSP's live values).
    pub fn debug_sessions(&self) -> Vec<Arc<engine::Session>> {
        self.inner.live_debuggers()
    }

    /// Tells every subscriber what a front-end did to a debugging session (the DAP side
    /// publishes stops, resumes, ends and breakpoint lines; the LSP side listens), and
    /// remembers which debuggees are paused.
    pub fn publish(&self, event: ManagerEvent) {
        if let Ok(mut paused) = self.inner.paused.lock() {
            match &event {
                ManagerEvent::DebugStopped { pid, tid } => {
                    paused.insert(*pid, *tid);
                }
                ManagerEvent::DebugResumed { pid } | ManagerEvent::DebugEnded { pid } => {
                    paused.remove(pid);
                }
                _ => {}
            }
        }
        self.inner.bus.send(event);
    }

    /// The debuggees paused right now, with the thread each stopped in.
    pub fn paused_debuggees(&self) -> Vec<PausedDebuggee> {
        let paused: Vec<(Pid, tracer::Tid)> = match self.inner.paused.lock() {
            Ok(p) => p.iter().map(|(p, t)| (*p, *t)).collect(),
            Err(_) => return Vec::new(),
        };
        let live = self.inner.live_debuggers();
        paused
            .into_iter()
            .filter_map(|(pid, tid)| {
                live.iter()
                    .find(|s| s.pid() == pid)
                    .map(|s| PausedDebuggee {
                        session: s.clone(),
                        tid,
                    })
            })
            .collect()
    }

    /// Another handle to a live session (for the other front-end).
    pub fn session(&self, id: SessionId) -> Option<Session> {
        let map = self.inner.sessions.lock().ok()?;
        map.get(&id)
            .and_then(Weak::upgrade)
            .map(|inner| Session { inner })
    }

    /// The live sessions.
    pub fn sessions(&self) -> Vec<SessionInfo> {
        let mut v: Vec<SessionInfo> = self
            .inner
            .live_sessions()
            .iter()
            .map(|s| SessionInfo {
                id: s.id,
                pid: s.pid,
                origin: s.origin,
            })
            .collect();
        v.sort_by_key(|s| s.id);
        v
    }

    /// Ends every session: launched debuggees killed and reaped, attached ones
    /// detached. Sessions handed out stay valid but answer `TracerGone`.
    pub fn shutdown(&self) {
        self.inner.shutdown();
    }
}

impl Drop for ProcessManager {
    fn drop(&mut self) {
        self.inner.shutdown();
    }
}

fn spawn_reader(
    mut file: File,
    session: SessionId,
    stream: OutputStream,
    bus: Arc<Gate>,
) -> Option<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("output:{session}"))
        .spawn(move || {
            let mut buf = vec![0u8; 8192];
            loop {
                match file.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => bus.send(ManagerEvent::Output {
                        session,
                        stream,
                        data: buf[..n].to_vec(),
                    }),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    // EIO on a pty whose last writer is gone is its end of file.
                    Err(_) => break,
                }
            }
        })
        .map_err(|e| tracing::warn!("cannot start an output reader: {e}"))
        .ok()
}

struct SessionInner {
    id: SessionId,
    pid: Pid,
    origin: Origin,
    handle: TracerHandle,
    stdin: Mutex<Option<File>>,
    readers: Mutex<Vec<std::thread::JoinHandle<()>>>,
    bus: Arc<Bus>,
    ended: Mutex<bool>,
}

impl SessionInner {
    fn end(&self, mode: EndMode) -> Result<()> {
        let Ok(mut ended) = self.ended.lock() else {
            return Ok(());
        };
        if *ended {
            return Ok(());
        }
        *ended = true;
        let res = self.handle.end(mode);
        if let Ok(mut stdin) = self.stdin.lock() {
            stdin.take();
        }
        // The readers end at end of file on their own; a debuggee's child may still
        // hold the pipes, so they are not joined here.
        if let Ok(mut readers) = self.readers.lock() {
            readers.clear();
        }
        self.bus.send(ManagerEvent::Ended { session: self.id });
        res.map_err(Error::from)
    }
}

impl Drop for SessionInner {
    fn drop(&mut self) {
        if let Err(e) = self.end(EndMode::Default) {
            tracing::warn!(session = self.id.0, "ending the session: {e}");
        }
    }
}

/// A `Send + Sync + Clone` handle to one session. When the last handle is dropped the
/// session ends (launched: killed; attached: detached).
#[derive(Clone)]
pub struct Session {
    inner: Arc<SessionInner>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.inner.id)
            .field("pid", &self.inner.pid)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// The session id.
    pub fn id(&self) -> SessionId {
        self.inner.id
    }
    /// The debuggee's process id.
    pub fn pid(&self) -> Pid {
        self.inner.pid
    }
    /// Launched or attached.
    pub fn origin(&self) -> Origin {
        self.inner.origin
    }
    /// The tracer: every debugger command (resume, step, pause, registers, memory,
    /// breakpoints, or `call` to run a closure on the tracer thread).
    pub fn target(&self) -> &TracerHandle {
        &self.inner.handle
    }
    /// Writes to the debuggee's stdin (pipe or pty).
    pub fn write_stdin(&self, data: &[u8]) -> Result<()> {
        let mut guard = self.inner.stdin.lock().map_err(|_| {
            Error::Io(
                "stdin lock poisoned".into(),
                std::io::Error::other("poisoned"),
            )
        })?;
        let file = guard.as_mut().ok_or(Error::NoStdin)?;
        file.write_all(data)
            .map_err(|e| Error::Io("writing to the debuggee's stdin".into(), e))
    }
    /// Closes the debuggee's stdin (it reads end of file).
    pub fn close_stdin(&self) {
        if let Ok(mut g) = self.inner.stdin.lock() {
            g.take();
        }
    }
    /// Ends the session the default way: a launched debuggee is killed and reaped,
    /// an attached one detached. Idempotent.
    pub fn end(&self) -> Result<()> {
        self.inner.end(EndMode::Default)
    }
    /// Kills the debuggee (launched or attached) and ends the session.
    pub fn terminate(&self) -> Result<()> {
        self.inner.end(EndMode::Kill)
    }
    /// Detaches (even a launched debuggee, which keeps running) and ends the session.
    pub fn detach(&self) -> Result<()> {
        self.inner.end(EndMode::Detach)
    }
}
