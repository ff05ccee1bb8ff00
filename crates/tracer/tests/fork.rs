//! A debuggee that forks (or vforks) and execs: events right, child not left traced
//! and free of the parent's breakpoints.

mod common;

use std::time::Duration;
use tracer::{Event, LaunchConfig, RuntimeAddr, StopAt, StopReason, Tracer};

fn run(mode: &str) {
    let sample = common::compile("proc_fork", &["-g", "-O0"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        args: vec![mode.into()],
        stop_at: StopAt::Entry,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    let pid = t.pid();
    t.wait().expect("entry");
    let func = RuntimeAddr(
        common::symbol(&sample.path, "proc_fork_common") + t.info().load_bias.expect("bias"),
    );
    t.insert_breakpoint(func).expect("insert");
    t.resume().expect("resume");
    let mut child = None;
    let mut hits = 0;
    let code = loop {
        match t.wait().expect("event") {
            Event::ForkDetached {
                parent,
                child: c,
                vfork,
                stopped,
            } => {
                assert!(!stopped);
                assert_eq!(parent.0, pid.0);
                assert_eq!(vfork, mode == "vfork");
                child = Some(c);
            }
            Event::Stopped {
                tid,
                reason: StopReason::Breakpoint { addr },
            } => {
                assert_eq!(tid.0, pid.0, "only the parent is traced");
                assert_eq!(addr, func);
                hits += 1;
                let c = child.expect("fork event first");
                // The child runs untraced (it sleeps 300 ms after its exec).
                std::thread::sleep(Duration::from_millis(50));
                assert_eq!(tracer::procfs::tracer_of(c), Some(0), "child not traced");
                let st = common::state(c.0).expect("child alive");
                assert!(st != 't' && st != 'T', "child state {st}");
                t.resume().expect("resume");
            }
            Event::Exited { code } => break code,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(hits, 1);
    // The child exited 3 (it did not die of a stray int3), the parent adds 10.
    assert_eq!(code, 13);
}

#[test]
fn fork_then_exec() {
    run("fork");
}

#[test]
fn vfork_then_exec() {
    run("vfork");
}

#[test]
fn follow_fork_hands_the_child_to_another_tracer() {
    let sample = common::compile("proc_fork", &["-g", "-O0"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        args: vec!["fork".into()],
        stop_at: StopAt::Entry,
        fork_policy: tracer::ForkPolicy::Follow,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    t.wait().expect("entry");
    let bias = t.info().load_bias.expect("bias");
    let func = RuntimeAddr(common::symbol(&sample.path, "proc_fork_common") + bias);
    t.resume().expect("resume");
    let child = match t.wait().expect("fork") {
        Event::ForkDetached {
            child,
            stopped: true,
            vfork: false,
            ..
        } => child,
        other => panic!("unexpected {other:?}"),
    };
    // The child waits in a job-control stop for its new tracer, on another thread.
    let follower = std::thread::spawn(move || {
        let cfg = tracer::AttachConfig {
            continue_job_stop: true,
            ..Default::default()
        };
        let mut c = Tracer::attach(child, &cfg).expect("attach child");
        c.wait().expect("attached");
        // Same addresses: the child is a copy of the parent.
        c.insert_breakpoint(func).expect("bp in child");
        c.resume().expect("resume child");
        let mut events = Vec::new();
        loop {
            let ev = c.wait().expect("child event");
            events.push(ev);
            if ev.is_exit() {
                break;
            }
            if let Event::Stopped { .. } = ev {
                c.resume().expect("resume child");
            }
        }
        events
    });
    // The parent runs on (waiting for its child), then exits 13.
    let code = loop {
        match t.wait().expect("event") {
            Event::Exited { code } => break code,
            Event::Stopped { .. } => t.resume().expect("resume"),
            _ => {}
        }
    };
    assert_eq!(code, 13);
    let events = follower.join().expect("follower");
    assert!(
        events.contains(&Event::Stopped {
            tid: child.into(),
            reason: StopReason::Breakpoint { addr: func }
        }),
        "{events:?}"
    );
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Stopped {
            reason: StopReason::Exec { .. },
            ..
        }
    )));
    assert_eq!(events.last(), Some(&Event::Exited { code: 3 }));
}

#[test]
fn a_fork_child_nobody_follows_is_not_left_stopped() {
    let sample = common::compile("proc_fork", &["-g", "-O0"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        args: vec!["fork".into()],
        stop_at: StopAt::Entry,
        fork_policy: tracer::ForkPolicy::Follow,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    t.wait().expect("entry");
    t.resume().expect("resume");
    let child = match t.wait().expect("fork") {
        Event::ForkDetached { child, .. } => child,
        other => panic!("unexpected {other:?}"),
    };
    // Nobody attaches; the session ends (the parent is killed).
    drop(t);
    // The child goes on: it execs, sleeps 300 ms and exits (reaped by init).
    let start = std::time::Instant::now();
    loop {
        match common::state(child.0) {
            None | Some('Z') => break,
            Some('T') if start.elapsed() > Duration::from_millis(200) => {
                panic!("child left stopped")
            }
            _ => {}
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "child still there"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
