//! A small "tandem" (the lifecycle helper binary) owning two launched debuggees and
//! one attached process is told to stop: SIGTERM, SIGINT, normal exit, a panic.
//! Afterwards: no zombie, launched debuggees gone, the attached one running untraced.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::{Duration, Instant};

struct Pids {
    launched: Vec<i32>,
    attached: i32,
}

fn start(mode: &str, spin: &common::Sample, other: &common::Child) -> (std::process::Child, Pids) {
    let out = spin.dir.path().join(format!("pids-{mode}"));
    let helper = Command::new(env!("CARGO_BIN_EXE_procman-lifecycle-helper"))
        .arg(mode)
        .arg(&out)
        .arg(&spin.path)
        .arg(other.pid().to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("helper");
    let start = Instant::now();
    let text = loop {
        if let Ok(t) = std::fs::read_to_string(&out) {
            break t;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "helper did not start"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut pids = Pids {
        launched: Vec::new(),
        attached: 0,
    };
    for line in text.lines() {
        let mut w = line.split_whitespace();
        match w.next() {
            Some("launched") => pids.launched = w.map(|p| p.parse().expect("pid")).collect(),
            Some("attached") => pids.attached = w.next().expect("pid").parse().expect("pid"),
            _ => {}
        }
    }
    assert_eq!(pids.launched.len(), 2);
    for &p in &pids.launched {
        assert!(common::state(p).is_some());
    }
    (helper, pids)
}

fn check_after(pids: &Pids, other: &common::Child) {
    assert_eq!(pids.attached, other.pid());
    for &p in &pids.launched {
        assert!(common::gone(p), "launched {p} gone, not a zombie");
    }
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        common::running_untraced(other.pid()),
        "attached process running: {:?}",
        common::state(other.pid())
    );
}

fn run_signal(sig: i32) {
    let spin = common::compile("proc_spin", &["-g", "-O0"]);
    let other = common::Child::spawn(&spin.path);
    let (mut helper, pids) = start("wait", &spin, &other);
    std::thread::sleep(Duration::from_millis(50));
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(helper.id() as i32, sig) };
    let status = helper.wait().expect("wait helper");
    assert_eq!(
        status.signal(),
        Some(sig),
        "dies of the signal after cleaning up"
    );
    check_after(&pids, &other);
}

#[test]
fn sigterm_while_debuggees_run() {
    run_signal(libc::SIGTERM);
}

#[test]
fn sigint_while_debuggees_run() {
    run_signal(libc::SIGINT);
}

#[test]
fn normal_exit_drops_the_manager() {
    let spin = common::compile("proc_spin", &["-g", "-O0"]);
    let other = common::Child::spawn(&spin.path);
    let (mut helper, pids) = start("exit", &spin, &other);
    let status = helper.wait().expect("wait helper");
    assert!(status.success());
    check_after(&pids, &other);
}

#[test]
fn panic_on_the_main_thread() {
    let spin = common::compile("proc_spin", &["-g", "-O0"]);
    let other = common::Child::spawn(&spin.path);
    let (mut helper, pids) = start("panic", &spin, &other);
    let status = helper.wait().expect("wait helper");
    assert_eq!(status.code(), Some(101), "a Rust panic exit");
    check_after(&pids, &other);
}
