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
