//! The tracer: one process under ptrace, owned by the thread that attached it.

use crate::debugregs::{DebugRegisters, DR6_SINGLE_STEP};
use crate::error::{Error, Result};
use crate::launch::{self, ForkPolicy, LaunchConfig, Stdio, StopAt};
use crate::procfs::{self, Auxv};
use crate::regs::{FpRegisters, Registers};
use crate::sys::{self, Status, WaitResult};
use crate::types::{Pid, RuntimeAddr, Tid};
use nix::errno::Errno;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::File;
use std::marker::PhantomData;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

mod edit;
mod patch;

pub use patch::{PatchSpec, JUMP_LEN};

const INT3: u8 = 0xcc;
const TRAP_BRKPT: i32 = 1;
const TRAP_HWBKPT: i32 = 4;
/// How many wait results of other tracees of this thread are kept at most.
const STASH_LIMIT: usize = 4096;

thread_local! {
    /// Wait results reaped by this thread that belong to no known thread yet: the
    /// first stop of a new clone can arrive before its parent's clone event.
    static STASH: RefCell<VecDeque<WaitResult>> = const { RefCell::new(VecDeque::new()) };
}

fn stash_push(w: WaitResult) {
    STASH.with(|s| {
        let mut s = s.borrow_mut();
        if s.len() >= STASH_LIMIT {
            s.pop_front();
        }
        s.push_back(w);
    });
}

fn stash_take(tid: Tid) -> Option<WaitResult> {
    STASH.with(|s| {
        let mut s = s.borrow_mut();
        let i = s.iter().position(|w| w.tid == tid)?;
        s.remove(i)
    })
}

/// Why a thread (and with it the whole process) stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// A launched program reached its entry point (AT_ENTRY).
    Entry,
    /// The program called exec (or was launched with [`StopAt::Exec`]): the image
    /// changed, every breakpoint is gone and symbols must be reloaded.
    Exec {
        /// The thread that called exec (it now has the process's id).
        former_tid: Tid,
    },
    /// The process was attached to.
    Attached,
    /// A software breakpoint was hit; the pc is back at `addr`.
    Breakpoint {
        /// The breakpoint's address.
        addr: RuntimeAddr,
    },
    /// A single step finished.
    Step,
    /// A hardware breakpoint or watchpoint fired; DR6 says which.
    Watchpoint {
        /// The debug status register at the stop (cleared afterwards).
        dr6: u64,
    },
    /// A signal arrived whose policy says stop; it is delivered on resume when its
    /// policy says pass (see [`Tracer::set_pending_signal`]).
    Signal {
        /// The signal number.
        signo: i32,
        /// `si_code` from its siginfo.
        code: i32,
    },
    /// The process entered a job-control stop (SIGSTOP, SIGTSTP, ...).
    GroupStop {
        /// The stopping signal.
        signo: i32,
    },
    /// [`Tracer::interrupt`] (pause) stopped the process.
    Paused,
}

/// A signal as the kernel describes it (the parts of siginfo a debugger shows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SigInfo {
    /// The signal number.
    pub signo: i32,
    /// `si_code`: why it was sent (`SEGV_MAPERR`, `SI_USER`, `SI_TKILL`, ...).
    pub code: i32,
    /// The faulting address (`si_addr`), for SIGSEGV, SIGBUS, SIGFPE, SIGILL and
    /// SIGTRAP raised by the kernel for a fault (positive `si_code`).
    pub addr: Option<u64>,
    /// The sending process, for signals sent by kill, tkill or sigqueue.
    pub sender: Option<i32>,
}

/// What the tracer reports. After `Stopped` every thread is stopped (all-stop); the
/// other events leave the process running as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// Every thread is stopped; `tid` stopped first, for `reason`.
    Stopped {
        /// The thread the stop is about.
        tid: Tid,
        /// Why.
        reason: StopReason,
    },
    /// A new thread appeared.
    ThreadCreated {
        /// The new thread.
        tid: Tid,
        /// The thread that created it.
        parent: Tid,
    },
    /// A thread other than the main thread exited.
    ThreadExited {
        /// The thread.
        tid: Tid,
    },
    /// The debuggee forked (or vforked); the child was freed of breakpoints and detached.
    ForkDetached {
        /// The forking thread.
        parent: Tid,
        /// The new process, now untraced.
        child: Pid,
        /// Whether it was a vfork.
        vfork: bool,
        /// Whether it was left in a job-control stop for another tracer
        /// ([`ForkPolicy::Follow`]).
        stopped: bool,
    },
    /// The process exited with this code.
    Exited {
        /// The exit code.
        code: i32,
    },
    /// The process was killed by a signal.
    Signaled {
        /// The signal.
        signo: i32,
        /// Whether it dumped core.
        core_dumped: bool,
    },
}

impl Event {
    /// Whether the process no longer exists after this event.
    pub fn is_exit(&self) -> bool {
        matches!(self, Event::Exited { .. } | Event::Signaled { .. })
    }
}

/// What to do when a signal arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignalPolicy {
    /// Stop the process and report it.
    pub stop: bool,
    /// Deliver it to the program on resume.
    pub pass: bool,
}

impl SignalPolicy {
    /// The default policy of a signal, as gdb has it: job-control and bookkeeping
    /// signals pass silently, SIGTRAP from elsewhere stops and is not passed, the
    /// rest stop and are passed.
    pub fn default_for(signo: i32) -> SignalPolicy {
        match signo {
            libc::SIGALRM
            | libc::SIGCHLD
            | libc::SIGURG
            | libc::SIGWINCH
            | libc::SIGIO
            | libc::SIGVTALRM
            | libc::SIGPROF
            | libc::SIGCONT
            | libc::SIGSTOP
            | libc::SIGTSTP
            | libc::SIGTTIN
            | libc::SIGTTOU => SignalPolicy {
                stop: false,
                pass: true,
            },
            libc::SIGTRAP => SignalPolicy {
                stop: true,
                pass: false,
            },
            _ => SignalPolicy {
                stop: true,
                pass: true,
            },
        }
    }
}

/// Options for [`Tracer::attach`].
#[derive(Clone, Copy, Debug, Default)]
pub struct AttachConfig {
    /// Fork handling.
    pub fork_policy: ForkPolicy,
    /// Send SIGCONT once attached, so a process in a job-control stop (a fork child
    /// handed over by [`ForkPolicy::Follow`]) runs on the next resume.
    pub continue_job_stop: bool,
}

/// Whether tandem started the process or attached to it; decides what ending the
/// session does (kill vs detach).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Started by tandem: killed and reaped when the session ends.
    Launched,
    /// Attached to: detached, breakpoints removed, left running.
    Attached,
}

/// Facts about the process the engine needs to relocate file addresses.
#[derive(Clone, Debug)]
pub struct ProcessInfo {
    /// The process.
    pub pid: Pid,
    /// Launched or attached.
    pub origin: Origin,
    /// /proc/PID/exe at the last exec or attach.
    pub exe: Option<PathBuf>,
    /// The auxiliary vector (AT_ENTRY, AT_PHDR, ...).
    pub auxv: Auxv,
    /// Runtime minus file address of the main executable (0 for non-PIE), computed
    /// from AT_PHDR and the PT_PHDR program header in memory.
    pub load_bias: Option<u64>,
    /// Whether address randomization is off.
    pub aslr_disabled: bool,
    /// Things that did not go as asked but did not fail the launch.
    pub warnings: Vec<String>,
}

