//! gdb as the tests' oracle, run so that it can write registers back on every x86-64 CPU.
//!
//! gdb 13 writes a register that is not a general one (an SSE or x87 register) with
//! `PTRACE_SETREGSET NT_X86_XSTATE` from a buffer of its fixed `X86_XSTATE_MAX_SIZE`,
//! 2696 bytes (x87 to AVX-512 and PKRU). The kernel takes that write only at its full
//! XSAVE size and refuses any other with EFAULT; on a CPU with AMX the full size is
//! 11008 bytes (TILEDATA alone is 8 KiB), so gdb fails with "Couldn't write extended
//! state status: Bad address." wherever it writes the registers back: a call of a
//! function in the debuggee (`output (int) abs(-7)`, `*it` on a vector iterator, an
//! overloaded operator: gdb saves and restores every register around it), and `record
//! full` going back (tests/support/gdb_record.rs). (Checked on such a CPU with a small
//! tracer: reading the register set at any size works, writing it back works at 11008
//! bytes only, and EFAULTs at 2696, 2688, 832 and 576.) Debian's gdb is 13.1; no setting
//! of it avoids the write, and no environment shrinks the kernel's size (the ptrace size
//! is the kernel's, whatever the process asked for).
//!
//! What works: gdb probes `PTRACE_GETREGSET NT_X86_XSTATE` once, and where that fails
//! (a CPU without XSAVE) it reads and writes the x87/SSE registers through
//! `PTRACE_GETFPREGS`/`PTRACE_SETFPREGS`, the 512-byte FXSAVE area, which the kernel
//! takes whole on any CPU. So gdb is run through tests/support/gdb_no_xstate.c, which
//! installs a seccomp filter answering only that register set's ptrace requests with
//! ENODEV (the kernel's answer without XSAVE) and then runs gdb. gdb then has no AVX
//! registers in its view, which the oracles never read. It is used on every CPU, so the
//! oracle is the same gdb everywhere (where gdb works anyway the filter changes nothing
//! the tests read).
//!
//! Should the filter be refused (a sandbox without seccomp), gdb runs as it is and says
//! so on stderr once: on a CPU with AMX it then cannot call functions
//! ([`can_call_functions`] is false, and the suites say what they compare instead) nor go
//! back under `record full` (that oracle panics with the reason).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// gdb's words when the kernel refuses its write of the extended state.
pub const XSTATE_FAILURE: &str = "Couldn't write extended state status";

/// The exit status of gdb_no_xstate when the kernel refuses its seccomp filter.
const FILTER_REFUSED: i32 = 125;

/// This test binary's own directory for what it builds (under Cargo's test scratch
/// directory, named by its pid: test binaries run in parallel).
fn build_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dap-samples");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The launcher that hides `NT_X86_XSTATE` from gdb, built once per test binary; `None`
/// when the kernel refuses its filter here (said on stderr once).
fn launcher() -> Option<&'static Path> {
    static LAUNCHER: OnceLock<Option<PathBuf>> = OnceLock::new();
    LAUNCHER
        .get_or_init(|| {
            let source = testsupport::repo().join("tests/support/gdb_no_xstate.c");
            let exe = build_dir().join(format!("gdb_no_xstate-{}", std::process::id()));
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
                        "WARNING: gdb runs WITHOUT the NT_X86_XSTATE filter (the kernel \
                         refused it: {}); on a CPU with AMX gdb 13 then fails with \
                         \"{XSTATE_FAILURE}\" calling a function in the debuggee or going \
                         back under `record full`",
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

/// `gdb`, to be given its arguments: run through the launcher that hides
/// `NT_X86_XSTATE` from it (see the file's comment), or as it is where the kernel
/// refuses the launcher's filter.
pub fn command() -> Command {
    match launcher() {
        Some(launcher) => {
            let mut c = Command::new(launcher);
            c.arg("gdb");
            c
        }
        None => Command::new("gdb"),
    }
}

/// gdb in batch mode (no init files) on `program`, running `commands` in order: its
/// stdout and stderr.
pub fn batch(program: &Path, commands: &[String]) -> (String, String) {
    let mut cmd = command();
    cmd.args(["-batch", "-nx"]);
    for c in commands {
        cmd.args(["-ex", c]);
    }
    let out = cmd.arg(program).output().expect("gdb runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether gdb (as [`batch`] runs it) can call a function in the debuggee on this
/// machine, so that it answers the expressions it can only answer by an inferior call
/// (`*it` on a vector iterator, `opt.has_value()` without an xmethod). Through the
/// launcher it can on every CPU; without it, not on a CPU with AMX. Probed once per test
/// binary with a call to `abs` in a small C program; said on stderr when it cannot.
pub fn can_call_functions() -> bool {
    static PROBE: OnceLock<bool> = OnceLock::new();
    *PROBE.get_or_init(|| {
        let dir = build_dir();
        let src = dir.join(format!("gdb-call-probe-{}.c", std::process::id()));
        std::fs::write(
            &src,
            "#include <stdlib.h>\nint main(void) { return abs(-3) - 3; }\n",
        )
        .unwrap();
        let exe = src.with_extension("");
        testsupport::compile_into("gcc", &[src], &["-g", "-O0"], &exe);
        let (stdout, stderr) = batch(
            &exe,
            &[
                "break main".into(),
                "run".into(),
                "output (int) abs(-7)".into(),
            ],
        );
        let works = stdout.trim_end().ends_with('7');
        if !works {
            eprintln!(
                "gdb cannot call functions in the debuggee on this machine: {}",
                stderr.trim()
            );
        }
        works
    })
}
