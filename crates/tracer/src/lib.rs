//! One Linux process under ptrace, owned by its tracer thread.
//!
//! `tracer` starts (`Tracer::launch`) or attaches to (`Tracer::attach`) one process
//! on x86-64 Linux and controls it: all-stop continue, single-step, pause, software
//! breakpoints, registers, memory, signals, thread and fork/exec events. It knows
//! nothing of DWARF or of any protocol: addresses are [`RuntimeAddr`]s and the load
//! bias in [`ProcessInfo`] is how the engine relocates file addresses.
//!
//! # Threading and waiting
//!
//! - **One tracer thread per debuggee.** [`Tracer`] is `!Send`: every ptrace request
//!   for a tracee comes from the thread that seized it. Other threads use a
//!   [`TracerHandle`] (`Send + Sync`) from [`spawn_launch`] / [`spawn_attach`]; its
//!   typed commands run on the tracer thread and events go to an [`EventSink`].
//! - **Waits are per tracer thread.** The tracer waits with
//!   `waitpid(-1, __WALL | __WNOTHREAD)`: only its own tracees and children, never
//!   the stops of another tracer thread's debuggee and never another thread's child
//!   processes (a compiler run elsewhere in tandem keeps working with `Child::wait`).
//!   Nothing in tandem may call `waitpid(-1)` without `__WNOTHREAD`. Several
//!   debuggees in one process run concurrently, each on its own thread; wait results
//!   for tids not known yet (a new clone's first stop before its parent's clone
//!   event) are kept in a thread-local stash.
//! - **Pause is always possible.** While the debuggee runs, the tracer thread sits
//!   in `waitpid`; a command wakes it with a real-time signal ([`handle::wake_signal`])
//!   whose handler is installed without `SA_RESTART`, so `waitpid` returns EINTR.
//!   The sender re-sends the wake every 2 ms until it gets its reply (a wake landing
//!   just before `waitpid` would otherwise be lost). Internal step-overs are
//!   asynchronous phases of the same loop, so a step over a blocking syscall can be
//!   paused too.
//!
//! # Invariants
//!
//! - **All-stop.** After `Event::Stopped` every thread is in a ptrace-stop. Stopping
//!   the others uses PTRACE_INTERRUPT; stops collected meanwhile that are news
//!   (another thread's breakpoint hit, a signal) are kept and reported on the next
//!   resume instead of resuming — no hit is lost, every hit is reported once.
//! - **Breakpoints** are int3 bytes written through /proc/PID/mem (so read-only text
//!   works), reference-counted per address. A hit is told from a single-step by
//!   siginfo `si_code` (SI_KERNEL vs TRAP_TRACE; TRAP_HWBKPT for debug registers);
//!   the pc is moved back onto the breakpoint at once. Resuming a thread that sits on
//!   one removes it, single-steps that thread alone, and reinserts it. Memory reads
//!   show the original bytes, never 0xCC.
//! - **Hardware watchpoints** ([`Tracer::set_watchpoints`]) are one set per process:
//!   written to every thread and, since threads do not inherit debug registers, to each
//!   new thread at its first stop. A single-step that also meets a watchpoint is
//!   reported as `Watchpoint` with DR6's single-step bit set.
//! - **Group-stops** (SEIZE): a job-control stop is reported as `GroupStop` and the
//!   threads are resumed with PTRACE_LISTEN, so they stay stopped until SIGCONT.
//! - **Nothing is left behind.** Dropping a [`Tracer`] (also while a panic unwinds)
//!   kills and reaps a launched debuggee and detaches an attached one: all threads
//!   stopped, int3s removed, DR7 cleared, a pending SIGTRAP from an int3 consumed and
//!   its pc moved back, every thread detached. A launched child also has
//!   PTRACE_O_EXITKILL and PR_SET_PDEATHSIG(SIGKILL) as last resorts.
//! - **Fork/vfork** children are freed of the parent's int3s and detached (vfork:
//!   breakpoints are out of the shared memory until the vfork-done event). With
//!   [`ForkPolicy::Follow`] the child is detached in a job-control stop instead, so
//!   a new session attaches to it (`AttachConfig::continue_job_stop`) before it runs
//!   an instruction of its own: one process per tracer, always.
//! - **Launch** forks from the tracer thread, seizes the child before it execs, so the
//!   first stop is PTRACE_EVENT_EXEC; then optionally runs to AT_ENTRY. The child
//!   gets its own session, default signal dispositions, pipes or a pty for its
//!   standard streams (never tandem's stdout), and ADDR_NO_RANDOMIZE on request
//!   (a warning and randomization on when the personality call is refused).

pub mod debugregs;
pub mod error;
pub mod handle;
pub mod launch;
pub mod park;
pub mod procfs;
pub mod regs;
mod sys;
pub mod tracer;
pub mod types;

pub use debugregs::{DebugRegisters, HwAccess, HwSlot};
pub use error::{Error, Result};
pub use handle::{spawn_attach, spawn_launch, EndMode, EventSink, TracerHandle};
pub use launch::{Env, ForkPolicy, LaunchConfig, Stdio, StdioMode, StopAt};
pub use procfs::{Auxv, Mapping};
pub use regs::{FpRegisters, Registers};
pub use tracer::{
    AttachConfig, Event, LaunchInfo, Move, Origin, PatchSpec, Position, ProcessInfo, RecordingInfo,
    ScanStop, SigInfo, SignalPolicy, StopReason, Tracer, JUMP_LEN,
};
pub use types::{Pid, RuntimeAddr, Tid};
