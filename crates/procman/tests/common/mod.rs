//! Helpers shared by the procman tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Sample {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

pub fn compile(name: &str, flags: &[&str]) -> Sample {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../samples/c/{name}.c"));
    let out = Command::new("gcc")
        .args(flags)
        .arg("-o")
        .arg(&path)
        .arg(&src)
        .output()
        .expect("gcc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Sample { dir, path }
}

/// The state letter of a process; None when it no longer exists.
pub fn state(pid: i32) -> Option<char> {
    tracer::procfs::process_state(tracer::Pid(pid))
}

/// Waits up to 2 s for a process to be gone (not even a zombie).
pub fn gone(pid: i32) -> bool {
    for _ in 0..200 {
        if state(pid).is_none() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    false
}

/// Running freely: neither in a tracing stop nor a zombie, and untraced.
pub fn running_untraced(pid: i32) -> bool {
    let st = state(pid);
    matches!(st, Some('R') | Some('S')) && tracer::procfs::tracer_of(tracer::Pid(pid)) == Some(0)
}

/// A plain (untraced) child of the test that is killed and reaped on drop.
pub struct Child(pub std::process::Child);

impl Child {
    pub fn spawn(path: &Path) -> Child {
        Child(
            Command::new(path)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawn"),
        )
    }
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
