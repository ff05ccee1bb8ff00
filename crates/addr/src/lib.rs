//! Address newtypes shared by `symbols` and `tracer`: an address as linked (in the ELF
//! file and its DWARF) is not an address in a running process, and the two are never
//! confused.
//!
//! A crate of its own because both layers need the same types and neither may depend on
//! the other: `symbols` never touches a live process, and `tracer` knows nothing of DWARF.
//! The engine, above both, converts between them with the module's [`LoadBias`].

use std::fmt;

/// An address as written in the ELF file and its DWARF (link-time virtual address).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FileAddr(pub u64);

/// An address in the address space of a running (or dumped) process.
///
/// File addresses (as found in ELF and DWARF) are not runtime addresses: add the
/// module's [`LoadBias`] to get one.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bias_converts_both_ways_and_wraps() {
        let bias = LoadBias(0x5555_5555_4000);
        let rt = bias.to_runtime(FileAddr(0x1139));
        assert_eq!(rt, RuntimeAddr(0x5555_5555_5139));
        assert_eq!(bias.to_file(rt), FileAddr(0x1139));
        assert_eq!(RuntimeAddr(u64::MAX) + 2, RuntimeAddr(1));
        assert_eq!(RuntimeAddr(0) - 1, RuntimeAddr(u64::MAX));
        assert_eq!(rt.to_string(), "0x555555555139");
    }
}
