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
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fs::File;
use std::marker::PhantomData;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

mod absent;
mod breakpoints;
mod edit;
mod end;
mod fault;
mod memory;
mod patch;
mod pin;
mod record;
mod regs;
mod replay;
mod run;
mod sched;
mod signals;
mod sysbuf;
mod syscalls;
mod tsc;
mod vdso;
mod wait;
mod waypoints;

pub use patch::{PatchSpec, JUMP_LEN};
pub use record::{Move, Position, RecordingInfo};
pub use replay::{OnStop, ScanStop};

const INT3: u8 = 0xcc;
const TRAP_BRKPT: i32 = 1;
const TRAP_HWBKPT: i32 = 4;
/// The `si_code` of the trap a single-step reports after setting up a signal handler's
/// frame (the kernel's `ptrace_notify(SIGTRAP)`; the value of TRAP_UNK).
const TRAP_SIGNAL_DELIVERED: i32 = libc::SIGTRAP;
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
    /// A replay reached the position it was sent to ([`Tracer::goto`]), or a
    /// recording's replay cannot go on (see [`Tracer::recording`]).
    Replayed,
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
    /// The process is a fork child handed over by [`ForkPolicy::Follow`]: once
    /// attached, take it out of its parking ([`crate::park`]), or send SIGCONT to one in
    /// a job-control stop, so it runs on the next resume.
    pub continue_job_stop: bool,
    /// The process is a vfork child handed over before its exec: it shares its memory
    /// with the parent (blocked in vfork until then), so no breakpoint may be written
    /// into it until it execs ([`Error::SharedMemory`]).
    pub vfork_child: bool,
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
    /// Its siginfo as the kernel queued it, read at its signal-delivery-stop: restored
    /// before the resume that delivers it, so the program sees the signal it was sent.
    deliver_info: Option<libc::siginfo_t>,
    /// The pc was moved back to this breakpoint after a hit.
    at_bp: Option<u64>,
    /// Registers read since the last stop (valid while stopped).
    regs: Option<libc::user_regs_struct>,
    /// Hits already taken whose step-over a signal cut short (see `SignalReturns`).
    returns: SignalReturns,
    /// The thread's own stack (the mapping its sp was in when it was first seen), and the
    /// sp at the last signal delivered while it ran there: a handler on an alternate
    /// stack (`SA_ONSTACK`) leaves everything live on its own stack above that sp.
    home: Option<(u64, u64)>,
    home_sp: u64,
    /// The sp at its first stop, on its own stack (0: not seen): `home` is found from
    /// it when first needed, not at every thread's creation (reading the process's
    /// maps for each new thread was a third of the tracer's work in a program that
    /// creates threads all the time).
    first_sp: u64,
    /// The ptrace event it is stopped at when that event is reported from inside a
    /// system call (clone, fork, vfork, vfork-done, exec), else 0: the call has not
    /// returned, so its return value will overwrite rax when the thread runs on. No
    /// system call may be injected there (see `Tracer::injection_thread`).
    call_event: i32,
    /// Recording: resumed with PTRACE_SYSCALL, so every system call is seen.
    sysgood: bool,
    /// Recording: between a system call's entry stop and its exit stop.
    in_syscall: bool,
    /// Recording: a single-step over a `syscall` instruction, run as PTRACE_SYSCALL
    /// (a single-step would hide the call); its exit stop ends the step.
    syscall_step: bool,
    /// Recording with the system-call buffer (sysbuf.rs): syscall user dispatch is on,
    /// so the thread is resumed with PTRACE_CONT and a call outside the handler raises
    /// SIGSYS instead of an entry stop.
    sud: bool,
    /// Dispatch was turned off for one traced call: on again at its exit stop.
    sud_resume: bool,
    /// The handler's `syscall` that dispatch lets through (a step over it is a plain
    /// step: the call is the buffer's, not an event of the log).
    sud_trusted: u64,
    /// A step went on through the buffer's code: its `pushfq`/`popfq` leave the trap
    /// flag set, cleared when the step is out.
    stub_stepped: bool,
}

/// Where a thread will trap again on a hit it already reported: its step over the
/// breakpoint was cut short by a signal before the site's instruction ran (the handler
/// runs with every breakpoint in, as gdb's step-resume breakpoint at the interrupted pc
/// has it), or by another stop. When the handler returns (sigreturn restores the pc and
/// the sp exactly) the thread executes the site's int3 again: a trap at `pc` with the
/// same `sp` is the same execution, stepped over silently — not a second hit. The same
/// site run inside the handler has a lower sp and is a hit of its own. At most
/// `SignalReturns::LEN` nested ones are kept (the oldest is dropped).
#[derive(Clone, Copy, Default, Debug)]
struct SignalReturns {
    /// (pc, sp); pc 0 is a free slot.
    slots: [(u64, u64); SignalReturns::LEN],
}

impl SignalReturns {
    const LEN: usize = 4;

