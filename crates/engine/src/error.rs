//! The engine's single error type.

/// Everything that can go wrong in the engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The process layer failed (ptrace, memory, the tracer thread).
    #[error("target: {0}")]
    Target(#[from] tracer::Error),
    /// The symbol layer failed (ELF, DWARF).
    #[error("symbols: {0}")]
    Symbols(#[from] symbols::Error),
    /// The debuggee is running; the request needs it stopped.
    #[error("the process is running")]
    Running,
    /// The debuggee has exited.
    #[error("the process has exited")]
    Exited,
    /// A frame id from an earlier stop, or one that never existed.
    #[error("unknown frame {0}")]
    UnknownFrame(u64),
    /// A step-in target id from an earlier stop, or one that never existed.
    #[error("unknown step-in target {0} (targets are valid until the program runs again)")]
    UnknownStepTarget(u64),
    /// A step-in target listed for another thread's frame.
    #[error("step-in target {id} ({label}) is a call of frame {frame} of another thread, not of thread {tid}")]
    StepTargetElsewhere {
        /// The target's id.
        id: u64,
        /// Its label.
        label: String,
        /// The frame it was listed for.
        frame: u64,
        /// The thread asked to step.
        tid: i32,
    },
    /// A variables reference from an earlier stop, or one that never existed.
    #[error("unknown variables reference {0}")]
    UnknownValueRef(u64),
    /// No thread with this id.
    #[error("unknown thread {0}")]
    UnknownThread(i32),
    /// An expression could not be parsed.
    #[error("syntax error: {0}")]
    Syntax(String),
    /// An expression could not be evaluated ("no symbol 'foo' in this scope").
    #[error("{0}")]
    Eval(String),
    /// A hit condition is not one of `N`, `== N`, `>= N`, `> N`, `% N`.
    #[error("invalid hit condition '{0}'")]
    HitCondition(String),
    /// The main executable could not be found or read.
    #[error("no executable: {0}")]
    NoExecutable(String),
    /// A core file that cannot be read, or that does not match the program.
    #[error("core file: {0}")]
    Core(String),
    /// A request that would run or change the program, on a core file.
    #[error("{0}: not possible on a core file (the program is not running)")]
    PostMortem(&'static str),
    /// Going back in time is not possible here, or failed (no recording, a point
    /// outside it, a replay that diverged).
    #[error("{0}")]
    Reverse(String),
    /// The answer did not arrive in time.
    #[error("timed out")]
    Timeout,
}

/// Result alias for the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;
