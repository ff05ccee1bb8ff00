//! Everything a run needs before it measures: the tandem binary, the peers (installing
//! lldb-19 when lldb-dap is missing), the compiled workloads and a description of the machine.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

/// The workspace root, where `samples/` and `docs/` live.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The debuggers taking part.
#[derive(Debug)]
pub struct Tools {
    pub tandem: PathBuf,
    pub gdb: Option<PathBuf>,
    pub lldb_dap: Option<PathBuf>,
}

/// The tandem binary: the one given, else a fresh `cargo build --release -p tandem` in the
/// target directory this harness was built into.
pub fn tandem(given: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(path) = given {
        if !path.is_file() {
            bail!("no tandem binary at {}", path.display());
        }
        return Ok(path);
    }
    let me = std::env::current_exe().context("locating tandem-bench")?;
    let dir = me.parent().context("tandem-bench has no directory")?;
    let profile = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("release");
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo
        .current_dir(workspace_root())
        .args(["build", "-q", "-p", "tandem"]);
    if profile == "release" {
        cargo.arg("--release");
    }
    // Build into the same target directory, wherever it is.
    if let Some(target_dir) = dir.parent() {
        cargo.env("CARGO_TARGET_DIR", target_dir);
    }
    eprintln!("tandem-bench: building tandem ({profile})");
    let status = cargo.status().context("running cargo build")?;
    if !status.success() {
        bail!("`cargo build -p tandem` failed; pass --tandem PATH to use an existing binary");
    }
    Ok(dir.join("tandem"))
}

pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

fn find_lldb_dap() -> Option<PathBuf> {
    which("lldb-dap-19")
        .or_else(|| Some(PathBuf::from("/usr/lib/llvm-19/bin/lldb-dap")).filter(|p| p.is_file()))
}

/// lldb-dap from Debian's `lldb-19`, installed with apt-get when missing and `install` allows.
pub fn lldb_dap(install: bool) -> Option<PathBuf> {
    if let Some(found) = find_lldb_dap() {
        return Some(found);
    }
    if !install {
        eprintln!("tandem-bench: lldb-dap-19 not found and --no-install given; skipping lldb-dap");
        return None;
    }
    eprintln!(
        "tandem-bench: lldb-dap-19 not found; installing the Debian package lldb-19 with apt-get"
    );
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    if !apt(&["install", "-y", "-q", "lldb-19"]) {
        // The package lists may be missing or stale on a fresh machine.
        let _ = apt(&["update", "-q"]);
        if !apt(&["install", "-y", "-q", "lldb-19"]) {
            eprintln!("tandem-bench: installing lldb-19 failed; skipping lldb-dap");
            return None;
        }
    }
    let found = find_lldb_dap();
    if found.is_none() {
        eprintln!("tandem-bench: lldb-19 installed but lldb-dap-19 is not on PATH; skipping it");
    }
    found
}

/// A compiled workload and the source line its scenario breaks on.
#[derive(Clone, Debug)]
pub struct Sample {
    pub bin: PathBuf,
    pub source: PathBuf,
    pub line: u32,
}

/// Compiles `samples/bench/NAME.c` with `gcc -g -O0` into `work` and finds the line carrying
/// `marker`.
pub fn compile(work: &Path, name: &str, marker: &str) -> Result<Sample> {
    compile_source(
        work,
        &format!("samples/bench/{name}.c"),
        "-O0",
        Some(marker),
    )
}

/// Compiles the C file at `path` (from the workspace root) with `gcc -g OPT` into `work`,
/// named after the file, and finds the first line carrying `marker` (line 0 without one).
pub fn compile_source(work: &Path, path: &str, opt: &str, marker: Option<&str>) -> Result<Sample> {
    let source = workspace_root()
        .join(path)
        .canonicalize()
        .with_context(|| path.to_owned())?;
    let text = fs::read_to_string(&source)?;
    let line = match marker {
        Some(marker) => {
            text.lines()
                .position(|l| l.contains(marker))
                .with_context(|| format!("{marker} not found in {}", source.display()))?
                + 1
        }
        None => 0,
    };
    let name = source
        .file_stem()
        .and_then(|n| n.to_str())
        .context("source file name")?;
    let bin = work.join(name);
    let status = Command::new("gcc")
        .args(["-g", opt, "-o"])
        .arg(&bin)
        .arg(&source)
        .status()
        .context("running gcc")?;
    if !status.success() {
        bail!("gcc failed on {}", source.display());
    }
    Ok(Sample {
        bin,
        source,
        line: u32::try_from(line)?,
    })
}

