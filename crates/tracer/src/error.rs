//! The crate's error type.

use crate::types::{Pid, RuntimeAddr, Tid};
use std::io;

/// Everything that can go wrong while controlling a process.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// PTRACE_SEIZE was refused (EPERM).
    #[error("cannot attach to process {pid}: operation not permitted ({hint})")]
    AttachPermission {
        /// The process that was asked for.
        pid: Pid,
        /// Why this is likely: ptrace_scope, missing CAP_SYS_PTRACE, already traced.
        hint: String,
    },
    /// The process is a vfork child that has not exec'd: its memory is its parent's,
    /// and a breakpoint written there would be the parent's too.
    #[error("the process shares its memory with its parent until it execs (vfork): no breakpoint can be set yet")]
    SharedMemory,
    /// The process does not exist (ESRCH).
    #[error("cannot attach to process {pid}: no such process")]
    NoSuchProcess {
        /// The process that was asked for.
        pid: Pid,
    },
    /// Starting the program failed; `stage` says at which step.
    #[error("cannot launch {program}: {stage} failed: {source}")]
    Launch {
        /// The program that was to be started.
        program: String,
        /// The step that failed (fork, chdir, exec, ...).
        stage: &'static str,
        /// The operating system's reason.
        source: io::Error,
    },
    /// A ptrace request failed.
    #[error("{op} failed for thread {tid}: {source}")]
    Ptrace {
        /// The request.
        op: &'static str,
        /// The thread it was made for.
        tid: Tid,
        /// The operating system's reason.
        source: io::Error,
    },
    /// Reading or writing debuggee memory failed.
    #[error("cannot access {len} bytes of memory at {addr}: {source}")]
    Memory {
        /// Start of the range.
        addr: RuntimeAddr,
        /// Length of the range.
        len: usize,
        /// The operating system's reason.
        source: io::Error,
    },
    /// Another I/O error (procfs, pipes).
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The operating system's reason.
        source: io::Error,
    },
    /// The request needs a stopped process but it is running.
    #[error("the process is running")]
    Running,
    /// The request needs a running process but it is stopped.
    #[error("the process is not running")]
    NotRunning,
    /// The process has exited.
    #[error("the process has exited")]
    Exited,
    /// The thread id is not a thread of this process.
    #[error("unknown thread {0}")]
    UnknownThread(Tid),
    /// No breakpoint is inserted at that address.
    #[error("no breakpoint at {0}")]
    NoBreakpoint(RuntimeAddr),
    /// Debug registers are numbered 0 to 7 (4 and 5 are reserved).
    #[error("invalid debug register {0}")]
    InvalidDebugRegister(usize),
    /// A hardware watchpoint that the debug registers cannot express.
    #[error("invalid watchpoint: {0}")]
    InvalidWatchpoint(String),
    /// Code could not be placed in the debuggee (a jump patch falls back to an int3).
    #[error("cannot place code in the debuggee: {0}")]
    Placement(String),
    /// Going back in time failed or is not possible (no recording, a point outside
    /// it, a replay that diverged from its recording).
    #[error("{0}")]
    Replay(String),
    /// The tracer thread has ended (the session is over).
    #[error("the tracer thread is gone")]
    TracerGone,
}

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn ptrace(op: &'static str, tid: Tid, errno: nix::errno::Errno) -> Error {
        Error::Ptrace {
            op,
            tid,
            source: io::Error::from_raw_os_error(errno as i32),
        }
    }
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Error {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}