    fn push(&mut self, pc: u64, sp: u64) {
        if let Some(s) = self.slots.iter_mut().find(|s| s.0 == 0) {
            *s = (pc, sp);
            return;
        }
        self.slots.rotate_left(1);
        self.slots[Self::LEN - 1] = (pc, sp);
    }

    /// Takes the mark of a trap at `pc` with `sp`, if there is one.
    fn take(&mut self, pc: u64, sp: u64) -> bool {
        match self.slots.iter_mut().find(|s| s.0 != 0 && **s == (pc, sp)) {
            Some(s) => {
                *s = (0, 0);
                true
            }
            None => false,
        }
    }

    /// Forgets the marks at `pc` (its breakpoint is gone: no trap will come); returns
    /// their sps.
    fn forget_pc(&mut self, pc: u64) -> Vec<u64> {
        let mut sps = Vec::new();
        for s in self.slots.iter_mut().filter(|s| s.0 == pc) {
            sps.push(s.1);
            *s = (0, 0);
        }
        sps
    }

    /// Forgets the marks of frames a stop at `sp` shows returned from (their site ran).
    fn forget_below(&mut self, sp: u64) {
        for s in self.slots.iter_mut().filter(|s| s.0 != 0 && s.1 < sp) {
            *s = (0, 0);
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Breakpoint {
    saved: u8,
    refs: u32,
}

enum Outcome {
    Absorbed,
    /// The thread trapped again on a hit it already reported (see `SignalReturns`): it
    /// is at the site, to be stepped over with the others stopped, reporting nothing.
    StepOverAgain(Tid),
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
    /// Addresses of `breakpoints` whose int3 the shown process does not have: a fork of
    /// a snapshot has none, and a replay gets one only where its code is mapped
    /// (`absent.rs`; a library's int3s when the replay maps the library).
    absent: BTreeSet<u64>,
    mem: Option<File>,
    phase: Phase,
    queue: VecDeque<Event>,
    /// A stop a resume of a replay ran into before it resumed anything (its steps along
    /// the live moves, `replay_before_resume`), already noted: the next event.
    held: Option<Event>,
    deferred: VecDeque<(Tid, StopReason)>,
    policy: Vec<SignalPolicy>,
    fork_policy: ForkPolicy,
    pause_requested: bool,
    /// A pause was asked for and a stop came first that the engine may pass over (a false
    /// condition): the pause is still owed, by that thread.
    pause_owed: Option<Tid>,
    vfork_bps_removed: bool,
    /// A vfork child before its exec: its memory is its parent's (no int3 may go in).
    shares_parent_memory: bool,
    debugregs_used: bool,
    /// The hardware slots every thread has, also written to threads created later.
    watch: DebugRegisters,
    /// Signals that arrived for a thread while another was already waiting to be
    /// delivered to it (during the tracer's own steps), with their siginfo: queued to it
    /// again when it resumes, so each is delivered once.
    kept_signals: HashMap<Tid, Vec<libc::siginfo_t>>,
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
    /// Placed code of removed patches that some thread may still run or return into,
    /// with the addresses it leads back to (see `Tracer::activate_patch`).
    retired: Vec<patch::Retired>,
    /// Inside [`Tracer::edit_text`]: nothing runs, so the stacks are read once.
    editing: bool,
    /// Marks (`SignalReturns`) of breakpoints removed during the current edit: one set
    /// again by the same edit (a request that re-sends its breakpoints) gets them back,
    /// or the trap the handler's return brings would count as a second hit.
    removed_marks: Vec<(Tid, u64, u64)>,
    /// Every thread's pc and stack words, read once during an edit (`None`: not yet).
    stacks: Option<edit::StackWords>,
    /// Recording and replay state (`reverseDebugging`); `None` when not recording.
    rec: Option<Box<record::Recorder>>,
    /// Why the recording ended, once it did (a message for the user).
    rec_ended: Option<String>,
    /// A replay that ended by itself (diverged): said by the next `goto`'s caller.
    rec_diverged: Option<String>,
    /// The system-call buffer's code and patched sites (sysbuf.rs), kept after the
    /// recording ends until the process is let go of.
    sysbuf: Option<sysbuf::SysBuf>,
    /// The launch asked for no buffer ([`LaunchConfig::trace_every_syscall`]).
    sysbuf_refused: bool,
    /// The count of wake signals last seen (`handle::WAKES`).
    wakes_seen: u64,
    /// The maps of the replay shown and of the live process, read once for planting
    /// absent int3s (`absent.rs`) until a replayed call changes the replay's.
    absent_maps: Option<(Pid, Vec<procfs::Mapping>, Vec<procfs::Mapping>)>,
    /// Recording: the tracer thread pinned where the program runs (`pin.rs`).
    pin: Option<pin::Pin>,
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
    if tracing::enabled!(tracing::Level::TRACE) {
        let pc = t.regs.or_else(|| sys::get_regs(tid).ok()).map(|r| r.rip);
        tracing::trace!(
            tid = tid.0,
            pc,
            stepping = t.stepping,
            sig,
            at_bp = t.at_bp,
            "resume"
        );
    }
    if sig != 0 {
        if let Some((lo, hi)) = t.home {
            // Where the kernel builds the signal frame, unless the handler runs on an
            // alternate stack: then this is the live bottom of the thread's own stack.
            if let Some(sp) = t.regs.or_else(|| sys::get_regs(tid).ok()).map(|r| r.rsp) {
                if lo <= sp && sp < hi {
                    t.home_sp = sp;
                }
            }
        }
    }
    if let Some(info) = t
        .deliver_info
        .take()
        .filter(|i| sig != 0 && i.si_signo == sig)
    {
        if let Err(e) = sys::set_siginfo(tid, &info) {
            tracing::debug!(tid = tid.0, "restoring a signal's siginfo: {e}");
        }
    }
    // A step over a `syscall` goes on with PTRACE_SYSCALL from the call's entry stop
    // too: a single-step from there would run the call and report its end as a step
    // trap, with no exit stop, so the call's result would never be seen (recorded,
    // or checked and injected by a replay).
    let in_syscall_step = t.syscall_step && t.in_syscall;
    let res = if t.stepping && t.sysgood && (in_syscall_step || at_syscall_insn(tid, t)) {
        t.syscall_step = true;
        sys::syscall(tid, sig)
    } else if t.stepping {
        sys::singlestep(tid, sig)
    } else if t.group_stop {
        t.listening = true;
        // LISTEN works only from a group-stop: a thread whose stop is something else by
        // now (its job-control stop ended) is continued, never left stopped.
        sys::listen(tid).or_else(|_| {
            t.listening = false;
            t.group_stop = false;
            sys::cont(tid, sig)
        })
    } else if t.sysgood && !t.sud {
        sys::syscall(tid, sig)
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

/// Whether a stopped thread's next instruction is `syscall` (0f 05), the buffer's own
/// (which records nothing in the log) excepted.
fn at_syscall_insn(tid: Tid, t: &Thread) -> bool {
    let Some(pc) = t
        .regs
        .map(|r| r.rip)
        .or_else(|| sys::get_regs(tid).ok().map(|r| r.rip))
    else {
        return false;
    };
    if t.sud && pc == t.sud_trusted {
        return false;
    }
    sys::peek_word(tid, pc).is_ok_and(|w| w & 0xffff == 0x050f)
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
            absent: BTreeSet::new(),
            mem: None,
            phase: Phase::Stopped,
            queue: VecDeque::new(),
            held: None,
            deferred: VecDeque::new(),
            policy: (0..=64).map(SignalPolicy::default_for).collect(),
            fork_policy,
            pause_requested: false,
            pause_owed: None,
            vfork_bps_removed: false,
            shares_parent_memory: false,
            debugregs_used: false,
            watch: DebugRegisters::default(),
            handed_over: Vec::new(),
            kept_signals: HashMap::new(),
            leader_stat: File::open(format!("/proc/{}/task/{}/stat", pid.0, pid.0)).ok(),
            patches: BTreeMap::new(),
            regions: Vec::new(),
            moribund: HashMap::new(),
            retired: Vec::new(),
            editing: false,
            removed_marks: Vec::new(),
            stacks: None,
            rec: None,
            rec_ended: None,
            rec_diverged: None,
            sysbuf: None,
            sysbuf_refused: false,
            wakes_seen: 0,
            absent_maps: None,
            pin: None,
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
        if config.record {
            t.sysbuf_refused = config.trace_every_syscall;
            t.start_recording()?;
        }
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
        t.shares_parent_memory = config.vfork_child;
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
        // A handed-over fork child parked by the tracer that saw its fork: back to its
        // registers at the fork's return. Else it waits in a job-control stop.
        let parked = config.continue_job_stop && crate::park::unpark_traced(Tid(pid.0));
        if config.continue_job_stop && !parked {
            // Ends the job-control stop, and also discards a SIGSTOP still pending
            // (a handed-over fork child may not have reached its stop yet). The
            // SIGCONT itself passes silently (policy) and LISTENing threads are
            // continued when it is noticed.
            let _ = sys::kill(pid.0, libc::SIGCONT);
            // The hand-over's SIGSTOP may already have been taken from the queue into a
            // signal stop reported to us while attaching: it is ours, never the
            // program's (injected, it would stop the child for good).
            for t in t.threads.values_mut() {
                if t.deliver == libc::SIGSTOP {
                    t.deliver = 0;
                    t.deliver_info = None;
                }
            }
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
        self.held.is_some() || !self.queue.is_empty()
    }
    /// Takes a ready event without waiting.
    pub fn take_queued(&mut self) -> Option<Event> {
        self.held.take().or_else(|| self.queue.pop_front())
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
