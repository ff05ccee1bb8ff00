//! The crate's error type.

/// What can go wrong in the process manager.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Controlling the debuggee failed.
    #[error(transparent)]
    Target(#[from] tracer::Error),
    /// The debugger failed.
    #[error(transparent)]
    Engine(#[from] engine::Error),
    /// An I/O operation failed.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    /// The request needs the program stopped.
    #[error("the program is running: pause the program first")]
    NotPaused,
    /// The debug session is over.
    #[error("the debug session has ended")]
    Ended,
    /// The signal hook is installed already.
    #[error("the signal hook is already installed")]
    HookInstalled,
    /// A container selector named no container, or several.
    #[error("{0}")]
    Container(String),
}

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