/// What [`Tracer::launch`] returns beside the tracer.
#[derive(Debug)]
pub struct LaunchInfo {
    /// The debuggee's standard streams, parent's ends.
    pub stdio: Stdio,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum After {
    ContinueAll,
    ReportStep,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Stopped,
    Running,
    /// One thread single-steps (over the breakpoint at `addr`, removed meanwhile);
    /// the others stay stopped.
    SteppingOver {
        tid: Tid,
        addr: Option<u64>,
        then: After,
    },
    Exited,
}

#[derive(Clone, Copy, Default)]
struct Thread {
    /// Resumed and not reaped since (includes LISTENing threads).
    running: bool,
    stepping: bool,
    interrupt_sent: bool,
    /// Created by clone, its first stop not seen yet.
    new: bool,
    group_stop: bool,
    listening: bool,
    /// Signal to deliver on the next resume.
    deliver: i32,
    /// The pc was moved back to this breakpoint after a hit.
    at_bp: Option<u64>,
    /// Registers read since the last stop (valid while stopped).
    regs: Option<libc::user_regs_struct>,
}

#[derive(Clone, Copy, Debug)]
struct Breakpoint {
    saved: u8,
    refs: u32,
}

enum Outcome {
    Absorbed,
    Report(Tid, StopReason),
    Info(Event),
    Gone(Event),
}

/// One process under ptrace. Not `Send`: every ptrace request for a tracee must come
/// from the thread that attached it, and the compiler holds that rule.
pub struct Tracer {
    pid: Pid,
    info: ProcessInfo,
    threads: HashMap<Tid, Thread>,
    breakpoints: BTreeMap<u64, Breakpoint>,
    mem: Option<File>,
    phase: Phase,
    queue: VecDeque<Event>,
    deferred: VecDeque<(Tid, StopReason)>,
    policy: Vec<SignalPolicy>,
    fork_policy: ForkPolicy,
    pause_requested: bool,
    /// A pause was asked for and a stop came first that the engine may pass over (a false
    /// condition): the pause is still owed, by that thread.
    pause_owed: Option<Tid>,
    vfork_bps_removed: bool,
    debugregs_used: bool,
    /// The hardware slots every thread has, also written to threads created later.
    watch: DebugRegisters,
    /// Fork children left stopped for another tracer (ForkPolicy::Follow).
    handed_over: Vec<Pid>,
    /// /proc/PID/task/PID/stat kept open: stop_all checks the main thread's state
    /// on every multithreaded stop, with one pread instead of open+read+close.
    leader_stat: Option<File>,
    /// Jump patches by site (each also an entry of `breakpoints`).
    patches: BTreeMap<u64, patch::Patch>,
    /// Memory mapped into the debuggee for placed code.
    regions: Vec<patch::Region>,
    /// Traps whose breakpoint was removed, and where a thread that still reports one
    /// resumes (the restored instruction; a placed condition's site).
    moribund: HashMap<u64, u64>,
    /// Inside [`Tracer::edit_text`]: nothing runs, so the stacks are read once.
    editing: bool,
    /// Every thread's pc and stack words, read once during an edit (`None`: not yet).
    stacks: Option<edit::StackWords>,
    _not_send: PhantomData<*const ()>,
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer")
            .field("pid", &self.pid)
            .field("phase", &self.phase)
            .field("threads", &self.threads.len())
            .field("breakpoints", &self.breakpoints.len())
            .finish_non_exhaustive()
    }
}

fn base_options() -> libc::c_int {
    libc::PTRACE_O_TRACECLONE
        | libc::PTRACE_O_TRACEEXEC
        | libc::PTRACE_O_TRACEFORK
        | libc::PTRACE_O_TRACEVFORK
        | libc::PTRACE_O_TRACEVFORKDONE
}

fn leader_is_zombie(stat: &Option<File>) -> bool {
    let Some(f) = stat else {
        return false;
    };
    let mut buf = [0u8; 512];
    let Ok(n) = f.read_at(&mut buf, 0) else {
        return false;
    };
    let text = String::from_utf8_lossy(&buf[..n]);
    procfs::stat_state(&text) == Some('Z')
}

/// Restarts one stopped thread: single-step, LISTEN (job-control stopped) or continue,
/// delivering its pending signal.
fn resume_one(tid: Tid, t: &mut Thread) {
    let sig = std::mem::take(&mut t.deliver);
    let res = if t.stepping {
        sys::singlestep(tid, sig)
    } else if t.group_stop {
        t.listening = true;
        sys::listen(tid)
    } else {
        sys::cont(tid, sig)
    };
    if let Err(e) = res {
        // ESRCH: the thread died meanwhile; its exit is reported by wait.
        tracing::debug!(tid = tid.0, "resuming failed: {e}");
    }
    t.running = true;
    t.regs = None;
    t.at_bp = None;
}

/// Writes DR0–DR3 and DR7 of one stopped thread. DR7 is cleared first: the kernel
/// checks each address against the length DR7 gives its slot at the time.
fn write_debug_regs(tid: Tid, regs: &DebugRegisters) -> sys::SysResult<()> {
    sys::poke_debugreg(tid, 7, 0)?;
    for (i, slot) in regs.slots.iter().enumerate() {
        if let Some(s) = slot {
            sys::poke_debugreg(tid, i, s.addr)?;
        }
    }
    let dr7 = regs.dr7();
    if dr7 != 0 {
        sys::poke_debugreg(tid, 7, dr7)?;
    }
    Ok(())
}

fn is_stop_signal(sig: i32) -> bool {
    matches!(
        sig,
        libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU
    )
}

fn open_mem(pid: Pid) -> Option<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!("/proc/{}/mem", pid.0))
        .map_err(|e| tracing::warn!(pid = pid.0, "cannot open /proc/PID/mem: {e}"))
        .ok()
}

impl Tracer {
    fn new(pid: Pid, origin: Origin, fork_policy: ForkPolicy) -> Tracer {
        Tracer {
            pid,
            info: ProcessInfo {
                pid,
                origin,
                exe: None,
                auxv: Auxv::default(),
                load_bias: None,
                aslr_disabled: false,
                warnings: Vec::new(),
            },
            threads: HashMap::new(),
            breakpoints: BTreeMap::new(),
            mem: None,
            phase: Phase::Stopped,
            queue: VecDeque::new(),
            deferred: VecDeque::new(),
            policy: (0..=64).map(SignalPolicy::default_for).collect(),
            fork_policy,
            pause_requested: false,
            pause_owed: None,
            vfork_bps_removed: false,
            debugregs_used: false,
            watch: DebugRegisters::default(),
            handed_over: Vec::new(),
            leader_stat: File::open(format!("/proc/{}/task/{}/stat", pid.0, pid.0)).ok(),
            patches: BTreeMap::new(),
            regions: Vec::new(),
            moribund: HashMap::new(),
            editing: false,
            stacks: None,
            _not_send: PhantomData,
        }
    }

    /// Starts a program traced from its first instruction. Returns with every thread
    /// stopped and an `Event::Stopped` (reason `Entry` or `Exec`) queued for [`Tracer::wait`].
    pub fn launch(config: &LaunchConfig) -> Result<(Tracer, LaunchInfo)> {
        let options = base_options() | libc::PTRACE_O_EXITKILL;
        let spawned = launch::spawn(config, options)?;
        let mut t = Tracer::new(spawned.pid, Origin::Launched, config.fork_policy);
        t.info.aslr_disabled = spawned.aslr_disabled;
        t.info.warnings = spawned.warnings;
        t.threads.insert(Tid(spawned.pid.0), Thread::default());
        t.refresh_image();
        let info = LaunchInfo {
            stdio: spawned.stdio,
        };
        if config.stop_at == StopAt::Entry {
            if let Some(entry) = t.info.auxv.entry {
                t.run_to(entry)?;
                if t.phase == Phase::Exited {
                    return Ok((t, info));
                }
                t.queue.push_back(Event::Stopped {
                    tid: Tid(t.pid.0),
                    reason: StopReason::Entry,
                });
                return Ok((t, info));
            }
        }
        t.queue.push_back(Event::Stopped {
            tid: Tid(t.pid.0),
            reason: StopReason::Exec {
                former_tid: Tid(t.pid.0),
            },
        });
        Ok((t, info))
    }

    /// Runs until `addr` with a temporary breakpoint (used for the entry point).
    fn run_to(&mut self, addr: RuntimeAddr) -> Result<()> {
        self.insert_breakpoint(addr)?;
        self.resume()?;
        loop {
            match self.wait()? {
                Event::Stopped {
                    reason: StopReason::Breakpoint { addr: a },
                    ..
                } if a == addr => break,
                Event::Stopped { .. } => self.resume()?,
                ev if ev.is_exit() => {
                    self.queue.push_back(ev);
                    return Ok(());
                }
                _ => {}
            }
        }
        self.remove_breakpoint(addr)
    }

