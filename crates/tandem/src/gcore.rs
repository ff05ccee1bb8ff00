//! `tandem gcore PID [-o FILE]`: attach to a running process, stop it, write an ELF core
//! file of it (as gdb's `gcore` does) and detach; the process then runs on unchanged, every
//! int3 removed. Prints the path written.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use procman::tracer::Pid;
use procman::ProcessManager;

#[derive(clap::Args, Debug)]
pub struct GcoreArgs {
    /// The process to write a core of.
    pid: i32,
    /// The core file to write (default `core.PID` in the working directory).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
}

pub fn run(args: GcoreArgs) -> Result<i32> {
    let pid = args.pid;
    if pid <= 0 || !std::path::Path::new(&format!("/proc/{pid}")).exists() {
        bail!("no process with pid {pid}");
    }
    let path = args
        .output
        .unwrap_or_else(|| PathBuf::from(format!("core.{pid}")));
    // The manager detaches on SIGINT/SIGTERM/SIGHUP and on a panic.
    let manager = ProcessManager::new();
    if let Err(err) = procman::install_signal_hook(manager.shutdown_handle()) {
        tracing::warn!("cannot install the signal hook: {err}");
    }
    procman::install_panic_hook(manager.shutdown_handle());
    let session = manager
        .attach_debug(Pid(pid), engine::SourceMap::default())
        .with_context(|| format!("cannot attach to process {pid}"))?;
    let started = Instant::now();
    let written = session.write_core(&path);
    let elapsed = started.elapsed();
    // Detached whatever the write did: the process must run on.
    let detached = session.detach();
    manager.shutdown();
    let written = written.with_context(|| format!("cannot write a core of process {pid}"))?;
    detached.with_context(|| format!("cannot detach from process {pid}"))?;
    tracing::info!(
        bytes = written.bytes,
        data = written.data_bytes,
        threads = written.threads,
        ?elapsed,
        "core written"
    );
    println!("{}", written.path.display());
    Ok(0)
}