/// tests/support/gdb_no_xstate.c built into `work`, when its seccomp filter works here.
///
/// On a CPU with AMX, gdb 13 cannot write the extended register state back
/// (`PTRACE_SETREGSET NT_X86_XSTATE` from its 2696-byte buffer is refused: the kernel takes
/// only the full 11008 bytes), so it stops going back with "Couldn't write extended state
/// status". Through this launcher gdb finds that register set missing and uses the FXSAVE
/// requests instead, as tests/support/gdb_record.rs does for the reverse suites' oracle.
/// It is used on every CPU, so gdb's figures come from the same setup everywhere; `None`
/// (gdb run as it is, said on stderr) when it cannot be built or its filter is refused.
pub fn gdb_launcher(work: &Path) -> Option<PathBuf> {
    let source = workspace_root().join("tests/support/gdb_no_xstate.c");
    let bin = work.join("gdb_no_xstate");
    let built = Command::new("gcc")
        .args(["-O2", "-Wall", "-o"])
        .arg(&bin)
        .arg(&source)
        .status()
        .is_ok_and(|s| s.success());
    let probe = built
        .then(|| Command::new(&bin).arg("true").output().ok())
        .flatten();
    match probe.as_ref().and_then(|o| o.status.code()) {
        Some(0) => Some(bin),
        _ => {
            eprintln!(
                "tandem-bench: gdb runs WITHOUT tests/support/gdb_no_xstate.c ({}); on a CPU \
                 with AMX gdb 13 fails going back with \"Couldn't write extended state status\"",
                probe.map_or("it did not build".to_owned(), |o| String::from_utf8_lossy(
                    &o.stderr
                )
                .trim()
                .to_owned())
            );
            None
        }
    }
}

/// ripgrep's debug build and the first line of its `main`.
pub fn ripgrep(bin: &Path) -> Result<Sample> {
    if !bin.is_file() {
        bail!(
            "no ripgrep debug build at {} (build it with `cargo install ripgrep --debug --root /work/symbench/rg`)",
            bin.display()
        );
    }
    let version = output(bin, &["--version"])?;
    let version = version
        .split_whitespace()
        .nth(1)
        .context("ripgrep version")?
        .to_owned();
    // The sources cargo unpacked: $CARGO_HOME/registry/src/<index>/ripgrep-<version>/, which
    // is also the compilation directory recorded in the DWARF.
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
        .context("no CARGO_HOME or HOME")?;
    let registry = cargo_home.join("registry/src");
    let source = fs::read_dir(&registry)
        .with_context(|| format!("reading {}", registry.display()))?
        .filter_map(|e| e.ok())
        .map(|e| {
            e.path()
                .join(format!("ripgrep-{version}/crates/core/main.rs"))
        })
        .find(|p| p.is_file())
        .with_context(|| format!("ripgrep-{version} sources not under {}", registry.display()))?;
    let text = fs::read_to_string(&source)?;
    // The first statement of `fn main`.
    let main = text
        .lines()
        .position(|l| l.starts_with("fn main("))
        .context("fn main not found in ripgrep's main.rs")?;
    Ok(Sample {
        bin: bin.to_owned(),
        source,
        line: u32::try_from(main + 2)?,
    })
}

fn output(program: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new(program)
        .args(args)
        .stderr(Stdio::null())
        .output()
        .with_context(|| format!("running {}", program.display()))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn first_line(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .stderr(Stdio::null())
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "not available".to_owned())
}

pub fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// The machine and the tool versions, for the results file and the docs.
pub fn machine(tools: &Tools) -> Value {
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|rest| rest.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_default();
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let memory = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .map(|r| r.trim().to_owned())
        })
        .unwrap_or_default();
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    json!({
        "nproc": nproc,
        "cpu": cpu,
        "kernel": kernel,
        "memory": memory,
        "gcc": first_line("gcc", &["--version"]),
        "gdb": tools.gdb.as_ref().map(|_| first_line("gdb", &["--version"])),
        // lldb-dap-19 has no --version; the lldb of the same package says it.
        "lldb_dap": tools.lldb_dap.as_ref().map(|_| first_line("lldb-19", &["--version"])),
        "tandem": tools.tandem.display().to_string(),
    })
}