    /// Seizes every thread of a running process and stops them all. Returns with an
    /// `Event::Stopped { reason: Attached }` queued.
    pub fn attach(pid: Pid, config: &AttachConfig) -> Result<Tracer> {
        if pid.0 <= 0 {
            return Err(Error::NoSuchProcess { pid });
        }
        let mut t = Tracer::new(pid, Origin::Attached, config.fork_policy);
        let options = base_options();
        // Seize every thread; re-read the task list until it stops changing, since
        // threads created before their creator was seized are not auto-attached.
        let mut rounds = 0;
        loop {
            let tids = procfs::threads_of(pid).map_err(|_| Error::NoSuchProcess { pid })?;
            let mut added = false;
            for tid in tids {
                if t.threads.contains_key(&tid) {
                    continue;
                }
                match sys::seize(tid, options) {
                    Ok(()) => {}
                    Err(Errno::ESRCH) if tid.0 != pid.0 => continue,
                    Err(Errno::ESRCH) => return Err(Error::NoSuchProcess { pid }),
                    Err(Errno::EPERM) if t.threads.is_empty() => {
                        return Err(Error::AttachPermission {
                            pid,
                            hint: permission_hint(pid),
                        })
                    }
                    Err(e) => return Err(Error::ptrace("PTRACE_SEIZE", tid, e)),
                }
                let _ = sys::interrupt(tid);
                t.threads.insert(
                    tid,
                    Thread {
                        running: true,
                        interrupt_sent: true,
                        ..Thread::default()
                    },
                );
                added = true;
            }
            rounds += 1;
            if !added || rounds > 100 {
                break;
            }
        }
        t.phase = Phase::Running;
        if !t.stop_all()? {
            return Ok(t);
        }
        t.phase = Phase::Stopped;
        if config.continue_job_stop {
            // Ends the job-control stop, and also discards a SIGSTOP still pending
            // (a handed-over fork child may not have reached its stop yet). The
            // SIGCONT itself passes silently (policy) and LISTENing threads are
            // continued when it is noticed.
            let _ = sys::kill(pid.0, libc::SIGCONT);
        }
        // Stops collected while attaching are not news to anyone.
        t.deferred.retain(|(_, r)| !matches!(r, StopReason::Paused));
        t.refresh_image();
        t.queue.push_back(Event::Stopped {
            tid: Tid(pid.0),
            reason: StopReason::Attached,
        });
        Ok(t)
    }

    fn refresh_image(&mut self) {
        self.mem = open_mem(self.pid);
        let stat = format!("/proc/{}/task/{}/stat", self.pid.0, self.pid.0);
        self.leader_stat = File::open(stat).ok();
        self.info.exe = procfs::exe_of(self.pid);
        match procfs::read_auxv(self.pid) {
            Ok(auxv) => self.info.auxv = auxv,
            Err(e) => tracing::warn!(pid = self.pid.0, "cannot read auxv: {e}"),
        }
        self.info.load_bias = self.compute_load_bias();
    }

    fn compute_load_bias(&self) -> Option<u64> {
        let phdr = self.info.auxv.phdr?;
        let (phent, phnum) = (self.info.auxv.phent as usize, self.info.auxv.phnum as usize);
        if phent < 56 || phnum == 0 || phnum > 256 {
            return None;
        }
        let mut buf = vec![0u8; phent * phnum];
        let n = self.read_memory(phdr, &mut buf).ok()?;
        for h in buf[..n].chunks_exact(phent) {
            let p_type = u32::from_ne_bytes(h[0..4].try_into().ok()?);
            let p_vaddr = u64::from_ne_bytes(h[16..24].try_into().ok()?);
            if p_type == 6 {
                // PT_PHDR: where the headers are meant to be vs where they are.
                return Some(phdr.0.wrapping_sub(p_vaddr));
            }
        }
        None
    }

    /// The process id.
    pub fn pid(&self) -> Pid {
        self.pid
    }
    /// Facts for relocation (auxv, load bias, exe).
    pub fn info(&self) -> &ProcessInfo {
        &self.info
    }
    /// Whether tandem launched or attached the process.
    pub fn origin(&self) -> Origin {
        self.info.origin
    }
    /// The known threads, sorted.
    pub fn threads(&self) -> Vec<Tid> {
        let mut v: Vec<Tid> = self.threads.keys().copied().collect();
        v.sort();
        v
    }
    /// Whether the process is running (a wait will return an event eventually).
    pub fn is_running(&self) -> bool {
        matches!(self.phase, Phase::Running | Phase::SteppingOver { .. })
    }
    /// Whether every thread is stopped.
    pub fn is_stopped(&self) -> bool {
        self.phase == Phase::Stopped
    }
    /// Whether the process has exited (or was detached or killed).
    pub fn has_exited(&self) -> bool {
        self.phase == Phase::Exited
    }
    /// Whether an event is ready without waiting.
    pub fn has_queued(&self) -> bool {
        !self.queue.is_empty()
    }
    /// Takes a ready event without waiting.
    pub fn take_queued(&mut self) -> Option<Event> {
        self.queue.pop_front()
    }

    // ---------------------------------------------------------------- signals

    /// What the kernel says about the signal a stopped thread is stopped with (its
    /// siginfo): valid at a `Signal` stop, until the thread runs again.
    pub fn signal_info(&self, tid: Tid) -> Result<SigInfo> {
        if self.thread(tid)?.running {
            return Err(Error::Running);
        }
        let info = sys::siginfo(tid).map_err(|e| Error::ptrace("PTRACE_GETSIGINFO", tid, e))?;
        let (signo, code) = (info.si_signo, info.si_code);
        let fault = matches!(
            signo,
            libc::SIGSEGV | libc::SIGBUS | libc::SIGFPE | libc::SIGILL | libc::SIGTRAP
        );
        // SAFETY: the union member read matches the kind of signal: si_addr for the
        // kernel's fault signals, si_pid for signals sent by a process.
        let addr = if fault && code > 0 {
            Some(unsafe { info.si_addr() } as u64)
        } else {
            None
        };
        let sender = if code <= 0 {
            // SAFETY: as above (SI_USER, SI_TKILL, SI_QUEUE carry the sender's pid).
            Some(unsafe { info.si_pid() })
        } else {
            None
        };
        Ok(SigInfo {
            signo,
            code,
            addr,
            sender,
        })
    }

    /// Sets the policy for one signal.
    pub fn set_signal_policy(&mut self, signo: i32, policy: SignalPolicy) {
        if let Some(p) = self.policy.get_mut(signo as usize) {
            *p = policy;
        }
    }
    /// The policy for one signal.
    pub fn signal_policy(&self, signo: i32) -> SignalPolicy {
        self.policy
            .get(signo as usize)
            .copied()
            .unwrap_or(SignalPolicy::default_for(signo))
    }
    /// The signal a stopped thread will receive when resumed (or none): overrides
    /// what the policy decided at the stop.
    pub fn set_pending_signal(&mut self, tid: Tid, signo: Option<i32>) -> Result<()> {
        let t = self
            .threads
            .get_mut(&tid)
            .ok_or(Error::UnknownThread(tid))?;
        t.deliver = signo.unwrap_or(0);
        Ok(())
    }

    // ---------------------------------------------------------------- running

    fn require_stopped(&self) -> Result<()> {
        match self.phase {
            Phase::Stopped => Ok(()),
            Phase::Exited => Err(Error::Exited),
            _ => Err(Error::Running),
        }
    }

    /// Resumes every thread (all-stop continue). A thread sitting on a breakpoint is
    /// first stepped over it while the others stay stopped, so no hit is lost. If a
    /// stop collected earlier is still unreported, nothing is resumed and that stop
    /// is what the next [`Tracer::wait`] returns.
    pub fn resume(&mut self) -> Result<()> {
        self.require_stopped()?;
        self.continue_all()
    }

    /// Single-steps one thread; the others stay stopped. The next wait returns
    /// `Stopped { reason: Step }` (or whatever stopped the thread first).
    pub fn step(&mut self, tid: Tid) -> Result<()> {
        self.require_stopped()?;
        let pc = self.regs(tid)?.pc();
        // A pc inside a patch's bytes (stepped there) steps with the original bytes.
        let addr = if self.breakpoints.contains_key(&pc) {
            Some(pc)
        } else {
            self.active_patch_inside(pc)
        };
        if let Some(a) = addr {
            self.write_bp_byte(a, false)?;
        }
        self.phase = Phase::SteppingOver {
            tid,
            addr,
            then: After::ReportStep,
        };
        if let Some(t) = self.threads.get_mut(&tid) {
            t.stepping = true;
        }
        self.resume_thread(tid);
        Ok(())
    }

    /// Whether a pause asked for is still owed: a stop came before the interrupt and the
    /// caller, about to resume because that stop is not shown (a condition that does not
    /// hold), must report a pause instead (by the thread returned). Showing the stop, or
    /// resuming on the user's request, also settles it: take it then and drop it.
    pub fn take_owed_pause(&mut self) -> Option<Tid> {
        self.pause_owed
            .take()
            .filter(|tid| self.threads.contains_key(tid))
    }

