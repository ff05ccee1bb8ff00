//! Address and position newtypes: file (link-time) vs runtime addresses, 1-based lines.

use std::fmt;
use std::num::NonZeroU32;

/// An address as written in the ELF file and its DWARF (link-time virtual address).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FileAddr(pub u64);

/// An address in the address space of a running (or dumped) process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct RuntimeAddr(pub u64);

/// The difference between where a module was loaded and where it was linked.
///
/// For a non-PIE executable the bias is zero; for a PIE or shared object it is the
/// load address of the first `PT_LOAD` segment minus its `p_vaddr` (usually minus 0).
/// The caller (the engine) computes it from `/proc/PID/maps` or the auxiliary vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct LoadBias(pub u64);

impl LoadBias {
    /// Converts a file address to the runtime address it was loaded at.
    pub fn to_runtime(self, addr: FileAddr) -> RuntimeAddr {
        RuntimeAddr(addr.0.wrapping_add(self.0))
    }

    /// Converts a runtime address back to the file address it came from.
    pub fn to_file(self, addr: RuntimeAddr) -> FileAddr {
        FileAddr(addr.0.wrapping_sub(self.0))
    }
}

impl fmt::Display for FileAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

impl fmt::Display for RuntimeAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// A 1-based source line number, as DWARF stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Line(NonZeroU32);

impl Line {
    /// Creates a line number; `None` for 0, which DWARF uses for "no line".
    pub fn new(line: u32) -> Option<Line> {
        NonZeroU32::new(line).map(Line)
    }

    /// Creates a line from a 0-based index (as LSP positions use).
    pub fn from_zero_based(index: u32) -> Line {
        Line(NonZeroU32::MIN.saturating_add(index))
    }

    /// The 1-based number.
    pub fn get(self) -> u32 {
        self.0.get()
    }

    /// The 0-based index (as LSP positions use).
    pub fn zero_based(self) -> u32 {
        self.0.get() - 1
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A 1-based column in bytes, as DWARF stores it (0 in DWARF means "whole line" → `None`).
pub type Column = Option<NonZeroU32>;
