//! The crate's single error type.

use std::path::PathBuf;

/// Everything that can go wrong while reading symbols or evaluating a location.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be opened or mapped.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file that failed.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The ELF container is malformed or unsupported.
    #[error("invalid object file: {0}")]
    Object(#[from] object::Error),
    /// The DWARF data is malformed or uses something unsupported.
    #[error("invalid dwarf: {0}")]
    Dwarf(#[from] gimli::Error),
    /// The file is not an ELF file for a supported architecture.
    #[error("unsupported binary: {0}")]
    Unsupported(String),
    /// A reference (type, DIE offset) points outside of the debug information.
    #[error("invalid reference {0:#x} in debug information")]
    BadReference(u64),
    /// The caller's memory reader could not read the requested bytes.
    #[error("cannot read {len} bytes of memory at {addr:#x}")]
    Memory {
        /// Runtime address of the read.
        addr: u64,
        /// Number of bytes requested.
        len: usize,
    },
    /// The caller's register reader has no value for a DWARF register.
    #[error("register {0} is not available")]
    Register(u16),
    /// The value is not recoverable here: a `DW_OP_entry_value` that the caller's call
    /// site does not describe. gdb calls such a value optimized out.
    #[error("optimized out: {0}")]
    OptimizedOut(String),
    /// A DWARF expression needs something this crate cannot provide.
    #[error("cannot evaluate location: {0}")]
    Evaluation(String),
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