    /// Stops a running process (pause). Returns `false` when it was not running; else
    /// the next wait returns a `Stopped` event (reason `Paused`, or whatever stopped a
    /// thread first).
    pub fn interrupt(&mut self) -> Result<bool> {
        tracing::debug!(
            phase = ?self.phase,
            threads = ?self
                .threads
                .iter()
                .map(|(t, s)| (t.0, s.running, s.interrupt_sent, s.new, s.stepping))
                .collect::<Vec<_>>(),
            "pause"
        );
        if !self.is_running() {
            return Ok(false);
        }
        self.pause_requested = true;
        for (tid, t) in self.threads.iter_mut() {
            if t.running && !t.interrupt_sent && !t.new && sys::interrupt(*tid).is_ok() {
                t.interrupt_sent = true;
            }
        }
        Ok(true)
    }

    fn continue_all(&mut self) -> Result<()> {
        while let Some((tid, reason)) = self.deferred.pop_front() {
            // A breakpoint removed since its hit was collected is no news any more.
            if let StopReason::Breakpoint { addr } = reason {
                if !self.breakpoints.contains_key(&addr.0) {
                    continue;
                }
            }
            if !self.threads.contains_key(&tid) {
                continue;
            }
            self.phase = Phase::Stopped;
            self.queue.push_back(Event::Stopped { tid, reason });
            return Ok(());
        }
        self.leave_patch_sites();
        // Step threads off breakpoints one at a time, the others stopped.
        let on_bp: Option<(Tid, u64)> = self.threads.iter().find_map(|(tid, t)| {
            let addr = t.at_bp?;
            (!t.running && t.regs.is_some_and(|r| r.rip == addr)).then_some((*tid, addr))
        });
        if let Some((tid, addr)) = on_bp {
            if self.breakpoints.contains_key(&addr) {
                self.write_bp_byte(addr, false)?;
                self.phase = Phase::SteppingOver {
                    tid,
                    addr: Some(addr),
                    then: After::ContinueAll,
                };
                if let Some(t) = self.threads.get_mut(&tid) {
                    t.stepping = true;
                }
                self.resume_thread(tid);
                return Ok(());
            }
            if let Some(t) = self.threads.get_mut(&tid) {
                t.at_bp = None;
            }
            return self.continue_all();
        }
        // No allocation on this path: it runs on every breakpoint hit.
        for (tid, t) in self.threads.iter_mut() {
            if !t.running {
                resume_one(*tid, t);
            }
        }
        self.phase = Phase::Running;
        Ok(())
    }

    /// Restarts one stopped thread the way its state asks for.
    fn resume_thread(&mut self, tid: Tid) {
        if let Some(t) = self.threads.get_mut(&tid) {
            resume_one(tid, t);
        }
    }

    fn write_bp_byte(&mut self, addr: u64, insert: bool) -> Result<()> {
        if let Some(p) = self.patches.get(&addr).filter(|p| p.active) {
            let bytes = if insert {
                p.jump_bytes()
            } else {
                p.saved.clone()
            };
            return self.write_raw(addr, &bytes);
        }
        let byte = if insert {
            INT3
        } else {
            match self.breakpoints.get(&addr) {
                Some(bp) => bp.saved,
                None => return Ok(()),
            }
        };
        self.write_raw(addr, &[byte])
    }

    // ---------------------------------------------------------------- waiting

    /// Waits for the next event, blocking. After `Stopped` the process is all-stopped.
    pub fn wait(&mut self) -> Result<Event> {
        loop {
            if let Some(ev) = self.next_event(true, false)? {
                return Ok(ev);
            }
        }
    }

    /// Like [`Tracer::wait`] but returns `Ok(None)` when a signal interrupts the wait,
    /// so a thread serving commands can look at them (see [`crate::handle`]).
    pub fn wait_interruptible(&mut self) -> Result<Option<Event>> {
        self.next_event(true, true)
    }

    /// Reaps what is ready without blocking; also notices the death of a stopped
    /// process (SIGKILL from outside).
    pub fn poll(&mut self) -> Result<Option<Event>> {
        self.next_event(false, false)
    }

    fn next_event(&mut self, block: bool, interruptible: bool) -> Result<Option<Event>> {
        if let Some(ev) = self.queue.pop_front() {
            return Ok(Some(ev));
        }
        match self.phase {
            Phase::Exited => return Err(Error::Exited),
            Phase::Stopped if block => return Err(Error::NotRunning),
            _ => {}
        }
        loop {
            let w = match self.take_own_stash() {
                Some(w) => w,
                None => match sys::wait(-1, !block, interruptible) {
                    Ok(Some(w)) => w,
                    Ok(None) => return Ok(None),
                    Err(Errno::ECHILD) => {
                        self.phase = Phase::Exited;
                        self.threads.clear();
                        return Err(Error::Exited);
                    }
                    Err(e) => return Err(Error::ptrace("waitpid", Tid(self.pid.0), e)),
                },
            };
            if !self.threads.contains_key(&w.tid) {
                stash_push(w);
                continue;
            }
            let collecting = self.phase == Phase::Stopped;
            match self.handle_status(w, collecting)? {
                Outcome::Absorbed => {}
                Outcome::Info(ev) => return Ok(Some(ev)),
                Outcome::Gone(ev) => return Ok(Some(ev)),
                Outcome::Report(tid, reason) if collecting => {
                    self.deferred.push_back((tid, reason));
                }
                Outcome::Report(tid, reason) => {
                    self.finish_step_over_early(tid);
                    // The stop answers a pause only if it is shown; a hit the engine
                    // passes over still owes the pause (see take_owed_pause).
                    if std::mem::take(&mut self.pause_requested) {
                        self.pause_owed = Some(tid);
                    }
                    if self.stop_all()? {
                        self.phase = Phase::Stopped;
                        self.queue.push_back(Event::Stopped { tid, reason });
                    }
                    return Ok(self.queue.pop_front());
                }
            }
            // A step-over that ended in a continue may have found a stop to report.
            if self.phase == Phase::Exited || !self.queue.is_empty() {
                return Ok(self.queue.pop_front());
            }
            if self.phase == Phase::Stopped && block {
                return Err(Error::NotRunning);
            }
        }
    }

    fn take_own_stash(&self) -> Option<WaitResult> {
        STASH.with(|s| {
            let mut s = s.borrow_mut();
            if s.is_empty() {
                return None;
            }
            let i = s.iter().position(|w| self.threads.contains_key(&w.tid))?;
            s.remove(i)
        })
    }

    /// A stop other than the step's own ended a step-over: put the breakpoint back.
    fn finish_step_over_early(&mut self, tid: Tid) {
        if let Phase::SteppingOver { tid: t0, addr, .. } = self.phase {
            if let Some(t) = self.threads.get_mut(&t0) {
                t.stepping = false;
            }
            if let Some(a) = addr {
                if self.breakpoints.contains_key(&a) {
                    let _ = self.write_bp_byte(a, true);
                }
            }
            let _ = tid;
            self.phase = Phase::Running;
        }
    }

    /// Interrupts every running thread and reaps until all are stopped. Stops that
    /// are news (breakpoint hits, signals) are kept in `deferred` and reported on a
    /// later resume. Returns false when the process exited meanwhile.
    fn stop_all(&mut self) -> Result<bool> {
        let pid = self.pid;
        let leader_stat = &self.leader_stat;
        for (tid, t) in self.threads.iter_mut() {
            if !t.running || t.interrupt_sent || t.new {
                continue;
            }
            // A main thread that called pthread_exit is a zombie that never stops.
            if tid.0 == pid.0 && leader_is_zombie(leader_stat) {
                t.running = false;
                continue;
            }
            match sys::interrupt(*tid) {
                Ok(()) => t.interrupt_sent = true,
                Err(e) => tracing::debug!(tid = tid.0, "PTRACE_INTERRUPT: {e}"),
            }
        }
        while self.threads.values().any(|t| t.running) {
            let w = match self.take_own_stash() {
                Some(w) => w,
                None => match sys::wait(-1, false, false) {
                    Ok(Some(w)) => w,
                    Ok(None) => continue,
                    Err(Errno::ECHILD) => {
                        self.phase = Phase::Exited;
                        self.threads.clear();
                        return Ok(false);
                    }
                    Err(e) => return Err(Error::ptrace("waitpid", Tid(pid.0), e)),
                },
            };
            if !self.threads.contains_key(&w.tid) {
                stash_push(w);
                continue;
            }
            if !self.collect(w)? {
                return Ok(false);
            }
        }
        if !self.collect_pending_traps()? {
            return Ok(false);
        }
        self.evacuate_patches();
        Ok(true)
    }

