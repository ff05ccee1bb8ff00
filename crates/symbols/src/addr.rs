//! Address and position newtypes: file (link-time) vs runtime addresses (from the `addr`
//! crate), 1-based lines.

use std::fmt;
use std::num::NonZeroU32;

// The address types are the `addr` crate's, shared with the tracer (which must not
// depend on this crate): one `RuntimeAddr` for the whole workspace.
pub use ::addr::{FileAddr, LoadBias, RuntimeAddr};

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
