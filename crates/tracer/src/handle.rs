//! The tracer thread and its `Send` handle: how other threads reach a [`Tracer`].
//!
//! The tracer thread owns the [`Tracer`] for its whole life. While the debuggee is
//! stopped it blocks on its command channel; while it runs it blocks in
//! `waitpid(-1, __WALL | __WNOTHREAD)`, which only reaps this thread's own tracees
//! and children. A command sent meanwhile is put on the channel and the thread is
//! woken by a signal ([`wake_signal`], a real-time signal with an empty handler
//! installed without `SA_RESTART`), so `waitpid` returns EINTR and the command runs:
//! a running tracee can always be paused. A wake that lands just before the thread
//! enters `waitpid` would be lost, so the caller re-sends it every few milliseconds
//! until its reply arrives.

use crate::error::{Error, Result};
use crate::launch::LaunchConfig;
use crate::regs::{FpRegisters, Registers};
use crate::sys;
use crate::tracer::{AttachConfig, Event, LaunchInfo, ProcessInfo, SignalPolicy, Tracer};
use crate::types::{Pid, RuntimeAddr, Tid};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::thread::JoinHandle;
use std::time::Duration;

/// Receives every event of one tracee, on its tracer thread, with the [`Tracer`]:
/// the engine can act on a stop right there (evaluate a condition, resume) without a
/// round trip to another thread. It must not block in [`Tracer::wait`]: return, and
/// the tracer thread waits (interruptibly) for the next event.
pub type EventSink = Box<dyn FnMut(&mut Tracer, Event) + Send + 'static>;

/// How long a caller waits for a reply before waking the tracer thread again.
const REKICK: Duration = Duration::from_millis(2);
/// How often a tracer thread with a stopped debuggee checks that it is still alive.
const DEATH_POLL: Duration = Duration::from_millis(100);

/// The signal used to wake a tracer thread out of `waitpid` (SIGRTMIN + 7).
pub fn wake_signal() -> i32 {
    libc::SIGRTMIN() + 7
}

/// Wakes counted by the signal's handler: a tracer thread busy with stops it absorbs (a
/// recorded program's system calls, one after the other) rarely sits in `waitpid` when
/// the signal lands, so it also looks at this count between stops and goes back to its
/// commands when it moved (`Tracer::woken`).
pub(crate) static WAKES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

extern "C" fn on_wake(_: libc::c_int) {
    WAKES.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn install_wake_handler() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: installs an empty, async-signal-safe handler; no SA_RESTART so a
        // blocking waitpid returns EINTR.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_wake as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = 0;
            libc::sigaction(wake_signal(), &sa, std::ptr::null_mut());
        }
    });
}

type Job = Box<dyn FnOnce(&mut Tracer) + Send>;

enum Request {
    Run(Job),
    End(EndMode, Sender<Result<()>>),
}

/// How a session ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndMode {
    /// Launched: kill; attached: detach.
    Default,
    /// Kill and reap, whatever the origin.
    Kill,
    /// Detach, whatever the origin (a launched debuggee keeps running).
    Detach,
}

struct Shared {
    tracer_tid: AtomicI32,
    in_wait: AtomicBool,
    ended: AtomicBool,
}

