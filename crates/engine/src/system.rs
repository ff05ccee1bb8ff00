//! Which files are the system's (libc, ld.so, libstdc++): their DWARF is searched last or
//! not at all. A module of its own, below both the module map and expressions, which ask it.

use std::path::Path;

/// Libraries of the system (libc, ld.so, libstdc++): searched last when a breakpoint is
/// set, and for functions by ELF symbol only, so a breakpoint in the user's code does not
/// open libc's DWARF; front-ends show them as not the user's code.
pub fn is_system(path: &Path) -> bool {
    ["/usr/lib", "/lib", "/usr/lib64", "/lib64"]
        .iter()
        .any(|p| path.starts_with(p))
}
