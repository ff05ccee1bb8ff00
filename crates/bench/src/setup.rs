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
    let source = workspace_root()
        .join("samples/bench")
        .join(format!("{name}.c"))
        .canonicalize()
        .with_context(|| format!("samples/bench/{name}.c"))?;
    let text = fs::read_to_string(&source)?;
    let line = text
        .lines()
        .position(|l| l.contains(marker))
        .with_context(|| format!("{marker} not found in {}", source.display()))?;
    let bin = work.join(name);
    let status = Command::new("gcc")
        .args(["-g", "-O0", "-o"])
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
        line: u32::try_from(line + 1)?,
    })
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