    /// Keeps what one wait result of a known thread says while the process is being
    /// stopped: news for later, the thread left stopped. False when the process is gone.
    fn collect(&mut self, w: WaitResult) -> Result<bool> {
        match self.handle_status(w, true)? {
            Outcome::Absorbed => {}
            Outcome::Info(ev) => self.queue.push_back(ev),
            Outcome::Report(tid, reason) => self.deferred.push_back((tid, reason)),
            Outcome::Gone(ev) => {
                self.queue.push_back(ev);
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Classifies one wait result of a known thread. With `collecting`, threads are
    /// left stopped; otherwise absorbed stops are resumed.
    fn handle_status(&mut self, w: WaitResult, collecting: bool) -> Result<Outcome> {
        let tid = w.tid;
        match sys::decode(w.status) {
            Status::Exited(code) => Ok(self.thread_gone(tid, Event::Exited { code })),
            Status::Signaled(signo, core_dumped) => {
                Ok(self.thread_gone(tid, Event::Signaled { signo, core_dumped }))
            }
            Status::Other => Ok(Outcome::Absorbed),
            Status::Stopped(sig, ev) => {
                if let Some(t) = self.threads.get_mut(&tid) {
                    t.running = false;
                    // Any trap consumes a PTRACE_INTERRUPT requested before it; one
                    // requested while the thread was already trapped fires on the next
                    // resume and is absorbed by event_stop.
                    t.interrupt_sent = false;
                }
                match ev {
                    0 => self.signal_stop(tid, sig, collecting),
                    libc::PTRACE_EVENT_STOP => Ok(self.event_stop(tid, sig, collecting)),
                    libc::PTRACE_EVENT_CLONE => {
                        let new = Tid(sys::event_msg(tid).unwrap_or(0) as i32);
                        if new.0 > 0 {
                            self.threads.insert(
                                new,
                                Thread {
                                    running: true,
                                    new: true,
                                    ..Thread::default()
                                },
                            );
                            if let Some(w) = stash_take(new) {
                                // Its first stop came before this event.
                                let _ = self.handle_status(w, collecting)?;
                            }
                        }
                        self.after_info(tid, collecting);
                        Ok(Outcome::Info(Event::ThreadCreated {
                            tid: new,
                            parent: tid,
                        }))
                    }
                    libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK => {
                        let vfork = ev == libc::PTRACE_EVENT_VFORK;
                        let child = Pid(sys::event_msg(tid).unwrap_or(0) as i32);
                        self.detach_fork_child(child, vfork);
                        self.after_info(tid, collecting);
                        Ok(Outcome::Info(Event::ForkDetached {
                            parent: tid,
                            child,
                            vfork,
                            stopped: self.fork_policy == ForkPolicy::Follow,
                        }))
                    }
                    libc::PTRACE_EVENT_VFORK_DONE => {
                        if std::mem::take(&mut self.vfork_bps_removed) {
                            let addrs: Vec<u64> = self.breakpoints.keys().copied().collect();
                            for a in addrs {
                                let _ = self.write_bp_byte(a, true);
                            }
                        }
                        self.after_info(tid, collecting);
                        Ok(Outcome::Absorbed)
                    }
                    libc::PTRACE_EVENT_EXEC => {
                        let former = Tid(sys::event_msg(tid).unwrap_or(tid.0 as u64) as i32);
                        let leader = Tid(self.pid.0);
                        let kept = self.threads.remove(&tid).unwrap_or_default();
                        self.threads.clear();
                        self.threads.insert(
                            leader,
                            Thread {
                                running: false,
                                ..kept
                            },
                        );
                        if let Some(t) = self.threads.get_mut(&leader) {
                            t.stepping = false;
                            t.regs = None;
                            t.at_bp = None;
                        }
                        // The old image and its breakpoints are gone; the kernel
                        // cleared the debug registers too.
                        self.breakpoints.clear();
                        self.patches.clear();
                        self.regions.clear();
                        self.moribund.clear();
                        self.watch = DebugRegisters::default();
                        self.deferred.clear();
                        self.refresh_image();
                        if let Phase::SteppingOver { .. } = self.phase {
                            self.phase = Phase::Running;
                        }
                        Ok(Outcome::Report(
                            leader,
                            StopReason::Exec { former_tid: former },
                        ))
                    }
                    _ => {
                        self.after_info(tid, collecting);
                        Ok(Outcome::Absorbed)
                    }
                }
            }
        }
    }

    /// After an informational stop: resume the thread unless all are being stopped.
    fn after_info(&mut self, tid: Tid, collecting: bool) {
        if !collecting {
            self.resume_thread(tid);
        }
    }

    fn thread_gone(&mut self, tid: Tid, exit: Event) -> Outcome {
        if tid.0 == self.pid.0 {
            self.threads.clear();
            self.phase = Phase::Exited;
            self.mem = None;
            return Outcome::Gone(exit);
        }
        if self.threads.remove(&tid).is_none() {
            return Outcome::Absorbed;
        }
        if let Phase::SteppingOver {
            tid: t0,
            addr,
            then,
        } = self.phase
        {
            if t0 == tid {
                if let Some(a) = addr {
                    let _ = self.write_bp_byte(a, true);
                }
                self.phase = Phase::Running;
                if then == After::ContinueAll {
                    self.phase = Phase::Stopped;
                    let _ = self.continue_all();
                } else {
                    self.deferred
                        .push_back((Tid(self.pid.0), StopReason::Paused));
                    self.phase = Phase::Stopped;
                    let _ = self.continue_all();
                }
            }
        }
        Outcome::Info(Event::ThreadExited { tid })
    }

    fn signal_stop(&mut self, tid: Tid, sig: i32, collecting: bool) -> Result<Outcome> {
        if sig == libc::SIGTRAP {
            let code = match sys::siginfo(tid) {
                Ok(info) => info.si_code,
                Err(_) => return Ok(Outcome::Absorbed),
            };
            let stepping = self.threads.get(&tid).is_some_and(|t| t.stepping);
            if code == libc::TRAP_TRACE || (stepping && code == TRAP_BRKPT) {
                // A single-stepped instruction that also met a watchpoint's condition
                // traps once, as a single-step: DR6 tells.
                if !self.watch.is_empty() {
                    let dr6 = sys::peek_debugreg(tid, 6).unwrap_or(0);
                    if dr6 & 0xf != 0 {
                        let _ = sys::poke_debugreg(tid, 6, 0);
                        return Ok(self.watch_stop(tid, dr6 | DR6_SINGLE_STEP));
                    }
                }
                return Ok(self.step_done(tid));
            }
            if code == libc::SI_KERNEL {
                let regs =
                    sys::get_regs(tid).map_err(|e| Error::ptrace("PTRACE_GETREGS", tid, e))?;
                let addr = regs.rip.wrapping_sub(1);
                if self.breakpoints.contains_key(&addr) {
                    let mut regs = regs;
                    regs.rip = addr;
                    sys::set_regs(tid, &regs)
                        .map_err(|e| Error::ptrace("PTRACE_SETREGS", tid, e))?;
                    if let Some(t) = self.threads.get_mut(&tid) {
                        t.regs = Some(regs);
                        t.at_bp = Some(addr);
                        t.stepping = false;
                    }
                    return Ok(Outcome::Report(
                        tid,
                        StopReason::Breakpoint {
                            addr: RuntimeAddr(addr),
                        },
                    ));
                }
                // The trap of a patch's placed code: its condition held at the site.
                if let Some(site) = self.patch_of_trap(addr) {
                    let mut regs = regs;
                    regs.rip = site;
                    sys::set_regs(tid, &regs)
                        .map_err(|e| Error::ptrace("PTRACE_SETREGS", tid, e))?;
                    if let Some(t) = self.threads.get_mut(&tid) {
                        t.regs = Some(regs);
                        t.at_bp = Some(site);
                        t.stepping = false;
                    }
                    return Ok(Outcome::Report(
                        tid,
                        StopReason::Breakpoint {
                            addr: RuntimeAddr(site),
                        },
                    ));
                }
                // The trap of a breakpoint removed after this thread executed it: back
                // onto the restored instruction, silently.
                if let Some(back) = self.moribund_trap(addr) {
                    let mut regs = regs;
                    regs.rip = back;
                    sys::set_regs(tid, &regs)
                        .map_err(|e| Error::ptrace("PTRACE_SETREGS", tid, e))?;
                    tracing::debug!(tid = tid.0, addr, "a trap of a removed breakpoint");
                    if let Some(t) = self.threads.get_mut(&tid) {
                        t.regs = Some(regs);
                        t.stepping = false;
                    }
                    if !collecting {
                        self.resume_thread(tid);
                    }
                    return Ok(Outcome::Absorbed);
                }
                if let Some(t) = self.threads.get_mut(&tid) {
                    t.regs = Some(regs);
                }
            }
            if code == TRAP_HWBKPT {
                let dr6 = sys::peek_debugreg(tid, 6).unwrap_or(0);
                let _ = sys::poke_debugreg(tid, 6, 0);
                return Ok(self.watch_stop(tid, dr6 & !DR6_SINGLE_STEP));
            }
            return Ok(self.policy_stop(tid, sig, code, collecting));
        }
        let code = sys::siginfo(tid).map(|i| i.si_code).unwrap_or(0);
        Ok(self.policy_stop(tid, sig, code, collecting))
    }

    fn policy_stop(&mut self, tid: Tid, sig: i32, code: i32, collecting: bool) -> Outcome {
        let policy = self.signal_policy(sig);
        if let Some(t) = self.threads.get_mut(&tid) {
            t.deliver = if policy.pass { sig } else { 0 };
        }
        if policy.stop {
            if let Some(t) = self.threads.get_mut(&tid) {
                t.stepping = false;
            }
            return Outcome::Report(tid, StopReason::Signal { signo: sig, code });
        }
        if !collecting {
            // Passing a signal while stepping enters the handler; the step then
            // ends at its first instruction and the step-over goes on from there.
            self.resume_thread(tid);
        }
        Outcome::Absorbed
    }

    /// A hardware breakpoint or watchpoint trapped. When it ended a step-over, the
    /// breakpoint stepped over goes back in, and the watchpoint is reported instead
    /// of continuing: it is news.
    ///
    /// DR6's single-step bit is kept only for a step someone asked for
    /// ([`Tracer::step`]); an internal step off a breakpoint on the way to continuing
    /// is nobody's news, so the caller just sees a watchpoint and may resume.
    fn watch_stop(&mut self, tid: Tid, mut dr6: u64) -> Outcome {
        if let Some(t) = self.threads.get_mut(&tid) {
            t.stepping = false;
        }
        if let Phase::SteppingOver {
            tid: t0,
            addr,
            then,
        } = self.phase
        {
            if t0 == tid {
                if then == After::ContinueAll {
                    dr6 &= !DR6_SINGLE_STEP;
                }
                if let Some(a) = addr {
                    if self.breakpoints.contains_key(&a) {
                        let _ = self.write_bp_byte(a, true);
                    }
                }
                self.phase = Phase::Running;
            }
        }
        Outcome::Report(tid, StopReason::Watchpoint { dr6 })
    }

    fn step_done(&mut self, tid: Tid) -> Outcome {
        if let Some(t) = self.threads.get_mut(&tid) {
            t.stepping = false;
        }
        match self.phase {
            Phase::SteppingOver {
                tid: t0,
                addr,
                then,
            } if t0 == tid => {
                if let Some(a) = addr {
                    if self.breakpoints.contains_key(&a) {
                        let _ = self.write_bp_byte(a, true);
                    }
                }
                match then {
                    After::ReportStep => {
                        self.phase = Phase::Running;
                        Outcome::Report(tid, StopReason::Step)
                    }
                    After::ContinueAll if self.pause_requested => {
                        self.phase = Phase::Running;
                        Outcome::Report(tid, StopReason::Paused)
                    }
                    After::ContinueAll => {
                        self.phase = Phase::Stopped;
                        if let Err(e) = self.continue_all() {
                            tracing::warn!("resuming after a step-over failed: {e}");
                        }
                        Outcome::Absorbed
                    }
                }
            }
            _ => Outcome::Report(tid, StopReason::Step),
        }
    }

    fn event_stop(&mut self, tid: Tid, sig: i32, collecting: bool) -> Outcome {
        let Some(t) = self.threads.get_mut(&tid) else {
            return Outcome::Absorbed;
        };
        let was_new = std::mem::take(&mut t.new);
        if was_new && !self.watch.is_empty() {
            // Threads do not inherit debug registers: give a new thread the process's
            // watchpoints before it runs its first instruction.
            let regs = self.watch;
            if let Err(e) = write_debug_regs(tid, &regs) {
                tracing::warn!(tid = tid.0, "watchpoints on a new thread: {e}");
            }
        }
        let Some(t) = self.threads.get_mut(&tid) else {
            return Outcome::Absorbed;
        };
        let _was_interrupted = std::mem::take(&mut t.interrupt_sent);
        let was_listening = std::mem::take(&mut t.listening);
        if is_stop_signal(sig) {
            t.group_stop = true;
            if collecting {
                return Outcome::Absorbed;
            }
            if self.pause_requested {
                return Outcome::Report(tid, StopReason::Paused);
            }
            if was_listening {
                // Still stopped by job control: keep listening.
                self.resume_thread(tid);
                return Outcome::Absorbed;
            }
            return Outcome::Report(tid, StopReason::GroupStop { signo: sig });
        }
        // SIGTRAP: our interrupt, a new thread's first stop, or the end of a
        // job-control stop (SIGCONT) of a listening thread.
        t.group_stop = false;
        if collecting {
            return Outcome::Absorbed;
        }
        if self.pause_requested {
            return Outcome::Report(tid, StopReason::Paused);
        }
        match self.phase {
            // A new thread appearing during a step-over waits for the next continue.
            Phase::SteppingOver { tid: t0, .. } if t0 != tid && was_new => Outcome::Absorbed,
            _ => {
                self.resume_thread(tid);
                Outcome::Absorbed
            }
        }
    }

    /// Frees a fork child of breakpoints and detaches it.
    fn detach_fork_child(&mut self, child: Pid, vfork: bool) {
        if child.0 <= 0 {
            return;
        }
        // The child is auto-attached and reports a first stop: wait for it.
        let ctid = Tid(child.0);
        let first = stash_take(ctid).map(Ok).unwrap_or_else(|| loop {
            match sys::wait(child.0, false, false) {
                Ok(Some(w)) => break Ok(w),
                Ok(None) => continue,
                Err(e) => break Err(e),
            }
        });
        let Ok(first) = first else {
            return;
        };
        if !matches!(sys::decode(first.status), Status::Stopped(..)) {
            return;
        }
        let saved: Vec<(u64, Vec<u8>)> = self.original_bytes();
        if vfork {
            // Parent and child share memory until the child execs or exits: take the
            // breakpoints out until the vfork-done event.
            for (a, b) in &saved {
                let _ = self.write_raw(*a, b);
            }
            self.vfork_bps_removed = !saved.is_empty();
        } else if !saved.is_empty() {
            if let Some(mem) = open_mem(child) {
                for (a, b) in &saved {
                    let _ = mem.write_at(b, *a);
                }
            }
        }
        if self.fork_policy == ForkPolicy::Follow {
            // PTRACE_DETACH only injects a signal from a signal-delivery-stop, and
            // this is an event stop: queue SIGSTOP now, it stops the child right
            // after the detach, before any instruction of its own.
            let _ = sys::tgkill(child.0, child.0, libc::SIGSTOP);
            self.handed_over
                .retain(|p| procfs::process_state(*p).is_some());
            self.handed_over.push(child);
        }
        if let Err(e) = sys::detach(ctid, 0) {
            tracing::warn!(child = child.0, "detaching a fork child failed: {e}");
        }
    }

    // ---------------------------------------------------------------- registers

    fn thread(&self, tid: Tid) -> Result<&Thread> {
        self.threads.get(&tid).ok_or(Error::UnknownThread(tid))
    }

    /// The general registers of a stopped thread (cached until it runs again).
    pub fn regs(&mut self, tid: Tid) -> Result<Registers> {
        let t = self.thread(tid)?;
        if t.running {
            return Err(Error::Running);
        }
        if let Some(r) = t.regs {
            return Ok(Registers(r));
        }
        let r = sys::get_regs(tid).map_err(|e| Error::ptrace("PTRACE_GETREGS", tid, e))?;
        if let Some(t) = self.threads.get_mut(&tid) {
            t.regs = Some(r);
        }
        Ok(Registers(r))
    }

    /// Writes the general registers of a stopped thread.
    pub fn set_regs(&mut self, tid: Tid, regs: &Registers) -> Result<()> {
        if self.thread(tid)?.running {
            return Err(Error::Running);
        }
        sys::set_regs(tid, &regs.0).map_err(|e| Error::ptrace("PTRACE_SETREGS", tid, e))?;
        if let Some(t) = self.threads.get_mut(&tid) {
            t.regs = Some(regs.0);
        }
        Ok(())
    }

    /// The x87/SSE registers of a stopped thread.
    pub fn fp_regs(&self, tid: Tid) -> Result<FpRegisters> {
        if self.thread(tid)?.running {
            return Err(Error::Running);
        }
        sys::get_fpregs(tid)
            .map(FpRegisters)
            .map_err(|e| Error::ptrace("PTRACE_GETFPREGS", tid, e))
    }

    /// Writes the x87/SSE registers of a stopped thread.
    pub fn set_fp_regs(&self, tid: Tid, regs: &FpRegisters) -> Result<()> {
        if self.thread(tid)?.running {
            return Err(Error::Running);
        }
        sys::set_fpregs(tid, &regs.0).map_err(|e| Error::ptrace("PTRACE_SETFPREGS", tid, e))
    }

    /// Debug register `n` (DR0–DR3 addresses, DR6 status, DR7 control).
    pub fn debug_reg(&self, tid: Tid, n: usize) -> Result<u64> {
        if n > 7 || n == 4 || n == 5 {
            return Err(Error::InvalidDebugRegister(n));
        }
        self.thread(tid)?;
        sys::peek_debugreg(tid, n).map_err(|e| Error::ptrace("PTRACE_PEEKUSER", tid, e))
    }

    /// Programs the hardware slots (DR0–DR3, DR7) on every thread, and remembers them
    /// for threads created later, which get them at their first stop. Every thread
    /// must be stopped. When a thread refuses the set, the previous set is restored
    /// everywhere and the error returned.
    pub fn set_watchpoints(&mut self, regs: &DebugRegisters) -> Result<()> {
        self.require_stopped()?;
        if let Some(problem) = regs.slots.iter().flatten().find_map(|s| s.problem()) {
            return Err(Error::InvalidWatchpoint(problem));
        }
        self.debugregs_used = true;
        let tids = self.threads();
        for (i, &tid) in tids.iter().enumerate() {
            match write_debug_regs(tid, regs) {
                Ok(()) => {}
                // The thread exited meanwhile; wait reports it.
                Err(Errno::ESRCH) => {}
                Err(e) => {
                    let previous = self.watch;
                    for &done in &tids[..=i] {
                        let _ = write_debug_regs(done, &previous);
                    }
                    return Err(Error::ptrace("PTRACE_POKEUSER", tid, e));
                }
            }
        }
        self.watch = *regs;
        // Placed code reads variables: with watchpoints armed those reads would
        // trigger them, which the int3 path's reads through ptrace never do.
        let sites: Vec<u64> = self.patches.keys().copied().collect();
        for site in sites {
            if self.watch.is_empty() {
                self.activate_patch(site);
            } else {
                self.deactivate_patch(site);
            }
        }
        Ok(())
    }

    /// The hardware slots set with [`Tracer::set_watchpoints`].
    pub fn watchpoints(&self) -> &DebugRegisters {
        &self.watch
    }

    /// Writes debug register `n`; every DR7 change is undone on detach.
    pub fn set_debug_reg(&mut self, tid: Tid, n: usize, value: u64) -> Result<()> {
        if n > 7 || n == 4 || n == 5 {
            return Err(Error::InvalidDebugRegister(n));
        }
        self.thread(tid)?;
        self.debugregs_used = true;
        sys::poke_debugreg(tid, n, value).map_err(|e| Error::ptrace("PTRACE_POKEUSER", tid, e))
    }

    // ---------------------------------------------------------------- memory

    /// Reads memory into `buf`, returning how many bytes could be read (at least one,
    /// else an error). Breakpoints show their original bytes, never 0xCC.
    pub fn read_memory(&self, addr: RuntimeAddr, buf: &mut [u8]) -> Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let n = self.read_raw(addr.0, buf)?;
        let end = addr.0.saturating_add(n as u64);
        for (a, bp) in self.breakpoints.range(addr.0..end) {
            buf[(a - addr.0) as usize] = bp.saved;
        }
        self.overlay_patches(addr.0, &mut buf[..n]);
        Ok(n)
    }

    fn read_raw(&self, addr: u64, buf: &mut [u8]) -> Result<usize> {
        let len = buf.len();
        let local = libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: len,
        };
        let remote = libc::iovec {
            iov_base: addr as *mut libc::c_void,
            iov_len: len,
        };
        // SAFETY: the local iovec points into `buf`, valid for `len` bytes.
        let n = unsafe { libc::process_vm_readv(self.pid.0, &local, 1, &remote, 1, 0) };
        if n > 0 {
            return Ok(n as usize);
        }
        let err = std::io::Error::last_os_error();
        match &self.mem {
            Some(mem) => match mem.read_at(buf, addr) {
                Ok(n) if n > 0 => Ok(n),
                Ok(_) => Err(Error::Memory {
                    addr: RuntimeAddr(addr),
                    len: buf.len(),
                    source: err,
                }),
                Err(e) => Err(Error::Memory {
                    addr: RuntimeAddr(addr),
                    len: buf.len(),
                    source: e,
                }),
            },
            None => Err(Error::Memory {
                addr: RuntimeAddr(addr),
                len: buf.len(),
                source: err,
            }),
        }
    }

    /// Writes memory (also read-only text, through /proc/PID/mem). Bytes under a
    /// breakpoint update its saved byte; the int3 stays in place.
    pub fn write_memory(&mut self, addr: RuntimeAddr, data: &[u8]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        if self.is_running() {
            return self.edit_text(|t| t.write_memory(addr, data))?;
        }
        let end = addr.0.saturating_add(data.len() as u64);
        self.patches_before_write(addr.0, end);
        let mut data = data.to_vec();
        for (a, bp) in self.breakpoints.range_mut(addr.0..end) {
            let i = (a - addr.0) as usize;
            bp.saved = data[i];
            data[i] = INT3;
        }
        self.write_raw(addr.0, &data)
    }

    fn write_raw(&self, addr: u64, data: &[u8]) -> Result<()> {
        // /proc/PID/mem writes through read-only mappings (FOLL_FORCE), which
        // process_vm_writev cannot; it is one pwrite either way.
        let err = |source| Error::Memory {
            addr: RuntimeAddr(addr),
            len: data.len(),
            source,
        };
        if let Some(mem) = &self.mem {
            return mem.write_all_at(data, addr).map_err(err);
        }
        let local = [std::io::IoSlice::new(data)];
        let remote = [libc::iovec {
            iov_base: addr as *mut libc::c_void,
            iov_len: data.len(),
        }];
        // SAFETY: the local iovec points into `data`.
        let n = unsafe {
            libc::process_vm_writev(
                self.pid.0,
                local.as_ptr() as *const libc::iovec,
                1,
                remote.as_ptr(),
                1,
                0,
            )
        };
        if n as usize == data.len() {
            Ok(())
        } else {
            Err(err(std::io::Error::last_os_error()))
        }
    }

    // ---------------------------------------------------------------- breakpoints

    /// Inserts an int3 at `addr`, or counts one more user of an existing one.
    pub fn insert_breakpoint(&mut self, addr: RuntimeAddr) -> Result<()> {
        if self.is_running() {
            return self.edit_text(|t| t.insert_breakpoint(addr))?;
        }
        // Another user of a patched site, or an int3 inside its bytes: every hit must
        // trap again.
        if let Some(site) = self.patch_covering(addr.0) {
            self.deactivate_patch(site);
        }
        if let Some(bp) = self.breakpoints.get_mut(&addr.0) {
            bp.refs += 1;
            return Ok(());
        }
        let mut b = [0u8; 1];
        self.read_raw(addr.0, &mut b)?;
        self.write_raw(addr.0, &[INT3])?;
        self.breakpoints.insert(
            addr.0,
            Breakpoint {
                saved: b[0],
                refs: 1,
            },
        );
        Ok(())
    }

    /// Drops one user of the breakpoint at `addr`; the last one restores the byte.
    pub fn remove_breakpoint(&mut self, addr: RuntimeAddr) -> Result<()> {
        if self.is_running() {
            return self.edit_text(|t| t.remove_breakpoint(addr))?;
        }
        let bp = self
            .breakpoints
            .get_mut(&addr.0)
            .ok_or(Error::NoBreakpoint(addr))?;
        bp.refs -= 1;
        if bp.refs > 0 {
            if bp.refs == 1 {
                self.activate_patch(addr.0);
            }
            return Ok(());
        }
        let saved = bp.saved;
        self.retire_trap(addr.0, addr.0);
        if let Some(p) = self.patches.get(&addr.0) {
            let active = p.active;
            self.deactivate_patch(addr.0);
            self.retire_patch(addr.0);
            if active {
                self.breakpoints.remove(&addr.0);
                return self.write_raw(addr.0, &[saved]);
            }
        }
        self.breakpoints.remove(&addr.0);
        self.write_raw(addr.0, &[saved])?;
        if let Some(site) = self.patch_covering(addr.0) {
            self.activate_patch(site);
        }
        Ok(())
    }

    /// Addresses with an inserted breakpoint, and how many users each has.
    pub fn breakpoints(&self) -> Vec<(RuntimeAddr, u32)> {
        self.breakpoints
            .iter()
            .map(|(a, b)| (RuntimeAddr(*a), b.refs))
            .collect()
    }

    // ---------------------------------------------------------------- ending

    /// Kills the process (SIGKILL) and reaps every thread. Returns the final event.
    pub fn kill(mut self) -> Result<Event> {
        self.kill_inner()
    }

    /// Like [`Tracer::kill`] but keeps the (now exited) tracer.
    pub(crate) fn kill_in_place(&mut self) -> Result<Event> {
        self.kill_inner()
    }

    fn kill_inner(&mut self) -> Result<Event> {
        if self.phase == Phase::Exited {
            return Err(Error::Exited);
        }
        let _ = sys::kill(self.pid.0, libc::SIGKILL);
        loop {
            let w = match self.take_own_stash() {
                Some(w) => w,
                None => match sys::wait(-1, false, false) {
                    Ok(Some(w)) => w,
                    Ok(None) => continue,
                    Err(_) => break,
                },
            };
            if !self.threads.contains_key(&w.tid) {
                stash_push(w);
                continue;
            }
            match sys::decode(w.status) {
                Status::Exited(code) if w.tid.0 == self.pid.0 => {
                    self.mark_gone();
                    return Ok(Event::Exited { code });
                }
                Status::Signaled(signo, core_dumped) if w.tid.0 == self.pid.0 => {
                    self.mark_gone();
                    return Ok(Event::Signaled { signo, core_dumped });
                }
                Status::Exited(_) | Status::Signaled(..) => {
                    self.threads.remove(&w.tid);
                }
                // A thread caught in a stop before SIGKILL landed: let it die.
                Status::Stopped(..) => {
                    let _ = sys::cont(w.tid, 0);
                }
                Status::Other => {}
            }
        }
        self.mark_gone();
        Ok(Event::Signaled {
            signo: libc::SIGKILL,
            core_dumped: false,
        })
    }

    /// A fork child handed over but never picked up by another tracer is not left
    /// in its job-control stop: continue it.
    fn release_handed_over(&mut self) {
        for pid in std::mem::take(&mut self.handed_over) {
            // Untraced: nobody took it. SIGCONT also drops a SIGSTOP not acted on yet.
            if procfs::tracer_of(pid) == Some(0) {
                tracing::info!(pid = pid.0, "continuing a fork child nobody followed");
                let _ = sys::kill(pid.0, libc::SIGCONT);
            }
        }
    }

    fn mark_gone(&mut self) {
        self.release_handed_over();
        self.threads.clear();
        self.breakpoints.clear();
        self.patches.clear();
        self.regions.clear();
        self.moribund.clear();
        self.phase = Phase::Exited;
        self.mem = None;
    }

    /// Detaches: every thread stopped, every int3 removed, debug registers cleared, a
    /// pc left just past a removed int3 moved back, every thread resumed.
    pub fn detach(mut self) -> Result<()> {
        self.detach_inner()
    }

    fn detach_inner(&mut self) -> Result<()> {
        if self.phase == Phase::Exited {
            return Ok(());
        }
        if self.is_running() {
            self.finish_step_over_early(Tid(self.pid.0));
            self.pause_requested = true;
            if !self.stop_all()? {
                self.mark_gone();
                return Ok(());
            }
            self.pause_requested = false;
            self.phase = Phase::Stopped;
        }
        let traps: Vec<(u64, u64)> = self.patch_traps();
        self.remove_all_patches();
        self.unmap_regions();
        let removed: Vec<(u64, u8)> = self
            .breakpoints
            .iter()
            .map(|(a, b)| (*a, b.saved))
            .collect();
        for (a, b) in &removed {
            if let Err(e) = self.write_raw(*a, &[*b]) {
                tracing::warn!(addr = a, "restoring a breakpoint byte failed: {e}");
            }
        }
        self.breakpoints.clear();
        let tids = self.threads();
        for &tid in &tids {
            if self.debugregs_used {
                let _ = sys::poke_debugreg(tid, 7, 0);
            }
            if !removed.is_empty() && procfs::thread_has_pending_sigtrap(self.pid, tid) {
                self.drain_sigtrap(tid, &removed, &traps);
            }
            if !traps.is_empty() {
                self.clear_trap_flag(tid);
            }
        }
        for &tid in &tids {
            let sig = self.threads.get(&tid).map(|t| t.deliver).unwrap_or(0);
            if let Err(e) = sys::detach(tid, sig) {
                tracing::debug!(tid = tid.0, "PTRACE_DETACH: {e}");
            }
        }
        self.mark_gone();
        Ok(())
    }

    /// A thread that hit an int3 just before being stopped has SIGTRAP pending; on
    /// detach it would kill the process. Let the thread take it under our eyes,
    /// move its pc back onto the restored instruction and drop the signal.
    fn drain_sigtrap(&mut self, tid: Tid, removed: &[(u64, u8)], traps: &[(u64, u64)]) {
        for _ in 0..4 {
            if sys::cont(tid, 0).is_err() {
                return;
            }
            let w = loop {
                match sys::wait(tid.0, false, false) {
                    Ok(Some(w)) => break w,
                    Ok(None) => continue,
                    Err(_) => return,
                }
            };
            match sys::decode(w.status) {
                Status::Stopped(libc::SIGTRAP, 0) => {
                    if let Ok(mut regs) = sys::get_regs(tid) {
                        let addr = regs.rip.wrapping_sub(1);
                        if removed.iter().any(|(a, _)| *a == addr) {
                            regs.rip = addr;
                            let _ = sys::set_regs(tid, &regs);
                        } else if let Some((_, site)) = traps.iter().find(|(t, _)| *t == addr) {
                            regs.rip = *site;
                            let _ = sys::set_regs(tid, &regs);
                        }
                    }
                    return;
                }
                Status::Stopped(sig, 0) => {
                    // Another signal came first: keep it for the detach.
                    if let Some(t) = self.threads.get_mut(&tid) {
                        t.deliver = sig;
                    }
                    return;
                }
                Status::Stopped(..) => continue,
                _ => {
                    self.threads.remove(&tid);
                    return;
                }
            }
        }
    }
}

impl Drop for Tracer {
    /// Ending a tracer never leaves its process behind: a launched one is killed and
    /// reaped, an attached one detached cleanly. This also runs while a panic unwinds
    /// the tracer thread.
    fn drop(&mut self) {
        self.release_handed_over();
        if self.phase == Phase::Exited {
            return;
        }
        let res = match self.info.origin {
            Origin::Launched => self.kill_inner().map(|_| ()),
            Origin::Attached => self.detach_inner(),
        };
        if let Err(e) = res {
            tracing::warn!(pid = self.pid.0, "ending the tracer: {e}");
        }
    }
}

fn permission_hint(pid: Pid) -> String {
    let mut reasons = Vec::new();
    if procfs::tracer_of(pid).is_some_and(|t| t != 0) {
        reasons.push("it is already traced by another process".to_string());
    }
    // SAFETY: getpid has no preconditions.
    if pid.0 == unsafe { libc::getpid() } {
        reasons.push("a process cannot trace itself".to_string());
    }
    if let Some(scope) = procfs::ptrace_scope() {
        if scope > 0 {
            reasons.push(format!(
                "kernel.yama.ptrace_scope is {scope}; set it to 0 or run with CAP_SYS_PTRACE"
            ));
        }
    }
    if std::fs::read_to_string(format!("/proc/{}/stat", pid.0))
        .ok()
        .and_then(|s| s.rsplit(')').next().map(|r| r.to_string()))
        .and_then(|r| {
            r.split_whitespace()
                .nth(6)
                .and_then(|f| f.parse::<u64>().ok())
        })
        .is_some_and(|flags| flags & 0x0020_0000 != 0)
    {
        reasons.push("it is a kernel thread".to_string());
    }
    if reasons.is_empty() {
        reasons.push(
            "tandem needs CAP_SYS_PTRACE or the same user as the target, and \
             kernel.yama.ptrace_scope must allow it"
                .to_string(),
        );
    }
    reasons.join("; ")
}
