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
    for sub in ["lsp", "dap", "mcp"] {
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

/// Builds samples/c/demo.c into a fresh directory.
fn build_demo() -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "tandem-demo-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/c/demo.c");
    let bin = dir.join("demo");
    let status = Command::new("gcc")
        .args(["-g", "-O0", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .unwrap();
    assert!(status.success());
    (dir, bin)
}

/// gdb's answers at the first stop of `break SPEC`, as (bt lines, printed values).
fn gdb_at_first_stop(
    bin: &std::path::Path,
    spec: &str,
    prints: &[&str],
) -> (Vec<(String, u32)>, Vec<String>) {
    let mut cmd = Command::new("gdb");
    cmd.args([
        "-batch",
        "-nx",
        "-ex",
        "set debuginfod enabled off",
        "-ex",
        &format!("break {spec}"),
        "-ex",
        "run",
    ]);
    for p in prints {
        cmd.args(["-ex", &format!("print {p}")]);
    }
    cmd.args(["-ex", "bt"]).arg(bin);
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let values = text
        .lines()
        .filter(|l| l.starts_with('$'))
        .map(|l| l.split_once(" = ").unwrap().1.to_owned())
        .collect();
    let frames = text
        .lines()
        .filter(|l| l.starts_with('#'))
        .filter_map(|l| {
            let function = l
                .split(" in ")
                .nth(1)
                .or_else(|| l.split_whitespace().nth(1))?
                .split_whitespace()
                .next()?;
            let line = l.rsplit_once(':')?.1.trim().parse().ok()?;
            Some((function.to_owned(), line))
        })
        .collect();
    (frames, values)
}

#[test]
fn debug_prints_what_gdb_sees_and_exits_with_the_programs_code() {
    let (dir, bin) = build_demo();
    let out = Command::new(support::tandem_bin())
        .arg("debug")
        .arg(&bin)
        .args([
            "--break",
            "demo.c:19 if n == 1",
            "--print",
            "n",
            "--print",
            "shapes[n - 1].sides",
            "--print",
            "here + 100",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let stops: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["event"] == "stopped").collect();
    assert_eq!(stops.len(), 1, "the condition holds once: {events:?}");
    let output: String = events
        .iter()
        .filter(|e| e["event"] == "output")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(output, "13 sides in total\n");
    assert_eq!(events.last().unwrap()["event"], "exited");
    assert_eq!(events.last().unwrap()["code"], 0);

    let (gdb_frames, gdb_values) = gdb_at_first_stop(
        &bin,
        "demo.c:19 if n == 1",
        &["n", "shapes[n - 1].sides", "here + 100"],
    );
    let stop = stops[0];
    let values: Vec<&str> = stop["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["value"].as_str().unwrap())
        .collect();
    assert_eq!(values[..2], gdb_values[..2], "values agree with gdb");
    let ours: Vec<(String, u32)> = stop["frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| {
            Some((
                f["function"].as_str()?.to_owned(),
                f["line"].as_u64()? as u32,
            ))
        })
        .take(4)
        .collect();
    assert_eq!(ours, gdb_frames[..4], "frames agree with gdb");
    assert_eq!(ours[0], ("total_sides".to_owned(), 19));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn debug_text_mode_reports_pending_breakpoints_and_exit_codes() {
    let (dir, bin) = build_demo();
    let out = Command::new(support::tandem_bin())
        .arg("debug")
        .arg(&bin)
        .args([
            "--break",
            "no_such_function",
            "--break",
            "total_sides if n == 2",
            "--print",
            "shapes[0].name",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("breakpoint 1 (no_such_function) pending"),
        "{text}"
    );
    assert!(text.contains("stop 1: breakpoint 2"), "{text}");
    assert!(text.contains("total_sides (shapes=0x"), "{text}");
    assert!(text.contains(", n=2)"), "{text}");
    assert!(
        text.contains("shapes[0].name = 0x") && text.contains("\"triangle\""),
        "{text}"
    );
    assert!(text.contains("13 sides in total"), "{text}");
    assert!(
        text.contains("[exited with code 0 after 1 stop(s)]"),
        "{text}"
    );

    // Program arguments may come before the options, and after `--` when they look like options.
    let out = Command::new(support::tandem_bin())
        .arg("debug")
        .arg(&bin)
        .args(["first", "--print", "argc", "--break", "main", "--", "-x"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("argc = 3"), "{text}");

    let missing = Command::new(support::tandem_bin())
        .args(["debug", "/nonexistent/program"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot debug /nonexistent/program"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn allow_remote_requires_a_token() {
    for sub in ["dap", "lsp"] {
        let out = Command::new(support::tandem_bin())
            .args([sub, "--allow-remote", "--listen", "0.0.0.0:0"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--token"), "{err}");
    }
}
