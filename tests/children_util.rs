//! What the fork-children suites share (tests/dap_children.rs, tests/dap_children_same.rs):
//! samples/c/forks.c and exec_target.c built, an undebugged run, the output a session saw.
#![allow(dead_code)] // Each suite uses its own part.

use std::path::PathBuf;
use std::process::Command;

use crate::support::dap::{build, DapClient};

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

/// What the program printed, from the session's output events.
pub fn printed(c: &DapClient) -> String {
    c.output
        .iter()
        .filter(|(cat, _)| cat == "stdout")
        .map(|(_, t)| t.replace("\r\n", "\n"))
        .collect()
}
