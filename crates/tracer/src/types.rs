//! Newtypes for process ids, thread ids and runtime addresses.

use std::fmt;

/// A process id (the thread-group id of a debuggee).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pid(pub i32);

/// A thread id (a Linux task id); the main thread's id equals its [`Pid`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tid(pub i32);

/// An address in the debuggee's address space at run time (after relocation).
///
/// File addresses (as found in ELF and DWARF) are not runtime addresses: add the
/// load bias reported by [`crate::ProcessInfo`] to get one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct RuntimeAddr(pub u64);

impl std::ops::Add<u64> for RuntimeAddr {
    type Output = RuntimeAddr;
    /// The address `delta` bytes further (wrapping).
    fn add(self, delta: u64) -> RuntimeAddr {
        RuntimeAddr(self.0.wrapping_add(delta))
    }
}

impl std::ops::Sub<u64> for RuntimeAddr {
    type Output = RuntimeAddr;
    /// The address `delta` bytes before (wrapping).
    fn sub(self, delta: u64) -> RuntimeAddr {
        RuntimeAddr(self.0.wrapping_sub(delta))
    }
}

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

impl fmt::Display for RuntimeAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

impl From<Pid> for Tid {
    /// The main thread of a process has the process's id.
    fn from(pid: Pid) -> Tid {
        Tid(pid.0)
    }
}