/// The `Send` + `Sync` handle to a tracer thread. Every method is a typed command
/// answered by the tracer thread; events go to the [`EventSink`] given at spawn.
/// Dropping the handle ends the session ([`EndMode::Default`]).
pub struct TracerHandle {
    pid: Pid,
    info: ProcessInfo,
    tx: Sender<Request>,
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for TracerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TracerHandle")
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

/// Launches a program on a new tracer thread.
pub fn spawn_launch(config: LaunchConfig, sink: EventSink) -> Result<(TracerHandle, LaunchInfo)> {
    let name = format!("tracer:{}", config.program.display());
    let (handle, launch) = spawn_thread(name, sink, move || {
        Tracer::launch(&config).map(|(t, l)| (t, Some(l)))
    })?;
    let launch = launch.ok_or(Error::TracerGone)?;
    Ok((handle, launch))
}

/// Attaches to a process on a new tracer thread.
pub fn spawn_attach(pid: Pid, config: AttachConfig, sink: EventSink) -> Result<TracerHandle> {
    let (handle, _) = spawn_thread(format!("tracer:{}", pid.0), sink, move || {
        Tracer::attach(pid, &config).map(|t| (t, None))
    })?;
    Ok(handle)
}

fn spawn_thread(
    name: String,
    mut sink: EventSink,
    start: impl FnOnce() -> Result<(Tracer, Option<LaunchInfo>)> + Send + 'static,
) -> Result<(TracerHandle, Option<LaunchInfo>)> {
    install_wake_handler();
    let (tx, rx) = crossbeam_channel::unbounded::<Request>();
    let shared = Arc::new(Shared {
        tracer_tid: AtomicI32::new(0),
        in_wait: AtomicBool::new(false),
        ended: AtomicBool::new(false),
    });
    let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
    let sh = shared.clone();
    let thread = std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            let _guard = EndedGuard(sh.clone());
            sh.tracer_tid.store(sys::gettid(), Ordering::SeqCst);
            let tracer = match start() {
                Ok((t, launch)) => {
                    let _ = ready_tx.send(Ok((t.pid(), t.info().clone(), launch)));
                    t
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            serve(tracer, &rx, &sh, &mut sink);
        })
        .map_err(|e| Error::io("spawning the tracer thread", e))?;
    match ready_rx.recv() {
        Ok(Ok((pid, info, launch))) => Ok((
            TracerHandle {
                pid,
                info,
                tx,
                shared,
                thread: Mutex::new(Some(thread)),
            },
            launch,
        )),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => {
            let _ = thread.join();
            Err(Error::TracerGone)
        }
    }
}

/// Marks the thread ended however it ends (return or panic).
struct EndedGuard(Arc<Shared>);

impl Drop for EndedGuard {
    fn drop(&mut self) {
        self.0.ended.store(true, Ordering::SeqCst);
    }
}

/// The tracer thread's loop.
fn serve(mut tracer: Tracer, rx: &Receiver<Request>, shared: &Shared, sink: &mut EventSink) {
    loop {
        while let Some(ev) = tracer.take_queued() {
            sink(&mut tracer, ev);
        }
        // Commands first, without blocking.
        loop {
            match rx.try_recv() {
                Ok(Request::Run(job)) => job(&mut tracer),
                Ok(Request::End(mode, reply)) => {
                    let _ = reply.send(end(tracer, mode, sink));
                    return;
                }
                Err(crossbeam_channel::TryRecvError::Empty) => break,
                Err(crossbeam_channel::TryRecvError::Disconnected) => {
                    let _ = end(tracer, EndMode::Default, sink);
                    return;
                }
            }
            while let Some(ev) = tracer.take_queued() {
                sink(&mut tracer, ev);
            }
        }
        if tracer.has_queued() {
            continue;
        }
        if tracer.is_running() {
            shared.in_wait.store(true, Ordering::SeqCst);
            if !rx.is_empty() {
                shared.in_wait.store(false, Ordering::SeqCst);
                continue;
            }
            let res = tracer.wait_interruptible();
            shared.in_wait.store(false, Ordering::SeqCst);
            match res {
                Ok(Some(ev)) => sink(&mut tracer, ev),
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(pid = tracer.pid().0, "waiting for the debuggee: {e}");
                    std::thread::sleep(REKICK);
                }
            }
            continue;
        }
        // Stopped or exited: block on commands, now and then checking for a death.
        match rx.recv_timeout(DEATH_POLL) {
            Ok(Request::Run(job)) => job(&mut tracer),
            Ok(Request::End(mode, reply)) => {
                let _ = reply.send(end(tracer, mode, sink));
                return;
            }
            Err(RecvTimeoutError::Timeout) => {
                if tracer.is_stopped() {
                    if let Ok(Some(ev)) = tracer.poll() {
                        sink(&mut tracer, ev);
                    }
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                let _ = end(tracer, EndMode::Default, sink);
                return;
            }
        }
    }
}

fn end(mut tracer: Tracer, mode: EndMode, sink: &mut EventSink) -> Result<()> {
    if tracer.has_exited() {
        return Ok(());
    }
    let kill = match mode {
        EndMode::Kill => true,
        EndMode::Detach => false,
        EndMode::Default => tracer.origin() == crate::tracer::Origin::Launched,
    };
    if kill {
        let ev = tracer.kill_in_place()?;
        sink(&mut tracer, ev);
        Ok(())
    } else {
        tracer.detach()
    }
}

impl TracerHandle {
    /// The debuggee's process id.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Relocation facts as of the launch or attach.
    pub fn info(&self) -> &ProcessInfo {
        &self.info
    }

    /// The Linux thread id of the tracer thread (0 before it started).
    pub fn tracer_thread_id(&self) -> i32 {
        self.shared.tracer_tid.load(Ordering::SeqCst)
    }

    /// Whether the tracer thread has ended.
    pub fn is_ended(&self) -> bool {
        self.shared.ended.load(Ordering::SeqCst)
    }

    fn kick(&self) {
        if self.shared.in_wait.load(Ordering::SeqCst) {
            let tid = self.shared.tracer_tid.load(Ordering::SeqCst);
            if tid > 0 {
                // SAFETY: getpid has no preconditions.
                let pid = unsafe { libc::getpid() };
                let _ = sys::tgkill(pid, tid, wake_signal());
            }
        }
    }

