//! What every test of the workspace shares: compiling the samples and reading /proc.
//!
//! Tests only (a dev-dependency of each crate): helpers panic with the failing command's
//! output instead of returning errors. The process oracles read /proc themselves rather
//! than through `tracer`, so the tracer's own tests check it against an independent view.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The repository's `samples/` directory.
pub fn samples() -> PathBuf {
    repo().join("samples").canonicalize().expect("samples/")
}

/// `samples/<rel>`, canonical.
pub fn sample_path(rel: &str) -> PathBuf {
    let path = repo().join("samples").join(rel);
    path.canonicalize()
        .unwrap_or_else(|e| panic!("sample {}: {e}", path.display()))
}

/// The compiler for a source file: `rustc` for `.rs`, `g++` for C++, else `gcc`.
pub fn compiler_for(source: &Path) -> &'static str {
    match source.extension().and_then(|e| e.to_str()) {
        Some("rs") => "rustc",
        Some("cpp" | "cc" | "cxx") => "g++",
        _ => "gcc",
    }
}

/// Runs `compiler flags -o out sources…` and panics with its diagnostics when it fails.
/// `rustc` gets `-g --edition 2021` before the flags.
pub fn compile_into(compiler: &str, sources: &[PathBuf], flags: &[&str], out: &Path) {
    let mut cmd = Command::new(compiler);
    if compiler == "rustc" {
        cmd.args(["-g", "--edition", "2021"]);
    }
    let result = cmd
        .args(flags)
        .arg("-o")
        .arg(out)
        .args(sources)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    assert!(
        result.status.success(),
        "{compiler} {flags:?} {sources:?} failed: {}",
        String::from_utf8_lossy(&result.stderr)
    );
}

/// A C sample compiled into its own temporary directory.
pub struct Sample {
    /// Keeps the directory alive as long as the sample.
    pub dir: tempfile::TempDir,
    /// The executable.
    pub path: PathBuf,
    /// Its source, canonical.
    pub source: PathBuf,
}

/// Compiles `samples/c/NAME.c` with gcc and the given flags.
pub fn compile(name: &str, flags: &[&str]) -> Sample {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    let source = sample_path(&format!("c/{name}.c"));
    compile_into("gcc", std::slice::from_ref(&source), flags, &path);
    Sample { dir, path, source }
}

/// Compiles `samples/<source>` (C, C++ or Rust, by extension) into `dir/out`.
pub fn build(dir: &Path, source: &str, flags: &[&str], out: &str) -> PathBuf {
    let src = sample_path(source);
    let bin = dir.join(out);
    compile_into(compiler_for(&src), &[src], flags, &bin);
    bin
}

/// The state letter of a process (`R`, `S`, `t`, `Z`…); `None` when it no longer exists.
pub fn process_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold anything: the state follows the last ')'.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// The pid tracing a process (0: none); `None` when it no longer exists.
pub fn tracer_pid(pid: i32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("TracerPid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Waits up to 2 s for a process to be gone (not even a zombie).
pub fn gone(pid: i32) -> bool {
    for _ in 0..200 {
        if process_state(pid).is_none() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// Running freely: neither in a stop nor a zombie, and traced by nobody.
pub fn running_untraced(pid: i32) -> bool {
    matches!(process_state(pid), Some('R' | 'S')) && tracer_pid(pid) == Some(0)
}

/// A plain (untraced) child of the test, killed and reaped on drop.
pub struct Child(pub std::process::Child);

impl Child {
    /// Starts `path` with no input and its output discarded.
    pub fn spawn(path: &Path) -> Child {
        Child(
            Command::new(path)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawn"),
        )
    }

    /// Its pid.
    pub fn pid(&self) -> i32 {
        self.0.id() as i32
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
