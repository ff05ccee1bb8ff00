//! gdb under `record full` as the reverse suites' oracle on every x86-64 CPU, AMX or not.
//!
//! gdb 13 writes a register that is not a general one (an SSE or x87 register, which
//! `record full` restores when it goes back over an instruction that wrote it: glibc's
//! string routines, `-O2` code copying 16 bytes through %xmm0) with
//! `PTRACE_SETREGSET NT_X86_XSTATE` from a buffer of its fixed `X86_XSTATE_MAX_SIZE`,
//! 2696 bytes (x87 to AVX-512 and PKRU). The kernel takes that write only at its full
//! XSAVE size and refuses any other with EFAULT; on a CPU with AMX the full size is
//! 11008 bytes (TILEDATA alone is 8 KiB), so gdb stops with "Couldn't write extended
//! state status: Bad address." and cannot go back at all. (Checked on such a CPU with a
//! small tracer: reading the register set at any size works, writing it back works at
//! 11008 bytes only, and EFAULTs at 2696, 2688, 832 and 576.) Debian's gdb is 13.1;
//! no setting of it avoids the write, and no environment shrinks the kernel's size
//! (the ptrace size is the kernel's, whatever the process asked for).
//!
//! What works: gdb probes `PTRACE_GETREGSET NT_X86_XSTATE` once, and where that fails
//! (a CPU without XSAVE) it reads and writes the x87/SSE registers through
//! `PTRACE_GETFPREGS`/`PTRACE_SETFPREGS`, the 512-byte FXSAVE area, which the kernel
//! takes whole on any CPU. So gdb is run through tests/support/gdb_no_xstate.c, which
//! installs a seccomp filter answering only that register set's ptrace requests with
//! ENODEV (the kernel's answer without XSAVE) and then runs gdb. gdb then has no AVX
//! registers in its view, which the oracles never read (and glibc's AVX routines are off
//! under `record full` anyway: gdb 13 cannot record them). It is used on every CPU, so
//! the oracle is the same gdb everywhere.
//!
//! Should the filter be refused (a sandbox without seccomp), gdb runs as it is and says
//! so on stderr; if gdb then fails on the write, the oracle panics with the reason
//! rather than comparing against nothing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// gdb's words when the kernel refuses its write of the extended state.
pub const XSTATE_FAILURE: &str = "Couldn't write extended state status";

/// The exit status of gdb_no_xstate when the kernel refuses its seccomp filter.
const FILTER_REFUSED: i32 = 125;

/// The launcher that hides `NT_X86_XSTATE` from gdb, built once per test binary; `None`
/// when the kernel refuses its filter here (said on stderr once).
fn launcher() -> Option<&'static Path> {
    static LAUNCHER: OnceLock<Option<PathBuf>> = OnceLock::new();
    LAUNCHER
        .get_or_init(|| {
            let source = testsupport::repo().join("tests/support/gdb_no_xstate.c");
            let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dap-samples");
            std::fs::create_dir_all(&dir).unwrap();
            let exe = dir.join(format!("gdb_no_xstate-{}", std::process::id()));
            let tmp = exe.with_extension("tmp");
            testsupport::compile_into("gcc", &[source], &["-O2", "-Wall", "-Werror"], &tmp);
            std::fs::rename(&tmp, &exe).unwrap();
            let probe = Command::new(&exe)
                .arg("true")
                .output()
                .expect("gdb_no_xstate runs");
            match probe.status.code() {
                Some(0) => Some(exe),
                Some(FILTER_REFUSED) => {
                    eprintln!(
                        "WARNING: gdb's record-full oracle runs WITHOUT the NT_X86_XSTATE \
                         filter (the kernel refused it: {}); on a CPU with AMX gdb 13 will \
                         fail going back with \"{XSTATE_FAILURE}\"",
                        String::from_utf8_lossy(&probe.stderr).trim()
                    );
                    None
                }
                other => panic!(
                    "gdb_no_xstate true: exit {other:?}: {}",
                    String::from_utf8_lossy(&probe.stderr)
                ),
            }
        })
        .as_deref()
}

/// gdb in batch mode (no init files) on `program`, running `commands` in order, with its
/// x87/SSE registers read and written through the FXSAVE requests (see the file's
/// comment): its stdout and stderr. Panics when gdb still failed to write the extended
/// state: its answers after that are no oracle.
pub fn gdb_record_batch(program: &Path, commands: &[String]) -> (String, String) {
    let mut cmd = match launcher() {
        Some(launcher) => {
            let mut c = Command::new(launcher);
            c.arg("gdb");
            c
        }
        None => Command::new("gdb"),
    };
    cmd.args(["-batch", "-nx"]);
    for c in commands {
        cmd.args(["-ex", c]);
    }
    let out = cmd.arg(program).output().expect("gdb runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !stderr.contains(XSTATE_FAILURE),
        "gdb could not write a register back going back (the kernel refuses gdb 13's \
         NT_X86_XSTATE writes on this CPU, see tests/support/gdb_record.rs), so it has no \
         answer to compare with\n{stdout}\n{stderr}"
    );
    (stdout, stderr)
}