    /// Runs `f` on the tracer thread with the [`Tracer`] and returns its result. This
    /// is how the engine runs whole sequences (set breakpoints, read memory) without
    /// a round trip per request.
    pub fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Tracer) -> R + Send + 'static,
    ) -> Result<R> {
        let (rtx, rrx) = crossbeam_channel::bounded(1);
        let job: Job = Box::new(move |t: &mut Tracer| {
            let _ = rtx.send(f(t));
        });
        self.tx
            .send(Request::Run(job))
            .map_err(|_| Error::TracerGone)?;
        self.kick();
        loop {
            match rrx.recv_timeout(REKICK) {
                Ok(r) => return Ok(r),
                Err(RecvTimeoutError::Timeout) => {
                    if self.is_ended() && rrx.is_empty() {
                        return Err(Error::TracerGone);
                    }
                    self.kick();
                }
                Err(RecvTimeoutError::Disconnected) => return Err(Error::TracerGone),
            }
        }
    }

    /// Continues every thread.
    pub fn resume(&self) -> Result<()> {
        self.call(|t| t.resume())?
    }
    /// Single-steps one thread.
    pub fn step(&self, tid: Tid) -> Result<()> {
        self.call(move |t| t.step(tid))?
    }
    /// Pauses a running debuggee; `false` when it was not running.
    pub fn pause(&self) -> Result<bool> {
        self.call(|t| t.interrupt())?
    }
    /// The threads.
    pub fn threads(&self) -> Result<Vec<Tid>> {
        self.call(|t| t.threads())
    }
    /// General registers of a stopped thread.
    pub fn regs(&self, tid: Tid) -> Result<Registers> {
        self.call(move |t| t.regs(tid))?
    }
    /// Writes general registers.
    pub fn set_regs(&self, tid: Tid, regs: Registers) -> Result<()> {
        self.call(move |t| t.set_regs(tid, &regs))?
    }
    /// FP/SSE registers.
    pub fn fp_regs(&self, tid: Tid) -> Result<FpRegisters> {
        self.call(move |t| t.fp_regs(tid))?
    }
    /// A debug register.
    pub fn debug_reg(&self, tid: Tid, n: usize) -> Result<u64> {
        self.call(move |t| t.debug_reg(tid, n))?
    }
    /// Writes a debug register.
    pub fn set_debug_reg(&self, tid: Tid, n: usize, value: u64) -> Result<()> {
        self.call(move |t| t.set_debug_reg(tid, n, value))?
    }
    /// Reads up to `len` bytes (original bytes under breakpoints).
    pub fn read_memory(&self, addr: RuntimeAddr, len: usize) -> Result<Vec<u8>> {
        self.call(move |t| {
            let mut buf = vec![0u8; len];
            let n = t.read_memory(addr, &mut buf)?;
            buf.truncate(n);
            Ok(buf)
        })?
    }
    /// Writes memory.
    pub fn write_memory(&self, addr: RuntimeAddr, data: Vec<u8>) -> Result<()> {
        self.call(move |t| t.write_memory(addr, &data))?
    }
    /// Inserts (or counts one more user of) a breakpoint.
    pub fn insert_breakpoint(&self, addr: RuntimeAddr) -> Result<()> {
        self.call(move |t| t.insert_breakpoint(addr))?
    }
    /// Drops one user of a breakpoint.
    pub fn remove_breakpoint(&self, addr: RuntimeAddr) -> Result<()> {
        self.call(move |t| t.remove_breakpoint(addr))?
    }
    /// Sets the policy of one signal.
    pub fn set_signal_policy(&self, signo: i32, policy: SignalPolicy) -> Result<()> {
        self.call(move |t| t.set_signal_policy(signo, policy))
    }

    /// Ends the session: kills or detaches per `mode`, then joins the tracer thread.
    /// Idempotent; after it every other call returns [`Error::TracerGone`].
    pub fn end(&self, mode: EndMode) -> Result<()> {
        let (rtx, rrx) = crossbeam_channel::bounded(1);
        let sent = self.tx.send(Request::End(mode, rtx)).is_ok();
        let mut result = Ok(());
        if sent {
            self.kick();
            loop {
                match rrx.recv_timeout(REKICK) {
                    Ok(r) => {
                        result = r;
                        break;
                    }
                    Err(RecvTimeoutError::Timeout) => {
                        if self.is_ended() {
                            break;
                        }
                        self.kick();
                    }
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
        }
        let thread = self.thread.lock().ok().and_then(|mut g| g.take());
        if let Some(thread) = thread {
            if thread.join().is_err() {
                tracing::warn!(pid = self.pid.0, "the tracer thread panicked");
            }
        }
        result
    }
}

impl Drop for TracerHandle {
    fn drop(&mut self) {
        if let Err(e) = self.end(EndMode::Default) {
            tracing::warn!(pid = self.pid.0, "ending the session: {e}");
        }
    }
}
