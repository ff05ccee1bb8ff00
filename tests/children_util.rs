//! What the fork-children suites share (tests/dap_children.rs, tests/dap_children_same.rs):
//! samples/c/forks.c and exec_target.c built, an undebugged run, the output a session saw.
#![allow(dead_code)] // Each suite uses its own part.

use std::path::PathBuf;
use std::process::Command;

use crate::support::dap::{build, line_of, sample_path, DapClient};

pub fn forks() -> PathBuf {
    build("c/forks.c", "gcc", &["-g", "-O0"])
}

pub fn target() -> PathBuf {
    build("c/exec_target.c", "gcc", &["-g", "-O0"])
}

/// The program alone: its output and exit code.
pub fn plain(args: &[&str]) -> (String, i32) {
    let out = Command::new(forks()).args(args).output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// The shell pipeline both suites debug (`exec_target 2 | cat; exec_target 3; echo`),
/// the line of exec_target.c it stops at, and what `sh -c` prints of it undebugged.
pub struct Pipeline {
    pub script: String,
    pub source: PathBuf,
    pub line: i64,
    pub expected: String,
}

pub fn pipeline() -> Pipeline {
    let t = target().display().to_string();
    let source = sample_path("c/exec_target.c");
    let line = line_of(&source, "S:target");
    let script = format!("{t} 2 | cat; {t} 3; echo status $?");
    let plain = Command::new("sh").args(["-c", &script]).output().unwrap();
    Pipeline {
        expected: String::from_utf8_lossy(&plain.stdout).into_owned(),
        script,
        source,
        line,
    }
}

/// What the program printed, from the session's output events.
pub fn printed(c: &DapClient) -> String {
    c.output
        .iter()
        .filter(|(cat, _)| cat == "stdout")
        .map(|(_, t)| t.replace("\r\n", "\n"))
        .collect()
}
