//! Newtypes for process ids and thread ids; runtime addresses come from the `addr` crate.

use std::fmt;

/// A process id (the thread-group id of a debuggee).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pid(pub i32);

/// A thread id (a Linux task id); the main thread's id equals its [`Pid`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tid(pub i32);

/// A runtime address: the `addr` crate's, the same type `symbols` uses.
pub use addr::RuntimeAddr;

impl fmt::Display for Pid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for Tid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl From<Pid> for Tid {
    /// The main thread of a process has the process's id.
    fn from(pid: Pid) -> Tid {
        Tid(pid.0)
    }
}
