//! The command line itself: help, version, logging to a file, and stdout kept for the protocol.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::process::Command;
use std::time::Duration;

use serde_json::json;
use support::{Peer, Protocol};

#[test]
fn help_lists_the_subcommands() {
    let out = Command::new(support::tandem_bin())
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for sub in ["lsp", "dap"] {
        assert!(text.contains(sub), "{text}");
    }
    let out = Command::new(support::tandem_bin())
        .arg("--version")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("tandem "));
}

#[test]
fn unknown_subcommands_fail() {
    let out = Command::new(support::tandem_bin())
        .arg("frobnicate")
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn log_file_receives_the_logs() {
    let dir = std::env::temp_dir().join(format!("tandem-log-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("tandem.log");
    let mut peer = Peer::spawn(Protocol::Lsp, &["--log", log.to_str().unwrap()], &[]);
    peer.lsp_initialize(json!({}));
    peer.lsp_request("shutdown", serde_json::Value::Null);
    peer.lsp_notify("exit", serde_json::Value::Null);
    assert_eq!(peer.wait_exit(Duration::from_secs(10)).code(), Some(0));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("initialized"), "{text}");
    assert!(
        !peer.stderr().contains("initialized"),
        "with --log, logs leave stderr alone"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ps_lists_this_test_process() {
    let me = std::process::id();
    let out = Command::new(support::tandem_bin())
        .args(["ps", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    let row = rows
        .iter()
        .find(|r| r["pid"] == me)
        .expect("this test process is listed");
    let exe = std::fs::read_link("/proc/self/exe").unwrap();
    assert_eq!(row["exe"], exe.display().to_string());
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let ppid: u32 = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(row["ppid"], ppid);
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let uid: u32 = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(row["uid"], uid);
    assert_eq!(row["state"].as_str().map(str::len), Some(1));
    assert!(!row["cmdline"].as_array().unwrap().is_empty());

    let out = Command::new(support::tandem_bin())
        .arg("ps")
        .output()
        .unwrap();
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.lines().next().unwrap().contains("PID"));
    assert!(
        table
            .lines()
            .any(|l| l.split_whitespace().next() == Some(&me.to_string())),
        "{table}"
    );
}
