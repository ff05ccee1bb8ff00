//! gdb under `record full` as the reverse suites' oracle on every x86-64 CPU, AMX or not.
//!
//! `record full` restores the registers an instruction wrote when it goes back over it,
//! SSE and x87 ones too (glibc's string routines, `-O2` code copying 16 bytes through
//! %xmm0). gdb 13 writes those with `PTRACE_SETREGSET NT_X86_XSTATE` at a size the kernel
//! refuses on a CPU with AMX, so there it stops with "Couldn't write extended state
//! status: Bad address." and cannot go back at all. gdb is run as [`super::gdb`] runs it:
//! with that register set hidden, so it writes them through the FXSAVE requests (see
//! tests/support/gdb.rs). gdb then has no AVX registers in its view, which the oracles
//! never read (and glibc's AVX routines are off under `record full` anyway: gdb 13 cannot
//! record them).
//!
//! Should the launcher's filter be refused, gdb runs as it is and says so on stderr; if
//! gdb then fails on the write, the oracle panics with the reason rather than comparing
//! against nothing.

use std::path::Path;

use super::gdb::{batch, XSTATE_FAILURE};

/// gdb in batch mode (no init files) on `program`, running `commands` in order, with its
/// x87/SSE registers read and written through the FXSAVE requests: its stdout and stderr.
/// Panics when gdb still failed to write the extended state: its answers after that are
/// no oracle.
pub fn gdb_record_batch(program: &Path, commands: &[String]) -> (String, String) {
    let (stdout, stderr) = batch(program, commands);
    assert!(
        !stderr.contains(XSTATE_FAILURE),
        "gdb could not write a register back going back (the kernel refuses gdb 13's \
         NT_X86_XSTATE writes on this CPU, see tests/support/gdb.rs), so it has no \
         answer to compare with\n{stdout}\n{stderr}"
    );
    (stdout, stderr)
}
